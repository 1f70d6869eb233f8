"""The conditional logit's fits on a whole study: the plan's estimates model, its segments.

:func:`baseline_fit` fits the analysis plan's **estimates model** (``AnalysisPlan.estimates``,
the conditional logit ``mnl`` by default; never the accuracy reference
``AnalysisPlan.baseline``, which may be any model) on every choice of a study through
:func:`pbo_core.explain.estimates.fit_estimates` and returns what ``conjoint-accuracy``
carries in its JSON's ``baseline_fit``: the parameter table (estimate, classical, robust
and cluster-robust errors with t and p), the fit statistics with the penalty and why, the
trade-offs and the plan's value of time
(:func:`pbo_core.explain.labels.coefficient_value_of_time`). :func:`choice_tree_fit` fits
its segmented form, the choice-model tree (``mnl-tree``), and :func:`segment_table` shows
each segment's logit. It imports no user-interface code and returns picklable objects
(dashboard jobs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from pbo_core.data import Study
from pbo_core.explain import labels
from pbo_core.explain.estimates import fit_estimates
from pbo_core.registry import get, make_for

__all__ = ["baseline_fit", "choice_tree_fit", "segment_table"]


def baseline_fit(
    study: Study, *, progress: Callable[[float, str], None] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The plan's estimates model fitted on every choice of ``study``
    (:func:`pbo_core.explain.estimates.fit_estimates`): its parameter table and its fit
    statistics with ``value_of_time`` (``None`` without a named money and travel-time
    attribute), ``tradeoffs``, ``money_ratios``, ``estimation`` (the penalty in words) and
    ``model`` (the plan's ``estimates``)."""
    est = fit_estimates(study, progress=progress)
    stats = dict(est.statistics)
    stats["value_of_time"] = est.value_of_time
    stats["tradeoffs"] = est.tradeoffs.to_dict(orient="records") if not est.tradeoffs.empty else []
    stats["money_ratios"] = est.money_ratios
    stats["estimation"] = est.estimation
    stats["model"] = est.model
    return est.parameters, stats


def choice_tree_fit(study: Study, *, progress: Callable[[float, str], None] | None = None) -> Any:
    """The choice-model tree (``mnl-tree``: the plan's conditional logit per segment of
    respondents, :mod:`pbo_core.models.choice_tree`) fitted on every choice of ``study``."""
    if progress is not None:
        progress(
            0.0,
            f"growing the {get('mnl-tree').label.lower()} on {study.data.n_pairs:,} comparisons",
        )
    return make_for("mnl-tree", study).fit(study.data)


def segment_table(model: Any, money: str | None = None, time: str | None = None) -> pd.DataFrame:
    """One row per segment of a fitted choice-model tree: ``segment``, ``who`` (its rule),
    ``respondents``, ``choices``, every attribute slope as ``estimate (s.e.)`` (utility per
    unit of the design column, cluster-robust error by respondent, 3 significant digits)
    and ``value of time [95% CI]`` (Fieller, in the study's units:
    :func:`pbo_core.units.tradeoff_unit`; without ``money`` and ``time``: no such
    column)."""
    rows = []
    for k, (m, rule) in enumerate(zip(model.leaf_models_, model.rules_, strict=True)):
        row: dict[str, Any] = {
            "segment": k + 1,
            "who": rule,
            "respondents": int(model.n_respondents_leaf_[k]),
            "choices": int(m.n_situations_),
        }
        for j, (f, col) in enumerate(m.attribute_columns_):
            name = f"{f.display} (per {col.unit})" if col.unit else col.label
            row[name] = f"{m.coef_[j]:.3g} ({m.cluster_se_[j]:.2g})"
        vot = labels.coefficient_value_of_time(m, money, time)
        if vot is not None:
            row["value of time [95% CI]"] = labels.ratio_text(vot.ratio, vot.unit, money=vot.money)
        rows.append(row)
    return pd.DataFrame(rows)
