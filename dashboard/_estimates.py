"""The econometrician's estimates on a page: the table of ``python -m pbo_core.experiments
estimates``, drawn by the Tree explorer (:func:`estimates_section`).

The plan's estimates model (``AnalysisPlan.estimates``, the conditional logit by default,
never the accuracy reference ``baseline``) is fitted on every choice in a worker
(:func:`dashboard._services.estimates_job`); the section shows the same numbers as the
command and the report (:mod:`pbo_core.explain.estimates`): per parameter the estimate,
robust (per choice) and cluster-robust (by respondent) errors with t and p, the fit
statistics, the penalty and why, the trade-offs, and the exports (CSV, LaTeX, HTML,
JSON).
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard import _progress as waits
from dashboard import _services as svc
from dashboard._text import csv_cell, md, md_table
from pbo_core.data import Study
from pbo_core.explain.estimates import (
    Estimates,
    estimates_csv,
    estimates_html,
    estimates_json,
    estimates_latex,
    statistic_rows,
    tradeoff_lines,
)
from pbo_core.registry import estimates_models, get, reports_estimates

__all__ = ["estimates_frame", "estimates_section"]

#: The page's columns: Biogeme's headings, 4+ significant digits.
_SHOWN = {
    "parameter": "Parameter",
    "estimate": "Value",
    "robust_std_err": "Rob. Std err",
    "robust_t": "Rob. t-test",
    "robust_p": "Rob. p-value",
    "cluster_std_err": "Clust. Std err",
    "cluster_t": "Clust. t-test",
    "cluster_p": "Clust. p-value",
    "std_err": "Std err",
    "unit": "Unit",
    "label": "Meaning",
}


def estimates_frame(est: Estimates) -> pd.DataFrame:
    """The parameter table as the page shows it (Biogeme's headings)."""
    return est.parameters[list(_SHOWN)].rename(columns=_SHOWN)


def estimates_section(study: Study, key: str) -> None:
    """The plan's estimates model on every choice of ``study`` (key ``key``): the table,
    the fit statistics, the trade-offs and the downloads."""
    plan = svc.study_plan(study)
    if not reports_estimates(plan.estimates):
        st.info(
            f"The analysis plan's estimates model, {md(plan.estimates)}, has no coefficient "
            "table with fit statistics; choose one of "
            + ", ".join(estimates_models())
            + " in the plan (Case studies, Analysis plan)."
        )
        return
    st.markdown(f"#### Estimates: {md(get(plan.estimates).label)}")
    est = waits.result(svc.estimates_job(study), key="te_estimates")
    if est is None:
        return
    s = est.statistics
    who = f" of {s['n_respondents']:,} respondents" if s.get("n_respondents") else ""
    penalised = float(s.get("penalty") or 0.0) > 0
    st.caption(
        f"The analysis plan's estimates model fitted on all {s['n_choices']:,} choices{who}, "
        "as an econometrician reports it"
        + (": maximum likelihood (no penalty)." if not penalised else ".")
        + " Robust errors: the sandwich with one score per choice (Biogeme's); clustered: "
        "one cluster per respondent. The same table: "
        f"`python -m pbo_core.experiments estimates --study {md(key)}`. "
        + md(svc.study_plan(study).line())
    )
    if penalised:  # said where it cannot be missed
        st.warning(md(est.estimation), icon=":material/warning:")
    fmt = {
        "Value": "%.6g",
        "Rob. Std err": "%.5g",
        "Rob. t-test": "%.4g",
        "Rob. p-value": "%.4g",
        "Clust. Std err": "%.5g",
        "Clust. t-test": "%.4g",
        "Clust. p-value": "%.4g",
        "Std err": "%.5g",
    }
    st.dataframe(
        estimates_frame(est),
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(format=f) for c, f in fmt.items()},
    )
    rows = pd.DataFrame(statistic_rows(est), columns=["statistic", "value"])
    st.markdown(md_table(rows))
    lines = tradeoff_lines(est)
    if lines:
        st.markdown(
            "**Trade-offs** (95% Fieller intervals, cluster-robust covariance):\n"
            + "\n".join(f"- {md(t)}" for t in lines)
        )
    name = f"estimates-{key}"
    c1, c2, c3, c4 = st.columns(4)
    for col, label, text, ext, mime in (
        (c1, "CSV", estimates_csv(est, text_cell=csv_cell), "csv", "text/csv"),
        (c2, "LaTeX", estimates_latex(est), "tex", "text/x-tex"),
        (c3, "HTML", estimates_html(est, standalone=True), "html", "text/html"),
        (
            c4,
            "JSON",
            json.dumps(estimates_json(est), indent=2, default=str),
            "json",
            "application/json",
        ),
    ):
        col.download_button(
            f"Download {label}",
            text,
            file_name=f"{name}.{ext}",
            mime=mime,
            key=f"te_estimates_{ext}",
            on_click="ignore",
        )
