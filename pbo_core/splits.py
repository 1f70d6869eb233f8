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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Study

__all__ = [
    "ALWAYS_TRAIN",
    "SPLIT_KINDS",
    "UNUSED",
    "Split",
    "auto_kind",
    "group_folds",
    "holdout_groups",
    "holdout_tasks",
    "make_split",
    "pair_tasks",
    "respondent_holdout",
    "task_folds",
    "tasks_per_respondent",
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


def respondent_holdout(
    study: Study, respondent: Any, n_test_tasks: int, seed: int
) -> tuple[PreferenceData, np.ndarray] | None:
    """One respondent's data (their items only) and test mask: ``n_test_tasks`` of their
    tasks held out, drawn with ``default_rng([seed, index])`` (``index``: the respondent's
    position in ``study.respondents()``) as a ``tasks`` split draws them; ``None`` when the
    respondent has no more tasks than that."""
    rows = study.data.respondent == respondent
    idx = int(np.flatnonzero(study.respondents() == respondent)[0])
    mask = holdout_tasks(
        pair_tasks(study.data)[rows], np.random.default_rng([seed, idx]), n_test=n_test_tasks
    )
    return None if mask is None else (study.for_respondent(respondent), mask)


# ----------------------------------------------------------------------------- splits
#: How comparisons are held out: ``tasks`` (choice tasks within each respondent),
#: ``respondents`` (whole respondents), ``pooled`` (tasks of data without respondents, or of
#: a single respondent), ``study`` (the study's own train/test split,
#: ``study.extras["split"]``: a split column given at import, ``--split-col``; a
#: ``validation`` row trains), ``latest`` (each respondent's last tasks: a panel's latest
#: purchases), ``pairs`` / ``items`` (Sushi: a random 20 % of each user's comparisons, or
#: the comparisons of ``holdout`` unseen items).
SPLIT_KINDS = ("tasks", "respondents", "pooled", "study", "latest", "pairs", "items")

#: Fewer tasks than this for the median respondent: ``auto`` holds out whole respondents.
MIN_TASKS_FOR_TASK_SPLIT = 3

#: :attr:`Split.fold` of comparisons outside the split, and of comparisons that always train.
UNUSED, ALWAYS_TRAIN = -1, -2


@dataclass(frozen=True)
class Split:
    """Which comparisons of a study train and which test, per evaluation unit.

    A single hold-out has ``n_folds == 1``: fold ``0`` is tested, fold ``1`` trains.
    K-fold cross-validation has ``n_folds == K``: every fold ``0..K-1`` is tested once by a
    fit on the other folds. :data:`UNUSED` comparisons are in neither; :data:`ALWAYS_TRAIN`
    ones train every fit and are never tested (e.g. the other respondents' comparisons
    when one respondent's tasks are cross-validated).

    Attributes
    ----------
    study : Study
    kind : str
        One of :data:`SPLIT_KINDS`.
    units : ndarray
        The evaluation units: respondent ids (``None`` for data without respondents).
    rows : list of ndarray
        Indices (into ``study.data.pairs``) of each unit's comparisons.
    fold : ndarray of int
        Fold of every comparison of the study.
    n_folds : int
        1 (hold-out) or K (cross-validation).
    new_respondents : bool
        Test respondents are not in any training set (``respondents``).
    reason : str
        One sentence: which split and why (what pages, reports and commands print).
    """

    study: Study
    kind: str
    units: np.ndarray
    rows: list[np.ndarray]
    fold: np.ndarray
    n_folds: int = 1
    new_respondents: bool = False
    reason: str = ""

    @property
    def test_folds(self) -> range:
        """The folds that are tested (``0`` of a hold-out; all of a cross-validation)."""
        return range(1) if self.n_folds == 1 else range(self.n_folds)

    def test_mask(self, f: int = 0) -> np.ndarray:
        """Comparisons tested in fold ``f``."""
        return self.fold == f

    def train_mask(self, f: int = 0) -> np.ndarray:
        """Comparisons that train the fit tested on fold ``f``."""
        if self.n_folds == 1:
            return (self.fold == 1) | (self.fold == ALWAYS_TRAIN)
        return (self.fold == ALWAYS_TRAIN) | ((self.fold >= 0) & (self.fold != f))

    @property
    def train(self) -> np.ndarray:
        """A hold-out's training comparisons (every fit's, for cross-validation)."""
        return self.train_mask(0) if self.n_folds == 1 else self.fold != UNUSED

    @property
    def test(self) -> np.ndarray:
        """Every tested comparison."""
        return self.fold >= 0 if self.n_folds > 1 else self.fold == 0

    @property
    def respondents(self) -> np.ndarray:
        """The units (respondent ids; ``[None]`` without respondents)."""
        return self.units


def tasks_per_respondent(study: Study) -> np.ndarray:
    """Number of distinct choice tasks of every respondent (one entry without respondents)."""
    d = study.data
    keys = d.task_keys()
    if d.respondent is None:
        return np.array([len(np.unique(keys))])
    frame = pd.DataFrame({"r": d.respondent, "k": keys})
    return frame.groupby("r", sort=False)["k"].nunique().to_numpy()


def auto_kind(study: Study) -> tuple[str, str]:
    """The split the data's shape calls for, and why (one sentence)."""
    d = study.data
    n_resp = 0 if d.respondent is None else len(study.respondents())
    if n_resp <= 1:
        if study.extras.get("split") is not None:
            return "study", "the study's own train/test split"
        who = "one respondent" if n_resp == 1 else "comparisons without respondents"
        return "pooled", f"{who}: a share of the choice tasks is held out"
    if getattr(study, "kind", "conjoint") == "items":  # a finite item set every user ranked (Sushi)
        return "pairs", "a random 20 % of every user's comparisons held out"
    med = float(np.median(tasks_per_respondent(study)))
    if med < MIN_TASKS_FOR_TASK_SPLIT:
        n = f"{med:g} choice task" + ("" if med == 1 else "s")
        return "respondents", (
            f"whole respondents held out: the median respondent made {n}, too few to hold "
            "some of their own out and still learn from the rest"
        )
    return "tasks", "some of every respondent's choice tasks held out"


def _first(study: Study, respondents: int | Sequence[Any] | None) -> np.ndarray:
    """The selected respondents (the first N, or the ids given), in study order."""
    all_r = study.respondents()
    if respondents is None:
        return all_r
    if isinstance(respondents, (int, np.integer)):
        return all_r[: max(0, int(respondents))]
    wanted = {str(r) for r in respondents}
    return np.asarray([r for r in all_r if str(r) in wanted], dtype=all_r.dtype)


def make_split(
    study: Study,
    kind: str = "auto",
    *,
    seed: int = 0,
    n_folds: int | None = None,
    test_tasks: int | None = None,
    fraction: float = 0.2,
    respondents: int | Sequence[Any] | None = None,
    others: str | int = "unused",
    holdout: int = 2,
) -> Split:
    """The split of ``study`` (``kind="auto"``: :func:`auto_kind`).

    Parameters
    ----------
    study
        The study.
    kind
        One of :data:`SPLIT_KINDS` or ``"auto"``.
    seed
        Seed of every random choice (respondent ``k`` of a task split draws with
        ``default_rng([seed, k])``, ``k`` its position in ``study.respondents()``).
    n_folds
        ``None``: one hold-out; ``K``: K-fold cross-validation over the same units
        (tasks within respondents, whole respondents, or the tasks of pooled data).
    test_tasks
        ``tasks`` hold-out: this many tasks of every respondent (respondents with no more
        tasks train only); ``None`` holds out ``fraction`` of them.
    fraction
        Share held out (tasks of a respondent or of pooled data; respondents).
    respondents
        The first N respondents, or the ids to evaluate (default all).
    others
        The comparisons of respondents not selected: ``"unused"``, ``"train"`` (they
        train every fit of a pooled model and are never tested) or a number ``N`` (those
        of the first N others train; a cost bound for pooled models).
    holdout
        ``items`` (Sushi): unseen items per user.
    """
    requested = kind
    if kind == "auto":
        kind, reason = auto_kind(study)
    else:
        reason = ""
    if kind not in SPLIT_KINDS:
        raise ValueError(f"unknown split {kind!r}; choose from {('auto', *SPLIT_KINDS)}")
    d = study.data
    n = d.n_pairs
    fold = np.full(n, UNUSED, dtype=np.int64)
    if kind in ("study", "pooled"):
        if d.respondent is not None and len(study.respondents()) > 1 and requested != "auto":
            if kind == "pooled":
                raise ValueError(f"{study.key}: has respondents; use tasks or respondents")
        if kind == "study":
            if n_folds:
                raise ValueError("the study's own split is one hold-out (no folds)")
            s = np.asarray(study.extras.get("split", []))
            if len(s) != n:
                raise ValueError(f"{study.key}: no train/test split of its own")
            fold[s == "test"], fold[(s == "train") | (s == "validation")] = 0, 1
            reason = reason or "the study's own train/test split"
        else:
            keys = d.task_keys()
            rng = np.random.default_rng(seed)
            if n_folds:
                fold = group_folds(n_folds, rng, keys)
            elif n >= 2:
                _, test = holdout_groups(keys, rng, fraction)
                fold = np.where(test, 0, 1)
            what = "choice tasks" if d.task is not None else "comparisons"
            reason = reason or f"a share of the {what} of the pooled data held out"
            if n_folds:
                reason += f" ({n_folds}-fold cross-validation over the {what})"
        unit = d.respondent[0] if d.respondent is not None and n else None
        rows = [np.arange(n)]
        return Split(
            study, kind, np.asarray([unit], dtype=object), rows, fold, n_folds or 1, False, reason
        )
    if d.respondent is None:
        raise ValueError(f"{study.key}: no respondent ids, so no {kind!r} split; use pooled")
    resp = d.respondent
    chosen = _first(study, respondents)
    index = {str(r): k for k, r in enumerate(study.respondents())}
    if isinstance(others, (int, np.integer)) and not isinstance(others, bool):
        rest = [r for r in study.respondents() if str(r) not in {str(c) for c in chosen}]
        fold[np.isin(resp, rest[: int(others)])] = ALWAYS_TRAIN
    elif others == "train":
        fold[~np.isin(resp, chosen)] = ALWAYS_TRAIN
    elif others != "unused":
        raise ValueError(f"others must be 'unused', 'train' or a number, got {others!r}")
    if kind == "respondents":
        if len(chosen) < 2:
            raise ValueError(f"{study.key}: holding out respondents needs at least 2 of them")
        in_scope = np.isin(resp, chosen)
        rng = np.random.default_rng(seed)
        if n_folds:
            fold[in_scope] = group_folds(n_folds, rng, resp[in_scope])
        else:
            _, test = holdout_groups(resp[in_scope], rng, fraction)
            fold[in_scope] = np.where(test, 0, 1)
        rows = [np.flatnonzero(resp == r) for r in chosen]
        reason = reason or "whole respondents held out"
        if n_folds:
            reason += f" ({n_folds}-fold cross-validation over respondents)"
        else:
            reason += f" ({100 * fraction:.0f} % of {len(chosen)})"
        return Split(study, kind, chosen, rows, fold, n_folds or 1, True, reason)
    tasks = pair_tasks(d)
    units, rows = [], []
    for r in chosen:
        r_rows = np.flatnonzero(resp == r)
        k = index[str(r)]
        if kind == "latest":  # the respondent's last tasks, in the order they were answered
            order = pd.unique(tasks[r_rows])
            n_test = test_tasks or max(1, round(fraction * len(order)))
            if len(order) <= n_test:
                fold[r_rows] = 1  # too few tasks: its pairs train pooled models
                continue
            fold[r_rows] = np.where(np.isin(tasks[r_rows], order[-n_test:]), 0, 1)
        elif kind == "tasks":
            rng = np.random.default_rng([seed, k])
            if n_folds:
                f = task_folds(n_folds, rng, tasks[r_rows])
                if len(np.unique(f)) < 2:  # one task: nothing to hold out, it trains only
                    fold[r_rows] = ALWAYS_TRAIN
                    continue
                fold[r_rows] = f
            else:
                mask = holdout_tasks(
                    tasks[r_rows], rng, n_test=test_tasks, fraction=None if test_tasks else fraction
                )
                if mask is None:  # too few tasks: not evaluated, its pairs train pooled models
                    fold[r_rows] = 1
                    continue
                fold[r_rows] = np.where(mask, 0, 1)
        else:  # Sushi: pairs (20 % of the user's comparisons) or items (holdout unseen items)
            rng = np.random.default_rng([seed, int(r)])
            own = d.pairs[r_rows]
            if kind == "items":
                items = np.unique(own)
                unseen = rng.choice(len(items), size=holdout, replace=False)
                mask = np.isin(own, items[unseen]).any(axis=1)
            else:
                mask = np.zeros(len(r_rows), dtype=bool)
                mask[rng.choice(len(r_rows), size=round(0.2 * len(r_rows)), replace=False)] = True
            fold[r_rows] = np.where(mask, 0, 1)
        units.append(r)
        rows.append(r_rows)
    if not reason:
        reason = {
            "latest": "every respondent's latest choice tasks held out (a panel's last "
            "purchases predicted from the earlier ones)",
            "tasks": "some of every respondent's choice tasks held out",
            "pairs": "a random 20 % of every user's comparisons held out",
            "items": f"the comparisons of {holdout} unseen items of every user held out",
        }[kind]
    if kind == "latest":
        reason += f" ({test_tasks or f'{100 * fraction:.0f} %'} per respondent)"
    if kind == "tasks":
        reason += (
            f" ({n_folds}-fold cross-validation over each respondent's tasks)"
            if n_folds
            else f" ({test_tasks} per respondent)"
            if test_tasks
            else f" ({100 * fraction:.0f} % per respondent)"
        )
    return Split(
        study, kind, np.asarray(units, dtype=object), rows, fold, n_folds or 1, False, reason
    )
