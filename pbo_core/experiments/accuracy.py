"""Held-out pairwise accuracy of every model family on one split: trees, GP, baselines.

Sushi generalisation (DT-PBO Table 1), conjoint task hold-out (Table 12), straddler
ablation (Table 2) and the accuracy beside the sensitivity table all run through one
method registry, :data:`ACCURACY_METHODS`, on one split per (study, seed):

* ``tasks`` (conjoint): per respondent ``n_test_tasks`` whole choice tasks held out
  (:func:`~pbo_core.experiments.studies.respondent_split`, seeded by
  ``[seed, respondent index]``);
* ``pairs`` / ``items`` (Sushi): a random 20 % of each user's comparisons, or the
  comparisons involving ``holdout`` of the user's sushi;
* ``respondents``: 20 % of whole respondents held out (seeded by ``seed``); only pooled
  methods can predict for people they never saw, so per-respondent methods are skipped;
* ``study``: a pooled study's own train/test split (``extras["split"]``, PMR); without
  respondents, the comparisons are the unit the CIs resample (one row per comparison).

Studies are loaded by callables passed in (:class:`~pbo_core.experiments.studies.LoadStudy`
for a registry key, :class:`~pbo_core.experiments.studies.LoadStudyFile` for an analyst's
own file; the command line binds :mod:`data_loaders.cached`), never stored in a cell.

A *respondent-scope* method is fitted on one respondent's training comparisons; a
*pooled* method once on every respondent's training comparisons (with the task of each
comparison, so its inner cross-validation folds whole tasks), predicting with
``respondent=r`` when it models respondents. Accuracy counts a predicted tie as one
half and is computed per respondent; summaries are over respondents: mean, sd, median,
a 95 % percentile-bootstrap CI and the paired difference to the best baseline
(highest mean test accuracy of family ``"baseline"``) with its CI.

Adding a method is one entry::

    register(AccuracyMethod("dt-pooled", "tree", "pooled",
                            lambda data, tasks: PooledDTSurrogate().fit(data),
                            respondent_predict=True))
"""

from __future__ import annotations

import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Study
from pbo_core.experiments.runner import Cell
from pbo_core.experiments.studies import LoadStudy, LoadStudyFile, respondent_split
from pbo_core.explain.sensitivity import drop_features
from pbo_core.metrics import paired_difference, pairwise_accuracy, summarize
from pbo_core.models.bradley_terry import (
    CopelandSurrogate,
    ItemOffsetSurrogate,
    ItemUtilitySurrogate,
)
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.gp import GPSurrogate
from pbo_core.models.linear import LinearUtilitySurrogate, RespondentLinearSurrogate
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
from pbo_core.models.pooled_dt import PooledDTSurrogate

__all__ = [
    "ACCURACY_METHODS",
    "AccuracyMethod",
    "Split",
    "accuracy_cell",
    "accuracy_cells",
    "default_methods",
    "make_split",
    "parse_methods",
    "register",
    "split_rows",
    "study_kind",
    "summarize_methods",
]

Family = Literal["tree", "gp", "baseline"]
Scope = Literal["respondent", "pooled"]
FitFn = Callable[[PreferenceData, "np.ndarray | None"], Any]

#: Respondents per cell of a respondent-scope method (the resumable unit).
CHUNK = 60


def tree_leaves(model: Any) -> float | None:
    """Leaves of a fitted tree model (``n_leaves_``), ``None`` for models without a tree."""
    n = getattr(model, "n_leaves_", None)
    return None if n is None else float(n)


def tree_depth(model: Any) -> float | None:
    """Depth of a fitted tree model (``tree_.max_depth``), ``None`` without a tree."""
    tree = getattr(model, "tree_", None)
    depth = getattr(tree, "max_depth", None)
    return None if depth is None else float(depth)


