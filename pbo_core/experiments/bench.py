"""Benchmark grids: cells, summaries and the ``python -m pbo_core.bench`` command.

Runs every (function, method, seed) cell of a grid with :func:`pbo_core.loop.run_pbo`,
in parallel with joblib, and prints a summary per (function, method). With ``--out`` the
per-step rows go to Parquet files in that folder and finished cells are skipped when the
command is run again (see :mod:`pbo_core.experiments.runner`).

Example::

    python -m pbo_core.bench --functions all --methods dt,dt-literal --seeds 5 \\
        --iters 200 --out results/bench --json -
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import ttest_rel

from pbo_core import __version__
from pbo_core.benchmarks import PAPER_FUNCTIONS, available_benchmarks, get_benchmark
from pbo_core.experiments.runner import Cell, progress_printer, run_grid, write_json
from pbo_core.loop import INIT_DESIGNS, RunResult, parse_init, run_pbo
from pbo_core.problem import Problem
from pbo_core.strategies.registry import METHODS, make_strategy

__all__ = ["build_parser", "main", "run_cell", "summarize"]


def run_cell(cell: Cell, callback: Callable[[int, RunResult], None] | None = None) -> pd.DataFrame:
    """One benchmark run as tidy per-step rows.

    ``cell`` has the keys ``function``, ``method``, ``seed``, ``iters``, ``n_init`` and
    optionally ``noise`` (default 0), ``noise_sigma`` and ``init`` (default ``"lhs"``);
    ``callback(step, partial_result)`` is called after every step (progress bars).
    """
    f = get_benchmark(cell["function"])
    problem = Problem.from_benchmark(f)
    sigma = cell.get("noise_sigma")
    noise = float(cell.get("noise", 0.0))
    res = run_pbo(
        problem,
        make_strategy(cell["method"]),
        n_init=int(cell["n_init"]),
        n_iter=int(cell["iters"]),
        seed=int(cell["seed"]),
        noise_r=noise,
        noise_sigma=None if sigma is None else float(sigma),
        init=str(cell.get("init", "lhs")),
        method=cell["method"],
        callback=callback,
    )
    df = res.to_frame().rename(columns={"problem": "function"})
    df.insert(2, "dim", f.dim)
    df["noise"] = noise
    df["noise_sigma"] = np.nan if sigma is None else float(sigma)
    df["init"] = str(cell.get("init", "lhs"))
    df["iters"] = int(cell["iters"])
    df["n_init"] = int(cell["n_init"])
    return df


def summarize(rows: pd.DataFrame, baseline: str | None = None) -> list[dict[str, Any]]:
    """Per (function, method): final-regret statistics and median wall time per run.

    With ``baseline``, every other method also gets ``gain_pct_vs`` (percentage
    improvement of the mean final best utility over the baseline's, KappaSharp's "Gain")
    and ``p_value_vs`` (paired t-test over the seeds both ran, common random numbers).
    """
    out: list[dict[str, Any]] = []
    if rows.empty:
        return out
    keys = ["function", "method", "seed"]
    last = rows.loc[rows.groupby(keys)["step"].idxmax()]
    per_run_time = rows.groupby(keys)["time_s"].sum()
    order = {name: i for i, name in enumerate(dict.fromkeys(rows["function"]))}
    m_order = {name: i for i, name in enumerate(dict.fromkeys(rows["method"]))}
    best = last.set_index(keys)["best_value"] if "best_value" in last else None
    for (fn, method), g in sorted(
        last.groupby(["function", "method"]), key=lambda kv: (order[kv[0][0]], m_order[kv[0][1]])
    ):
        times = per_run_time.loc[fn, method]
        row: dict[str, Any] = {
            "function": fn,
            "method": method,
            "dim": int(g["dim"].iloc[0]),
            "seeds": int(g["seed"].nunique()),
            "iters": int(g["iters"].iloc[0]),
            "final_regret_mean": float(g["regret"].mean()),
            "final_regret_median": float(g["regret"].median()),
            "final_regret_std": float(g["regret"].std(ddof=1)) if len(g) > 1 else 0.0,
            "time_per_run_median_s": float(np.median(times.to_numpy())),
        }
        if best is not None:
            row["final_best_utility_mean"] = float(g["best_value"].mean())
        if baseline is not None and best is not None and method != baseline:
            try:
                b = best.loc[fn, baseline]
            except KeyError:
                b = None
            if b is not None:
                mine = best.loc[fn, method]
                common = mine.index.intersection(b.index)
                x, y = mine.loc[common].to_numpy(), b.loc[common].to_numpy()
                row["baseline"] = baseline
                row["gain_pct_vs"] = float(100.0 * (x.mean() - y.mean()) / abs(y.mean()))
                diff = x - y
                row["p_value_vs"] = (
                    float(ttest_rel(x, y).pvalue) if len(common) > 1 and np.any(diff != 0) else 1.0
                )
        out.append(row)
    return out


def _parse_list(text: str, known: Sequence[str], what: str, all_value: Sequence[str]) -> list[str]:
    items = [t.strip().lower() for t in text.split(",") if t.strip()]
    if items == ["all"]:
        return list(all_value)
    bad = [t for t in items if t not in known]
    if bad:
        raise SystemExit(f"unknown {what}: {', '.join(bad)}; choose from {', '.join(known)}")
    return items


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(
        prog="python -m pbo_core.bench",
        description="Run preferential-BO benchmark grids and summarise final regret and time.",
    )
    p.add_argument(
        "--functions",
        default="all",
        help="comma-separated benchmark names, or 'all' for the eight DT-PBO paper functions "
        f"({', '.join(PAPER_FUNCTIONS)}); known: {', '.join(available_benchmarks())}",
    )
    p.add_argument(
        "--methods", default="dt", help=f"comma-separated methods; known: {', '.join(METHODS)}"
    )
    p.add_argument("--seeds", type=int, default=5, help="number of seeds (0..N-1)")
    p.add_argument("--iters", type=int, default=200, help="queries after the initial design")
    p.add_argument("--n-init", type=int, default=20, help="initial Latin-hypercube pairs")
    p.add_argument(
        "--noise", type=float, default=0.0, help="probit noise r (App. F.6); 0 = noiseless"
    )
    p.add_argument(
        "--init",
        default="lhs",
        help="initial design: lhs (--n-init Latin-hypercube pairs; DT-PBO) or the KappaSharp "
        f"conditions {', '.join(INIT_DESIGNS[1:])} (any pool_n<N>_k<K> / pure_k<K>)",
    )
    p.add_argument(
        "--noise-sigma",
        type=float,
        default=None,
        help="absolute comparison noise sigma (KappaSharp Eq. 1); default 0.1 with a "
        "KappaSharp --init, none with lhs",
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="method to compare the others against (gain_pct_vs, p_value_vs); default: "
        "'gp' when it is among the methods and others are too",
    )
    p.add_argument("--jobs", type=int, default=1, help="parallel workers (-1 = all cores)")
    p.add_argument("--dask-scheduler", default=None, help="run cells on this Dask scheduler")
    p.add_argument("--out", default=None, help="folder for per-step Parquet results (resumable)")
    p.add_argument("--fresh", action="store_true", help="recompute cells already in --out")
    p.add_argument("--json", default=None, metavar="PATH|-", help="write the JSON summary")
    p.add_argument("--quiet", action="store_true", help="no progress or table on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m pbo_core.bench``."""
    args = build_parser().parse_args(argv)
    functions = _parse_list(args.functions, available_benchmarks(), "function", PAPER_FUNCTIONS)
    methods = _parse_list(args.methods, list(METHODS), "method", list(METHODS))
    if args.seeds < 1 or args.iters < 0 or args.n_init < 1:
        raise SystemExit("--seeds must be >= 1, --iters >= 0 and --n-init >= 1")
    try:
        parse_init(args.init, args.n_init)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    sigma = args.noise_sigma
    if sigma is None and args.init != "lhs":
        sigma = 0.1
    baseline = args.baseline
    if baseline is None and "gp" in methods and len(methods) > 1:
        baseline = "gp"
    if baseline is not None and baseline not in methods:
        raise SystemExit(f"--baseline {baseline} is not among --methods")
    cells = [
        {
            "function": fn,
            "method": m,
            "seed": s,
            "iters": args.iters,
            "n_init": args.n_init,
            "noise": args.noise,
            "version": __version__,
            **({"init": args.init} if args.init != "lhs" else {}),
            **({"noise_sigma": sigma} if sigma is not None else {}),
        }
        for fn in functions
        for m in methods
        for s in range(args.seeds)
    ]

    progress = progress_printer(args.quiet, "runs")

    rows = run_grid(
        cells,
        run_cell,
        out_dir=args.out,
        jobs=args.jobs,
        dask_scheduler=args.dask_scheduler,
        fresh=args.fresh,
        progress=progress,
    )
    summary = summarize(rows, baseline)
    if not args.quiet:
        table = pd.DataFrame(summary)
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"), file=sys.stderr)
    write_json({"summary": summary}, args.json)
    return 0
