"""Feature sensitivity, the user/item hierarchy and its segment logits: jobs (see
:mod:`dashboard._services.jobs`) whose results are kept on disk per study version."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import _work
from dashboard._services import jobs
from dashboard._services.trees import fingerprint
from pbo_core import explain
from pbo_core.data import Study
from pbo_core.evaluation import plan_sensitivity_models, sample_text
from pbo_core.experiments.cohorts import (
    cohort_cell_grid,
    cohort_size,
    estimate_text,
    summarize_cohorts,
)
from pbo_core.explain.baseline import choice_tree_fit, segment_table
from pbo_core.plan import AnalysisPlan, plan_of
from pbo_core.registry import COHORT_ARMS, get, names, not_applicable
from pbo_core.rules import describe_path
from pbo_core.splits import Split


def sensitivity_methods(study: Study) -> list[str]:
    """Registry models with an estimator that apply to ``study`` (registry order): what
    the Feature sensitivity page offers."""
    return [n for n in names(fits=True) if not_applicable(get(n), study) is None]


def sensitivity_plan(
    study: Study,
    *,
    seed: int | None = None,
    n_respondents: int | None = None,
    kind: str | None = None,
    test_tasks: int | None = None,
) -> AnalysisPlan:
    """The study's analysis plan (:func:`pbo_core.plan.plan_of`) with the page's controls
    applied (``None``: the plan's own value); ``n_respondents`` sets the sensitivity
    sample (the first N)."""
    plan = plan_of(study)
    over: dict[str, Any] = {}
    if seed is not None:
        over["seed"] = int(seed)
    if kind is not None and kind != "auto":
        over["split"] = kind
    if test_tasks is not None:
        over["test_tasks"] = int(test_tasks)
    if n_respondents is not None:
        over["sensitivity_respondents"] = int(n_respondents)
    return replace(plan, **over)


def sensitivity_split(study: Study, plan: AnalysisPlan) -> Split:
    """The split of the Feature sensitivity page (:func:`dashboard._work.sensitivity_split`)."""
    return _work.sensitivity_split(study, plan)


def sample_size(study: Study, plan: AnalysisPlan) -> int:
    """Respondents of the plan's sensitivity sample (1 for pooled data)."""
    return max(1, len(sensitivity_split(study, plan).units))


def _sample_words(study: Study, plan: AnalysisPlan) -> str:
    return sample_text(sensitivity_split(study, plan))


def _who(study: Study, n_respondents: int) -> str:
    if study.data.respondent is None:
        return f"{study.data.n_pairs:,} comparisons"
    n = min(int(n_respondents), len(study.respondents()))
    return f"the first {n:,} respondent" + ("" if n == 1 else "s")


def best_baseline_job(study: Study, plan: AnalysisPlan) -> jobs.Job:
    """The best baseline on the plan's sensitivity split by ``conjoint-accuracy``'s rule
    (a job; :func:`dashboard._work.best_baseline`)."""
    return jobs.service().submit(
        jobs.job_key("best-baseline", fingerprint(study), repr(plan.to_dict())),
        f"Scoring the baselines on {_sample_words(study, plan)} (the best is ablated)",
        _work.best_baseline,
        study,
        plan,
        estimate=4.0,
    )


def default_sensitivity_methods(
    study: Study, plan: AnalysisPlan, best: str | None = None
) -> list[str]:
    """The plan's sensitivity models (:func:`pbo_core.evaluation.plan_sensitivity_models`:
    the registry's ``sensitivity`` trees, ``best``, the best baseline on the split
    (:func:`best_baseline_job`) and the plan's baseline): the one rule the command and the
    report use."""
    return plan_sensitivity_models(sensitivity_split(study, plan), plan, best)


def sensitivity_job(study: Study, plan: AnalysisPlan, method: str) -> jobs.Job:
    """Leave-one-out blocks of one model (column ``method``) on the plan's sensitivity
    split (a job); the split's reason in ``attrs["split"]``. Each block's change has a
    95 % bootstrap CI over respondents (over held-out comparisons for a single unit),
    seeded per block, so the jobs of several models give the blocks of one run over all
    of them (:func:`sensitivity_blocks`)."""
    return jobs.service().submit(
        jobs.job_key("sensitivity", fingerprint(study), repr(plan.to_dict()), (method,)),
        f"Refitting the {get(method).label} without each feature on {_sample_words(study, plan)}",
        _work.sensitivity,
        study,
        plan,
        (method,),
        estimate=2.0 if get(method).family == "baseline" else 6.0,
    )


def sensitivity_blocks(study: Study, plan: AnalysisPlan, methods: Sequence[str]) -> list[jobs.Job]:
    """One :func:`sensitivity_job` per model: the two workers can refit two models at
    once; their tables, concatenated in ``methods`` order, are the blocks of one run over
    all the models."""
    return [sensitivity_job(study, plan, m) for m in methods]


def hierarchy_job(
    study: Study, n_users: int, max_depth: int, min_users_leaf: int, item_max_depth: int
) -> jobs.Job:
    """User/item hierarchy on the first ``n_users`` respondents (a job)."""
    args = (int(n_users), int(max_depth), int(min_users_leaf), int(item_max_depth))
    return jobs.service().submit(
        jobs.job_key("hierarchy", fingerprint(study), *args),
        f"Growing the user/item hierarchy on {_who(study, n_users)}",
        _work.hierarchy,
        study,
        *args,
        estimate=5.0,
    )


def segments_job(study: Study, n_users: int, max_depth: int, min_users_leaf: int) -> jobs.Job:
    """Parameter-instability user tree with segment logits on the first ``n_users`` (a job)."""
    args = (int(n_users), int(max_depth), int(min_users_leaf))
    return jobs.service().submit(
        jobs.job_key("segments", fingerprint(study), *args),
        f"Fitting the segment logits on {_who(study, n_users)}",
        _work.segments,
        study,
        *args,
        estimate=5.0,
    )


def choice_tree_job(study: Study) -> jobs.Job:
    """The choice-model tree (``mnl-tree``) fitted on every choice of ``study`` as its
    analysis plan sets it (a job; the key's fingerprint covers the plan)."""
    return jobs.service().submit(
        jobs.job_key("choice-tree", fingerprint(study)),
        f"Growing the choice-model tree on {_who(study, len(study.respondents()))}",
        choice_tree_fit,
        study,
        estimate=60.0,
    )


@st.cache_resource(show_spinner=False, max_entries=8)
def _choice_tree_parts(
    key: str, _model: Any, money: str | None, time: str | None
) -> tuple[explain.TreeView, pd.DataFrame]:
    return explain.choice_tree_view(_model, money, time), segment_table(_model, money, time)


def choice_tree_parts(
    job: jobs.Job, money: str | None, time: str | None
) -> tuple[explain.TreeView, pd.DataFrame]:
    """The drawable tree and the segment table of a finished :func:`choice_tree_job`, with
    the value of time of ``money`` and ``time`` (cached)."""
    return _choice_tree_parts(job.key, job.result, money, time)


@st.cache_data(show_spinner=False, max_entries=16)
def _grid_estimate(key: str, _study: Study) -> str:
    n = len(_study.respondents())
    # the hierarchy command's default grid (python -m pbo_core.experiments hierarchy)
    cells = cohort_cell_grid(n, cohort_size(n), study=key)
    return estimate_text(cells, _study)


def hierarchy_grid_estimate(study: Study) -> str:
    """The pre-run estimate of the cohort grid of ``python -m pbo_core.experiments
    hierarchy --study KEY`` on every respondent of ``study`` (the command prints the same
    sentence before it starts; :func:`pbo_core.experiments.cohorts.estimate_text`)."""
    return _grid_estimate(fingerprint(study), study)


@st.cache_resource(show_spinner=False, max_entries=8)
def _hierarchy_view(key: str, _h: Any) -> explain.TreeView:
    return explain.hierarchy_view(_h)


def hierarchy_view(job: jobs.Job) -> explain.TreeView:
    """The drawable hierarchy of a finished :func:`hierarchy_job` (cached)."""
    return _hierarchy_view(job.key, job.result)


def _interval(mean: float, ci: list[float], digits: int = 3) -> str:
    return f"{mean:.{digits}f} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def cold_start_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per variant: its family (the arm's, :data:`pbo_core.registry.COHORT_ARMS`), held-out
    accuracy at 0 and at all own tasks, and the paired difference to the
    covariate-interaction logit at 0 tasks (mean [95 % CI] over new respondents)."""
    s = summarize_cohorts(rows)
    out = []
    for v, x in s["variants"].items():
        q = x["tasks_answered"]
        row = {
            "variant": v,
            "family": COHORT_ARMS[v].family if v in COHORT_ARMS else "",
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
    steps: dict[int, list[tuple[int, float, frozenset[int], bool]]] = {0: []}
    rows = []
    for node in range(len(t.left)):
        sp = t.split[node]
        if t.left[node] != -1 and sp is not None:
            for child, right in ((t.right[node], True), (t.left[node], False)):
                steps[child] = [*steps[node], (sp.column, sp.threshold, sp.right, right)]
            continue
        leaf = t.leaf_of_node[node]
        model = h.item_tree(leaf)
        best = min(explain.leaf_summaries(model), key=lambda s: (s.rank, s.leaf))
        rows.append(
            {
                "group": leaf,
                "users": t.n_users[node],
                "who": " AND ".join(describe_path(h.user_schema_, steps[node])) or "(all users)",
                "item-tree leaves": model.n_leaves_,
                "favourite leaf": " AND ".join(best.conditions) or "(all items)",
            }
        )
    return pd.DataFrame(rows).sort_values("group").reset_index(drop=True)
