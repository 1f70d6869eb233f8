"""Work computed ahead of any visit: the bundled studies' default views, as background jobs.

After ``python -m dashboard`` prints its ready line it calls :func:`precompute_bundled`:
a thread walks, one job at a time in the background worker (below the server's priority;
a visitor's job takes the other worker, :mod:`dashboard._services.jobs`), through what a
first visit of each study shows: the held-out comparison of the tree models, the
winner's whole-study fit, the sensitivity page's default ablation (the analysis plan's);
then
SwissMetro's user/item hierarchy and segment logits, and the default result grids of
Convergence and Hierarchy. Results land in the jobs' disk cache (and the grids' Parquet
files), so first visits, and every visit after a restart, find them done. A visitor who
opens a view whose job is still queued or running waits for that same job (its priority
rises), never for a second copy; the walk does not wait for such a job: the background
worker takes the next one meanwhile. The study a visitor looks at goes first
(:func:`focus`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from dashboard._services import analyses, jobs, results, trees
from dashboard._services.studies import (
    _DropMessage,
    dataset_of,
    get_study,
    is_per_respondent,
    study_statuses,
)
from pbo_core.data import Study
from pbo_core.plan import AnalysisPlan
from pbo_core.registry import get


def sensitivity_defaults(study: Study) -> AnalysisPlan:
    """The Feature sensitivity page's opening plan: the study's analysis plan (its own
    train/test split when it has one and no respondents)."""
    has_split = study.extras.get("split") is not None and not is_per_respondent(study)
    return analyses.sensitivity_plan(study, kind="study" if has_split else None)


#: What a step returns when it needs a job that is not done yet: the walk goes on with
#: other steps and tries it again later.
BLOCKED = object()

Step = Callable[[], Any]


def _steps(study: Study) -> tuple[list[Step], list[Step]]:
    """A study's first-visit jobs, in the order a visit needs them: the Tree explorer's
    (item names, the held-out comparison, the whole-study fit of the richest pooled tree
    (the registry's last pooled explorer model: the linear-leaf tree, the comparison's
    winner on every bundled study) beside the comparison, then the winner's fit when it is
    another pooled tree) and the Feature sensitivity page's (the scoring of the baselines
    that names the best, then the ablation of each of the plan's sensitivity models, one
    job each as the page submits them). Each step returns its job, ``None``, or
    :data:`BLOCKED` while the job it needs (the comparison, the scoring) is not done.
    Fitting every pooled tree beside the comparison was tried: the Pooled DT's fit (4 s
    alone on Electricity, 12.6 s in the background during the tour) took the cores the
    visitor's jobs needed."""

    def fit() -> Any:
        choice = trees.choice_job(study, jobs.BACKGROUND)
        if not choice.done:
            return BLOCKED
        if choice.result is None or get(choice.result.best).scope != "pooled":
            return None
        return trees.fit_job(study, choice.result.best, jobs.BACKGROUND)

    pooled = [m for m in trees.tree_models(study) if get(m).scope == "pooled"]
    explorer: list[Step] = [
        lambda: trees.texts_job(study, None),  # many items: their names
        lambda: trees.choice_job(study, jobs.BACKGROUND),
        *([partial(trees.fit_job, study, pooled[-1], jobs.BACKGROUND)] if pooled else []),
        fit,
    ]
    plan = sensitivity_defaults(study)

    def ablate(k: int) -> Any:  # the k-th default model, once the best baseline is known
        best = analyses.best_baseline_job(study, plan)
        if not best.done:
            return BLOCKED
        methods = analyses.default_sensitivity_methods(study, plan, best.result)
        return analyses.sensitivity_job(study, plan, methods[k]) if k < len(methods) else None

    n = len(analyses.default_sensitivity_methods(study, plan)) + 1  # + the best baseline
    sensitivity: list[Step] = [
        lambda: analyses.best_baseline_job(study, plan),
        *(partial(ablate, k) for k in range(n)),
    ]
    return explorer, sensitivity


def _background(job: Any) -> None:
    """Wait for a job the walk submitted (ignoring its failure), until it is done or a
    visitor waits for it (it then runs at the visitor's priority, and the background
    worker, or the front one after a swap of roles, takes the walk's next job)."""
    if not isinstance(job, jobs.Job):
        return
    while job.priority >= jobs.BACKGROUND and not job.done:
        time.sleep(0.1)