@dataclass(frozen=True)
class AccuracyMethod:
    """One model of the accuracy experiments.

    Parameters
    ----------
    name
        Registry key (``--methods``).
    family
        ``"tree"``, ``"gp"`` or ``"baseline"``; the best ``"baseline"`` is the reference
        of every paired difference.
    scope
        ``"respondent"``: fitted on one respondent's training comparisons;
        ``"pooled"``: fitted once on all respondents' training comparisons.
    fit
        ``fit(train, tasks) -> fitted model`` with ``predict(X)`` (and
        ``predict(X, respondent=r)`` when ``respondent_predict``); ``tasks`` is the
        choice task of each training comparison (``None`` when the study has none).
    leaves, depth
        Size of the fitted model's tree (``None`` when it has none); default
        ``n_leaves_`` and ``tree_.max_depth``.
    studies
        Kinds of study the method applies to: ``"conjoint"`` (attribute-described
        profiles) and/or ``"items"`` (a finite item set shared by all respondents,
        Sushi); item models (Bradley-Terry, Copeland) need ``"items"``.
    respondent_predict
        Pooled methods only: the model has one utility per respondent and is asked with
        ``predict(X, respondent=r)``; otherwise ``predict(X)`` for everybody.
    description
        One line for ``--help`` and the README.
    """

    name: str
    family: Family
    scope: Scope
    fit: FitFn
    leaves: Callable[[Any], float | None] = tree_leaves
    depth: Callable[[Any], float | None] = tree_depth
    studies: frozenset[str] = frozenset({"conjoint", "items"})
    respondent_predict: bool = False
    description: str = ""


#: The registry: name -> method, in the order the summaries list them.
ACCURACY_METHODS: dict[str, AccuracyMethod] = {}


def register(method: AccuracyMethod) -> AccuracyMethod:
    """Add ``method`` to :data:`ACCURACY_METHODS` (replacing one of the same name)."""
    if method.family not in ("tree", "gp", "baseline"):
        raise ValueError(f"{method.name}: family must be tree, gp or baseline")
    if method.scope not in ("respondent", "pooled"):
        raise ValueError(f"{method.name}: scope must be respondent or pooled")
    ACCURACY_METHODS[method.name] = method
    return method


_ITEMS = frozenset({"items"})
_CONJOINT = frozenset({"conjoint"})
register(
    AccuracyMethod(
        "dt",
        "tree",
        "respondent",
        lambda d, t: DTSurrogate().fit(d),
        description="DT-PBO per respondent (straddlers discarded, depth unrestricted)",
    )
)
register(
    AccuracyMethod(
        "dt-keep",
        "tree",
        "respondent",
        lambda d, t: DTSurrogate(straddlers="keep", max_depth=4).fit(d),
        description="DT per respondent, straddlers kept (App. C.2), max depth 4 (Table 2)",
    )
)
register(
    AccuracyMethod(
        "dt-pooled",
        "tree",
        "pooled",
        lambda d, t: PooledDTSurrogate().fit(d),
        respondent_predict=True,
        studies=_CONJOINT,
        description="one tree on the pooled comparisons, each respondent's constant leaves "
        "shrunk toward the pooled leaves (strength and depth by task CV, <= 24 leaves)",
    )
)
register(
    AccuracyMethod(
        "dt-linear",
        "tree",
        "pooled",
        lambda d, t: LinearLeafDTSurrogate(
            linear_features="all", pooling="shrink", slope_ratio="cv", max_depth=3
        ).fit(d),
        respondent_predict=True,
        description="pooled tree of depth 3 whose leaves hold a level plus each "
        "respondent's slopes on every attribute, shrunk toward the pooled fit "
        "(strengths by task CV)",
    )
)
register(
    AccuracyMethod(
        "gp",
        "gp",
        "respondent",
        lambda d, t: GPSurrogate().fit(d),
        description="GP-Laplace per respondent (ARD RBF, evidence-fitted)",
    )
)
for _link in ("logit", "probit"):
    register(
        AccuracyMethod(
            f"{_link}-pooled",
            "baseline",
            "pooled",
            lambda d, t, k=_link: LinearUtilitySurrogate(k).fit(d),
            description=f"one {_link} for everybody, L2 by inner CV (log loss) over tasks",
        )
    )
    register(
        AccuracyMethod(
            f"{_link}-respondent",
            "baseline",
            "pooled",
            lambda d, t, k=_link: RespondentLinearSurrogate(k).fit(d),
            respondent_predict=True,
            description=f"{_link} per respondent, one L2 strength by inner CV (error)",
        )
    )
    register(
        AccuracyMethod(
            f"{_link}-shrink",
            "baseline",
            "pooled",
            lambda d, t, k=_link: RespondentLinearSurrogate(k, shrink=True).fit(d),
            respondent_predict=True,
            description=f"{_link} per respondent shrunk toward the pooled {_link} (CV)",
        )
    )
