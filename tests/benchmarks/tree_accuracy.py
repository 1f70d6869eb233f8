"""Tree-family accuracy on the exact split of ``conjoint-accuracy``.

Per respondent, 2 tasks are held out with ``np.random.default_rng([seed, respondent_index])``
exactly as ``python -m pbo_core.experiments conjoint-accuracy --study S --seed SEED`` (and
``tests/benchmarks/linear_baselines.py``) do; test accuracy counts a predicted tie as 1/2
and is averaged over respondents, with a 95 % percentile-bootstrap CI over respondents and
the paired difference to the per-respondent logit. Every model sees the training pairs
only (pooled models all respondents' training pairs; per-respondent models their own);
CV inside the models uses those training pairs with folds over whole tasks.

    python tests/benchmarks/tree_accuracy.py [--study train electricity] [--seed 0]
        [--methods dt logit dt-pooled dt-linear dt-linear-pooled] [--pivot]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np
from linear_baselines import TEST_TASKS, per_respondent_accuracy, split

from data_loaders.registry import load_study
from pbo_core.metrics import bootstrap_ci, paired_difference
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.linear import RespondentLinearSurrogate
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
from pbo_core.models.pooled_dt import PooledDTSurrogate

POOLED: dict[str, Callable[[], object]] = {
    "logit": lambda: RespondentLinearSurrogate("logit"),
    "dt-pooled": lambda: PooledDTSurrogate(),
    # slopes on the numeric attributes (default) / on every attribute
    "dt-linear-pooled": lambda: LinearLeafDTSurrogate(pooling="shrink", slope_ratio="cv"),
    "dt-linear-pooled-all": lambda: LinearLeafDTSurrogate(
        pooling="shrink", slope_ratio="cv", linear_features="all"
    ),
    # a fixed depth 3 (<= 8 leaves) instead of the CV depth, for a tree worth reading
    "dt-linear-pooled-all-d3": lambda: LinearLeafDTSurrogate(
        pooling="shrink", slope_ratio="cv", linear_features="all", max_depth=3
    ),
}
PER_RESPONDENT: dict[str, Callable[[], object]] = {
    "dt": lambda: DTSurrogate(),
    "dt-linear": lambda: LinearLeafDTSurrogate(slope_ratio="cv", n_folds=3),
}


def evaluate(key: str, methods: list[str], seed: int, pivot: bool) -> dict[str, dict]:
    study = load_study(key, pivot=True) if pivot else load_study(key)
    test, evaluated = split(study, TEST_TASKS.get(key, 2), seed)
    train = study.data.select_pairs(~test)
    rng = np.random.default_rng(12345)
    accs: dict[str, np.ndarray] = {}
    out: dict[str, dict] = {}
    for name in methods:
        t0, c0 = time.perf_counter(), time.process_time()
        if name in POOLED:
            m = POOLED[name]().fit(train)
            acc = per_respondent_accuracy(study, test, evaluated, m.predict)
            leaves = float(getattr(m, "n_leaves_", 1))
            extra = {
                k: getattr(m, k)
                for k in ("shrinkage_", "max_depth_", "slope_ratio_", "alpha_")
                if hasattr(m, k)
            }
        else:
            resp = study.data.respondent
            acc_l, leaves_l = [], []
            for r in evaluated:
                own = (resp == r) & ~test
                m = PER_RESPONDENT[name]()
                d = study.data.select_pairs(own)
                m.fit(d)
                acc_l.append(
                    per_respondent_accuracy(study, test, [r], lambda X, _r, m=m: m.predict(X))[0]
                )
                leaves_l.append(m.n_leaves_)
            acc = np.asarray(acc_l)
            leaves = float(np.mean(leaves_l))
            extra = {}
        secs = time.perf_counter() - t0
        cpu = time.process_time() - c0  # CPU seconds: less inflated by a loaded machine
        accs[name] = acc
        lo, hi = bootstrap_ci(acc, rng=rng)
        out[name] = {
            "n": len(acc),
            "test_acc_mean": float(acc.mean()),
            "test_acc_ci95": [float(lo), float(hi)],
            "mean_leaves": leaves,
            "fit_seconds": round(secs, 1),
            "fit_cpu_seconds": round(cpu, 1),
            **{k: (None if v is None else float(v)) for k, v in extra.items()},
        }
        print(
            f"{key:12s} {name:26s} test acc {acc.mean():.3f} [{lo:.3f}, {hi:.3f}] "
            f"leaves {leaves:5.1f} {extra} {secs:.1f}s (cpu {cpu:.1f}s)",
            flush=True,
        )
    if "logit" in accs:
        for name, acc in accs.items():
            if name == "logit":
                continue
            d = paired_difference(acc, accs["logit"], rng=rng)
            out[name]["diff_vs_logit"] = [float(d.mean_diff), float(d.ci[0]), float(d.ci[1])]
            print(f"{key:12s} {name} - logit: {d.mean_diff:+.3f} [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--study", nargs="+", default=["train", "electricity"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", nargs="+", default=[*POOLED, *PER_RESPONDENT])
    ap.add_argument("--pivot", action="store_true", help="Train: price/time pivoted")
    ap.add_argument("--json", default=None, help="write the summary to this file")
    args = ap.parse_args()
    res = {k: evaluate(k, args.methods, args.seed, args.pivot) for k in args.study}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
