"""Case-study experiments: ``python -m pbo_core.experiments <command> ...``.

This module sits in the apps layer (above :mod:`data_loaders`, whose studies it loads);
nothing else in :mod:`pbo_core` imports it.

Commands
--------
``sushi-pbo``
    Per user of Sushi set A, find the favourite from pairwise queries: DT with qEUBO and
    the top-leaf rule cascading to the best unresolved leaf (``dt``), the top-leaf rule
    alone (``dt-toponly``), DT with random pairs (``dt-random``), DT without the top-leaf
    rule (``dt-notop``), GP with EUBO (``gp``). Rho-regret and top-1 rank error per question
    (DT-PBO Fig. 3 and 7), and the share of users whose favourite is ranked first (no item
    strictly above it) after 9 questions. The first question is a random pair.
``sushi-generalization``
    Per user a random 80/20 split of the 45 comparisons of set A (36 train, 9 test): the
    test comparisons are pairs the model has not seen (their sushi appear in other training
    pairs). Train/test accuracy of DT and GP (paper Table 1). ``--split items`` is the
    harder variant: 2 of the 10 sushi are held out and the test pairs are the 17
    comparisons that involve them.
``conjoint-accuracy``
    Per respondent a random task hold-out (BELA 2 of 18 tasks, Presidential 3, train 2,
    electricity 2), DT vs GP train/test accuracy, mean +- sd (paper Table 12).
``straddler-ablation``
    Discard vs keep straddlers (max depth 4): accuracy and tree size (paper Table 2).
``sensitivity``
    Leave-one-out feature sensitivity (Table 10 layout) for any study.
``hierarchy``
    Users of Sushi set A or B in cohorts of ``--refit-every`` (default 50): each user is
    elicited with a plain DT and with the user/item hierarchy refitted on all earlier
    users (:mod:`pbo_core.hierarchy`); regret per question per cohort (App. G.1, Fig. 17).

Every command computes independent cells (users, respondents) through
:func:`pbo_core.experiments.runner.run_grid`: ``--jobs`` parallelises, ``--out DIR`` stores one
Parquet file per cell so an interrupted run resumes, ``--json PATH|-`` prints a summary.
Accuracies count a predicted tie as one half.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from data_loaders.registry import load_study
from pbo_core import __version__
from pbo_core.data import PreferenceData, Study
from pbo_core.experiments.runner import Cell, progress_printer, run_grid, write_json
from pbo_core.explain.sensitivity import leave_one_out, summarize_sensitivity
from pbo_core.hierarchy import UserItemHierarchy
from pbo_core.loop import run_pbo
from pbo_core.metrics import accuracy, mean_sd, rho_regret, top1_rank_error
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.gp import GPSurrogate
from pbo_core.problem import Problem
from pbo_core.strategies.dt import DTStrategy
from pbo_core.strategies.registry import SUSHI_METHODS, make_strategy

#: Default test tasks per respondent for conjoint studies.
TEST_TASKS = {"bela": 2, "presidential": 3, "train": 2, "electricity": 2}


@lru_cache(maxsize=8)
def _study(key: str, data_dir: str | None = None) -> Study:
    opts: dict[str, Any] = {}
    if data_dir:
        opts["data_dir" if key.startswith("sushi") else "path"] = data_dir
    return load_study(key, **opts)


# ----------------------------------------------------------------------------- sushi-pbo
def sushi_pbo_cell(cell: Cell) -> pd.DataFrame:
    """One user x method run on Sushi set A."""
    study = _study("sushi-a", cell.get("data_dir"))
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
    return out


# ----------------------------------------------------------------------------- accuracy
def _fit(kind: str, data: PreferenceData, **kw: Any) -> Any:
    if kind == "dt":
        return DTSurrogate(**kw).fit(data)
    if kind == "gp":
        return GPSurrogate(**kw).fit(data)
    raise KeyError(kind)


def _train_test(
    data: PreferenceData, test_mask: np.ndarray
) -> tuple[PreferenceData, PreferenceData]:
    """Train pairs (items they use) and test pairs (all items) of one respondent."""
    train = data.select_pairs(~test_mask, drop_unused_items=False)
    test = data.select_pairs(test_mask, drop_unused_items=False)
    return train, test


def sushi_generalization_cell(cell: Cell) -> pd.DataFrame:
    """Item hold-out accuracy of DT and GP for one user."""
    study = _study("sushi-a", cell.get("data_dir"))
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
    train, test = _train_test(data, test_mask)
    rows = []
    for kind in ("dt", "gp"):
        m = _fit(kind, train)
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


def _respondent_split(study: Study, respondent: Any, n_test_tasks: int, seed: int):
    data = study.for_respondent(respondent)
    mask_r = study.data.respondent == respondent
    task = study.extras.get("pair_task")
    tasks = np.asarray(task)[mask_r] if task is not None else np.arange(data.n_pairs)
    uniq = np.unique(tasks)
    if len(uniq) <= n_test_tasks:
        return None
    idx = int(np.flatnonzero(study.respondents() == respondent)[0])
    rng = np.random.default_rng([seed, idx])
    test_tasks = rng.choice(uniq, size=n_test_tasks, replace=False)
    return data, np.isin(tasks, test_tasks)


def conjoint_cell(cell: Cell) -> pd.DataFrame:
    """DT vs GP (or straddler variants) on one respondent's task hold-out."""
    study = _study(cell["study"], cell.get("data_dir"))
    resp = study.respondents()[int(cell["respondent_index"])]
    split = _respondent_split(study, resp, int(cell["test_tasks"]), int(cell["seed"]))
    if split is None:
        return pd.DataFrame()
    data, test_mask = split
    train, test = _train_test(data, test_mask)
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
        m = _fit(kind, train, **kw)
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