register(
    AccuracyMethod(
        "bt-popularity",
        "baseline",
        "pooled",
        lambda d, t: ItemUtilitySurrogate().fit(d),
        studies=_ITEMS,
        description="item Bradley-Terry for everybody (global popularity), L2 by CV",
    )
)
register(
    AccuracyMethod(
        "bt-offsets",
        "baseline",
        "pooled",
        lambda d, t: ItemOffsetSurrogate().fit(d),
        studies=_ITEMS,
        respondent_predict=True,
        description="item Bradley-Terry plus per-user offsets shrunk to zero (CV)",
    )
)
register(
    AccuracyMethod(
        "copeland",
        "baseline",
        "pooled",
        lambda d, t: CopelandSurrogate().fit(d),
        studies=_ITEMS,
        respondent_predict=True,
        description="per-user wins minus losses of every item (sanity floor)",
    )
)


def study_kind(study: Study) -> str:
    """``"items"`` for a finite item set shared by respondents (Sushi), else ``"conjoint"``."""
    return "items" if "true_order" in study.extras else "conjoint"


def default_methods(kind: str, experiment: str = "conjoint-accuracy") -> list[str]:
    """Methods run when ``--methods`` is not given.

    Every tree variant, the GP and every baseline that applies to the study kind; the
    straddler ablation leaves out the GP (the comparison is between tree variants).
    """
    out = [n for n, m in ACCURACY_METHODS.items() if kind in m.studies]
    if experiment == "straddler-ablation":
        out = [n for n in out if ACCURACY_METHODS[n].family != "gp"]
    return out


def parse_methods(text: str | None, kind: str, experiment: str) -> list[str]:
    """Method names from a ``--methods`` value (comma separated; ``None`` = the default).

    Raises
    ------
    SystemExit
        Naming unknown methods and methods that do not apply to the study kind.
    """
    if text is None:
        return default_methods(kind, experiment)
    names = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in names if m not in ACCURACY_METHODS]
    if bad:
        raise SystemExit(f"unknown methods {bad}; choose from {list(ACCURACY_METHODS)}")
    wrong = [m for m in names if kind not in ACCURACY_METHODS[m].studies]
    if wrong:
        raise SystemExit(f"methods {wrong} do not apply to a {kind!r} study (item models only)")
    if not names:
        raise SystemExit("--methods names no method")
    return list(dict.fromkeys(names))


# ----------------------------------------------------------------------------- splits
@dataclass(frozen=True)
class Split:
    """Which comparisons of a study train and test which respondents.

    Attributes
    ----------
    study : Study
    kind : str
        ``"tasks"``, ``"pairs"``, ``"items"``, ``"respondents"`` or ``"study"``.
    respondents : ndarray
        Respondents that get a row (evaluated respondents; with ``"respondents"`` also
        the training respondents, whose rows carry only the training accuracy).
    rows : list of ndarray
        Indices (into ``study.data.pairs``) of each respondent's comparisons.
    train, test : ndarray of bool
        Training and test comparisons over all of ``study.data.pairs``; the pooled fit
        uses ``train``.
    new_respondents : bool
        Test respondents are not in the training data (``"respondents"`` split).
    """

    study: Study
    kind: str
    respondents: np.ndarray
    rows: list[np.ndarray]
    train: np.ndarray
    test: np.ndarray
    new_respondents: bool = False


