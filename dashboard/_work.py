"""The bodies of the dashboard's jobs: what a worker process computes.

Pages hand anything that can take more than a moment (the held-out comparison of the
tree models, a respondent's evidence, leave-one-out sensitivity, the hierarchy's first
fit, the default result grids, the Convergence page's runs) to
:mod:`dashboard._services.jobs`, which runs it in a worker process
(:mod:`dashboard._workers`, ``spawn``): CPU that must not hold the web server's
interpreter lock while pages are drawn. This module imports no Streamlit and nothing of
``dashboard._services`` (whose package imports the whole app). Every job body takes
``progress(fraction, step)`` and calls it as it goes; the worker's loop sends those
reports back to the server. The job service's cache keys hash this file with
``pbo_core`` (:func:`dashboard._services.jobs.code_version`): results computed by other
job bodies are never read back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# the worker runtime, where dashboard._services.jobs still reads it
from dashboard._workers import niceness, serve, set_priority
from pbo_core import registry
from pbo_core.data import Study
from pbo_core.evaluation import plan_best_baseline, plan_sensitivity, plan_split, sample_text
from pbo_core.experiments.runner import run_grid
from pbo_core.explain import naming
from pbo_core.hierarchy import UserItemHierarchy
from pbo_core.plan import AnalysisPlan
from pbo_core.registry import get, not_applicable
from pbo_core.segments import SegmentLogitHierarchy, cohort_arrays
from pbo_core.splits import Split

__all__ = [
    "best_baseline",
    "formatted_items",
    "grid",
    "hierarchy",
    "item_texts",
    "niceness",
    "ready",
    "segments",
    "sensitivity",
    "sensitivity_split",
    "serve",
    "set_priority",
]

Progress = Callable[[float, str], None]


# ----------------------------------------------------------------------------- warm-up
def ready(*, progress: Progress | None = None) -> bool:
    """``True``: sent to a fresh worker, it makes the worker import this module and the
    models, and compile (or load from numba's disk cache) every kernel a fit uses
    (:func:`pbo_core.registry.warm_up`), before any real job: on a fresh install a first
    job would otherwise compile them, and wait several times longer (docs/speed.md)."""
    registry.warm_up()
    return True


# ----------------------------------------------------------------------------- sensitivity
def sensitivity_split(study: Study, plan: AnalysisPlan) -> Split:
    """The split of the Feature sensitivity page: the analysis plan's sensitivity sample
    (:func:`pbo_core.evaluation.plan_split`), as the command and the report use it."""
    return plan_split(study, plan, sensitivity=True)


def best_baseline(
    study: Study, plan: AnalysisPlan, *, progress: Progress | None = None
) -> str | None:
    """The best baseline on the plan's sensitivity split by ``conjoint-accuracy``'s rule
    (:func:`pbo_core.evaluation.plan_best_baseline`): the baseline the Feature sensitivity
    page ablates by default, as the command and the report do."""

    def report(fraction: float, done: int, step: str) -> None:
        if progress is not None:
            progress(fraction, f"scoring the baselines: {step}")

    return plan_best_baseline(sensitivity_split(study, plan), plan, progress=report)


def _rows_progress(progress: Progress | None, what: str) -> Any:
    if progress is None:
        return None

    def report(done: int, total: int) -> None:
        progress(done / max(1, total), f"{what}: {done} of {total} fits")

    return report


def sensitivity(
    study: Study,
    plan: AnalysisPlan,
    methods: tuple[str, ...],
    *,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Leave-one-out blocks (one per model) on the plan's sensitivity split
    (:func:`pbo_core.evaluation.plan_sensitivity`); the split's reason and sample in
    ``attrs["split"]``."""
    split = sensitivity_split(study, plan)
    ok = [
        m
        for m in methods
        if not_applicable(get(m), study, new_respondents=split.new_respondents) is None
    ]
    blocks, _, split = plan_sensitivity(
        study,
        ok,
        plan,
        progress=_rows_progress(progress, "refitting without each feature"),
    )
    if not blocks:
        return pd.DataFrame()
    table = pd.concat(blocks.values(), ignore_index=True)
    table.attrs["split"] = f"{split.reason}; {sample_text(split)}"
    return table


# ----------------------------------------------------------------------------- hierarchy
def hierarchy(
    study: Study,
    n_users: int,
    max_depth: int,
    min_users_leaf: int,
    item_max_depth: int,
    *,
    progress: Progress | None = None,
) -> Any:
    """User/item hierarchy on the first ``n_users`` respondents."""
    n = min(int(n_users), len(study.respondents()))
    if progress is not None:
        progress(0.0, f"growing the user tree on {n:,} respondents")
    return UserItemHierarchy(
        max_depth=max_depth, min_users_leaf=min_users_leaf, item_max_depth=item_max_depth
    ).fit(study, users=np.arange(n))


def segments(
    study: Study,
    n_users: int,
    max_depth: int,
    min_users_leaf: int,
    *,
    progress: Progress | None = None,
) -> Any:
    """Parameter-instability user tree with segment logits on the first ``n_users``."""
    n = min(int(n_users), len(study.respondents()))
    if progress is not None:
        progress(0.0, f"fitting the segment logits of {n:,} respondents")
    return SegmentLogitHierarchy(max_depth=max_depth, min_users_leaf=min_users_leaf).fit(
        cohort_arrays(study), np.arange(n), study=study
    )


# ----------------------------------------------------------------------------- grids
def grid(
    cells: list[dict[str, Any]],
    fn: Callable[..., pd.DataFrame],
    out_dir: str,
    what: str,
    *,
    steps: int | None = None,
    progress: Progress | None = None,
) -> str:
    """The missing cells of a result grid (one Parquet file each) into ``out_dir``.

    ``steps``: the steps of one run (a benchmark run's queries plus its initial design),
    for a ``fn`` that reports them (``fn(cell, callback=...)``,
    :func:`pbo_core.experiments.bench.run_cell`): the progress then moves within a run
    too, not only from run to run.
    """
    finished = [0]

    def report(done: int, total: int) -> None:
        finished[0] = done
        if progress is not None:
            progress(done / max(1, total), f"{what}: {done} of {total} runs")

    def step(_cell: dict[str, Any], k: int, _rows: Any) -> None:
        if progress is not None and steps:
            total, done = max(1, len(cells)), finished[0]
            frac = min(1.0, (done + min(k + 1, steps) / steps) / total)
            progress(frac, f"{what}: run {done + 1} of {total}, query {k} of {steps - 1}")

    run_grid(
        cells,
        fn,
        out_dir=Path(out_dir),
        progress=report,
        step_hook=step if steps and progress is not None else None,
    )
    return out_dir


# ----------------------------------------------------------------------------- item texts
def formatted_items(data: Any) -> pd.DataFrame:
    """Every item's id and attributes as the pages print them (the Items table's left
    columns)."""
    schema = data.get_schema()
    dec = schema.decode(data.X)
    for f in schema.features:
        dec[f.name] = [f.format_value(v) for v in dec[f.name]]
    dec = dec.rename(columns={f.name: f.display for f in schema.features})
    dec.insert(0, "item", data.ids())
    return dec


def item_texts(data: Any, *, progress: Progress | None = None) -> dict[Any, Any]:
    """The Tree explorer's texts of many items: labels (70 characters), leaf names (44
    and 60) and the formatted attribute table, keyed as ``dashboard._services.trees``
    caches them."""
    out: dict[Any, Any] = {}
    steps = [
        (("labels", 70), lambda: naming.item_labels(data, 70), "labelling the items"),
        (("names", 44), lambda: naming.item_names(data, 44), "naming them for the leaves"),
        (("names", 60), lambda: naming.item_names(data, 60), "naming them for the table"),
        ("attributes", lambda: formatted_items(data), "formatting their attributes"),
    ]
    for k, (key, fn, what) in enumerate(steps):
        if progress is not None:
            progress(k / len(steps), what)
        out[key] = fn()
    return out
