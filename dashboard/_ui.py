"""Small widget helpers shared by the pages (no modelling here)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import _progress, _server
from dashboard import _services as svc
from dashboard._errors import SHOW_TRACEBACKS_ENV, error_boundary, fragment  # noqa: F401
from dashboard._services import sessions as store
from dashboard._text import err, md, md_table, redact, safe_csv  # noqa: F401 (the pages' helpers)
from pbo_core.explain.export import OUTLINE_LEAVES, OUTLINE_WIDTH

# ----------------------------------------------------------------------------- visitors
#: Cookie (and session-state key) holding this browser's visitor token; the token's form
#: and the cookie's age (the launcher's server sets it httpOnly, ``dashboard._server``).
VISITOR_COOKIE = _server.VISITOR_COOKIE
_TOKEN = _server.TOKEN
_COOKIE_AGE = _server.COOKIE_AGE_S


def _cookie_token() -> str | None:
    try:
        value = st.context.cookies.get(VISITOR_COOKIE)
    except Exception:  # no browser behind this run (bare mode)
        return None
    return _server.verified_token(value) if isinstance(value, str) else None


def visitor_owner() -> str:
    """This browser's owner id: a hash of its visitor token (:func:`store.owner_of`).

    The token lives in a first-party cookie (``dtpbo_visitor``, set httpOnly by the server
    on every page, :mod:`dashboard._server`, and signed by it: a cookie it did not sign is
    not taken, :func:`dashboard._server.verified_token`), so the session list of a reload
    or of a new tab shows what this browser made and nothing else; the server stores only
    the hash. A run without a browser (AppTest) gets a token of its own, kept in
    ``st.session_state``.
    """
    token = st.session_state.get(VISITOR_COOKIE)
    if not (isinstance(token, str) and _TOKEN.fullmatch(token)):
        token = _cookie_token()
        if token is None:
            token = secrets.token_urlsafe(24)
            st.session_state["_visitor_new"] = True
        st.session_state[VISITOR_COOKIE] = token
    owner = store.owner_of(token)
    st.session_state[svc.OWNER_KEY] = owner  # who the services serve (imported studies)
    return owner


def keep_visitor_cookie() -> None:
    """Give the browser its visitor cookie once, when it came without one: only when the
    server did not set it (``python -m dashboard`` sets it httpOnly on every page,
    :class:`dashboard._server.VisitorCookie`; a plain ``streamlit run`` does not), so this
    script-set cookie is the fallback, readable by scripts."""
    if not st.session_state.pop("_visitor_new", False):
        return
    token = st.session_state[VISITOR_COOKIE]  # URL-safe characters only (checked above)
    st.html(
        f"<script>document.cookie = '{VISITOR_COOKIE}={_server.signed(token)}; path=/; "
        f"max-age={_COOKIE_AGE}; SameSite=Lax';</script>",
        unsafe_allow_javascript=True,
        width="content",
    )


#: Session-state key of the deep link last applied (``study``, ``respondent``, ``model``).
_LINK = "_deep_link"
#: URL parameters a view can be shared by: ``/<page>?study=KEY&respondent=R&model=M``.
LINK_PARAMS = ("study", "respondent", "model")


def apply_deep_link() -> None:
    """Point the shared choices at the URL's ``study``, ``respondent`` and ``model`` when
    the URL changed (a shared link, a bookmark, the address typed); call before any page
    draws its pickers. The pages keep the URL in step with what they show
    (:func:`show_in_url`), so the address bar always holds a link to the current view."""
    link = tuple(st.query_params.get(k) for k in LINK_PARAMS)
    if link == st.session_state.get(_LINK):
        return
    st.session_state[_LINK] = link
    study, respondent, model = link
    if study:
        st.session_state[svc.STUDY_KEY] = study
        st.session_state["_link_study"] = study
        if respondent:
            st.session_state[f"_link_respondent::{study}"] = respondent
    if model:
        st.session_state["_link_model"] = model


def show_in_url(**values: Any) -> None:
    """Write the view's ``study`` / ``respondent`` / ``model`` into the URL (``None``
    removes one), so the address bar is a link to what is shown."""
    for k, v in values.items():
        if v is None:
            if k in st.query_params:
                del st.query_params[k]
        elif st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)
    st.session_state[_LINK] = tuple(st.query_params.get(k) for k in LINK_PARAMS)


def linked_model(options: Sequence[str]) -> str | None:
    """The model a deep link asks for, when it is one of ``options`` (else ``None``)."""
    m = st.session_state.get("_link_model")
    return m if m in options else None


# ----------------------------------------------------------------------------- the first screen
#: URL parameter of the presentation view (``?present=1``): the picture, its one-line
#: caption and the held-out evidence line, and no control (the screen an analyst projects).
PRESENT_PARAM = "present"

#: The app's own layout rules: less blank space above a page's title (Streamlit's default
#: is 6rem), so a page's picture starts on the first screen of a 1440x900 laptop.
_PAGE_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.75rem; padding-bottom: 3rem; }
[data-testid="stMainBlockContainer"] h1 { padding-top: 0.25rem; padding-bottom: 0.5rem; }
</style>"""