def _tasks_split(study: Study, n_test_tasks: int, seed: int, n_resp: int | None) -> Split:
    resp = study.data.respondent
    n = study.data.n_pairs
    train, test = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    ids, rows = [], []
    all_r = study.respondents()
    for r in all_r[:n_resp] if n_resp is not None else all_r:
        got = respondent_split(study, r, n_test_tasks, seed)
        r_rows = np.flatnonzero(resp == r)
        if got is None:  # too few tasks: not evaluated, all its pairs train the pooled models
            train[r_rows] = True
            continue
        mask = got[1]
        test[r_rows[mask]] = True
        train[r_rows[~mask]] = True
        ids.append(r)
        rows.append(r_rows)
    return Split(study, "tasks", np.asarray(ids), rows, train, test)


def _sushi_split(study: Study, users: int, seed: int, kind: str, holdout: int) -> Split:
    resp = study.data.respondent
    n = study.data.n_pairs
    train, test = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    ids, rows = [], []
    for user in study.respondents()[:users]:
        r_rows = np.flatnonzero(resp == user)
        data = study.for_respondent(user)
        rng = np.random.default_rng([seed, int(user)])
        if kind == "items":
            unseen = rng.choice(data.n_items, size=holdout, replace=False)
            mask = np.isin(data.pairs, unseen).any(axis=1)
        else:  # pairs: a random 20 % of the user's comparisons
            mask = np.zeros(data.n_pairs, dtype=bool)
            mask[rng.choice(data.n_pairs, size=round(0.2 * data.n_pairs), replace=False)] = True
        test[r_rows[mask]] = True
        train[r_rows[~mask]] = True
        ids.append(user)
        rows.append(r_rows)
    return Split(study, kind, np.asarray(ids), rows, train, test)


def _respondents_split(study: Study, seed: int, fraction: float, n_resp: int | None) -> Split:
    resp = study.data.respondent
    if resp is None:
        raise ValueError(f"{study.key}: no respondent ids, cannot hold out respondents")
    all_r = study.respondents()
    all_r = all_r[:n_resp] if n_resp is not None else all_r
    if len(all_r) < 2:
        raise ValueError(f"{study.key}: --split respondents needs at least 2 respondents")
    n_test = min(len(all_r) - 1, max(1, round(fraction * len(all_r))))
    held = set(np.random.default_rng(seed).choice(len(all_r), size=n_test, replace=False))
    in_test = np.isin(resp, all_r[sorted(held)])
    in_train = np.isin(resp, all_r) & ~in_test
    rows = [np.flatnonzero(resp == r) for r in all_r]
    return Split(study, "respondents", all_r, rows, in_train, in_test, new_respondents=True)


def _study_split(study: Study) -> Split:
    s = np.asarray(study.extras["split"])
    rows = [np.arange(study.data.n_pairs)]
    return Split(study, "study", np.asarray([None]), rows, s == "train", s == "test")


def _load(cell: Cell, load_study: LoadStudy, load_study_file: LoadStudyFile | None) -> Study:
    if cell.get("data"):
        if load_study_file is None:
            raise ValueError(f"{cell['data']}: a cell with own data needs load_study_file")
        return load_study_file(str(cell["data"]), cell.get("attributes"), str(cell["columns"]))
    return load_study(cell["study"], cell.get("data_dir"))


_SPLIT_KEYS = (
    "study",
    "data",
    "attributes",
    "columns",
    "data_dir",
    "split",
    "seed",
    "test_tasks",
    "respondents",
    "users",
    "holdout",
)


@lru_cache(maxsize=8)
def _split_cached(
    key: tuple[tuple[str, Any], ...],
    load_study: LoadStudy,
    load_study_file: LoadStudyFile | None,
) -> Split:
    cell = dict(key)
    study = _load(cell, load_study, load_study_file)
    kind = cell.get("split", "tasks")
    seed = int(cell.get("seed", 0))
    if kind == "tasks":
        if study.extras.get("split") is not None:  # the study's own split (as sensitivity)
            return _study_split(study)
        if study.data.respondent is None:
            raise ValueError(f"{study.key}: pooled data without respondents or a train/test split")
        return _tasks_split(study, int(cell["test_tasks"]), seed, cell.get("respondents"))
    if kind in ("pairs", "items"):
        return _sushi_split(study, int(cell["users"]), seed, kind, int(cell.get("holdout", 2)))
    if kind == "respondents":
        return _respondents_split(study, seed, 0.2, cell.get("respondents"))
    if kind == "study":
        return _study_split(study)
    raise ValueError(f"unknown split {kind!r}")


