"""DT-PBO Explorer dashboard (Streamlit entry point).

Run with ``make run`` (or ``streamlit run dashboard/app.py``). Bundled data (train and
electricity studies, the PMR demo inbox, the benchmark functions) work with no set-up;
Sushi, BELA, Presidential and PMR-Synth appear once their location is typed under
**Data locations** in the sidebar or given by ``DTPBO_SUSHI_DIR``, ``DTPBO_BELA_PATH``,
``DTPBO_PRESIDENTIAL_PATH`` or ``DTPBO_PMR_DIR``.

Pages (``dashboard/views``): case studies, tree explorer, feature sensitivity,
convergence, user/item hierarchy, live elicitation, PMR features.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run dashboard/app.py` from a plain checkout
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

from dashboard import _memory  # noqa: E402
from dashboard import _progress as waits  # noqa: E402
from dashboard import _services as svc  # noqa: E402
from dashboard import _ui as ui  # noqa: E402
from dashboard._services import sessions as store  # noqa: E402
from dashboard.pages import PAGES  # noqa: E402

_VIEWS = Path(__file__).resolve().parent / "views"
_FAVICON = Path(__file__).resolve().parent / "static" / "favicon.png"


def _data_locations() -> None:
    """Sidebar: where the user's own copies of the non-bundled data sets are.

    The paths are saved in the session store (``dashboard/_services/sessions``) under this
    browser's visitor id and restored in its next session or after a restart; another
    browser never sees them (the server-wide defaults are the environment variables). A
    typed path is used only when it exists and lies below an allowed data root
    (``data_loaders.access``); otherwise the environment variable is, and the caption
    says which. In shared-server
    mode (``DTPBO_SHARED_SERVER=1``) there are no inputs: the server's environment decides.
    """
    if svc.shared_server():
        st.sidebar.caption(
            "Shared server: data locations are set by the administrator "
            "(environment variables), not on this page."
        )
        return
    owner = ui.visitor_owner()
    if svc.PATHS_KEY not in st.session_state:  # a new browser session: its saved paths
        st.session_state[svc.PATHS_KEY] = store.stored_paths(owner)
    paths = dict(st.session_state.get(svc.PATHS_KEY) or {})
    with st.sidebar.expander("Data locations", expanded=False):
        st.caption(
            "Bundled studies need nothing. For the others, type where your copy is "
            "(or set the environment variable before starting the app). A path typed "
            "here wins over the environment variable when it exists and lies below an "
            "allowed data root; paths are saved for this browser only."
        )
        for name, d in svc.DATASETS.items():
            key = f"path_{name}"
            ui.register_path_input(key, d["label"], folder=bool(d["folder"]))
            if key not in st.session_state:
                st.session_state[key] = paths.get(name, "")
            paths[name] = st.text_input(
                d["label"],
                key=key,
                placeholder=f"${d['env']} or a path",
                help=f"Passed to the loader; otherwise ${d['env']} is used",
            )
            st.session_state[svc.PATHS_KEY] = paths
            source, message = svc.path_source(name)
            if paths[name].strip() and source != "sidebar":
                st.warning(ui.err(message))
            else:
                st.caption(ui.err(message))
    st.session_state[svc.PATHS_KEY] = paths
    cleaned = {k: v.strip() for k, v in paths.items() if v and v.strip()}
    if cleaned != st.session_state.get("_saved_paths"):
        store.store_paths(cleaned, owner)
        st.session_state["_saved_paths"] = cleaned


@st.cache_resource(show_spinner=False)
def _kernel_warm_up() -> threading.Thread:
    """Compile the tree kernels once per server, in the background (numba caches them on
    disk, so later starts load them in well under a second)."""
    t = threading.Thread(target=svc.warm_up, name="dtpbo-kernel-warm-up", daemon=True)
    t.start()
    return t


def _warm_up_status() -> None:
    """Start the warm-up and say so while it runs (no silent first tree view)."""
    if _kernel_warm_up().is_alive():
        st.sidebar.info(
            "Preparing the tree kernels (first start only; cached on disk afterwards)..."
        )


def _page_name(page: object) -> str:
    """The page's title for the server log (nothing when the app runs without a server,
    e.g. re-imported by a worker process)."""
    try:
        return str(getattr(page, "title", ""))
    except Exception:
        return ""


def main() -> None:
    """Configure the page, the sidebar and the navigation, then run the chosen page."""
    # a local icon: a ":material/...:" page icon makes the browser fetch the favicon from
    # an external font host (no request leaves the server; docs/dashboard.md)
    st.set_page_config(page_title="DT-PBO Explorer", page_icon=str(_FAVICON), layout="wide")
    _memory.tune_malloc()  # once per process, however the server was started
    pages = [
        st.Page(_VIEWS / file, title=title, icon=icon, default=(i == 0))
        for i, (file, title, icon) in enumerate(PAGES)
    ]
    present = ui.presenting()  # ?present=1: the picture alone, no control (ui.presenting)
    page = st.navigation(pages, position="hidden" if present else "sidebar")
    # an unexpected error: one sentence and an error id on the page, the traceback in the
    # server's log (ui.error_boundary); never a traceback or a server path on the page
    with ui.error_boundary(f"page {_page_name(page)!r}"):
        ui.page_style()
        ui.visitor_owner()
        ui.apply_deep_link()
        with st.sidebar:
            ui.keep_visitor_cookie()
        if not present:
            st.sidebar.caption("DT-PBO Explorer: interpretable preferential Bayesian optimisation")
            _data_locations()
            _warm_up_status()
        waits.script_started(_page_name(page))
        page.run()


main()
