"""The baseline beside every tree: the analysis plan's conditional logit fitted on all choices.

:func:`baseline_fit` fits the plan's baseline (``mnl``, :mod:`pbo_core.models.mnl`) on
every choice of a study and returns what the Tree explorer, ``conjoint-accuracy`` (its
JSON's ``baseline_fit``) and the report show: the coefficient table (cluster-robust
errors by respondent), the fit statistics and the value of time of the plan's travel-time
and money attributes (:func:`pbo_core.explain.labels.coefficient_value_of_time`).
:func:`choice_tree_fit` fits its segmented form, the choice-model tree (``mnl-tree``), and
:func:`segment_table` shows each segment's logit. It imports no user-interface code and
returns picklable objects (dashboard jobs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from pbo_core.data import Study
from pbo_core.explain import labels
from pbo_core.plan import plan_of
from pbo_core.registry import get, make_for

__all__ = ["baseline_fit", "choice_tree_fit", "coefficient_table", "segment_table"]


def baseline_fit(
    study: Study, *, progress: Callable[[float, str], None] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The plan's baseline (the conditional logit, ``mnl``) fitted on every choice of
    ``study``: its coefficient table as pages and the report show it (attribute, kind,
    coefficient, cluster-robust s.e. by respondent, z, p, unit) and its fit statistics
    (:meth:`pbo_core.models.mnl.ConditionalLogit.fit_statistics`) with the plan's value
    of time (:func:`pbo_core.explain.labels.coefficient_value_of_time`; ``None`` without
    a named money and travel-time attribute)."""
    plan = plan_of(study)
    if progress is not None:
        progress(0.0, f"fitting {get(plan.baseline).label} on {study.data.n_pairs:,} comparisons")
    model = make_for(plan.baseline, study).fit(study.data)
    stats = model.fit_statistics()
    money = plan.money.attribute if plan.money else None
    time = plan.time.attribute if plan.time else None
    vot = labels.coefficient_value_of_time(model, money, time)
    stats["value_of_time"] = (
        None
        if vot is None
        else {
            "text": vot.text(),
            "estimate": vot.ratio.estimate if vot.ratio.identified else None,
            "ci95": [vot.ratio.low, vot.ratio.high] if vot.ratio.identified else None,
            "unit": vot.unit,
            "money": vot.money,
            "time": vot.attribute,
        }
    )
    stats["model"] = plan.baseline
    return coefficient_table(model), stats


def coefficient_table(model: Any) -> pd.DataFrame:
    """A conditional logit's coefficients as shown: ``coefficient``, its kind, the
    estimate and cluster-robust standard error (3 significant digits), z, p and unit."""
    t = model.coef_table()
    return pd.DataFrame(
        {
            "coefficient": t["feature"],
            "kind": t["kind"],
            "estimate": [float(f"{v:.3g}") for v in t["coef"]],
            "s.e. (cluster-robust)": [float(f"{v:.2g}") for v in t["cluster_se"]],
            "z": t["z"].round(2),
            "p": [f"{p:.2g}" if p >= 1e-4 else "< 0.0001" for p in t["p_value"]],
            "unit": t["unit"],
        }
    )


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
