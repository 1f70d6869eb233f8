"""Leave-one-out feature sensitivity for any accuracy method (DT-PBO Table 10 layout).

Every method of :data:`~pbo_core.experiments.accuracy.ACCURACY_METHODS` is refitted on one
split (:class:`~pbo_core.experiments.accuracy.Split`) once with all features and once
without each feature ``f`` (its encoded columns removed before fitting and scoring). For
evaluation unit ``r`` (a respondent; a test comparison on a pooled study's own split) the
change is paired on the same held-out comparisons,

.. math::

    \\Delta_{r,f} = \\mathrm{acc}_r(\\text{without } f) - \\mathrm{acc}_r(\\text{all}),
    \\qquad (1)

and each method's block reports the mean of (1) over units with a 95 % percentile
bootstrap CI (:func:`pbo_core.explain.sensitivity.summarize_sensitivity`). Accuracies count
a predicted tie as one half. Pooled methods are fitted once per feature on every training
comparison of the split; respondent-scope methods once per respondent and feature.

The command line (``python -m pbo_core.experiments sensitivity --methods a,b,c``) runs the
grid through :func:`~pbo_core.experiments.runner.run_grid` (one cell per method, feature
and chunk of respondents; resumable); the dashboard calls :func:`ablation_rows` on a
:func:`fraction_split` of an analyst's study.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import Study
from pbo_core.experiments.accuracy import (
    ACCURACY_METHODS,
    Split,
    accuracy_cell,
    accuracy_cells,
    split_rows,
    summarize_methods,
)
from pbo_core.experiments.runner import Cell
from pbo_core.experiments.studies import LoadStudy, LoadStudyFile
from pbo_core.explain.sensitivity import summarize_sensitivity

__all__ = [
    "BASELINE_ROW",
    "ablation_cell",
    "ablation_cells",
    "ablation_rows",
    "best_baseline",
    "fraction_split",
    "summarize_ablation",
]

#: The ``feature removed`` value of the all-features row.
BASELINE_ROW = "None (baseline)"


def ablation_cells(
    base: Cell, methods: Sequence[str], split: Split, features: Sequence[str]
) -> list[dict[str, Any]]:
    """One accuracy cell per method, feature removed (and chunk of respondents)."""
    out: list[dict[str, Any]] = []
    for f in [None, *features]:
        cell = dict(base) if f is None else dict(base, drop_feature=f)
        out += accuracy_cells(cell, methods, split)
    return out


def _tag(rows: pd.DataFrame, feature: str | None) -> pd.DataFrame:
    return rows.assign(**{"feature removed": BASELINE_ROW if feature is None else feature})


def ablation_cell(
    cell: Cell, *, load_study: LoadStudy, load_study_file: LoadStudyFile | None = None
) -> pd.DataFrame:
    """Accuracy rows of one method without ``cell["drop_feature"]`` (if any), tagged.

    The loaders are those of :func:`~pbo_core.experiments.accuracy.accuracy_cell`.
    """
    rows = accuracy_cell(cell, load_study=load_study, load_study_file=load_study_file)
    return _tag(rows, cell.get("drop_feature"))


def ablation_rows(
    split: Split,
    methods: Sequence[str],
    features: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Rows of every method with all features and without each one, in this process."""
    feats = list(features) if features is not None else split.study.schema.names
    jobs = [(m, f) for m in methods for f in [None, *feats]]
    parts = []
    for k, (m, f) in enumerate(jobs):
        parts.append(_tag(split_rows(split, ACCURACY_METHODS[m], drop_feature=f), f))
        if progress is not None:
            progress(k + 1, len(jobs))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def summarize_ablation(rows: pd.DataFrame, seed: int = 0) -> dict[str, pd.DataFrame]:
    """One Table 10 block per method: accuracies, the change (1) and its 95 % CI.

    Returns ``{method: table}`` in the order the methods appear in ``rows``; each table
    has the columns of :func:`~pbo_core.explain.sensitivity.summarize_sensitivity` plus
    ``method`` and ``respondents`` (respondents with a baseline test accuracy; 1 for a
    pooled study's split, whose rows are its comparisons).
    """
    out: dict[str, pd.DataFrame] = {}
    if rows.empty:
        return out
    for name in dict.fromkeys(rows["method"]):
        g = rows[rows["method"] == name]
        base = g[g["feature removed"] == BASELINE_ROW].set_index("respondent")
        parts = []
        for feat, h in g.groupby("feature removed", sort=False):
            h = h.set_index("respondent")
            b = base.reindex(h.index)
            parts.append(
                pd.DataFrame(
                    {
                        "unit": h.index,
                        "feature removed": feat,
                        "train acc (%)": 100 * h["train_acc"].to_numpy(float),
                        "delta train (pp)": np.nan
                        if feat == BASELINE_ROW
                        else 100 * (h["train_acc"] - b["train_acc"]).to_numpy(float),
                        "test acc (%)": 100 * h["test_acc"].to_numpy(float),
                        "delta test (pp)": np.nan
                        if feat == BASELINE_ROW
                        else 100 * (h["test_acc"] - b["test_acc"]).to_numpy(float),
                    }
                )
            )
        stacked = pd.concat(parts, ignore_index=True)
        table = summarize_sensitivity(stacked.drop(columns="unit"), seed=seed)
        table.insert(0, "method", name)
        # a pooled study's split has one row per comparison ("test-k"/"train-k"): 1 unit
        per_pair = base.index.astype(str).str.match(r"(test|train)-\d+$").all()
        n_units = int(np.isfinite(base["test_acc"].to_numpy(float)).sum())
        table["respondents"] = 1 if per_pair and len(base) else n_units
        out[str(name)] = table
    return out