# ----------------------------------------------------------------------------- sensitivity
def sensitivity_cell(cell: Cell) -> pd.DataFrame:
    """Leave-one-out table for one respondent (or the pooled study)."""
    study = _study(cell["study"], cell.get("data_dir"))
    split = study.extras.get("split")
    if split is not None and cell["respondent_index"] < 0:
        split = np.asarray(split)
        train = study.data.select_pairs(split == "train")
        test = study.data.select_pairs(split == "test")
    else:
        resp = study.respondents()[int(cell["respondent_index"])]
        got = _respondent_split(study, resp, int(cell["test_tasks"]), int(cell["seed"]))
        if got is None:
            return pd.DataFrame()
        train, test = _train_test(*got)
    table = leave_one_out(train, test, study.schema)
    table.insert(0, "respondent_index", int(cell["respondent_index"]))
    return table


# ----------------------------------------------------------------------------- hierarchy
@lru_cache(maxsize=4)
def _hierarchy(dataset: str, n_prev: int, data_dir: str | None, max_depth: int) -> Any:
    study = _study(f"sushi-{dataset.lower()}", data_dir)
    return UserItemHierarchy(max_depth=max_depth, item_max_depth=max_depth).fit(
        study, users=np.arange(n_prev)
    )


def hierarchy_cell(cell: Cell) -> pd.DataFrame:
    """One user of a cohort, with or without the user/item hierarchy (App. G.1, Fig. 17)."""
    dataset = cell["dataset"]
    study = _study(f"sushi-{dataset.lower()}", cell.get("data_dir"))
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
        h = _hierarchy(dataset, n_prev, cell.get("data_dir"), depth)
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