def make_split(
    cell: Cell, *, load_study: LoadStudy, load_study_file: LoadStudyFile | None = None
) -> Split:
    """The split a cell describes (cached per process).

    Parameters
    ----------
    cell
        The split keys: ``study`` (and ``data_dir``) or an own file (``data``,
        ``attributes``, ``columns``: JSON of the layout and column names), ``split``, ``seed``,
        ``test_tasks``, ``respondents``, ``users``, ``holdout``.
    load_study
        Loads a registry study (:class:`~pbo_core.experiments.studies.LoadStudy`).
    load_study_file
        Loads an own file (:class:`~pbo_core.experiments.studies.LoadStudyFile`);
        required when the cell has ``data``.
    """
    key = tuple((k, cell[k]) for k in _SPLIT_KEYS if cell.get(k) is not None)
    return _split_cached(key, load_study, load_study_file)


# ----------------------------------------------------------------------------- cells
def accuracy_cells(base: Cell, methods: Sequence[str], split: Split) -> list[dict[str, Any]]:
    """Grid of one experiment: one cell per pooled method, per chunk of respondents else."""
    cells: list[dict[str, Any]] = []
    n = len(split.respondents)
    for name in methods:
        if ACCURACY_METHODS[name].scope == "pooled":
            cells.append(dict(base, method=name))
        else:
            for lo in range(0, n, CHUNK):
                cells.append(dict(base, method=name, chunk=[lo, min(n, lo + CHUNK)]))
    return cells


def _acc_ties(u: np.ndarray, pairs: np.ndarray) -> tuple[float, float]:
    if len(pairs) == 0:
        return float("nan"), float("nan")
    return pairwise_accuracy(u, pairs), float(np.mean(u[pairs[:, 0]] == u[pairs[:, 1]]))


def _row(
    split: Split,
    i: int,
    method: AccuracyMethod,
    model: Any,
    u_train: np.ndarray,
    u_test: np.ndarray,
    train_pairs: np.ndarray,
    test_pairs: np.ndarray,
    fit_s: float,
) -> dict[str, Any]:
    r = split.respondents[i]
    tr, _ = _acc_ties(u_train, train_pairs)
    te, ties = _acc_ties(u_test, test_pairs)
    return {
        "respondent": "all" if r is None else str(r),
        "method": method.name,
        "family": method.family,
        "train_acc": tr,
        "test_acc": te,
        "test_ties": ties,
        "n_train": len(train_pairs),
        "n_test": len(test_pairs),
        "leaves": method.leaves(model),
        "depth": method.depth(model),
        "fit_s": fit_s,
    }


def _pair_rows(row: dict[str, Any], u: np.ndarray, train: np.ndarray, test: np.ndarray) -> list:
    """One row per comparison (pooled ``"study"`` split: comparisons are the resampled unit).

    The split has no respondents, so the CI and the paired difference resample the
    comparisons: a test row scores 1, 1/2 (tie) or 0 and a training row carries the
    training score; means equal the split's accuracies.
    """

    def score(p: np.ndarray) -> np.ndarray:
        w, lo = u[p[:, 0]], u[p[:, 1]]
        return np.where(w > lo, 1.0, np.where(w == lo, 0.5, 0.0))

    nan = float("nan")
    out = []
    for tag, pairs, col in (("test", test, "test_acc"), ("train", train, "train_acc")):
        for k, (v, tie) in enumerate(
            zip(score(pairs), u[pairs[:, 0]] == u[pairs[:, 1]], strict=True)
        ):
            r = dict(row, respondent=f"{tag}-{k}", train_acc=nan, test_acc=nan, test_ties=nan)
            r[col] = float(v)
            if col == "test_acc":
                r["test_ties"] = float(tie)
            out.append(r)
    return out


