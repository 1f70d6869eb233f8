"""Speed of a 200-query DT-PBO run, normalised by a fixed numpy workload in the same process.

Wall times on a shared VM move by +-30 % with the host's load; the ratio to a baseline
measured in the same process right before and after each run moves much less. Prints,
per benchmark function, the median run time and the median ratio
``run_time / baseline_time`` (the baseline is 20,000 small numpy reductions, the kind of
call that dominates a DT-PBO step).

    python tests/benchmarks/speed.py [--functions all] [--seeds 5] [--iters 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pbo_core.benchmarks import PAPER_FUNCTIONS, get_benchmark
from pbo_core.loop import run_pbo
from pbo_core.problem import Problem
from pbo_core.strategies import make_strategy


def baseline() -> float:
    """Seconds for 20,000 reductions of a small array (the per-call numpy overhead)."""
    a = np.random.default_rng(0).random(64)
    t = time.perf_counter()
    for _ in range(20_000):
        a.sum()
    return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--functions", default="all")
    p.add_argument("--methods", default="dt")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--iters", type=int, default=200)
    args = p.parse_args()
    fns = PAPER_FUNCTIONS if args.functions == "all" else args.functions.split(",")
    print(f"{'function':12s} {'method':10s} {'median s':>9s} {'ratio':>8s}")
    for fn in fns:
        prob = Problem.from_benchmark(get_benchmark(fn))
        for m in args.methods.split(","):
            times, ratios = [], []
            for seed in range(args.seeds):
                b0 = baseline()
                res = run_pbo(prob, make_strategy(m), n_iter=args.iters, seed=seed)
                b1 = baseline()
                times.append(res.total_time)
                ratios.append(res.total_time / (0.5 * (b0 + b1)))
            print(f"{fn:12s} {m:10s} {np.median(times):9.3f} {np.median(ratios):8.1f}")


if __name__ == "__main__":
    main()
