"""Case studies: every study of the registry, its provenance, counts and attributes."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import _services as svc
from dashboard import _ui as ui
from dashboard._plan_editor import plan_panel
from dashboard._study_import import (
    add_study_form,
    apply_pending_choice,
    own_studies_note,
    remove_button,
)
from pbo_core.explain import labels

st.title("Case studies")
st.caption(
    "Every study of the registry; the study picked below is the other pages' study.",
    help="Bundled studies load at once; the others appear when their data location is set "
    "(sidebar **Data locations** or environment). The study and respondent picked here are "
    "used by the other pages; the picked study's full licence and provenance are below "
    "the table.",
)

statuses = svc.study_statuses()
overview = pd.DataFrame(
    [
        {
            "study": s.key,
            "title": s.title,
            "kind": s.info.kind,
            "available": "yes" if s.usable else "no",
            "licence": s.info.license_name,
        }
        for s in statuses
    ]
)
st.markdown(ui.md_table(overview))  # a study's full licence: below, once picked
own_studies_note()  # a shared server: this visitor's studies and when they expire

if "add_done" in st.session_state:
    st.success(f"Imported **{ui.md(st.session_state.pop('add_done'))}**: it is selected below.")
with st.expander("Add a study (your own choice data)", icon=":material/upload_file:"):
    add_study_form()

apply_pending_choice()
key = ui.study_picker(key="cs_study", include_unusable=True)
if key is None:
    st.stop()
ui.show_in_url(study=key)
status = svc.study_status(key)
study, error = svc.get_study(key)

if study is None:
    st.subheader(ui.md(status.title))
    st.warning(f"**{ui.md(status.title)}** is not available here.")
    st.markdown(error or ui.err(status.note))
    st.markdown(f"**Licence:** {ui.md(status.info.license)}")
    st.stop()

st.subheader(ui.md(study.title))
st.markdown(ui.md(study.description))
counts = study.counts()
c1, c2, c3 = st.columns(3)
c1.metric("Respondents", f"{counts['respondents']:,}")
c2.metric("Items", f"{counts['items']:,}")
c3.metric("Comparisons", f"{counts['comparisons']:,}")

st.markdown(
    "\n".join(
        [
            f"- **Source:** {ui.md(study.source or '—')}",
            f"- **Citation:** {ui.md(study.citation or '—')}",
            f"- **Licence:** {ui.md(study.license or status.info.license)}",
            f"- **Data:** {ui.err(status.note)}",
        ]
    )
)

remove_button(key, study.title)
plan_panel(study, key)  # the analysis plan every page reads: shown, edited, reset

st.markdown("#### Attributes")
st.dataframe(labels.attribute_table(study.schema), hide_index=True, width="stretch")

resp_shown = None
if svc.is_per_respondent(study) and svc.has_personal_data(study):
    st.markdown("#### Respondent")
    resp_shown = ui.respondent_picker(study, key="cs_resp")
    data = svc.respondent_data(study, resp_shown)
    st.caption(
        f"Respondent {ui.md(resp_shown)}: {data.n_items} items, {data.n_pairs} comparisons. The "
        "Tree explorer's One respondent view and the live pages use this respondent."
    )
elif svc.is_per_respondent(study):
    st.caption(
        "Respondents made too few choice tasks each for personal models (median under 3): "
        "the pages fit one model on every respondent's comparisons and check it on whole "
        "respondents it never saw."
    )
else:
    st.caption("One pooled set of comparisons: the pages fit one tree on all of them.")

st.markdown("#### Report")
st.caption(
    "One self-contained HTML file to share offline (e-mail, slides): this study's summary, "
    + (f"respondent {ui.md(resp_shown)}'s tree" if resp_shown is not None else "the pooled tree")
    + " with every leaf's items, held-out evidence next to the GP and logit baselines with "
    "95% CIs, leave-one-out feature sensitivity, and the command and versions that "
    "reproduce it."
)
done = svc.tree_choice(study) if svc.background_choice() else None
report_model = done.best if done is not None else "dt"
report_key = f"cs_report::{key}::{resp_shown}::{report_model}"
if st.button("Build report", key="cs_build_report", icon=":material/description:"):
    with st.spinner("Fitting, cross-validating and refitting without each feature..."):
        svc.warm_up()
        st.session_state[report_key] = svc.report_html(study, resp_shown, report_model)
if report_key in st.session_state:
    st.download_button(
        "Download report",
        st.session_state[report_key],
        file_name=f"report-{key}" + (f"-{resp_shown}" if resp_shown is not None else "") + ".html",
        mime="text/html",
        key="cs_download_report",
        icon=":material/download:",
        on_click="ignore",
    )

with st.expander(f"Items ({study.data.n_items:,})"):
    items = study.data.items
    shown = items if items is not None else study.schema.decode(study.data.X)
    shown = shown.rename(columns={f.name: f.display for f in study.schema.features})
    st.dataframe(shown.head(500), width="stretch")
    if len(shown) > 500:
        st.caption(f"First 500 of {len(shown):,} items.")

if study.users is not None:
    with st.expander(f"Respondent features ({len(study.users):,} respondents)"):
        named = (
            {f.name: f.display for f in study.user_schema.features}
            if study.user_schema is not None
            else {}
        )  # the labels given at import, never the raw column names
        st.dataframe(study.users.head(500).rename(columns=named), width="stretch")
        if study.user_schema is not None:
            st.dataframe(
                labels.attribute_table(study.user_schema), hide_index=True, width="stretch"
            )