#: The presentation view also hides the sidebar, its handle and the toolbar.
_PRESENT_CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"], [data-testid="stToolbar"],
[data-testid="stHeader"] { display: none !important; }
[data-testid="stMainBlockContainer"] { padding-top: 1.25rem; max-width: 100%; }
</style>"""


def presenting() -> bool:
    """Is the page shown in the presentation view (``?present=1``, or the switch drawn by
    :func:`presentation_switch`)?"""
    return str(st.query_params.get(PRESENT_PARAM, "")).lower() in ("1", "true", "yes", "on")


def page_style() -> None:
    """The app's layout rules (:data:`_PAGE_CSS`; in the presentation view also
    :data:`_PRESENT_CSS`). A style-only element takes no room on the page."""
    st.html(_PAGE_CSS + (_PRESENT_CSS if presenting() else ""))


def presentation_switch(*, key: str, where: Any = None) -> None:
    """The switch into the presentation view (it writes ``?present=1`` into the URL, so
    the view is also a link to share or bookmark). In that view no control is drawn,
    this one neither: :func:`leave_presentation` is a link back."""

    def go() -> None:
        if st.session_state.get(key):
            st.query_params[PRESENT_PARAM] = "1"
            st.session_state[key] = False

    (where if where is not None else st.sidebar).toggle(
        "Presentation view",
        key=key,
        on_change=go,
        help="Hide every control: the picture, its one-line caption and the held-out "
        f"evidence line, the screen to project. The address gets ?{PRESENT_PARAM}=1 (a "
        "link to share); the link at the bottom of that view comes back here.",
    )


def leave_presentation(page: str) -> None:
    """A small link out of the presentation view, back to the same view with its
    controls (``page``: the page's script under ``dashboard/views``)."""
    params = {k: v for k, v in st.query_params.to_dict().items() if k != PRESENT_PARAM}
    st.page_link(f"views/{page}", label="Leave the presentation view", query_params=params or None)


def sidebar_heading(text: str) -> None:
    """A page's own part of the sidebar starts with its name (its pickers and settings
    below it)."""
    st.sidebar.markdown(f"**{md(text)}**")


def synced_selectbox(
    label: str,
    options: Sequence[Any],
    state_key: str,
    *,
    key: str,
    format_func: Callable[[Any], str] = str,
    container: Any = None,
    help: str | None = None,
    focus: bool = True,
) -> Any:
    """A selectbox whose choice lives in ``st.session_state[state_key]``.

    ``state_key`` is shared, so every page that shows a picker for the same thing shows
    the last choice made anywhere (or the one a deep link asked for). A page whose options
    do not include the shared choice shows its first option without changing the choice.

    A study picked here (``state_key`` is the shared study) is computed next in the
    background (:func:`dashboard._services.precompute.focus`) unless ``focus`` is off:
    Live elicitation keeps the cores for the answers (16 visitors answering on one study
    while the walk followed them: the server's p95 per answer 2.1-4.2 s instead of 1.7 s).
    """
    opts = list(options)
    if not opts:
        return None
    cur = st.session_state.get(state_key)
    if cur in opts:
        st.session_state[key] = cur  # the page follows the shared choice
    elif st.session_state.get(key) not in opts:
        st.session_state[key] = opts[0]

    def sync() -> None:
        st.session_state[state_key] = st.session_state[key]

    where = container if container is not None else st
    value = where.selectbox(
        label,
        opts,
        key=key,
        format_func=format_func,
        on_change=sync,
        help=help,
    )
    if cur is None:  # first choice anywhere; a page with fewer options never overrides
        st.session_state[state_key] = value
    if focus and state_key == svc.STUDY_KEY:  # the background walk does its jobs next
        svc.precompute_focus(value)
    return value


def study_picker(
    *,
    key: str,
    predicate: Callable[[svc.StudyStatus], bool] | None = None,
    include_unusable: bool = False,
    container: Any = None,
    label: str = "Study",
) -> str | None:
    """Pick a study (shared choice across pages)."""
    statuses = [s for s in svc.study_statuses() if predicate is None or predicate(s)]
    if not include_unusable:
        statuses = [s for s in statuses if s.usable]
    titles = {s.key: s.title + ("" if s.usable else "  (not available)") for s in statuses}
    linked_missing(list(titles))
    return synced_selectbox(
        label,
        list(titles),
        svc.STUDY_KEY,
        key=key,
        format_func=lambda k: titles.get(k, k),
        container=container,
    )


def linked_missing(options: Sequence[str]) -> None:
    """Say so (once) when a deep link names a study that is not among ``options``."""
    wanted = st.session_state.pop("_link_study", None)
    if wanted and wanted not in options:
        st.warning(
            f"The link asks for the study {md(repr(wanted))}, which is not available on this "
            "page here; showing another one. Pick a study below, or import it under Case "
            "studies."
        )


def respondent_picker(study: Any, *, key: str, container: Any = None) -> Any:
    """Pick a respondent of a per-respondent study (shared choice, linked by the URL's
    ``respondent``); ``None`` if pooled or when respondents made too few choice tasks for
    a personal tree (the pages then show the pooled model)."""
    if not svc.is_per_respondent(study) or not svc.has_personal_data(study):
        show_in_url(respondent=None)
        return None
    resp = list(study.respondents())
    wanted = st.session_state.pop(f"_link_respondent::{study.key}", None)
    if wanted is not None:
        match = next((r for r in resp if str(r) == str(wanted)), None)
        if match is not None:
            st.session_state[svc.respondent_key(study.key)] = match
        else:
            st.warning(f"No respondent {md(repr(wanted))} in this study: showing another one.")
    value = synced_selectbox(
        f"Respondent ({len(resp):,})",
        resp,
        svc.respondent_key(study.key),
        key=f"{key}::{study.key}",
        container=container,
    )
    show_in_url(respondent=value)
    return value


_TREE_JS = Path(__file__).resolve().parent / "static" / "tree_view.js"
#: Tallest tree view "fit the tree" opens (px); taller outlines scroll (drag / wheel).
MAX_FIT_HEIGHT = 2400

_TREE_HTML = """<!doctype html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; font-family: Helvetica, Arial, sans-serif; font-size: 13px; background: #fff; }}
#bar {{ display: flex; gap: 4px; align-items: center; flex-wrap: wrap; padding: 2px 0 4px; }}
#bar button {{ font-size: 12px; padding: 2px 8px; border: 1px solid #bbb; border-radius: 4px;
  background: #f7f7f7; cursor: pointer; }}
#bar button:hover {{ background: #e8eef6; }}
#bar span {{ color: #555; font-size: 12px; margin-left: 6px; }}
#tree-svg {{ width: 100%; height: {svg_h}px; border: 1px solid #ddd; border-radius: 6px;
  cursor: grab; font-family: Helvetica, Arial, sans-serif; font-size: 11px; display: block; }}
#tree-panel {{ display: none; max-height: 220px; overflow: auto; border: 1px solid #ddd;
  border-radius: 6px; padding: 4px 8px; margin-top: 4px; font-size: 12px; }}
#tree-panel ul {{ margin: 2px 0; padding-left: 18px; columns: 2; }}
#tree-panel .details {{ margin: 2px 0 4px; columns: 2; }}
.node:hover rect {{ stroke-width: 2.5; }}
</style></head><body>
<div id="bar">
<button id="b-in" title="Zoom in (or use the mouse wheel)">+ Zoom in</button>
<button id="b-out" title="Zoom out">- Zoom out</button>
<button id="b-fit" title="Fit the whole tree in the view">Fit</button>
<button id="b-real" title="Actual size (100%)">100%</button>
<button id="b-expand" title="Expand every collapsed subtree">Expand all</button>
<button id="b-collapse" title="Collapse every subtree below depth 2">Collapse below depth 2</button>
<button id="b-full" title="Full screen (Esc to leave)">Full screen</button>
<button id="b-svg" title="Download the view as shown (SVG)">SVG of view</button>
<button id="b-png" title="Download the view as shown (PNG)">PNG of view</button>
<span id="tree-zoom"></span><span id="tree-count"></span>
<span>Drag to pan · wheel to zoom · click a split to collapse/expand · click a leaf for all its
items · hover for details</span>
</div>
<svg id="tree-svg" xmlns="http://www.w3.org/2000/svg"></svg>
<div id="tree-panel"></div>
<script type="application/json" id="tree-data">{data}</script>
<script type="application/json" id="tree-opts">{opts}</script>
<script>{js}</script>
</body></html>"""


def _json_for_script(obj: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(obj).replace("</", "<\\/")


def interactive_tree(
    view: Any,
    *,
    name: str,
    height: int = 560,
    max_depth: int | None = None,
    style: str = "tree",
    bare: bool = False,
) -> None:
    """The tree in an interactive SVG: pan, zoom, collapse/expand, full screen.

    Drawn in the browser by a small script shipped with the dashboard
    (``dashboard/static/tree_view.js``, no network, no Graphviz program); ``style`` is
    ``"tree"`` (top-down) or ``"outline"`` (one indented row per box). ``bare``: no button
    bar (the presentation view; drag and wheel still pan and zoom).
    """
    opts = {"name": name, "max_depth": max_depth, "collapsed": [], "style": style, "bare": bare}
    doc = _TREE_HTML.format(
        svg_h=height,
        data=_json_for_script(view.to_dict()),
        opts=_json_for_script(opts),
        js=_TREE_JS.read_text(encoding="utf-8"),
    )
    st.iframe(doc, height=height + (12 if bare else 100))


def _fit_height(tree: Any, max_depth: int | None, outline: bool) -> int:
    """The view height that fits the tree: an outline's full height (up to
    :data:`MAX_FIT_HEIGHT`), a top-down tree 560 px (it is scaled to fit)."""
    if not outline:
        return 560
    rows = tree.layout(max_depth=max_depth, style="outline")
    need = max((y + h for _, y, _, h, _ in rows.values()), default=0.0) + 12
    return min(max(int(need), 400), MAX_FIT_HEIGHT)


def tree_with_downloads(
    tree: Any,
    *,
    name: str,
    key: str,
    json_text: str | None = None,
    height: int | None = None,
    max_depth: int | None = None,
    present: bool | None = None,
) -> None:
    """A tree view, then its layout controls and SVG / PNG / DOT / JSON downloads below it
    (the picture first).

    ``tree`` is a :class:`pbo_core.explain.TreeView` (interactive view; downloads rendered
    in Python, no system tools, showing what the view shows: its depth, layout and
    :attr:`~pbo_core.explain.TreeView.detail`) or, for older callers, a DOT string
    (Graphviz chart and DOT download only). ``present`` (default: the presentation view,
    :func:`presenting`): the picture alone, no control.
    """
    present = presenting() if present is None else present
    if isinstance(tree, str):
        st.graphviz_chart(tree, width="content", height=height if height is not None else "content")
        if not present:
            st.download_button(
                "Download DOT",
                tree,
                file_name=f"{name}.dot",
                mime="text/vnd.graphviz",
                key=f"{key}_dot",
                on_click="ignore",
            )
        return
    n_leaves = sum(n.kind == "leaf" for n in tree.nodes)
    wide = tree.wide(max_depth)  # too many leaves, or too wide to read whole top-down
    if present:  # the layout the controls would open on, and no control
        outline = wide
        tall = height if height in (400, 560, 760, 1000) else None
        tall = tall or _fit_height(tree, max_depth, outline)
        interactive_tree(
            tree,
            name=name,
            height=int(tall),
            max_depth=max_depth,
            style="outline" if outline else "tree",
            bare=True,
        )
        return
    picture = st.container()  # drawn above the controls that set it
    c1, c2 = st.columns([2, 3])
    choice = c1.segmented_control(
        "Layout",
        ["Automatic", "Top-down tree", "Outline"],
        default="Automatic",
        key=f"{key}_layout",
        help=(
            "Top-down: the classic tree drawing. Outline: one indented row per box, so "
            "every box reads at 100 % however many leaves the tree has. Automatic: the "
            f"outline above {OUTLINE_LEAVES} leaves (this tree has {n_leaves}) or when the "
            f"top-down drawing is wider than {OUTLINE_WIDTH:,} px (it would open too small "
            "to read whole)."
        ),
    )
    outline = choice == "Outline" or (choice != "Top-down tree" and wide)
    style = "outline" if outline else "tree"
    tall = c2.select_slider(
        "View height",
        options=["fit", 400, 560, 760, 1000, 1400, 2000],
        value=height if height in (400, 560, 760, 1000) else "fit",
        key=f"{key}_height",
        format_func=lambda v: "fit the tree" if v == "fit" else f"{v} px",
        help=(
            "Height of the tree view in pixels (fit the tree: the outline's full height, "
            f"up to {MAX_FIT_HEIGHT} px, or 560 px for the top-down tree); the view also "
            "has a full-screen button."
        ),
    )
    if tall == "fit":
        tall = _fit_height(tree, max_depth, outline)
    with picture:
        interactive_tree(tree, name=name, height=int(tall), max_depth=max_depth, style=style)

    def svg() -> str:  # rendered when clicked (deferred download)
        return tree.to_svg(max_depth=max_depth, style=style)

    cols = st.columns(4)
    cols[0].download_button(
        "Download SVG",
        svg,
        file_name=f"{name}.svg",
        mime="image/svg+xml",
        key=f"{key}_svg",
        on_click="ignore",
    )
    cols[1].download_button(
        "Download PNG",
        lambda: svc.svg_to_png(svg()),
        file_name=f"{name}.png",
        mime="image/png",
        key=f"{key}_png",
        on_click="ignore",
    )
    cols[2].download_button(
        "Download DOT",
        lambda: tree.to_dot(max_depth=max_depth),
        file_name=f"{name}.dot",
        mime="text/vnd.graphviz",
        key=f"{key}_dot",
        on_click="ignore",
    )
    if json_text is not None:
        cols[3].download_button(
            "Download JSON",
            json_text,
            file_name=f"{name}.json",
            mime="application/json",
            key=f"{key}_json",
            on_click="ignore",
        )


def unavailable(key: str, what: str = "This page") -> None:
    """Warning with the registry's reason and how to obtain the data.

    ``what`` names who needs the study, as a sentence subject ("The tree explorer").
    """
    status = svc.study_status(key)
    st.warning(f"**{md(status.title)}** is not available here. {what} needs it.")
    st.markdown(svc.how_to_get(key))


def picker_hidden() -> bool:
    """Are the page's pickers left out (the presentation view)?"""
    return presenting()


def shown_study(predicate: Callable[[svc.StudyStatus], bool] | None = None) -> str | None:
    """The study a page shows without a picker: the shared choice (or the link's), when it
    qualifies, else the first usable study that does."""
    keys = svc.usable_study_keys(predicate)
    cur = st.session_state.get(svc.STUDY_KEY)
    return cur if cur in keys else (keys[0] if keys else None)


def require_study(
    what: str,
    *,
    key: str,
    predicate: Callable[[svc.StudyStatus], bool] | None = None,
    container: Any = None,
) -> tuple[str, Any]:
    """The page preamble: pick a study (shared choice) and load it, or stop the page.

    Stops with a note when no study qualifies, or with the reason and how to obtain the
    data when the chosen one cannot be loaded. Returns ``(study_key, study)``.
    """
    if picker_hidden():
        study_key = shown_study(predicate)
    else:
        study_key = study_picker(key=key, predicate=predicate, container=container)
    if study_key is None:
        st.info("No study is available.")
        st.stop()
    show_in_url(study=study_key)
    study, _error = svc.get_study(study_key)
    if study is None:
        unavailable(study_key, what)
        st.stop()
    return study_key, study


# ----------------------------------------------------------------------------- server paths
#: Every page input that names a path on the server: widget key -> (what it names,
#: folder?, written?). :func:`path_input` registers its inputs; the sidebar's Data
#: locations register theirs (:func:`register_path_input`). ``tests/dashboard`` checks
#: that every text input of every page is either here or known not to name a path.
PATH_INPUTS: dict[str, tuple[str, bool, bool]] = {}


def register_path_input(key: str, what: str, *, folder: bool, write: bool = False) -> None:
    """Record a widget that names a server path (see :data:`PATH_INPUTS`)."""
    PATH_INPUTS[key] = (what, folder, write)


def shown_path(path: object, what: str) -> str:
    """A server path for a sentence on the page (Markdown): the path, as text, on a
    personal server; on a shared server only ``what`` ("the server's results folder")."""
    return f"the server's {what}" if svc.shared_server() else f"'{md(path)}'"


def path_input(
    label: str,
    *,
    key: str,
    default: str | Path,
    what: str,
    folder: bool,
    write: bool,
    help: str | None = None,
    container: Any = None,
    kept: str | None = None,
) -> Path:
    """A text input naming a path on the server, through the one path rule.

    A path read must lie below the allowed data roots; a path written (results, caches)
    below the data folder (:func:`dashboard._services.typed_path_refusal`). A refused
    path is said (as text) and ``default`` used instead; ``default`` is the server's own
    setting and always allowed. On a shared server there is no input: ``default`` is used
    and the page names no path. ``kept`` is the session-state key that keeps the typed
    text while another page is shown (default ``<key>::kept``). Returns the path to use.
    """
    register_path_input(key, what, folder=folder, write=write)
    where = container if container is not None else st
    if svc.shared_server():
        where.caption(f"{label}: the server's, set by its administrator.")
        return Path(default)
    kept = kept or f"{key}::kept"  # outlives the widget's state when another page is shown
    if key not in st.session_state:
        st.session_state[key] = st.session_state.get(kept, str(default))
    typed = str(where.text_input(label, key=key, help=help) or "").strip()
    st.session_state[kept] = typed
    if not typed or Path(typed).expanduser() == Path(default).expanduser():
        return Path(default)
    refusal = svc.typed_path_refusal(typed, folder=folder, write=write, what=what)
    if refusal is not None:
        where.warning(f"{err(refusal)}. Using the default instead: {md(default)}.")
        return Path(default)
    return Path(typed).expanduser()


def full_table(df: Any, *, max_rows: int = 25, **kwargs: Any) -> None:
    """A dataframe tall enough to show up to ``max_rows`` rows without scrolling."""
    n = min(len(df), max_rows)
    st.dataframe(df, height=35 * (n + 1) + 3, **kwargs)


def lazy_tabs(labels: Sequence[str], *, key: str) -> Sequence[Any]:
    """Tabs whose ``.open`` says which one is shown; pages render only that one.

    Switching tabs reruns the page (fast: everything is cached), so hidden tabs cost
    nothing in the browser (no Graphviz layout or chart rendering for unseen content).
    The open tab is ``st.session_state[key]`` (its label).
    """
    return st.tabs(list(labels), key=key, on_change="rerun")


def results_root() -> Path:
    """The results folder the pages read: the one chosen on the Convergence page (checked
    there, :func:`path_input`; checked again here), else the per-user one."""
    home = svc.results_home()
    chosen = st.session_state.get("cv_root_value")
    if not chosen or svc.shared_server() or svc.results_refusal(chosen) is not None:
        return home
    return Path(str(chosen))


def ensure_default_grids(root: str, names: Sequence[str], label: str) -> bool:
    """Compute the missing cells of default result grids under ``root`` as jobs (a worker
    process, with a progress bar; ``dashboard._progress``). ``True`` when they are all
    on disk (or not to be computed); ``False`` while a job runs (its bar is drawn).

    Only when ``root`` is the per-user results folder (:func:`svc.is_default_root`); a
    first visit computes them, later visits find them on disk and show nothing.
    """
    if not svc.is_default_root(root):
        return True
    todo = [n for n in names if svc.DEFAULT_GRIDS[n].missing(root)]
    ready = True
    for name in todo:
        job = svc.default_grid_job(name, root)
        if job.state != "done":
            _progress.result(job, key=f"grid::{name}")
            ready = False
    return ready


def relative_folder(root: str, folder: object) -> str:
    """``folder`` relative to ``root`` when it lies below it, else as given (for pickers)."""
    try:
        return str(Path(str(folder)).relative_to(Path(root).expanduser()))
    except ValueError:
        return str(folder)
