"""Small widget helpers shared by the pages (no modelling here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from dashboard import _services as svc


def synced_selectbox(
    label: str,
    options: Sequence[Any],
    state_key: str,
    *,
    key: str,
    format_func: Callable[[Any], str] = str,
    container: Any = None,
    help: str | None = None,
) -> Any:
    """A selectbox whose choice lives in ``st.session_state[state_key]``.

    Widget state is per page; ``state_key`` is shared, so every page that shows a picker
    for the same thing starts from the last choice made anywhere. A page whose options do
    not include the shared choice shows its first option without changing the choice.
    """
    opts = list(options)
    if not opts:
        return None
    cur = st.session_state.get(state_key)
    index = opts.index(cur) if cur in opts else 0

    def sync() -> None:
        st.session_state[state_key] = st.session_state[key]

    where = container if container is not None else st
    value = where.selectbox(
        label,
        opts,
        index=index,
        key=key,
        format_func=format_func,
        on_change=sync,
        help=help,
    )
    if cur is None:  # first choice anywhere; a page with fewer options never overrides
        st.session_state[state_key] = value
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
    return synced_selectbox(
        label,
        list(titles),
        svc.STUDY_KEY,
        key=key,
        format_func=lambda k: titles.get(k, k),
        container=container,
    )


def respondent_picker(study: Any, *, key: str, container: Any = None) -> Any:
    """Pick a respondent of a per-respondent study (shared choice); ``None`` if pooled."""
    if not svc.is_per_respondent(study):
        return None
    resp = list(study.respondents())
    return synced_selectbox(
        f"Respondent ({len(resp)})",
        resp,
        svc.respondent_key(study.key),
        key=f"{key}::{study.key}",
        container=container,
    )


def tree_with_downloads(
    dot: str,
    *,
    name: str,
    key: str,
    json_text: str | None = None,
    height: int | None = None,
) -> None:
    """A Graphviz tree with DOT / SVG / JSON download buttons."""
    st.graphviz_chart(dot, width="content", height=height if height is not None else "content")
    cols = st.columns(3)
    cols[0].download_button(
        "Download DOT",
        dot,
        file_name=f"{name}.dot",
        mime="text/vnd.graphviz",
        key=f"{key}_dot",
        on_click="ignore",
    )
    svg = svc.dot_to_svg(dot)
    if svg is None:
        cols[1].caption(
            "SVG download needs Graphviz's `dot` program, which is not installed "
            "(`apt-get install graphviz`)."
        )
    else:
        cols[1].download_button(
            "Download SVG",
            svg,
            file_name=f"{name}.svg",
            mime="image/svg+xml",
            key=f"{key}_svg",
            on_click="ignore",
        )
    if json_text is not None:
        cols[2].download_button(
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
    st.warning(f"**{status.title}** is not available here. {what} needs it.")
    st.markdown(svc.how_to_get(key))


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
    study_key = study_picker(key=key, predicate=predicate, container=container)
    if study_key is None:
        st.info("No study is available.")
        st.stop()
    study, _error = svc.get_study(study_key)
    if study is None:
        unavailable(study_key, what)
        st.stop()
    return study_key, study


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
