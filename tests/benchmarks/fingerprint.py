"""Fingerprint of DT-PBO runs: regret traces, recommendations and queried points.

Speed work must leave results unchanged. This prints one SHA-256 per (function, seed) of
the exact bytes of ``regret``, ``recommendation``, ``X`` and ``pairs`` of a ``dt`` run,
plus the largest regret difference against a saved reference (``--compare FILE``)::

    python tests/benchmarks/fingerprint.py --save before.json
    python tests/benchmarks/fingerprint.py --compare before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json

import numpy as np

from pbo_core.benchmarks import PAPER_FUNCTIONS, get_benchmark
from pbo_core.loop import run_pbo
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy


def fingerprints(functions, seeds: int, iters: int, method: str = "dt") -> dict:
    out = {}
    for fn in functions:
        prob = Problem.from_benchmark(get_benchmark(fn))
        for seed in range(seeds):
            r = run_pbo(prob, make_strategy(method), n_iter=iters, seed=seed)
            h = hashlib.sha256()
            for a in (r.regret, r.recommendation, r.X, r.pairs):
                h.update(np.ascontiguousarray(a).tobytes())
            out[f"{fn}/{seed}"] = {
                "sha256": h.hexdigest(),
                "regret": r.regret.tolist(),
                "X": r.X.tolist(),
            }
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--method", default="dt")
    p.add_argument("--save")
    p.add_argument("--compare")
    a = p.parse_args()
    fp = fingerprints(PAPER_FUNCTIONS, a.seeds, a.iters, a.method)
    if a.save:
        with open(a.save, "w") as fh:
            json.dump(fp, fh)
    if a.compare:
        with open(a.compare) as fh:
            ref = json.load(fh)
        same = sum(fp[k]["sha256"] == ref[k]["sha256"] for k in fp)
        dreg = max(
            float(np.max(np.abs(np.subtract(fp[k]["regret"], ref[k]["regret"])))) for k in fp
        )
        dX = max(
            float(np.max(np.abs(np.subtract(fp[k]["X"], ref[k]["X"]))))
            if np.shape(fp[k]["X"]) == np.shape(ref[k]["X"])
            else float("inf")
            for k in fp
        )
        print(
            f"{same}/{len(fp)} runs bit-identical; "
            f"max |regret diff| {dreg:.3g}; max |X diff| {dX:.3g}"
        )
    for k, v in fp.items():
        print(k, v["sha256"][:16])


if __name__ == "__main__":
    main()
