"""Sushi set A: finding each user's favourite from pairwise queries (DT-PBO Fig. 3/7)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pbo_core.experiments.runner import Cell
from pbo_core.experiments.studies import LoadStudy
from pbo_core.loop import run_pbo
from pbo_core.metrics import rho_regret, top1_rank_error
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy


def sushi_pbo_cell(cell: Cell, *, load_study: LoadStudy) -> pd.DataFrame:
    """One user x method run on Sushi set A.

    Parameters
    ----------
    cell
        ``user``, ``method``, ``n_init``, ``iters``, ``seed`` (and ``data_dir``).
    load_study
        Loads ``"sushi-a"`` (:class:`~pbo_core.experiments.studies.LoadStudy`; bind it
        with :func:`functools.partial` for :func:`~pbo_core.experiments.runner.run_grid`).
    """
    study = load_study("sushi-a", cell.get("data_dir"))
    user = int(cell["user"])
    order = np.asarray(study.extras["true_order"][user])
    n = len(order)
    utility = np.empty(n)
    utility[order] = np.arange(n, 0, -1, dtype=float)  # best = n
    problem = Problem.from_items(f"sushi-a/{user}", study.data.X, utility, study.schema)
    res = run_pbo(
        problem,
        make_strategy(cell["method"]),
        n_init=int(cell["n_init"]),
        n_iter=int(cell["iters"]),
        seed=int(cell["seed"]) * 100_003 + user,
    )
    assert res.scores is not None
    rows = []
    for step, scores in enumerate(res.scores):
        rows.append(
            {
                "user": user,
                "method": cell["method"],
                "question": int(cell["n_init"]) + step,
                "rho_regret": rho_regret(order, scores),
                "top1_error": top1_rank_error(int(order[0]), scores),
                # other items predicted exactly as good as the favourite (a tree's leaf)
                "top1_ties": int(np.sum(scores == scores[int(order[0])]) - 1),
                "time_s": float(res.time[step]),
            }
        )
    return pd.DataFrame(rows)


def summarize_sushi_pbo(rows: pd.DataFrame, found_at: int = 9) -> dict[str, Any]:
    """Mean rho-regret and top-1 error per question, and the share found by question 9."""
    out: dict[str, Any] = {"methods": {}}
    for method, g in rows.groupby("method", sort=False):
        per_q = g.groupby("question")
        at = g[g["question"] == found_at]
        out["methods"][method] = {
            "users": int(g["user"].nunique()),
            "question": [int(q) for q in per_q.groups],
            "rho_regret_mean": [float(v) for v in per_q["rho_regret"].mean()],
            "rho_regret_se": [float(v) for v in per_q["rho_regret"].sem().fillna(0)],
            "top1_error_mean": [float(v) for v in per_q["top1_error"].mean()],
            f"share_found_by_question_{found_at}": (
                float((at["top1_error"] == 0).mean()) if len(at) else None
            ),
        }
        if "top1_ties" in g:
            # "found" read three ways per question: jointly first (ties allowed, the
            # share above), alone first, and first after a random tie-break (1 / (1 + ties))
            first = g["top1_error"] == 0
            alone = first & (g["top1_ties"] == 0)
            drawn = first / (1.0 + g["top1_ties"])
            out["methods"][method].update(
                share_first_joint=[float(v) for v in first.groupby(g["question"]).mean()],
                share_first_alone=[float(v) for v in alone.groupby(g["question"]).mean()],
                share_first_random_tiebreak=[float(v) for v in drawn.groupby(g["question"]).mean()],
            )
    return out
