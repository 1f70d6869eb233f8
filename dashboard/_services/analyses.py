"""Feature sensitivity, the user/item hierarchy and its segment logits (cached)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard._services.studies import study_token
from pbo_core import explain
from pbo_core.data import Study
from pbo_core.experiments.accuracy import ACCURACY_METHODS, study_kind
from pbo_core.experiments.cohorts import (
    BASELINES,
    TREE_FAMILY,
    summarize_swissmetro_cohorts,
)
from pbo_core.experiments.sensitivity import (
    ablation_rows,
    best_baseline,
    fraction_split,
    summarize_ablation,
)
from pbo_core.explain.evidence import respondent_evidence
from pbo_core.hierarchy import UserItemHierarchy
from pbo_core.segments import SegmentLogitHierarchy, cohort_arrays

#: Models the sensitivity page ablates by default, before the best baseline.
SENSITIVITY_TREES = ("dt", "dt-linear")


def sensitivity_methods(study: Study) -> list[str]:
    """Accuracy methods of the registry that apply to ``study`` (registry order)."""
    kind = study_kind(study)
    return [n for n, m in ACCURACY_METHODS.items() if kind in m.studies]


@st.cache_data(show_spinner=False, max_entries=64)
def _baseline_choice(
    token: Any,
    test_fraction: float,
    seed: int,
    n_respondents: int,
    use_study_split: bool,
    _study: Study,
) -> str | None:
    split = fraction_split(
        _study,
        test_fraction=test_fraction,
        seed=seed,
        n_respondents=n_respondents,
        use_study_split=use_study_split,
    )
    names = [n for n in sensitivity_methods(_study) if ACCURACY_METHODS[n].family == "baseline"]
    if _study.data.respondent is None:  # per-respondent baselines need respondents
        names = [n for n in names if not ACCURACY_METHODS[n].respondent_predict]
    return best_baseline(ablation_rows(split, names, features=[]), seed=seed)


def default_sensitivity_methods(
    study: Study, test_fraction: float, seed: int, n_respondents: int, use_study_split: bool
) -> tuple[list[str], str | None]:
    """The paper DT, ``dt-linear`` and the baseline most accurate on the same split."""
    best = _baseline_choice(
        study_token(study),
        float(test_fraction),
        int(seed),
        int(n_respondents),
        bool(use_study_split),
        study,
    )
    have = sensitivity_methods(study)
    out = [m for m in SENSITIVITY_TREES if m in have]
    return out + ([best] if best is not None and best not in out else []), best


@st.cache_data(show_spinner=False, max_entries=64)
def _sensitivity(
    token: Any,
    test_fraction: float,
    seed: int,
    n_respondents: int,
    use_study_split: bool,
    methods: tuple[str, ...],
    _study: Study,
) -> pd.DataFrame:
    split = fraction_split(
        _study,
        test_fraction=test_fraction,
        seed=seed,
        n_respondents=n_respondents,
        use_study_split=use_study_split,
    )
    blocks = summarize_ablation(ablation_rows(split, methods), seed=seed)
    if not blocks:
        return pd.DataFrame()
    return pd.concat(blocks.values(), ignore_index=True)


def sensitivity(
    study: Study,
    test_fraction: float,
    seed: int,
    n_respondents: int,
    use_study_split: bool,
    methods: tuple[str, ...] = ("dt",),
) -> pd.DataFrame:
    """Leave-one-out blocks (one per method, column ``method``) on one split (cached).

    The split holds out ``test_fraction`` of each of the first ``n_respondents``
    respondents' choice tasks (:func:`pbo_core.experiments.sensitivity.fraction_split`;
    pooled models are fitted on those respondents only); each block's change has a 95 %
    bootstrap CI over respondents (over test comparisons for a pooled study).
    """
    return _sensitivity(
        study_token(study),
        float(test_fraction),
        int(seed),
        int(n_respondents),
        bool(use_study_split),
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
    s = summarize_swissmetro_cohorts(rows)
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
    show_spinner="Cross-validating the tree, the GP and the logit (up to a minute for "
    "large pooled studies; cached afterwards)...",
    max_entries=64,
)
def _evidence(
    token: Any,
    respondent: str,
    max_depth: int | None,
    min_samples_split: int,
    straddlers: str,
    _study: Study,
    _respondent: Any,
) -> pd.DataFrame:
    return respondent_evidence(
        _study,
        _respondent,
        max_depth=max_depth,
        min_samples_split=min_samples_split,
        straddlers=straddlers,
    )


def evidence(
    study: Study,
    respondent: Any,
    *,
    max_depth: int | None = None,
    min_samples_split: int = 1,
    straddlers: str = "discard",
) -> pd.DataFrame:
    """Training and 5-fold held-out accuracy (95 % CI) of the DT, GP and logit (cached)."""
    return _evidence(
        study_token(study),
        repr(respondent),
        max_depth,
        int(min_samples_split),
        straddlers,
        study,
        respondent,
    )
