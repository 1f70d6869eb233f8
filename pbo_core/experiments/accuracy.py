"""Held-out pairwise accuracy: Sushi generalisation (Table 1), conjoint tasks (Table 12),
straddler ablation (Table 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.experiments.runner import Cell

#: Default test tasks per respondent for conjoint studies.
from pbo_core.experiments.studies import (
    fit_model,
    load_study_cached,
    respondent_split,
    train_test,
)
from pbo_core.metrics import accuracy, mean_sd


def sushi_generalization_cell(cell: Cell) -> pd.DataFrame:
    """Item hold-out accuracy of DT and GP for one user."""
    study = load_study_cached("sushi-a", cell.get("data_dir"))
    user = int(cell["user"])
    data = study.for_respondent(user)
    rng = np.random.default_rng([int(cell["seed"]), user])
    if cell["split"] == "items":
        unseen = rng.choice(data.n_items, size=int(cell["holdout"]), replace=False)
        test_mask = np.isin(data.pairs, unseen).any(axis=1)
    else:  # pairs: a random 20 % of the user's comparisons
        n_test = round(0.2 * data.n_pairs)
        test_mask = np.zeros(data.n_pairs, dtype=bool)
        test_mask[rng.choice(data.n_pairs, size=n_test, replace=False)] = True
    train, test = train_test(data, test_mask)
    rows = []
    for kind in ("dt", "gp"):
        m = fit_model(kind, train)
        rows.append(
            {
                "user": user,
                "model": kind,
                "train_acc": accuracy(m, train),
                "test_acc": accuracy(m, test),
                "n_train": train.n_pairs,
                "n_test": test.n_pairs,
            }
        )
    return pd.DataFrame(rows)


def conjoint_cell(cell: Cell) -> pd.DataFrame:
    """DT vs GP (or straddler variants) on one respondent's task hold-out."""
    study = load_study_cached(cell["study"], cell.get("data_dir"))
    resp = study.respondents()[int(cell["respondent_index"])]
    split = respondent_split(study, resp, int(cell["test_tasks"]), int(cell["seed"]))
    if split is None:
        return pd.DataFrame()
    data, test_mask = split
    train, test = train_test(data, test_mask)
    if cell["experiment"] == "straddler-ablation":
        variants = {
            "discard": {"straddlers": "discard", "max_depth": 4},
            "keep": {"straddlers": "keep", "max_depth": 4},
        }
        models = {k: ("dt", v) for k, v in variants.items()}
    else:
        models = {"dt": ("dt", {}), "gp": ("gp", {})}
    rows = []
    for name, (kind, kw) in models.items():
        m = fit_model(kind, train, **kw)
        row = {
            "respondent": str(resp),
            "model": name,
            "train_acc": accuracy(m, train),
            "test_acc": accuracy(m, test),
            "n_train": train.n_pairs,
            "n_test": test.n_pairs,
        }
        if kind == "dt":
            row.update(leaves=m.n_leaves_, depth=m.tree_.max_depth)
        rows.append(row)
    return pd.DataFrame(rows)


def summarize_accuracy(rows: pd.DataFrame, extra: Sequence[str] = ()) -> dict[str, Any]:
    """Mean +- sd of train/test accuracy (and ``extra`` columns) per model."""
    out: dict[str, Any] = {}
    for model, g in rows.groupby("model", sort=False):
        d: dict[str, Any] = {"n": len(g)}
        for col in ("train_acc", "test_acc", *extra):
            ms = mean_sd(g[col].to_numpy(dtype=float))
            d[f"{col}_mean"] = float(ms.mean)
            d[f"{col}_sd"] = float(ms.sd)
        out[str(model)] = d
    return out