def _tasks_of(study: Study, mask: np.ndarray) -> np.ndarray | None:
    """Choice task of each selected comparison (CV folds are drawn within respondents)."""
    task = study.data.task
    return None if task is None else np.asarray(task)[mask]


def accuracy_cell(
    cell: Cell, *, load_study: LoadStudy, load_study_file: LoadStudyFile | None = None
) -> pd.DataFrame:
    """Rows (one per respondent) of one method on one split (see :func:`accuracy_cells`).

    A cell with ``drop_feature`` fits and scores the method without that feature's
    columns (the leave-one-out ablation of :mod:`pbo_core.experiments.sensitivity`).
    ``load_study`` and ``load_study_file`` load the cell's study (:func:`make_split`);
    bind them with :func:`functools.partial` for
    :func:`~pbo_core.experiments.runner.run_grid`.
    """
    return split_rows(
        make_split(cell, load_study=load_study, load_study_file=load_study_file),
        ACCURACY_METHODS[cell["method"]],
        chunk=cell.get("chunk"),
        drop_feature=cell.get("drop_feature"),
    )


def _without(data: PreferenceData, feature: str | None) -> PreferenceData:
    if feature is None:
        return data
    return drop_features(data, data.get_schema(), [feature])


def split_rows(
    split: Split,
    method: AccuracyMethod,
    *,
    chunk: Sequence[int] | None = None,
    drop_feature: str | None = None,
) -> pd.DataFrame:
    """Rows (one per respondent) of ``method`` on ``split``, optionally without a feature.

    Pooled methods are fitted once on ``split.train``; respondent-scope methods on each
    respondent's training comparisons (respondents ``chunk = (lo, hi)``, default all).
    ``drop_feature`` removes that feature's columns before fitting and scoring.
    """
    data = _without(split.study.data, drop_feature)
    rows: list[dict[str, Any]] = []
    if method.scope == "pooled":
        train = data.select_pairs(split.train, drop_unused_items=False)
        t0 = time.perf_counter()
        model = method.fit(train, _tasks_of(split.study, split.train))
        fit_s = time.perf_counter() - t0
        population = model.predict(data.X)
        for i, r_rows in enumerate(split.rows):
            r = split.respondents[i]
            if method.respondent_predict and r is not None and not split.new_respondents:
                u = model.predict(data.X, respondent=r)
            else:
                u = population
            tr = data.pairs[r_rows[split.train[r_rows]]]
            te = data.pairs[r_rows[split.test[r_rows]]]
            rows.append(_row(split, i, method, model, u, u, tr, te, fit_s / len(split.rows)))
            if split.kind == "study":
                rows = _pair_rows(rows.pop(), u, tr, te)
        return pd.DataFrame(rows)
    if split.new_respondents:
        raise ValueError(f"{method.name}: per-respondent methods cannot predict new respondents")
    lo, hi = chunk or (0, len(split.rows))
    for i in range(int(lo), int(hi)):
        r = split.respondents[i]
        r_rows = split.rows[i]
        own = data if r is None else _without(split.study.for_respondent(r), drop_feature)
        mask = split.test[r_rows]
        train = own.select_pairs(split.train[r_rows], drop_unused_items=False)
        test = own.select_pairs(mask, drop_unused_items=False)
        t0 = time.perf_counter()
        model = method.fit(train, None)
        fit_s = time.perf_counter() - t0
        u = model.predict(own.X)
        rows.append(_row(split, i, method, model, u, u, train.pairs, test.pairs, fit_s))
        if split.kind == "study":
            rows = _pair_rows(rows.pop(), u, train.pairs, test.pairs)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- summary
def _method_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def _mean_or_none(x: pd.Series) -> float | None:
    v = pd.to_numeric(x, errors="coerce").dropna()
    return float(v.mean()) if len(v) else None


