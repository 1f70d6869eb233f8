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

import os
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run dashboard/app.py` from a plain checkout
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

from dashboard import _services as svc  # noqa: E402

_VIEWS = Path(__file__).resolve().parent / "views"

PAGES = [
    ("case_studies.py", "Case studies", ":material/library_books:"),
    ("tree_explorer.py", "Tree explorer", ":material/account_tree:"),
    ("sensitivity.py", "Feature sensitivity", ":material/tune:"),
    ("convergence.py", "Convergence", ":material/show_chart:"),
    ("hierarchy.py", "User/item hierarchy", ":material/groups:"),
    ("elicitation.py", "Live elicitation", ":material/touch_app:"),
    ("pmr.py", "PMR features", ":material/inbox:"),
]


def _data_locations() -> None:
    """Sidebar: where the user's own copies of the non-bundled data sets are."""
    paths = dict(st.session_state.get(svc.PATHS_KEY) or {})
    with st.sidebar.expander("Data locations", expanded=False):
        st.caption(
            "Bundled studies need nothing. For the others, type where your copy is "
            "(or set the environment variable before starting the app)."
        )
        for name, d in svc.DATASETS.items():
            env = os.environ.get(d["env"], "")
            paths[name] = st.text_input(
                d["label"],
                value=paths.get(name, ""),
                key=f"path_{name}",
                placeholder=env or f"${d['env']}",
                help=f"Passed to the loader; default ${d['env']}"
                + (f" = {env}" if env else " (not set)"),
            )
    st.session_state[svc.PATHS_KEY] = paths


def main() -> None:
    """Configure the page, the sidebar and the navigation, then run the chosen page."""
    st.set_page_config(page_title="DT-PBO Explorer", page_icon=":material/park:", layout="wide")
    pages = [
        st.Page(_VIEWS / file, title=title, icon=icon, default=(i == 0))
        for i, (file, title, icon) in enumerate(PAGES)
    ]
    page = st.navigation(pages)
    st.sidebar.caption("DT-PBO Explorer: interpretable preferential Bayesian optimisation")
    _data_locations()
    page.run()


main()
