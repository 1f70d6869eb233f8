"""The "Download report" of a study: :func:`pbo_core.explain.report.study_report`, as the
command line's ``report`` writes it, cached per study, respondent and model."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard._services.studies import study_token
from pbo_core.data import Study
from pbo_core.explain.report import build_report, report_command, study_report


@st.cache_data(show_spinner=False, max_entries=16)
def _report(token: Any, respondent: str, model: str, command: str, _study: Study, _r: Any) -> str:
    parts = study_report(_study, _r, model=model, commands=[command])
    return build_report(parts)


def report_html(
    study: Study, respondent: Any, model: str = "dt", command: str | None = None
) -> str:
    """The self-contained HTML report of ``model``'s tree for ``respondent`` (``None``:
    pooled), the same document ``python -m pbo_core.experiments report`` writes."""
    cmd = command or report_command(study.key, respondent, model)
    return _report(study_token(study), repr(respondent), model, cmd, study, respondent)
