"""Which tree model is most accurate on a study: the held-out comparison behind a default.

The Tree explorer opens on the tree with the best held-out accuracy on the study. This
module computes that choice with the evaluation core (:func:`pbo_core.evaluation.compare`):
5-fold cross-validation on the split the study's shape calls for
(:func:`pbo_core.splits.auto_kind`: over each respondent's choice tasks, over whole
respondents when they made too few tasks, over the tasks of pooled data), of the
registry's ``explorer`` trees and ``choice_baseline`` baselines, on a bounded sample of
respondents (:func:`choice_split`).

:func:`choose_and_fit` also fits the winner on the whole study, so a caller can draw it at
once. It imports no user-interface code and takes and returns only picklable objects, so
the dashboard runs it in a separate process (CPU that must not hold the web server's
interpreter lock while pages are drawn), whose loop is :func:`serve`.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import pandas as pd

from pbo_core.data import Study
from pbo_core.evaluation import compare
from pbo_core.registry import get, names, not_applicable
from pbo_core.splits import Split, make_split

__all__ = [
    "CHOICE_COMPARISONS",
    "CHOICE_RESPONDENTS",
    "TreeChoice",
    "applicable",
    "choice_split",
    "choose_and_fit",
    "compare_trees",
    "ready",
    "serve",
]

#: Respondents of a task split that the comparison uses (the first N).
CHOICE_RESPONDENTS = 30
#: About this many comparisons at most in a respondent or pooled split (cost bound).
CHOICE_COMPARISONS = 3000


@dataclass(frozen=True)
class TreeChoice:
    """Held-out accuracy of the tree models (and baselines) on a study; the winner.

    ``table`` is :func:`pbo_core.evaluation.evidence_table`: one row per model, ``key``
    (registry name), ``method`` (its label), ``family``, ``train``, ``heldout``,
    ``ci_low``, ``ci_high``, ``n_heldout``, ``error``. ``split`` says how comparisons were
    held out (one sentence).
    """

    best: str
    table: pd.DataFrame
    n_respondents: int
    n_comparisons: int
    split: str = ""

    def reason(self) -> str:
        """Why ``best`` is the default, in one sentence with its figures."""
        row = self.table.set_index("key").loc[self.best]
        who = (
            f"{self.n_respondents} respondents' {self.n_comparisons} comparisons"
            if self.n_respondents
            else f"{self.n_comparisons} comparisons"
        )
        return (
            f"Default: {row['method']}, the tree model with the best held-out accuracy on "
            f"this study, {100 * row['heldout']:.1f}% (95% CI {100 * row['ci_low']:.1f}–"
            f"{100 * row['ci_high']:.1f}), on {who}; {self.split}. See the Held-out "
            "evidence tab."
        )


def applicable(study: Study, keys: Sequence[str]) -> list[str]:
    """The registry names among ``keys`` that can be fitted on ``study`` (order kept)."""
    return [m for m in keys if not_applicable(get(m), study) is None]


def choice_split(study: Study, n_respondents: int = CHOICE_RESPONDENTS) -> Split:
    """5-fold cross-validation on the split the study's shape calls for, on a bounded
    sample: the first ``n_respondents`` respondents of a task split; as many respondents
    as make about :data:`CHOICE_COMPARISONS` comparisons of a respondent split."""
    probe = make_split(study, "auto")
    if probe.kind == "tasks":
        return make_split(study, "tasks", n_folds=5, respondents=n_respondents)
    if probe.kind == "respondents":
        per = study.data.n_pairs / max(1, len(study.respondents()))
        n = max(10, int(CHOICE_COMPARISONS / max(per, 1.0)))
        return make_split(study, "respondents", n_folds=5, respondents=n)
    if probe.kind == "pairs":  # Sushi: 5 folds of every user's comparisons
        return make_split(study, "tasks", n_folds=5, respondents=n_respondents)
    return make_split(study, "pooled", n_folds=5)


def compare_trees(
    study: Study,
    trees: Sequence[str] | None = None,
    baselines: Sequence[str] | None = None,
    n_respondents: int = CHOICE_RESPONDENTS,
) -> TreeChoice:
    """Held-out accuracy (5-fold CV, :func:`choice_split`) of ``trees`` and ``baselines``.

    Parameters
    ----------
    study
        The study.
    trees
        Tree models (registry names; default the ``explorer`` role); those that do not
        apply to the study are skipped. The winner is the tree with the best held-out
        mean.
    baselines
        Baselines scored beside them (default the ``choice_baseline`` role); those with
        personal utilities are skipped when the split has a single unit.
    n_respondents
        Respondents of a task split (the first ones).
    """
    trees = list(trees if trees is not None else names(role="explorer"))
    base = list(baselines if baselines is not None else names(role="choice_baseline"))
    split = choice_split(study, n_respondents)
    if len(split.units) <= 1:
        base = [b for b in base if not get(b).respondent_predict]
    models = [*applicable(study, trees), *[b for b in base if b not in trees]]
    table, best = compare(split, models)
    used = split.fold != -1
    n_resp = 0 if study.data.respondent is None else len(split.units)
    if best is None:
        best = "dt"
    return TreeChoice(best, table, n_resp, int(used.sum()), split.reason)


def choose_and_fit(
    study: Study,
    trees: Sequence[str] | None = None,
    baselines: Sequence[str] | None = None,
    n_respondents: int = CHOICE_RESPONDENTS,
) -> tuple[TreeChoice, Any]:
    """:func:`compare_trees`, then the winner fitted on the whole study.

    Returns ``(choice, model)``; ``model`` is ``None`` when the winner is fitted per
    respondent (the paper's DT: by the caller, in milliseconds).
    """
    choice = compare_trees(study, trees, baselines, n_respondents)
    spec = get(choice.best)
    if spec.scope == "respondent":
        return choice, None
    return choice, spec.make().fit(study.data)


def ready() -> bool:
    """``True``: sent to a fresh worker process, it makes the worker import this module
    and what it needs (the models, the accuracy registry) before any real job."""
    return True


def serve(conn: Connection, niceness: int = 19) -> None:
    """The loop of a worker process: run the calls that arrive on ``conn``, one at a time.

    Each message is ``(function, args)`` (both picklable); the answer is ``(True, result)``
    or ``(False, exception)``. Runs at ``niceness`` (lowest CPU priority by default) and
    returns when the other end closes; when the parent process is gone (a server ended
    mid-comparison) it ends within a second instead of finishing the call.
    """
    os.nice(niceness)
    parent, done = multiprocessing.parent_process(), threading.Event()
    if parent is not None:  # a worker process (not a thread of the caller's)

        def _orphaned() -> None:  # a daemon thread: the call in progress may take a minute
            parent.join()  # returns when the parent process is gone (its sentinel closes)
            if not done.is_set():
                os._exit(0)

        threading.Thread(target=_orphaned, name="parent-watch", daemon=True).start()
    try:
        while True:
            try:
                fn, args = conn.recv()
            except (EOFError, OSError):
                return
            try:
                answer = (True, fn(*args))
            except Exception as exc:  # sent back and re-raised by the caller
                answer = (False, exc)
            conn.send(answer)
    finally:
        done.set()
