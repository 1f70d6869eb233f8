"""The hierarchy grid at real-study size: wall time and peak memory at 1k-20k respondents.

Runs what ``python -m pbo_core.experiments hierarchy --study KEY --json -`` runs (the
SwissMetro-style cohort grid of :mod:`pbo_core.experiments.cohorts`: every arrival under
every variant, refits every 200 arrivals, the summary and the last cohort's segment
report) on a seeded simulated study with respondent features (:func:`simulated_study`),
each size in a fresh process, so its peak resident memory (``resource.getrusage``
``ru_maxrss``) and its caches are its own.

    python tests/benchmarks/hierarchy_scale.py --json -
    python tests/benchmarks/hierarchy_scale.py --sizes 1000,5000 --json -
    python tests/benchmarks/hierarchy_scale.py --sizes 1000 --profile   # cProfile top 25

Before each size it prints the grid's pre-run estimate
(:func:`pbo_core.experiments.cohorts.estimate_grid_seconds`, the one the command prints)
and skips a size estimated over ``--budget`` CPU seconds (default 1800; 20,000
respondents are estimated at 5.5 min), recording the estimate instead.

The simulated study: ``n`` respondents with four features (age in years, income bracket,
car available, region), four choice tasks each among three labelled alternatives (mode
A, B, C; cost in CHF, time in minutes), a conditional logit whose cost slope and
constants depend on age and region (segments to find). Its user tree splits on the
modes (``extras["hierarchy_split_items"]``), as SwissMetro's does.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from pbo_core.data import Feature, PreferenceData, Schema, Study  # noqa: E402
from pbo_core.experiments.cohorts import (  # noqa: E402
    cohort_cell,
    cohort_cell_grid,
    estimate_grid_seconds,
    segment_report,
    summarize_cohorts,
)
from pbo_core.experiments.runner import run_grid  # noqa: E402

SIZES = (1000, 2000, 5000, 20000)
#: Tasks per respondent and alternatives per task of the simulated study.
TASKS, ALTERNATIVES = 4, 3
#: The command's defaults: refit every 200 arrivals, depth 5, 20 per group, 2 test tasks.
REFIT_EVERY, MAX_DEPTH, MIN_USERS, TEST_TASKS = 200, 5, 20, 2

ITEMS = Schema(
    (
        Feature("mode", "categorical", levels=("A", "B", "C"), label="Mode"),
        Feature("cost", "numeric", bounds=(0.0, 20.0), label="Cost", unit="CHF"),
        Feature("time", "numeric", bounds=(5.0, 120.0), label="Travel time", unit="min"),
    )
)
USERS = Schema(
    (
        Feature("age", "numeric", bounds=(18.0, 85.0), label="Age", unit="years"),
        Feature("income", "ordinal", levels=("low", "middle", "high"), label="Income"),
        Feature("car", "binary", levels=("no", "yes"), label="Car available"),
        Feature("region", "categorical", levels=("north", "south", "east", "west", "centre")),
    )
)


def simulated_study(n: int, seed: int = 0) -> Study:
    """A seeded study of ``n`` respondents (see the module doc)."""
    rng = np.random.default_rng([seed, n])
    users = pd.DataFrame(
        {
            "age": rng.integers(18, 86, n).astype(float),
            "income": rng.choice(USERS["income"].levels, n, p=[0.3, 0.5, 0.2]),
            "car": rng.choice(["no", "yes"], n, p=[0.35, 0.65]),
            "region": rng.choice(USERS["region"].levels, n),
        },
        index=pd.Index([f"r{i}" for i in range(n)], name="respondent"),
    )
    young = users["age"].to_numpy() < 35
    rich = (users["income"] == "high").to_numpy()
    car = (users["car"] == "yes").to_numpy()
    south = users["region"].isin(["south", "east"]).to_numpy()
    b_cost = np.where(rich, -0.08, np.where(young, -0.35, -0.2))
    b_time = np.full(n, -0.03)
    asc = np.zeros((n, ALTERNATIVES))
    asc[:, 1] = np.where(south, 0.8, -0.3)
    asc[:, 2] = np.where(car, 0.6, -1.5)
    S = n * TASKS
    mode = np.tile(np.arange(ALTERNATIVES), S)
    cost = rng.uniform(0, 20, S * ALTERNATIVES).round(1)
    ttime = rng.uniform(5, 120, S * ALTERNATIVES).round()
    r_of = np.repeat(np.arange(n), TASKS * ALTERNATIVES)
    v = asc[r_of, mode] + b_cost[r_of] * cost + b_time[r_of] * ttime
    g = rng.gumbel(size=len(v))
    chosen = np.argmax((v + g).reshape(S, ALTERNATIVES), axis=1)
    base = np.arange(S) * ALTERNATIVES
    win = base + chosen
    pairs = np.concatenate(
        [
            np.stack([win, base + (chosen + j) % ALTERNATIVES], axis=1)
            for j in range(1, ALTERNATIVES)
        ]
    )
    order = np.argsort(np.tile(np.arange(S), ALTERNATIVES - 1), kind="stable")
    pairs = pairs[order]
    sit = np.repeat(np.arange(S), ALTERNATIVES - 1)
    X = np.column_stack([mode, cost, ttime]).astype(float)
    data = PreferenceData(
        X,
        pairs,
        schema=ITEMS,
        respondent=users.index.to_numpy()[sit // TASKS],
        task=sit % TASKS,
        users=users,
        source=f"simulated-{n}",
    )
    return Study(
        f"simulated-{n}",
        f"Simulated study ({n:,} respondents)",
        ITEMS,
        data,
        users=users,
        user_schema=USERS,
        extras={
            "hierarchy_split_items": mode.astype(np.int64),
            "money_attribute": "cost",
            "time_attribute": "time",
            "alternative_attribute": "mode",
        },
    )


_STUDIES: dict[str, Study] = {}


def load_simulated(key: str, data_dir: str | None = None) -> Study:
    """``simulated-N``: the simulated study of N respondents (cached per process)."""
    if key not in _STUDIES:
        _STUDIES[key] = simulated_study(int(key.rsplit("-", 1)[1]))
    return _STUDIES[key]


def grid(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """The cells of the ``hierarchy`` command on the simulated study of ``n``."""
    k = min(REFIT_EVERY, max(1, n // 2))
    return cohort_cell_grid(
        n,
        k,
        study=f"simulated-{n}",
        base={"seed": seed},
        max_depth=MAX_DEPTH,
        min_users=MIN_USERS,
        test_tasks=TEST_TASKS,
    )


def hierarchy_grid(n: int, seed: int = 0, jobs: int = 1) -> dict[str, Any]:
    """The ``hierarchy`` command's grid and summary on the simulated study of ``n``."""
    key = f"simulated-{n}"
    k = min(REFIT_EVERY, max(1, n // 2))
    cells = grid(n, seed)
    rows = run_grid(cells, partial(cohort_cell, load_study=load_simulated), jobs=jobs)
    summary = {"study": key, **summarize_cohorts(rows)}
    last = int(rows["cohort"].max()) * k
    if last > 0:
        summary["last_cohort"] = segment_report(
            key, last, seed, MAX_DEPTH, MIN_USERS, None, load_study=load_simulated
        )
    return {"cells": len(cells), "summary": summary}


def _child(n: int, profile: bool) -> dict[str, Any]:
    load_simulated(f"simulated-{n}")  # build the study before the clock starts
    t0 = time.perf_counter()
    u0 = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = u0.ru_utime + u0.ru_stime
    if profile:
        prof = cProfile.Profile()
        out = prof.runcall(hierarchy_grid, n)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    else:
        out = hierarchy_grid(n)
    wall = time.perf_counter() - t0
    use = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "respondents": n,
        "wall_s": round(wall, 2),
        "cpu_s": round(use.ru_utime + use.ru_stime - cpu0, 2),
        "peak_rss_mib": round(use.ru_maxrss / 1024.0, 1),
        "load_average_1min": round(os.getloadavg()[0], 2),
        **out,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="respondents, comma-separated"
    )
    p.add_argument("--json", default=None, metavar="PATH|-", help="write the results")
    p.add_argument("--profile", action="store_true", help="cProfile (one size, this process)")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--full", action="store_true", help="keep every size's whole summary")
    p.add_argument(
        "--budget",
        type=float,
        default=1800.0,
        help="skip a size whose pre-run estimate is over this many CPU seconds (default 1800)",
    )
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.child is not None or args.profile:
        res = _child(args.child if args.child is not None else sizes[0], args.profile)
        print(json.dumps(res, default=float))
        return 0
    results = []
    for n in sizes:
        est = estimate_grid_seconds(grid(n), TASKS * (ALTERNATIVES - 1), TASKS)
        print(
            f"hierarchy grid, {n:,} respondents: estimated {est:.0f} s CPU ...",
            file=sys.stderr,
            flush=True,
        )
        if est > args.budget:
            results.append(
                {"respondents": n, "estimated_cpu_s": round(est), "skipped": "over --budget"}
            )
            print("  skipped: the estimate is over --budget", file=sys.stderr)
            continue
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(n)],
            capture_output=True,
            text=True,
            check=True,
        )
        res = {"estimated_cpu_s": round(est), **json.loads(proc.stdout.strip().splitlines()[-1])}
        if not args.full:
            s = res.pop("summary")
            res["variants_at_0_tasks"] = s.get("cold_start", {}).get("accuracy_at_0_tasks")
        print(
            f"  {res['wall_s']} s wall, {res['cpu_s']} s CPU, peak {res['peak_rss_mib']} MiB",
            file=sys.stderr,
        )
        results.append(res)
    text = json.dumps({"benchmark": "hierarchy_scale", "results": results}, indent=2)
    if args.json == "-":
        print(text)
    elif args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
