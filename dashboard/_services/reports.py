"""The "Download report" of a study: :mod:`pbo_core.explain.report` on the pages' caches."""

from __future__ import annotations

from typing import Any

from dashboard._services.analyses import evidence, sensitivity
from dashboard._services.studies import respondent_data
from dashboard._services.trees import fit_tree, tree_view
from pbo_core.data import Study
from pbo_core.explain.report import (
    SENSITIVITY_DEFAULTS,
    ReportParts,
    build_report,
    report_command,
    report_settings,
)


def report_html(study: Study, respondent: Any, command: str | None = None) -> str:
    """The self-contained HTML report of ``respondent``'s tree (``None``: pooled), built from
    the same cached tree, held-out evidence and sensitivity table the pages show."""
    data = respondent_data(study, respondent)
    model = fit_tree(study, respondent)
    title = study.title + (f" — respondent {respondent}" if respondent is not None else "")
    view = tree_view(model, data, title=title)
    opts = dict(SENSITIVITY_DEFAULTS)
    table = sensitivity(
        study,
        opts["test_fraction"],
        opts["seed"],
        opts["n_respondents"],
        opts["use_study_split"],
    )
    parts = ReportParts(
        study,
        respondent,
        [(title, view)],
        evidence(study, respondent),
        table,
        report_settings(1, opts),
        [command or report_command(study.key, respondent)],
    )
    return build_report(parts)
