"""Held-out evidence for a shown tree: cross-validated accuracy with CIs, next to baselines.

The dashboard's tree explorer shows the tree fitted on all of a respondent's comparisons;
its training accuracy says little (a tree can fit 10 comparisons perfectly). Here every
comparison is predicted by models fitted without it: ``n_folds``-fold cross-validation
over whole choice tasks when task ids exist (a task's comparisons share a fold, as in the
experiments' respondent split), over comparisons otherwise. The same folds serve every
method, so the DT, the GP and the logit baseline are compared like for like.

Pooled models of many respondents (``fitters``) get each fold's training comparisons
with their task ids (their own inner cross-validation then keeps tasks whole) and, when
named in ``by_respondent``, predict every held-out comparison with the utilities of the
respondent who made it; :class:`PerRespondent` fits one model per respondent (the
paper's DT as it is used per respondent) for the same comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Study
from pbo_core.metrics import summarize
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.gp import GPSurrogate
from pbo_core.models.linear import LogitSurrogate, task_folds


def pair_correct(scores: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per comparison: 1 if the winner scores higher, 0.5 on a tie, 0 otherwise (NaN when
    a score is NaN: no prediction)."""
    s = np.asarray(scores, dtype=float)
    w, lo = s[pairs[:, 0]], s[pairs[:, 1]]
    out = np.where(w > lo, 1.0, np.where(w == lo, 0.5, 0.0))
    return np.where(np.isnan(w) | np.isnan(lo), np.nan, out)


