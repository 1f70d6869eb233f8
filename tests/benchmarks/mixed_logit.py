"""Wall time of the mixed logit's fit at xlogit's benchmark size.

The workload of xlogit's CPU benchmark (its ``artificial`` data; Arteaga et al. 2022): a
simulated study of 4,000 respondents, one choice each among 3 alternatives described by 10
attributes, of which 3 have normal random coefficients (means 2, 4, -2, s.d. 1) and 7
fixed ones (-1, -1.5, 1, 1 and three of 0); the mixed logit is fitted with 500 scrambled
Halton draws per respondent (``pbo_core.models.mixed_logit.MixedLogit``: BFGS from the
conditional logit's estimate, then the classical and robust standard errors, which the
model computes on first use: ``seconds`` counts both, ``errors_seconds`` the errors).
Target: under 20 s on the 2-core machine; xlogit's CPU run of this size took 16.8 s,
Biogeme 173 s on 64 cores. ``--electricity`` also times the Electricity reproduction
(361 respondents, 4,308 choices, 6 random coefficients, 600 draws).

The numba kernel is compiled (or loaded from numba's cache) before the timing. The JSON
carries the seconds, the process CPU seconds, the machine's load average before the run
and a reference workload (a fixed NumPy solve) timed before and after in this process:
``ratio`` (fit seconds over the reference's mean) moves less with the load than the
seconds do.

    python tests/benchmarks/mixed_logit.py --json -
    python tests/benchmarks/mixed_logit.py --respondents 4000 --draws 500 --electricity --json -
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the packages importable
    sys.path.insert(0, str(ROOT))

from pbo_core.data import Feature, PreferenceData, Schema  # noqa: E402
from pbo_core.models.mixed_logit import MixedLogit  # noqa: E402

#: xlogit's artificial design: every alternative's base values, one row per attribute.
BASE = {
    "price": (2, 3, 7),
    "time": (6, 3.5, 3),
    "conven": (3, 4, 8),
    "comfort": (4, 4.5, 2),
    "meals": (3, 2, 0),
    "petfr": (0, 0, 3),
    "emipp": (2, 0.5, 7),
    "nonsig1": (4, 2, 5),
    "nonsig2": (1, 3, 1),
    "nonsig3": (5, 2, 4),
}
FIXED = {"price": -1.0, "time": -1.5, "conven": 1.0, "comfort": 1.0}
RANDOM = {"meals": (2.0, 1.0), "petfr": (4.0, 1.0), "emipp": (-2.0, 1.0)}
TARGET_S = 20.0
XLOGIT_CPU_S = 16.8


def simulated_study(n: int, seed: int = 0) -> PreferenceData:
    """``n`` respondents, one choice each among 3 alternatives (xlogit's design: base
    values plus standard normal noise on a fifth of the cells)."""
    rng = np.random.default_rng(seed)
    J, names = 3, list(BASE)
    X = np.empty((n * J, len(names)))
    for k, name in enumerate(names):
        col = np.tile(np.asarray(BASE[name], dtype=float), n)
        hit = rng.random(n * J) < 0.2
        col[hit] += rng.standard_normal(int(hit.sum()))
        X[:, k] = np.round(col, 3)
    beta = np.zeros((n, len(names)))
    for name, b in FIXED.items():
        beta[:, names.index(name)] = b
    for name, (m, s) in RANDOM.items():
        beta[:, names.index(name)] = m + s * rng.standard_normal(n)
    V = np.einsum("njk,nk->nj", X.reshape(n, J, -1), beta)
    P = np.exp(V - V.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    choice = (rng.random(n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    base = np.arange(n) * J
    pairs = np.array([(base[i] + choice[i], base[i] + j) for i in range(n) for j in range(J)])
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    resp = pairs[:, 0] // J
    lo = X.min(axis=0) - 1.0
    hi = X.max(axis=0) + 1.0
    schema = Schema(
        tuple(
            Feature(name, "numeric", bounds=(float(a), float(b)))
            for name, a, b in zip(names, lo, hi, strict=True)
        )
    )
    return PreferenceData(X, pairs, schema=schema, respondent=resp, task=resp, source="xlogit-like")


def reference_seconds() -> float:
    """A fixed NumPy workload timed in this process: how loaded the machine is now."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 200))
    t0 = time.perf_counter()
    for _ in range(10):
        np.linalg.solve(a @ a.T + np.eye(200), a)
    return time.perf_counter() - t0


