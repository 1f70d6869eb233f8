"""Folds and hold-outs of comparisons: the one place that decides which comparisons go together.

Comparisons are never split one by one when they belong together: the comparisons one
choice produced (a *task*, :attr:`pbo_core.data.PreferenceData.task`) always fall on the
same side, and so do a respondent's comparisons when whole respondents are held out.
Everything that cross-validates -- the models' inner CV of their prior strengths and tree
depths (:mod:`pbo_core.models.linear`, :mod:`~pbo_core.models.linear_leaves`,
:mod:`~pbo_core.models.bradley_terry`) and the held-out evaluation
(:mod:`pbo_core.evaluation`) -- draws its folds here.

``task_folds``
    Folds of whole tasks dealt round-robin *within* each respondent (every respondent with
    at least ``n_folds`` tasks has tasks in every fold).
``group_folds``
    Folds of whole groups (e.g. respondents), dealt round-robin over the shuffled groups.
``holdout_tasks``
    A hold-out of ``n_test`` (or a fraction of) each respondent's tasks.
``holdout_groups``
    A hold-out of a fraction of whole groups (respondents).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pbo_core.data import PreferenceData

__all__ = [
    "group_folds",
    "holdout_groups",
    "holdout_tasks",
    "pair_tasks",
    "task_folds",
]


def pair_tasks(data: PreferenceData) -> np.ndarray:
    """The task id of every comparison (``data.task``; one task per comparison without)."""
    return data.task if data.task is not None else np.arange(data.n_pairs)


def task_folds(
    n_folds: int,
    rng: np.random.Generator,
    tasks: np.ndarray,
    respondent: np.ndarray | None = None,
) -> np.ndarray:
    """Fold (``0 .. n_folds-1``) of every comparison; whole tasks per fold, within respondents.

    The distinct tasks of each respondent are shuffled and dealt round-robin, so every
    respondent with at least ``n_folds`` tasks has tasks in every fold. Respondents with
    fewer tasks get fewer folds (some folds hold none of their comparisons).
    """
    tasks = np.asarray(tasks)
    resp = np.zeros(len(tasks), dtype=np.int64) if respondent is None else np.asarray(respondent)
    _, r_code = np.unique(resp, return_inverse=True)
    _, t_code = np.unique(tasks, return_inverse=True)
    key = r_code.astype(np.int64) * (int(t_code.max(initial=0)) + 1) + t_code
    uniq, inv = np.unique(key, return_inverse=True)
    owner = uniq // (int(t_code.max(initial=0)) + 1)
    fold_of_task = np.empty(len(uniq), dtype=np.int64)
    for r in np.unique(owner):
        idx = np.flatnonzero(owner == r)
        fold_of_task[rng.permutation(idx)] = np.arange(len(idx)) % n_folds
    return fold_of_task[inv.reshape(-1)]


def group_folds(n_folds: int, rng: np.random.Generator, groups: np.ndarray) -> np.ndarray:
    """Fold of every comparison with whole ``groups`` (e.g. respondents) per fold.

    The distinct groups are shuffled and dealt round-robin (fold sizes differ by at most
    one group); fewer groups than folds give fewer folds.
    """
    _, inv = np.unique(np.asarray(groups), return_inverse=True)
    inv = inv.reshape(-1)
    n = int(inv.max(initial=-1)) + 1
    fold_of_group = np.empty(n, dtype=np.int64)
    fold_of_group[rng.permutation(n)] = np.arange(n) % max(1, int(n_folds))
    return fold_of_group[inv]


def holdout_tasks(
    tasks: np.ndarray,
    rng: np.random.Generator,
    *,
    n_test: int | None = None,
    fraction: float | None = None,
) -> np.ndarray | None:
    """Test mask over one respondent's comparisons: ``n_test`` (or ``fraction`` of) tasks.

    At least one task is held out and one kept; ``None`` when fewer than two tasks exist,
    or when ``n_test`` tasks would leave none to train on.
    """
    uniq = np.unique(np.asarray(tasks))
    if len(uniq) < 2:
        return None
    if n_test is None:
        if fraction is None or not 0.0 < float(fraction) < 1.0:
            raise ValueError(f"fraction must be in (0, 1), got {fraction}")
        n_test = min(len(uniq) - 1, max(1, round(float(fraction) * len(uniq))))
    elif len(uniq) <= n_test:
        return None
    held = rng.choice(uniq, size=int(n_test), replace=False)
    return np.isin(tasks, held)


def holdout_groups(
    groups: np.ndarray, rng: np.random.Generator, fraction: float
) -> tuple[np.ndarray, np.ndarray]:
    """Hold out ``fraction`` of the distinct ``groups`` (at least one, never all).

    Returns ``(held, mask)``: the held-out group ids (in order of first appearance) and the
    test mask over the comparisons.
    """
    g = np.asarray(groups)
    _, first = np.unique(g, return_index=True)
    ids = g[np.sort(first)]
    if len(ids) < 2:
        raise ValueError("at least two groups are needed to hold whole groups out")
    n_test = min(len(ids) - 1, max(1, round(float(fraction) * len(ids))))
    held = ids[sorted(rng.choice(len(ids), size=n_test, replace=False))]
    return held, np.isin(g, held)