class PerRespondent:
    """One model per respondent of ``data`` (``factory()`` each), asked per respondent.

    ``predict(X, respondent=r)`` is respondent ``r``'s model (``NaN`` for a respondent
    without training comparisons); ``predict(X)`` without a respondent raises.
    """

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory

    def fit(self, data: PreferenceData) -> PerRespondent:
        if data.respondent is None:
            raise ValueError("PerRespondent needs respondent ids")
        self.models_: dict[Any, Any] = {}
        for r in dict.fromkeys(data.respondent.tolist()):
            mask = data.respondent == r
            self.models_[r] = self.factory().fit(data.select_pairs(mask, drop_unused_items=False))
        return self

    def predict(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        if respondent is None:
            raise ValueError("PerRespondent predicts for one respondent at a time")
        m = self.models_.get(respondent)
        return np.full(len(X), np.nan) if m is None else m.predict(X)


def _correct(model: Any, data: PreferenceData, rows: np.ndarray, by_resp: bool) -> np.ndarray:
    """Per comparison in ``rows``: correct (1, 1/2 tie, 0); per respondent if ``by_resp``."""
    if not by_resp or data.respondent is None:
        return pair_correct(model.predict(data.X), data.pairs[rows])
    out = np.empty(len(rows))
    resp = data.respondent[rows]
    for r in dict.fromkeys(resp.tolist()):
        sel = resp == r
        u = model.predict(data.X, respondent=r)
        out[sel] = pair_correct(u, data.pairs[rows[sel]])
    return out


def heldout_accuracy(
    data: PreferenceData,
    methods: Mapping[str, Callable[[], Any]],
    *,
    tasks: np.ndarray | None = None,
    n_folds: int = 5,
    seed: int = 0,
    n_boot: int = 2000,
    fitters: Mapping[str, Callable[[PreferenceData, np.ndarray | None], Any]] | None = None,
    by_respondent: Collection[str] = (),
) -> pd.DataFrame:
    """Training and cross-validated accuracy of each method, with 95 % bootstrap CIs.

    Parameters
    ----------
    data
        One respondent's (or pooled) comparisons.
    methods
        ``{name: factory}``; each factory returns an unfitted surrogate with
        ``fit(data)`` and ``predict(X)``.
    tasks
        Choice-task id of every comparison (folds keep tasks whole); ``None`` folds
        single comparisons.
    n_folds
        Folds (fewer when there are fewer tasks); at least 2 tasks are needed.
    fitters
        More methods, ``{name: fit(train, train_tasks) -> fitted model}`` (after
        ``methods``); ``train_tasks`` are the task ids of the training comparisons.
    by_respondent
        Names of methods scored with each respondent's own utilities
        (``predict(X, respondent=r)``; needs ``data.respondent``).

    Returns
    -------
    DataFrame with one row per method: ``method``, ``train`` (accuracy of the model fitted
    on everything), ``heldout`` (mean over held-out comparisons), ``ci_low``, ``ci_high``
    (95 % percentile bootstrap over comparisons), ``n_heldout`` and ``error`` (why a method
    could not be fitted, else ``""``). Empty when there are too few tasks to hold any out.
    """
    groups = np.asarray(tasks) if tasks is not None else np.arange(data.n_pairs)
    n_groups = len(np.unique(groups))
    if n_groups < 2:
        return pd.DataFrame()
    k = int(min(n_folds, n_groups))
    folds = task_folds(k, np.random.default_rng(seed), groups)
    task_ids = np.asarray(tasks) if tasks is not None else None
    specs: dict[str, Callable[[PreferenceData, np.ndarray | None], Any]] = {
        name: (lambda d, t, make=make: make().fit(d)) for name, make in methods.items()
    }
    specs.update(fitters or {})
    everything = np.arange(data.n_pairs)
    rows = []
    for name, fit in specs.items():
        per_r = name in by_respondent
        correct = np.full(data.n_pairs, np.nan)
        error = ""
        try:
            # folds first: a factory that learns settings on its first fit (e.g. GP
            # hyperparameters) learns them without the first fold's comparisons
            for f in range(k):
                test = folds == f
                if not test.any() or test.all():
                    continue
                t_train = task_ids[~test] if task_ids is not None else None
                model = fit(data.select_pairs(~test), t_train)
                correct[test] = _correct(model, data, np.flatnonzero(test), per_r)
            full = fit(data, task_ids)
            train = float(np.nanmean(_correct(full, data, everything, per_r)))
        except Exception as exc:  # a baseline that cannot fit these data says why
            train, error = float("nan"), f"{type(exc).__name__}: {exc}"
        ok = correct[np.isfinite(correct)]
        if len(ok):
            s = summarize(ok, rng=np.random.default_rng([seed, len(rows)]), n_boot=n_boot)
            mean, (lo, hi) = s.mean, s.ci95
        else:
            mean = lo = hi = float("nan")
        rows.append(
            {
                "method": name,
                "train": train,
                "heldout": mean,
                "ci_low": lo,
                "ci_high": hi,
                "n_heldout": len(ok),
                "folds": k,
                "error": error,
            }
        )
    return pd.DataFrame(rows)


class SharedHyperGP:
    """GP factory: the first fit (fold 1's training data) learns the kernel
    hyperparameters; later fits (other folds, the full data) reuse them. Saves ~25 s per
    fit on the pooled PMR demo (870 comparisons) at the cost of one shared setting."""

    def __init__(self) -> None:
        self.hyper: tuple[Any, Any] | None = None

    def __call__(self) -> Any:
        if self.hyper is None:
            owner = self

            class _Learn(GPSurrogate):
                def fit(self, data: Any) -> Any:
                    out = super().fit(data)
                    owner.hyper = (self.lengthscale_, self.outputscale_)
                    return out

            return _Learn()
        ell, s = self.hyper
        return GPSurrogate(fit_hyperparameters=False, lengthscale=ell, outputscale=s)


def evidence_methods(
    *, max_depth: int | None = None, min_samples_split: int = 1, straddlers: str = "discard"
) -> dict[str, Callable[[], Any]]:
    """The methods a shown tree is compared with: the tree itself, the GP and the logit."""
    return {
        "DT (the tree shown)": lambda: DTSurrogate(
            max_depth=max_depth, min_samples_split=min_samples_split, straddlers=straddlers
        ),
        "GP-Laplace": SharedHyperGP(),
        "Logit (linear utility)": LogitSurrogate,
    }


def respondent_evidence(
    study: Study,
    respondent: Any,
    *,
    max_depth: int | None = None,
    min_samples_split: int = 1,
    straddlers: str = "discard",
) -> pd.DataFrame:
    """:func:`heldout_accuracy` of :func:`evidence_methods` on one respondent's comparisons
    (``respondent=None``: the pooled data), 5 folds over whole choice tasks when the study
    records them."""
    pooled = respondent is None or study.data.respondent is None
    data = study.data if pooled else study.for_respondent(respondent)
    tasks = study.data.task
    if tasks is not None and not pooled:
        tasks = np.asarray(tasks)[study.data.respondent == respondent]
    if tasks is not None and len(tasks) != data.n_pairs:
        tasks = None
    methods = evidence_methods(
        max_depth=max_depth, min_samples_split=min_samples_split, straddlers=straddlers
    )
    return heldout_accuracy(data, methods, tasks=tasks, n_folds=5, seed=0)