#: The study a visitor looked at last (:func:`focus`): the walk does its jobs next.
_FOCUS: list[str] = []


def focus(key: str | None) -> None:
    """A visitor is looking at study ``key``: the background walk computes that study's
    remaining first-visit jobs next (its sensitivity while the visitor reads its tree,
    SwissMetro's hierarchy and cohort curves while they read its sensitivity), before
    the other studies'. With several visitors the last study looked at goes first."""
    if key:
        _FOCUS[:] = [str(key)]


def precompute_bundled() -> list[str]:
    """Queue, in a background thread, the first-visit jobs of every study usable without
    a data location (the bundled ones and the user's own imported studies), then
    SwissMetro's hierarchy and the default result grids; returns the study keys. The
    walk takes the jobs in that order, except that the study a visitor looks at
    (:func:`focus`) goes first."""
    log = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    quiet = _DropMessage("missing ScriptRunContext")
    keys = [s.key for s in study_statuses() if s.usable and dataset_of(s.key) is None]

    def load(key: str) -> Study | None:
        log.addFilter(quiet)
        try:
            return get_study(key)[0]
        except Exception:
            return None
        finally:
            log.removeFilter(quiet)

    def walk() -> None:
        studies = [(k, load(k)) for k in keys]
        todo = _walk_steps([(k, s) for k, s in studies if s is not None])
        while todo:
            jobs.wait_for_quiet()
            if not _run_next(todo):
                time.sleep(0.25)  # every step waits for a visitor's job

    threading.Thread(target=walk, name="dtpbo-precompute", daemon=True).start()
    return keys


def _order(todo: list[tuple[str | None, Step]]) -> list[int]:
    """Indices of ``todo`` in the order the walk tries them: the focused study's steps
    (:func:`focus`) first, then the rest, each in the list's order."""
    at = _FOCUS[0] if _FOCUS else None
    mine = [i for i, (k, _) in enumerate(todo) if at is not None and k == at]
    return mine + [i for i in range(len(todo)) if i not in set(mine)]


def _run_next(todo: list[tuple[str | None, Step]]) -> bool:
    """Run the first step of :func:`_order` that is not :data:`BLOCKED`, at background
    priority, and wait for its job (:func:`_background`); ``False`` when every step is
    blocked."""
    for i in _order(todo):
        with jobs.submitting_as(jobs.BACKGROUND):
            job = todo[i][1]()
        if job is BLOCKED:
            continue
        del todo[i]
        _background(job)
        return True
    return False


def _walk_steps(studies: list[tuple[str, Study]]) -> list[tuple[str | None, Step]]:
    """The background walk's jobs in their default order, each with its study's key
    (``None``: no study's): every study's Tree explorer jobs, then SwissMetro's hierarchy,
    segment logits and cohort curves (the longest first visit, 9 s of work alone), then
    every study's sensitivity jobs, then the other default grids (Convergence). A study's
    own jobs keep their order (each needs the one before), whichever study goes first:
    a visitor entering SwissMetro finds its hierarchy page computed while reading its
    tree, and its sensitivity (5 s of work) computed on demand if the walk is not there
    yet."""
    out: list[tuple[str | None, Step]] = []
    per_study = [(k, _steps(study)) for k, study in studies]
    for k, (explorer, _) in per_study:  # the Tree explorer first, every study
        out += [(k, step) for step in explorer]
    swiss = dict(studies).get("swissmetro")
    root = results.results_home()
    grids = [
        name
        for name in results.DEFAULT_GRIDS
        if results.is_default_root(root) and results.DEFAULT_GRIDS[name].missing(root)
    ]
    if swiss is not None:
        n = min(500, len(swiss.respondents()))
        out.append(("swissmetro", lambda: analyses.hierarchy_job(swiss, n, 3, 20, 3)))
        out.append(("swissmetro", lambda: analyses.segments_job(swiss, n, 3, 20)))
        if "hierarchy-swissmetro" in grids:
            grids.remove("hierarchy-swissmetro")
            out.append(
                (
                    "swissmetro",
                    partial(
                        results.default_grid_job, "hierarchy-swissmetro", root, jobs.BACKGROUND
                    ),
                )
            )
    for k, (_, sensitivity) in per_study:
        out += [(k, step) for step in sensitivity]
    for name in grids:
        out.append((None, partial(results.default_grid_job, name, root, jobs.BACKGROUND)))
    return out