def best_baseline(rows: pd.DataFrame, seed: int = 0) -> str | None:
    """The ``"baseline"``-family method with the highest mean test accuracy in ``rows``."""
    s = summarize_methods(rows[rows["family"] == "baseline"], seed=seed, n_boot=1)
    ok = {m: v["test_acc_mean"] for m, v in s.items() if np.isfinite(v["test_acc_mean"])}
    return max(ok, key=lambda m: ok[m]) if ok else None


def fraction_split(
    study: Study,
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
    n_respondents: int = 20,
    use_study_split: bool = True,
) -> Split:
    """A random hold-out of ``test_fraction`` of each respondent's choice tasks.

    Per-respondent studies: the first ``n_respondents`` respondents, each with a hold-out
    seeded by ``[seed, k]`` (of their comparisons when the study has no task ids); only
    these respondents' comparisons are in the split, so pooled methods are fitted on
    them alone. Pooled studies: their own train/test split (``extras["split"]``) when
    ``use_study_split``, else a random hold-out of comparisons; the evaluation units are
    then the test comparisons.
    """
    if not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    data = study.data
    n = data.n_pairs
    train, test = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    if data.respondent is None:
        split = study.extras.get("split")
        if split is not None and use_study_split:
            s = np.asarray(split)
            train, test = s == "train", s == "test"
        elif n >= 2:
            k = min(n - 1, max(1, round(test_fraction * n)))
            test[np.random.default_rng(seed).choice(n, size=k, replace=False)] = True
            train = ~test
        return Split(study, "study", np.asarray([None]), [np.arange(n)], train, test)
    tasks = study.data.task
    ids, rows = [], []
    for k, r in enumerate(study.respondents()[: max(1, int(n_respondents))]):
        r_rows = np.flatnonzero(data.respondent == r)
        groups = np.asarray(tasks)[r_rows] if tasks is not None else np.arange(len(r_rows))
        uniq = np.unique(groups)
        if len(uniq) < 2:
            continue
        n_test = min(len(uniq) - 1, max(1, round(test_fraction * len(uniq))))
        held = np.random.default_rng([seed, k]).choice(uniq, size=n_test, replace=False)
        mask = np.isin(groups, held)
        test[r_rows[mask]] = True
        train[r_rows[~mask]] = True
        ids.append(r)
        rows.append(r_rows)
    return Split(study, "tasks", np.asarray(ids), rows, train, test)
