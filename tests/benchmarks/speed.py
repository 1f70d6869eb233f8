"""Speed rows of docs/speed.md, each with a reference workload measured in the same process.

Wall times on a shared VM move with the host's load; the ratio of a row to a fixed
reference workload measured in the same process moves much less, so the ``ratio`` column
is the number to compare across machines and commits. Two references:

* ``overhead``: 20,000 reductions of a 64-element array (per-call numpy overhead, what
  dominates a DT-PBO step);
* ``linalg``: 20 x (300 x 300 matmul + Cholesky), one BLAS thread (the dense algebra of
  the leaf and GP fits).

Rows (``--all`` prints every one; sections with ``--dt``, ``--leaves``, ``--gp``,
``--tree``):

* ``dt-run``: a 200-query DT-PBO run (method ``dt``), median over seeds, per function
  (target <= 0.10 s);
* ``leaf-laplace``: ``fit_leaf_posterior`` for K leaves x N comparisons (targets
  1,000 x 100,000 <= 1 s, 100 x 5,000 <= 0.05 s);
* ``gp-fit``: ``GPSurrogate().fit`` on 200 items in 2-D with N comparisons, hyperparameters
  fitted (target 4,973 comparisons <= 5 s);
* ``tree-growth``: ``build_tree`` on N comparisons x 20 features (target 100,000 <= 1 s),
  with ``s / (N log2 N)`` to show O(N log N).

Every row runs with one BLAS thread.

    python tests/benchmarks/speed.py --all
    python tests/benchmarks/speed.py --dt [--functions all] [--seeds 5] [--iters 200]
    python tests/benchmarks/speed.py --tree --tree-sizes 1000,10000,100000,1000000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from pbo_core.benchmarks import PAPER_FUNCTIONS, get_benchmark
from pbo_core.data import PreferenceData, Schema
from pbo_core.loop import run_pbo
from pbo_core.models.gp import GPSurrogate
from pbo_core.models.leaves import fit_leaf_posterior
from pbo_core.models.tree import build_tree
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy


def baseline() -> float:
    """Seconds for 20,000 reductions of a small array (the per-call numpy overhead)."""
    a = np.random.default_rng(0).random(64)
    t = time.perf_counter()
    for _ in range(20_000):
        a.sum()
    return time.perf_counter() - t


def linalg_baseline() -> float:
    """Seconds for 20 x (300 x 300 matmul + Cholesky) (dense algebra, one thread)."""
    rng = np.random.default_rng(0)
    A = rng.random((300, 300))
    S = A @ A.T + 300 * np.eye(300)
    t = time.perf_counter()
    for _ in range(20):
        np.linalg.cholesky(S @ A @ A.T + S)
    return time.perf_counter() - t


def _timed(fn: Callable[[], object], ref: Callable[[], float]) -> tuple[float, float]:
    """Wall seconds of ``fn()`` and its ratio to ``ref`` measured right before and after."""
    b0 = ref()
    t = time.perf_counter()
    fn()
    dt = time.perf_counter() - t
    b1 = ref()
    return dt, dt / (0.5 * (b0 + b1))


def _row(name: str, case: str, sec: float, ratio: float, ref: str, target: str) -> None:
    print(f"{name:13s} {case:28s} {sec:10.4f} {ratio:9.2f} {ref:9s} {target}", flush=True)


def comparisons(n_items: int, n_pairs: int, d: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Random items in the unit cube and noisy comparisons of a smooth utility."""
    rng = np.random.default_rng(seed)
    X = rng.random((n_items, d))
    u = np.sin(4 * X[:, : min(d, 5)]).sum(1) * 3
    a = rng.integers(0, n_items, n_pairs)
    b = (a + rng.integers(1, n_items, n_pairs)) % n_items
    win = u[a] + rng.normal(size=n_pairs) > u[b]
    return X, np.c_[np.where(win, a, b), np.where(win, b, a)]


