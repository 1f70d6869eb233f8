"""Work computed ahead of any visit: the bundled studies' default views, as background jobs.

After ``python -m dashboard`` prints its ready line it calls :func:`precompute_bundled`:
a thread walks, one job at a time in the background worker (below the server's priority;
a visitor's job takes the other worker, :mod:`dashboard._services.jobs`), through what a
first visit of each study shows: the held-out comparison of the tree models, the winner's
whole-study fit, the sensitivity page's baseline scoring and default ablation; then
SwissMetro's user/item hierarchy and segment logits, and the default result grids of
Convergence and Hierarchy. Results land in the jobs' disk cache (and the grids' Parquet
files), so first visits, and every visit after a restart, find them done. A visitor who
opens a view whose job is still queued or running waits for that same job (its priority
rises), never for a second copy.
"""

from __future__ import annotations

import logging
import threading
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
from pbo_core.registry import get

#: Respondents the Feature sensitivity page averages by default: enough that a large
#: effect is detectable (Train, 60 respondents: 95% CI half-width ~5-7 points, minimum
#: detectable change ~8-10 points; 10 respondents: ~14-18 and ~20-25, so every change was
#: "inside the noise").
SENSITIVITY_RESPONDENTS = 60


def sensitivity_defaults(study: Study) -> tuple[float, int, int, str]:
    """The Feature sensitivity page's opening split: ``(fraction, seed, respondents,
    kind)`` (the study's own split when it has one; else what its shape calls for)."""
    per_resp = is_per_respondent(study)
    has_split = study.extras.get("split") is not None and not per_resp
    n = min(SENSITIVITY_RESPONDENTS, len(study.respondents())) if per_resp else 1
    return 0.2, 0, n, "study" if has_split else "auto"


def _steps(study: Study) -> list[Callable[[], jobs.Job | None]]:
    """A study's first-visit jobs, in the order a visit needs them."""

    def fit() -> jobs.Job | None:
        choice = trees.choice_job(study, jobs.BACKGROUND).result
        if choice is None or get(choice.best).scope != "pooled":
            return None
        return trees.fit_job(study, choice.best, jobs.BACKGROUND)

    split = sensitivity_defaults(study)

    def ablation() -> jobs.Job | None:
        best = analyses.baseline_job(study, *split).result
        methods = analyses.default_sensitivity_methods(study, *split, best)
        return analyses.sensitivity_job(study, *split, tuple(methods))

    steps: list[Callable[[], jobs.Job | None]] = [
        lambda: trees.texts_job(study, None),  # many items: their names
        lambda: trees.choice_job(study, jobs.BACKGROUND),
        fit,
        lambda: analyses.baseline_job(study, *split),
        ablation,
    ]
    return steps


def _background(job: jobs.Job | None) -> None:
    """Wait for a job submitted for the background (ignoring its failure)."""
    if job is None:
        return
    try:
        job.wait()
    except Exception:
        pass


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
            _background(_as_background(_pop_next(todo)))

    threading.Thread(target=walk, name="dtpbo-precompute", daemon=True).start()
    return keys


Step = Callable[[], Any]


def _pop_next(todo: list[tuple[str | None, Step]]) -> Step:
    """Take the walk's next job: the first of the focused study's (:func:`focus`), else
    the first."""
    at = _FOCUS[0] if _FOCUS else None
    i = next((i for i, (k, _) in enumerate(todo) if at is not None and k == at), 0)
    return todo.pop(i)[1]


def _walk_steps(studies: list[tuple[str, Study]]) -> list[tuple[str | None, Step]]:
    """The background walk's jobs in their default order, each with its study's key
    (``None``: no study's): every study's Tree explorer jobs, then every study's
    sensitivity jobs, then SwissMetro's hierarchy, segment logits and cohort curves, then
    the Convergence grids. A study's own jobs keep their order (each needs the one
    before), whichever study goes first."""
    out: list[tuple[str | None, Step]] = []
    for k, study in studies:
        out += [(k, step) for step in _steps(study)[:3]]  # the Tree explorer first
    for k, study in studies:
        out += [(k, step) for step in _steps(study)[3:]]
    swiss = dict(studies).get("swissmetro")
    if swiss is not None:
        n = min(500, len(swiss.respondents()))
        out.append(("swissmetro", lambda: analyses.hierarchy_job(swiss, n, 3, 20, 3)))
        out.append(("swissmetro", lambda: analyses.segments_job(swiss, n, 3, 20)))
    root = results.results_home()
    if results.is_default_root(root):
        for name in results.DEFAULT_GRIDS:
            if results.DEFAULT_GRIDS[name].missing(root):
                key = "swissmetro" if name == "hierarchy-swissmetro" and swiss else None
                out.append((key, partial(results.default_grid_job, name, root, jobs.BACKGROUND)))
    return out


def _as_background(step: Callable[[], Any]) -> Any:
    """Run ``step`` with every job it submits at background priority, once no answer has
    arrived on Live elicitation for a while (:func:`jobs.wait_for_quiet`)."""
    jobs.wait_for_quiet()
    with jobs.submitting_as(jobs.BACKGROUND):
        return step()