def summarize_methods(
    rows: pd.DataFrame, *, seed: int = 0, n_boot: int = 2000
) -> dict[str, dict[str, Any]]:
    """Per method: train/test accuracy over respondents, CI, tree size, paired difference.

    Parameters
    ----------
    rows
        Rows of :func:`accuracy_cell` (one per respondent x method).
    seed
        Seed of the bootstrap (each method's own stream, so a method's CI does not
        depend on which other methods ran).
    n_boot
        Bootstrap resamples of respondents.

    Returns
    -------
    dict
        ``{method: {"n", "train_acc_mean", "train_acc_sd", "test_acc_mean", "test_acc_sd",
        "test_acc_se", "test_acc_median", "test_acc_ci95", "test_tie_share", "mean_leaves",
        "mean_depth", "paired_diff_vs_best_baseline": {"baseline", "n", "mean_diff",
        "ci95"}}}``; the paired difference is this method minus the baseline with the
        highest mean test accuracy (``None`` when no baseline ran).
    """
    if rows.empty:
        return {}
    order = list(dict.fromkeys(rows["method"]))
    wide = rows.drop_duplicates(["respondent", "method"]).pivot(
        index="respondent", columns="method", values="test_acc"
    )
    out: dict[str, dict[str, Any]] = {}
    means: dict[str, float] = {}
    for name in order:
        g = rows[rows["method"] == name]
        tr = summarize(g["train_acc"].to_numpy(float), rng=_method_rng(seed, name), n_boot=1)
        te = summarize(g["test_acc"].to_numpy(float), rng=_method_rng(seed, name), n_boot=n_boot)
        means[name] = te.mean
        out[name] = {
            "family": str(g["family"].iloc[0]),
            "n": int(te.n),
            "train_acc_mean": tr.mean,
            "train_acc_sd": tr.sd,
            "test_acc_mean": te.mean,
            "test_acc_sd": te.sd,
            "test_acc_se": te.se,
            "test_acc_median": te.median,
            "test_acc_ci95": [te.ci95[0], te.ci95[1]],
            "test_tie_share": _mean_or_none(g["test_ties"]),
            "mean_leaves": _mean_or_none(g["leaves"]),
            "mean_depth": _mean_or_none(g["depth"]),
        }
    baselines = [m for m in order if out[m]["family"] == "baseline" and np.isfinite(means[m])]
    best = max(baselines, key=lambda m: means[m]) if baselines else None
    for name in order:
        if best is None:
            out[name]["paired_diff_vs_best_baseline"] = None
            continue
        d = paired_difference(
            wide[name].to_numpy(float),
            wide[best].to_numpy(float),
            rng=_method_rng(seed + 1, name),
            n_boot=n_boot,
        )
        out[name]["paired_diff_vs_best_baseline"] = {
            "baseline": best,
            "n": int(d.n),
            "mean_diff": d.mean_diff,
            "ci95": [d.ci[0], d.ci[1]],
        }
    return out


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    """The summary as a fixed-width text table (printed on stderr by the CLI)."""
    lines = [
        f"{'method':18s} {'n':>5s} {'train':>6s} {'test':>6s} {'95% CI':>15s} "
        f"{'median':>6s} {'leaves':>6s} {'diff vs best baseline [95% CI]':>34s}"
    ]
    for name, s in summary.items():
        lo, hi = s["test_acc_ci95"]
        leaves = "" if s["mean_leaves"] is None else f"{s['mean_leaves']:.1f}"
        d = s["paired_diff_vs_best_baseline"]
        diff = (
            ""
            if d is None
            else f"{d['mean_diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] {d['baseline']}"
        )
        lines.append(
            f"{name:18s} {s['n']:5d} {s['train_acc_mean']:6.3f} {s['test_acc_mean']:6.3f} "
            f"[{lo:.3f}, {hi:.3f}] {s['test_acc_median']:6.3f} {leaves:>6s} {diff:>34s}"
        )
    return "\n".join(lines)


def note(message: str, quiet: bool) -> None:
    """A note on stderr (unless ``quiet``)."""
    if not quiet:
        print(message, file=sys.stderr)
