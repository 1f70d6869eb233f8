"""User/item hierarchy cohorts: regret per question with and without the hierarchy (Fig. 17)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.experiments.runner import Cell

#: Default test tasks per respondent for conjoint studies.
from pbo_core.experiments.studies import (
    load_study_cached,
)
from pbo_core.hierarchy import UserItemHierarchy
from pbo_core.loop import run_pbo
from pbo_core.metrics import rho_regret
from pbo_core.problem import Problem
from pbo_core.strategies.dt import DTStrategy


@lru_cache(maxsize=4)
def fitted_hierarchy(dataset: str, n_prev: int, data_dir: str | None, max_depth: int) -> Any:
    study = load_study_cached(f"sushi-{dataset.lower()}", data_dir)
    return UserItemHierarchy(max_depth=max_depth, item_max_depth=max_depth).fit(
        study, users=np.arange(n_prev)
    )


def hierarchy_cell(cell: Cell) -> pd.DataFrame:
    """One user of a cohort, with or without the user/item hierarchy (App. G.1, Fig. 17)."""
    dataset = cell["dataset"]
    study = load_study_cached(f"sushi-{dataset.lower()}", cell.get("data_dir"))
    user = int(cell["user"])
    depth = int(cell["max_depth"])
    order = np.asarray(study.extras["true_order"][user])  # item indices, best first
    items = order if dataset.upper() == "B" else np.arange(study.data.n_items)
    n = len(order)
    utility_all = np.zeros(study.data.n_items)
    utility_all[order] = np.arange(n, 0, -1, dtype=float)
    X = study.data.X[items]
    problem = Problem.from_items(f"sushi-{dataset}/{user}", X, utility_all[items], study.schema)
    n_prev = int(cell["cohort"]) * int(cell["refit_every"])
    if cell["variant"] == "hierarchy" and n_prev > 0:
        h = fitted_hierarchy(dataset, n_prev, cell.get("data_dir"), depth)
        resp = study.respondents()[user]
        leaf = int(h.assign(study.users.loc[[resp]])[0])
        strategy: Any = DTStrategy(
            within="auto", model=h.warm_start_surrogate(leaf, X), name="hierarchy"
        )
    else:
        leaf = -1
        strategy = DTStrategy(within="auto", max_depth=depth, name="plain")
    res = run_pbo(
        problem,
        strategy,
        n_init=1,
        n_iter=int(cell["iters"]),
        seed=int(cell["seed"]) * 100_003 + user,
    )
    assert res.scores is not None
    local_order = np.arange(n) if dataset.upper() == "B" else order  # B: items = order
    return pd.DataFrame(
        {
            "user": user,
            "cohort": int(cell["cohort"]),
            "variant": cell["variant"],
            "user_leaf": leaf,
            "question": 1 + np.arange(len(res.regret)),
            "regret": res.regret,
            "rho_regret": [rho_regret(local_order, s) for s in res.scores],
        }
    )


def summarize_hierarchy(rows: pd.DataFrame, early: int = 5) -> dict[str, Any]:
    """Mean regret per question for every cohort and variant, plus early-regret totals."""
    out: dict[str, Any] = {"cohorts": [], "early_questions": early}
    for (cohort, variant), g in rows.groupby(["cohort", "variant"], sort=True):
        per_q = g.groupby("question")
        out["cohorts"].append(
            {
                "cohort": int(cohort),
                "variant": variant,
                "users": int(g["user"].nunique()),
                "regret_mean": [float(v) for v in per_q["regret"].mean()],
                "regret_sd": [float(v) for v in per_q["regret"].std(ddof=1).fillna(0)],
                "rho_regret_mean": [float(v) for v in per_q["rho_regret"].mean()],
            }
        )
    later = rows[rows["cohort"] > 0]
    for variant, g in later.groupby("variant"):
        e = g[g["question"] <= early]
        out[f"{variant}_mean_regret_first_{early}_questions"] = float(e["regret"].mean())
        out[f"{variant}_mean_regret_all_questions"] = float(g["regret"].mean())
    return out
