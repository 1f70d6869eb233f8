"""Feature sensitivity, the user/item hierarchy and its segment logits (cached)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard._services.studies import study_token
from pbo_core import explain
from pbo_core.data import Study
from pbo_core.evaluation import (
    ablation_rows,
    best_baseline,
    shown_evidence,
    summarize_ablation,
)
from pbo_core.experiments.cohorts import (
    BASELINES,
    TREE_FAMILY,
    summarize_cohorts,
)
from pbo_core.hierarchy import UserItemHierarchy
from pbo_core.registry import get, names, not_applicable
from pbo_core.segments import SegmentLogitHierarchy, cohort_arrays
from pbo_core.splits import Split, make_split


def sensitivity_methods(study: Study) -> list[str]:
    """Registry models with an estimator that apply to ``study`` (registry order)."""
    return [n for n in names(fits=True) if not_applicable(get(n), study) is None]


def sensitivity_split(
    study: Study, test_fraction: float, seed: int, n_respondents: int, kind: str = "auto"
) -> Split:
    """The split of the Feature sensitivity page: ``kind`` (``"auto"``: what the study's
    shape calls for), ``test_fraction`` of every unit's tasks (or of the respondents)
    held out, the first ``n_respondents`` respondents."""
    n = n_respondents if study.data.respondent is not None else None
    return make_split(study, kind, seed=seed, fraction=test_fraction, respondents=n)


@st.cache_data(show_spinner=False, max_entries=64)
def _baseline_choice(
    token: Any,
    test_fraction: float,
    seed: int,
    n_respondents: int,
    kind: str,
    _study: Study,
) -> str | None:
    split = sensitivity_split(_study, test_fraction, seed, n_respondents, kind)
    usable = [
        n
        for n in sensitivity_methods(_study)
        if get(n).family == "baseline"
        and not_applicable(get(n), _study, new_respondents=split.new_respondents) is None
    ]
    if len(split.units) <= 1:  # personal utilities need respondents
        usable = [n for n in usable if not get(n).respondent_predict]
    return best_baseline(ablation_rows(split, usable, features=[]), seed=seed)


def default_sensitivity_methods(
    study: Study, test_fraction: float, seed: int, n_respondents: int, kind: str = "auto"
) -> tuple[list[str], str | None]:
    """The registry's ``sensitivity`` models and the baseline most accurate on the split."""
    best = _baseline_choice(
        study_token(study), float(test_fraction), int(seed), int(n_respondents), kind, study
    )
    split = sensitivity_split(study, test_fraction, seed, n_respondents, kind)
    out = [
        m
        for m in names(role="sensitivity")
        if not_applicable(get(m), study, new_respondents=split.new_respondents) is None
    ]
    return out + ([best] if best is not None and best not in out else []), best


@st.cache_data(show_spinner=False, max_entries=64)
def _sensitivity(
    token: Any,
    test_fraction: float,
    seed: int,
    n_respondents: int,
    kind: str,
    methods: tuple[str, ...],
    _study: Study,
) -> pd.DataFrame:
    split = sensitivity_split(_study, test_fraction, seed, n_respondents, kind)
    ok = [
        m
        for m in methods
        if not_applicable(get(m), _study, new_respondents=split.new_respondents) is None
    ]
    blocks = summarize_ablation(ablation_rows(split, ok), seed=seed)
    if not blocks:
        return pd.DataFrame()
    table = pd.concat(blocks.values(), ignore_index=True)
    table.attrs["split"] = split.reason
    return table


def sensitivity(
    study: Study,
    test_fraction: float,
    seed: int,
    n_respondents: int,
    kind: str = "auto",
    methods: tuple[str, ...] = ("dt",),
) -> pd.DataFrame:
    """Leave-one-out blocks (one per model, column ``method``) on one split (cached); the
    split's reason in ``attrs["split"]``. Each block's change has a 95 % bootstrap CI over
    respondents (over held-out comparisons for a single unit)."""
    return _sensitivity(
        study_token(study),
        float(test_fraction),
        int(seed),
        int(n_respondents),
        kind,
        tuple(methods),
        study,
    )


@st.cache_resource(show_spinner="Growing the user/item hierarchy...", max_entries=8)
def _hierarchy(
    token: Any,
    n_users: int,
    max_depth: int,
    min_users_leaf: int,
    item_max_depth: int,
    _study: Study,
) -> Any:
    n = min(int(n_users), len(_study.respondents()))
    return UserItemHierarchy(
        max_depth=max_depth, min_users_leaf=min_users_leaf, item_max_depth=item_max_depth
    ).fit(_study, users=np.arange(n))


