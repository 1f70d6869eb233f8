"""Which tree model is most accurate on a study: the held-out comparison behind a default.

The Tree explorer opens on the tree with the best held-out accuracy on the study. This
module computes that choice: 5-fold cross-validation over whole choice tasks
(:func:`pbo_core.explain.evidence.heldout_accuracy`) of the tree models and the textbook
baselines on the first ``n_respondents`` respondents, the paper's DT fitted per
respondent, the pooled models predicting with each respondent's own utilities.

:func:`choose_and_fit` also fits the winner on the whole study, so a caller can draw it at
once. It imports no user-interface code and takes and returns only picklable objects, so
the dashboard runs it in a separate process (a minute of CPU that must not hold the web
server's interpreter lock while pages are drawn), whose loop is :func:`serve`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Study
from pbo_core.experiments.accuracy import ACCURACY_METHODS, study_kind
from pbo_core.explain.evidence import PerRespondent, heldout_accuracy
from pbo_core.models.dt import DTSurrogate

__all__ = [
    "TreeChoice",
    "applicable",
    "choose_and_fit",
    "compare_trees",
    "ready",
    "serve",
    "study_tasks",
]


@dataclass(frozen=True)
class TreeChoice:
    """Held-out accuracy of the tree models (and baselines) on a study; the winner.

    ``table`` has one row per model: ``key`` (registry key), ``method`` (its label),
    ``train``, ``heldout``, ``ci_low``, ``ci_high``, ``n_heldout``, ``error``.
    """

    best: str
    table: pd.DataFrame
    n_respondents: int
    n_comparisons: int

    def reason(self) -> str:
        """Why ``best`` is the default, in one sentence with its figures."""
        row = self.table.set_index("key").loc[self.best]
        who = (
            f"the first {self.n_respondents} respondents' {self.n_comparisons} comparisons"
            if self.n_respondents
            else f"{self.n_comparisons} comparisons"
        )
        return (
            f"Default: **{row['method']}**, the tree model with the best held-out "
            f"accuracy on this study, {100 * row['heldout']:.1f}% (95% CI "
            f"{100 * row['ci_low']:.1f}–{100 * row['ci_high']:.1f}), 5-fold cross-validation "
            f"over whole choice tasks on {who}; see the Held-out evidence tab."
        )


def study_tasks(study: Study) -> np.ndarray | None:
    """The choice task of every comparison (``study.data.task``), or ``None``."""
    t = study.data.task
    return None if t is None or len(t) != study.data.n_pairs else np.asarray(t)


def applicable(study: Study, keys: Sequence[str]) -> list[str]:
    """The accuracy-registry keys among ``keys`` that apply to ``study`` (order kept)."""
    kind = study_kind(study)
    return [m for m in keys if kind in ACCURACY_METHODS[m].studies]


def compare_trees(
    study: Study,
    trees: Mapping[str, str],
    baselines: Sequence[str],
    n_respondents: int,
) -> TreeChoice:
    """Held-out accuracy (5-fold CV over tasks) of ``trees`` and ``baselines``.

    Parameters
    ----------
    study
        The study; only its first ``n_respondents`` respondents are used (all of a pooled
        study).
    trees
        Tree models, accuracy-registry key -> label; those that do not apply to the
        study are skipped. The winner is the applicable tree with the best held-out mean.
    baselines
        Registry keys of baselines scored beside them (labelled "<key> (baseline)");
        those predicting with respondents' own utilities are skipped on a pooled study.
    n_respondents
        How many respondents (the first ones) the comparison uses.
    """
    data, tasks = study.data, study_tasks(study)
    n_resp = 0
    if data.respondent is not None:
        keep = study.respondents()[:n_respondents]
        mask = np.isin(data.respondent, keep)
        data = data.select_pairs(mask, drop_unused_items=True)
        tasks = tasks[mask] if tasks is not None else None
        n_resp = len(keep)
    fitters: dict[str, Callable[[PreferenceData, np.ndarray | None], Any]] = {}
    by_resp = []
    if data.respondent is None:  # a baseline of respondents' own utilities needs respondents
        baselines = [b for b in baselines if not ACCURACY_METHODS[b].respondent_predict]
    names = [*applicable(study, list(trees)), *baselines]
    for name in names:
        m = ACCURACY_METHODS[name]
        if name == "dt" and data.respondent is not None:  # the paper's DT is per respondent
            fitters[name] = lambda d, t: PerRespondent(DTSurrogate).fit(d)
            by_resp.append(name)
            continue
        fitters[name] = m.fit
        if m.respondent_predict and data.respondent is not None:
            by_resp.append(name)
    table = heldout_accuracy(data, {}, tasks=tasks, fitters=fitters, by_respondent=by_resp)
    table.insert(0, "key", table["method"])
    table["method"] = [trees.get(k, f"{k} (baseline)") for k in table["key"]]
    scored = table[table["key"].isin(list(trees)) & table["heldout"].notna()]
    best = str(scored.loc[scored["heldout"].idxmax(), "key"]) if len(scored) else "dt"
    return TreeChoice(best, table, n_resp, data.n_pairs)


def choose_and_fit(
    study: Study,
    trees: Mapping[str, str],
    baselines: Sequence[str],
    n_respondents: int,
) -> tuple[TreeChoice, Any]:
    """:func:`compare_trees`, then the winner fitted on the whole study.

    Returns ``(choice, model)``; ``model`` is ``None`` when the winner is the paper's DT
    (fitted per respondent by the caller, in milliseconds).
    """
    choice = compare_trees(study, trees, baselines, n_respondents)
    if choice.best == "dt":
        return choice, None
    return choice, ACCURACY_METHODS[choice.best].fit(study.data, study_tasks(study))


def ready() -> bool:
    """``True``: sent to a fresh worker process, it makes the worker import this module
    and what it needs (the models, the accuracy registry) before any real job."""
    return True


def serve(conn: Connection, niceness: int = 19) -> None:
    """The loop of a worker process: run the calls that arrive on ``conn``, one at a time.

    Each message is ``(function, args)`` (both picklable); the answer is ``(True, result)``
    or ``(False, exception)``. Runs at ``niceness`` (lowest CPU priority by default) and
    returns when the other end closes.
    """
    os.nice(niceness)
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