def timed_fit(data: PreferenceData, **params: object) -> tuple[MixedLogit, float, float, float]:
    """The fitted model with its standard errors, the wall seconds of both, the process
    CPU seconds of both and the wall seconds of the errors alone."""
    t0, c0 = time.perf_counter(), time.process_time()
    model = MixedLogit(**params).fit(data)  # type: ignore[arg-type]
    t1 = time.perf_counter()
    model.coef_table()  # the classical and robust errors (computed on first use)
    t2 = time.perf_counter()
    return model, t2 - t0, time.process_time() - c0, t2 - t1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--respondents", type=int, default=4000)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--electricity", action="store_true", help="also time the Electricity fit")
    ap.add_argument("--json", metavar="PATH|-", help="write the figures as JSON ('-': stdout)")
    args = ap.parse_args(argv)

    load = os.getloadavg()
    # compile (or load from numba's cache) the kernel before any timing
    MixedLogit(random=["meals"], n_draws=5).fit(simulated_study(30, seed=1))
    data = simulated_study(args.respondents, seed=args.seed)
    reference_seconds()  # BLAS threads started before the first timed reference
    ref0 = reference_seconds()
    model, wall, cpu, errors = timed_fit(
        data, random=list(RANDOM), n_draws=args.draws, random_state=args.seed
    )
    ref1 = reference_seconds()
    table = model.coef_table()
    out: dict[str, object] = {
        "workload": "xlogit artificial: 3 alternatives, 10 attributes, 3 normal random",
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "errors_seconds": round(errors, 2),
        "respondents": args.respondents,
        "draws": args.draws,
        "random_coefficients": len(RANDOM),
        "parameters": len(model.coef_),
        "loglik": round(model.loglik_, 3),
        "iterations": model.n_iter_,
        "converged": model.converged_,
        "target_s": TARGET_S,
        "xlogit_cpu_s": XLOGIT_CPU_S,
        "within_target": wall < TARGET_S,
        "reference_workload_s": [round(ref0, 3), round(ref1, 3)],
        "ratio": round(wall / (0.5 * (ref0 + ref1)), 1),
        "load_average_before": [round(x, 2) for x in load],
        "estimates": {
            str(r.name): [round(float(r.coef), 3), round(float(r.se), 3)]
            for r in table.itertuples()
        },
    }
    if args.electricity:
        from data_loaders.registry import load_study

        study = load_study("electricity")
        em, ew, ec, ee = timed_fit(study.data, n_draws=600, random_state=0)
        out["electricity"] = {
            "seconds": round(ew, 2),
            "cpu_seconds": round(ec, 2),
            "errors_seconds": round(ee, 2),
            "respondents": em.n_respondents_,
            "choices": em.n_situations_,
            "draws": 600,
            "random_coefficients": len(em.random_columns_),
            "loglik": round(em.loglik_, 3),
            "iterations": em.n_iter_,
        }
    text = json.dumps(out, indent=2)
    if args.json == "-":
        print(text)
    else:
        print(
            f"mixed logit, {args.respondents} respondents x {args.draws} draws x "
            f"{len(RANDOM)} random: {wall:.2f} s (CPU {cpu:.2f} s, target < {TARGET_S:g} s; "
            f"xlogit CPU {XLOGIT_CPU_S} s), LL {model.loglik_:.3f}, {model.n_iter_} iterations"
        )
        if args.json:
            Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