def hierarchy(
    study: Study, n_users: int, max_depth: int, min_users_leaf: int, item_max_depth: int
) -> Any:
    """User/item hierarchy on the first ``n_users`` respondents (cached)."""
    return _hierarchy(
        study_token(study),
        int(n_users),
        int(max_depth),
        int(min_users_leaf),
        int(item_max_depth),
        study,
    )


@st.cache_resource(show_spinner=False, max_entries=8)
def _hierarchy_view(
    token: Any,
    n_users: int,
    max_depth: int,
    min_users_leaf: int,
    item_max_depth: int,
    _h: Any,
) -> explain.TreeView:
    return explain.hierarchy_view(_h)


def hierarchy_view(
    study: Study, n_users: int, max_depth: int, min_users_leaf: int, item_max_depth: int
) -> explain.TreeView:
    """The drawable hierarchy (user tree, item trees naming their items), cached."""
    h = hierarchy(study, n_users, max_depth, min_users_leaf, item_max_depth)
    return _hierarchy_view(
        study_token(study),
        int(n_users),
        int(max_depth),
        int(min_users_leaf),
        int(item_max_depth),
        h,
    )


@st.cache_resource(show_spinner="Fitting the segment logits...", max_entries=8)
def _segments(
    token: Any, n_users: int, max_depth: int, min_users_leaf: int, _study: Study
) -> SegmentLogitHierarchy:
    n = min(int(n_users), len(_study.respondents()))
    return SegmentLogitHierarchy(max_depth=max_depth, min_users_leaf=min_users_leaf).fit(
        cohort_arrays(_study), np.arange(n), study=_study
    )


def segments(
    study: Study, n_users: int, max_depth: int, min_users_leaf: int
) -> SegmentLogitHierarchy:
    """Parameter-instability user tree with segment logits on the first ``n_users`` (cached)."""
    return _segments(study_token(study), int(n_users), int(max_depth), int(min_users_leaf), study)


def _interval(mean: float, ci: list[float], digits: int = 3) -> str:
    return f"{mean:.{digits}f} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def cold_start_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per variant: held-out accuracy at 0 and at all own tasks, and the paired difference
    to the covariate-interaction logit at 0 tasks (mean [95 % CI] over new respondents)."""
    s = summarize_cohorts(rows)
    out = []
    for v, x in s["variants"].items():
        q = x["tasks_answered"]
        row = {
            "variant": v,
            "family": "tree" if v in TREE_FAMILY else ("baseline" if v in BASELINES else ""),
            "respondents": x["respondents"],
            "0 own tasks": _interval(x["test_acc_mean"][0], x["test_acc_ci95"][0])
            if q and q[0] == 0
            else "",
            f"{q[-1]} own tasks": _interval(x["test_acc_mean"][-1], x["test_acc_ci95"][-1]),
        }
        key = f"{v}_minus_logit-interaction"
        d = s["paired_difference"].get(key)
        if d and 0 in d["tasks_answered"]:
            k = d["tasks_answered"].index(0)
            row["minus interaction logit, 0 tasks"] = _interval(d["mean"][k], d["ci95"][k])
        out.append(row)
    return pd.DataFrame(out).fillna("")


def user_groups(h: Any) -> pd.DataFrame:
    """One row per user group: its rule path, size and item tree summary."""
    t = h.user_tree_
    paths: dict[int, list[str]] = {0: []}
    rows = []
    for node in range(len(t.left)):
        if t.left[node] != -1:
            for child, right in ((t.right[node], True), (t.left[node], False)):
                paths[child] = [*paths[node], h.rule(node, right)]
            continue
        leaf = t.leaf_of_node[node]
        model = h.item_tree(leaf)
        best = min(explain.leaf_summaries(model), key=lambda s: (s.rank, s.leaf))
        rows.append(
            {
                "group": leaf,
                "users": t.n_users[node],
                "who": " AND ".join(paths[node]) or "(all users)",
                "item-tree leaves": model.n_leaves_,
                "favourite leaf": " AND ".join(best.conditions) or "(all items)",
            }
        )
    return pd.DataFrame(rows).sort_values("group").reset_index(drop=True)


@st.cache_data(
    show_spinner="Cross-validating the model shown, the GP and the logit (cached afterwards)...",
    max_entries=64,
)
def _evidence(
    token: Any, respondent: str, model: str, _study: Study, _respondent: Any
) -> tuple[pd.DataFrame, str]:
    table, split = shown_evidence(_study, _respondent, model)
    return table, split.reason


def evidence(study: Study, respondent: Any, model: str = "dt") -> tuple[pd.DataFrame, str]:
    """Held-out evidence (5-fold CV, 95 % CI) of the model shown beside the GP and the
    logit on the data shown (:func:`pbo_core.evaluation.shown_evidence`), and how the
    comparisons were held out (cached)."""
    return _evidence(study_token(study), repr(respondent), model, study, respondent)