def dt_rows(functions: list[str], seeds: int, iters: int) -> None:
    for fn in functions:
        prob = Problem.from_benchmark(get_benchmark(fn))
        run_pbo(prob, make_strategy("dt"), n_iter=5, seed=0)  # kernels loaded
        times, ratios, regrets = [], [], []
        for seed in range(seeds):
            b0 = baseline()
            res = run_pbo(prob, make_strategy("dt"), n_iter=iters, seed=seed)
            b1 = baseline()
            times.append(res.total_time)
            ratios.append(res.total_time / (0.5 * (b0 + b1)))
            regrets.append(res.regret[-1])
        _row(
            "dt-run",
            f"{fn} ({seeds} seeds, {iters} q)",
            float(np.median(times)),
            float(np.median(ratios)),
            "overhead",
            f"<= 0.10 s  (median regret {np.median(regrets):.3g})",
        )


def leaf_rows() -> None:
    for m, n, target in [(100, 5_000, "<= 0.05 s"), (300, 20_000, ""), (1_000, 100_000, "<= 1 s")]:
        rng = np.random.default_rng(0)
        u = rng.normal(size=m)
        a, b = rng.integers(0, m, n), rng.integers(0, m, n)
        win = u[a] + 0.5 * rng.normal(size=n) > u[b]
        w, lo = np.where(win, a, b), np.where(win, b, a)
        sec, ratio = _timed(lambda w=w, lo=lo, m=m: fit_leaf_posterior(w, lo, m), linalg_baseline)
        _row("leaf-laplace", f"{m:,} leaves x {n:,} comps", sec, ratio, "linalg", target)


def gp_rows() -> None:
    schema = Schema.numeric(np.tile([0.0, 1.0], (2, 1)))
    for n_pairs, target in [(249, ""), (997, ""), (4_973, "<= 5 s")]:
        X, P = comparisons(200, n_pairs, 2)
        data = PreferenceData(X, P, schema=schema)
        sec, ratio = _timed(lambda data=data: GPSurrogate().fit(data), linalg_baseline)
        _row("gp-fit", f"200 items x {n_pairs:,} comps", sec, ratio, "linalg", target)


def tree_rows(sizes: list[int]) -> None:
    d = 20
    schema = Schema.numeric(np.tile([0.0, 1.0], (d, 1)))
    build_tree(*comparisons(50, 100, d), schema)  # kernels loaded
    for n in sizes:
        X, P = comparisons(max(n // 5, 10), n, d)
        sec, ratio = _timed(lambda X=X, P=P: build_tree(X, P, schema), baseline)
        per = sec / (n * np.log2(n)) * 1e9
        target = "<= 1 s" if n == 100_000 else ""
        _row(
            "tree-growth",
            f"{n:,} comps x {d} feats",
            sec,
            ratio,
            "overhead",
            f"{target}  {per:.1f} ns/(N log2 N)",
        )


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--all", action="store_true", help="every row")
    p.add_argument("--dt", action="store_true", help="DT 200-query runs")
    p.add_argument("--leaves", action="store_true", help="leaf Laplace fits")
    p.add_argument("--gp", action="store_true", help="GP fits")
    p.add_argument("--tree", action="store_true", help="tree growth scaling")
    p.add_argument("--functions", default="all")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--tree-sizes", default="1000,10000,100000,1000000")
    args = p.parse_args()
    if not (args.all or args.dt or args.leaves or args.gp or args.tree):
        args.dt = True  # the former default of this script
    fns = list(PAPER_FUNCTIONS) if args.functions == "all" else args.functions.split(",")
    with threadpool_limits(1):
        b, lb = baseline(), linalg_baseline()
        print(f"reference workloads: overhead {b:.4f} s, linalg {lb:.4f} s (one thread)")
        print(f"{'row':13s} {'case':28s} {'seconds':>10s} {'ratio':>9s} {'ref':9s} target")
        if args.all or args.dt:
            dt_rows(fns, args.seeds, args.iters)
        if args.all or args.leaves:
            leaf_rows()
        if args.all or args.gp:
            gp_rows()
        if args.all or args.tree:
            tree_rows([int(s) for s in args.tree_sizes.split(",")])


if __name__ == "__main__":
    main()
