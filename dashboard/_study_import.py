"""The Case studies page's "Add a study" form: upload, attribute table, mapping, import.

Uploads are read in memory and named by their base name only
(:func:`dashboard._uploads.upload_name`); checking, saving and loading are
:mod:`data_loaders.user_studies` (the command line's ``--data`` path).
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard import _services as svc
from dashboard._uploads import upload_name
from data_loaders import user_studies as us

__all__ = ["add_study_form", "apply_pending_choice", "remove_button"]

#: Session-state key of a study choice to apply before the page's study picker is drawn
#: (a widget's value can only be set before the widget exists in a run).
PENDING = "cs_pending_study"
PICKER = "cs_study"


def apply_pending_choice() -> None:
    """Select the study just imported (or, after a removal, the first study) in the
    Case studies picker and on every page; call before the picker is drawn."""
    if PENDING not in st.session_state:
        return
    wanted = st.session_state.pop(PENDING)
    keys = svc.usable_study_keys()
    value = wanted if wanted in keys else (keys[0] if keys else None)
    if value is not None:
        st.session_state[PICKER] = value
        st.session_state[svc.STUDY_KEY] = value


def _problem_table(problems: list[us.Problem]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"file": p.file, "line": p.line, "column": p.column, "problem": p.message}
            for p in problems
        ]
    )


def _show_problems(problems: list[us.Problem]) -> None:
    st.error(
        f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found; **nothing was "
        "imported**. Fix the file (or the attribute table) and import again."
    )
    st.table(_problem_table(problems).set_index("file"))


def add_study_form() -> None:
    """Upload a long or wide choice file (+ respondent features), edit the inferred
    attribute table, map the columns and import."""
    st.caption(
        "**Long** layout: one row per respondent × task × profile with a 1/0 chosen flag "
        "and one column per attribute. **Wide**: one row per task with each alternative's "
        "attributes side by side (`price1`, `price2`...) and a column naming the chosen "
        f"alternative. At most {us.MAX_UPLOAD_MB} MB per file. The study is saved in your "
        "data folder (`$DTPBO_DATA_HOME/studies`), appears on every page like a bundled "
        "study, stays after a restart and can be removed here; the command line reads the "
        "same files (`conjoint-accuracy --study KEY`)."
    )
    up = st.file_uploader("Choice data (CSV)", type=["csv"], key="add_choices")
    c1, c2 = st.columns(2)
    users_up = c1.file_uploader(
        "Respondent features (optional CSV: a respondent column and one per feature)",
        type=["csv"],
        key="add_users",
    )
    attrs_up = c2.file_uploader(
        "Attribute table (optional JSON, as for --attributes)", type=["json"], key="add_attrs"
    )
    fmt = st.radio("Layout", ["long", "wide"], horizontal=True, key="add_format")
    m = st.columns(5)
    respondent = m[0].text_input("Respondent column", "respondent", key="add_col_resp")
    task = m[1].text_input("Task column", "task", key="add_col_task")
    profile = m[2].text_input(
        "Profile column", "profile", key="add_col_profile", disabled=fmt == "wide"
    )
    chosen = m[3].text_input(
        "Chosen column", "chosen" if fmt == "long" else "choice", key=f"add_col_chosen::{fmt}"
    )
    alts = m[4].text_input("Alternatives (wide)", "1, 2", key="add_alts", disabled=fmt == "long")
    if up is None:
        return
    name = upload_name(up.name, "choices.csv")
    content = up.getvalue()
    columns = us.ColumnMap(
        fmt,  # type: ignore[arg-type]
        respondent.strip(),
        task.strip(),
        profile.strip(),
        chosen.strip() or None,
        tuple(a.strip() for a in alts.split(",") if a.strip()) or ("1", "2"),
    )
    if len(content) > us.MAX_UPLOAD_MB * 2**20:
        _show_problems([us.Problem(name, f"the file is over {us.MAX_UPLOAD_MB} MB")])
        return
    try:
        frame = pd.read_csv(io.BytesIO(content), nrows=50_000)
    except Exception as exc:  # any pandas parse error: show it, import nothing
        _show_problems([us.Problem(name, f"cannot be read as CSV: {exc}")])
        return
    if attrs_up is not None:
        attrs, problems = us.attributes_from_json(
            attrs_up.getvalue(), upload_name(attrs_up.name, "attributes.json")
        )
        if problems:
            _show_problems(problems)
            return
        source = "from the uploaded attribute table"
    else:
        attrs = us.infer_attributes(frame, columns)
        source = "inferred from the columns: check the kinds, put ordinal levels in order"
    st.markdown(f"**Attributes** ({source}). Levels are separated by `|`, worst or lowest first.")
    edited = st.data_editor(
        us.attribute_rows(attrs),
        hide_index=True,
        width="stretch",
        num_rows="dynamic",
        key=f"add_attr_table::{name}::{fmt}::{attrs_up is not None}",
        column_config={
            "kind": st.column_config.SelectboxColumn(options=list(us.KINDS), required=True),
            "direction": st.column_config.SelectboxColumn(options=list(us.DIRECTIONS)),
            "levels (in order)": st.column_config.TextColumn(width="large"),
        },
    )
    title = st.text_input("Study title", Path(name).stem, key=f"add_title::{name}")
    if st.button("Import study", type="primary", key="add_import"):
        attributes, problems = us.attributes_from_rows(edited)
        if not problems:
            users = (
                (users_up.getvalue(), upload_name(users_up.name, "respondents.csv"))
                if users_up is not None
                else None
            )
            with st.spinner("Checking every row with the loaders..."):
                meta, problems = svc.import_study(title, content, name, attributes, columns, users)
        if problems:
            _show_problems(problems)
            return
        assert meta is not None
        st.session_state[PENDING] = meta.key
        st.session_state["add_done"] = meta.title
        st.rerun()


def remove_button(key: str, title: str) -> None:
    """ "Remove this study" for an imported study."""
    if not key.startswith(us.KEY_PREFIX):
        return
    if st.button(f"Remove {title}", key=f"cs_remove::{key}", icon=":material/delete:"):
        svc.remove_study(key)
        st.session_state[PENDING] = None
        st.rerun()
