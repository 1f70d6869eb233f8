"""Why the GP-EUBO loop stalls on noiseless Branin (docs/fidelity.md).

Runs ``gp`` (20 LHS pairs, noiseless) and prints, per seed: the regret after 50 queries and
at the end, the fitted outputscale and lengthscales, the share of comparisons the MAP
predicts with |z| > 3 (probit saturated), the share of queried coordinates within 0.02 of
the box edge, and for the last query pair the posterior sd of both points after the fit
that saw the answer (the prior sd is sqrt(outputscale)).

``--outputscale-max`` overrides the upper end of the outputscale prior box (default 100,
BoTorch's) for this diagnostic only.

Usage: ``PYTHONPATH=. python docs/scripts/branin_gp_stall.py --seeds 0,1 --iters 120``
"""

from __future__ import annotations

import argparse

import numpy as np

import pbo_core.models.gp.laplace as laplace
import pbo_core.models.gp.surrogate as surrogate
from pbo_core.benchmarks import get_benchmark
from pbo_core.loop import run_pbo
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--iters", type=int, default=120)
    p.add_argument("--outputscale-max", type=float, default=None)
    args = p.parse_args()
    if args.outputscale_max is not None:
        box = (laplace.OUTPUTSCALE_BOX[0], float(args.outputscale_max))
        laplace.OUTPUTSCALE_BOX = box
        surrogate.OUTPUTSCALE_BOX = box
    prob = Problem.from_benchmark(get_benchmark("branin"))
    for seed in (int(s) for s in args.seeds.split(",")):
        st = make_strategy("gp")
        res = run_pbo(prob, st, n_init=20, n_iter=args.iters, seed=seed)
        m = st.model
        z = np.abs(m.C_ @ m.laplace_.f) / np.sqrt(2.0)
        Z = m.encoder_(res.X[40:])  # the queried points (after the 20 LHS pairs)
        edge = float(np.mean(np.minimum(Z, 1.0 - Z) < 0.02))
        _, cov = m.posterior(res.X[-2:])
        print(
            f"seed {seed}: regret@50 {res.regret[min(50, args.iters)]:.4g}, "
            f"final {res.regret[-1]:.4g}, best found {res.best_value[-1]:.4g}; "
            f"outputscale {m.outputscale_:.3g} (prior sd {np.sqrt(m.outputscale_):.3g}), "
            f"lengthscales {np.round(m.lengthscale_, 3).tolist()}; saturated {np.mean(z > 3):.2f}; "
            f"queried coordinates at the edge {edge:.2f}; "
            f"posterior sd of the last pair {np.round(np.sqrt(np.diag(cov)), 2).tolist()}"
        )


if __name__ == "__main__":
    main()