# ----------------------------------------------------------------------------- CLI
def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=1, help="parallel workers (-1 = all cores)")
    p.add_argument("--out", default=None, help="folder for per-cell Parquet results (resumable)")
    p.add_argument("--fresh", action="store_true", help="recompute cells already in --out")
    p.add_argument("--seed", type=int, default=0, help="seed of splits and runs")
    p.add_argument("--json", default=None, metavar="PATH|-", help="write the JSON summary")
    p.add_argument("--data-dir", default=None, help="where the study's data are (if not bundled)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(
        prog="python -m pbo_core.experiments",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sushi-pbo", help="find each user's favourite sushi (Fig. 3/7)")
    s.add_argument("--users", type=int, default=500, help="first N users (max 5000)")
    s.add_argument("--iters", type=int, default=20, help="queries after the first question")
    s.add_argument("--methods", default=",".join(SUSHI_METHODS))
    _common(s)
    s = sub.add_parser("sushi-generalization", help="item hold-out accuracy (Table 1)")
    s.add_argument("--users", type=int, default=500)
    s.add_argument(
        "--split",
        choices=("pairs", "items"),
        default="pairs",
        help="pairs: random 80/20 split of each user's 45 comparisons (default); "
        "items: hold out --holdout sushi and test on the pairs involving them",
    )
    s.add_argument("--holdout", type=int, default=2, help="unseen sushi per user (of 10)")
    _common(s)
    s = sub.add_parser("hierarchy", help="user/item tree hierarchy cohorts (Fig. 17)")
    s.add_argument("--dataset", choices=("A", "B", "a", "b"), default="A")
    s.add_argument("--users", type=int, default=900)
    s.add_argument("--refit-every", type=int, default=50, help="users per cohort")
    s.add_argument("--iters", type=int, default=20, help="queries after the first question")
    s.add_argument("--max-depth", type=int, default=5, help="depth of user and item trees")
    _common(s)
    for name, helptext in (
        ("conjoint-accuracy", "DT vs GP per respondent (Table 12)"),
        ("straddler-ablation", "discard vs keep straddlers (Table 2)"),
        ("sensitivity", "leave-one-out feature sensitivity (Table 10)"),
    ):
        s = sub.add_parser(name, help=helptext)
        s.add_argument(
            "--study",
            required=True,
            help="registry key: train, electricity, bela, presidential, pmr-demo, ...",
        )
        s.add_argument(
            "--test-tasks",
            type=int,
            default=None,
            help="test tasks per respondent (defaults: "
            + ", ".join(f"{k} {v}" for k, v in TEST_TASKS.items())
            + ")",
        )
        s.add_argument("--respondents", type=int, default=None, help="first N respondents")
        _common(s)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    progress = progress_printer(args.quiet, "cells")

    base = {"version": __version__, "seed": args.seed}
    if args.data_dir:
        base["data_dir"] = args.data_dir
    cmd = args.command
    fn: Callable[[Cell], pd.DataFrame]
    if cmd == "sushi-pbo":
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        bad = [m for m in methods if m not in SUSHI_METHODS]
        if bad:
            raise SystemExit(f"unknown methods {bad}; choose from {list(SUSHI_METHODS)}")
        cells = [
            dict(base, user=u, method=m, iters=args.iters, n_init=1)
            for u in range(args.users)
            for m in methods
        ]
        fn = sushi_pbo_cell
    elif cmd == "hierarchy":
        k = args.refit_every
        cells = [
            dict(
                base,
                dataset=args.dataset.upper(),
                user=u,
                cohort=u // k,
                refit_every=k,
                iters=args.iters,
                max_depth=args.max_depth,
                variant=v,
            )
            for u in range(args.users)
            for v in ("plain", "hierarchy")
        ]
        fn = hierarchy_cell
    elif cmd == "sushi-generalization":
        cells = [
            dict(base, user=u, split=args.split, holdout=args.holdout) for u in range(args.users)
        ]
        fn = sushi_generalization_cell
    else:
        study = _study(args.study, args.data_dir)
        n_resp = len(study.respondents())
        if args.respondents is not None:
            n_resp = min(n_resp, args.respondents)
        tt = args.test_tasks if args.test_tasks is not None else TEST_TASKS.get(args.study, 2)
        if cmd == "sensitivity" and study.extras.get("split") is not None:
            idx = [-1]
        else:
            idx = list(range(n_resp))
        cells = [
            dict(base, study=args.study, respondent_index=i, test_tasks=tt, experiment=cmd)
            for i in idx
        ]
        fn = sensitivity_cell if cmd == "sensitivity" else conjoint_cell
    rows = run_grid(
        cells, fn, out_dir=args.out, jobs=args.jobs, fresh=args.fresh, progress=progress
    )
    if cmd == "sushi-pbo":
        summary: Any = summarize_sushi_pbo(rows)
    elif cmd == "hierarchy":
        summary = summarize_hierarchy(rows)
    elif cmd == "sensitivity":
        table = summarize_sensitivity(rows)
        summary = {"study": args.study, "table": table.to_dict(orient="records")}
        if not args.quiet:
            print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"), file=sys.stderr)
    else:
        extra = ("leaves", "depth") if cmd == "straddler-ablation" else ()
        summary = summarize_accuracy(rows, extra)
        if cmd != "sushi-generalization":
            summary = {"study": args.study, "models": summary}
    write_json({"command": cmd, "summary": summary}, args.json)
    return 0
