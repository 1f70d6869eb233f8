"""Linear-utility baselines on the exact split of ``conjoint-accuracy`` (train / electricity).

Per respondent, ``n_test`` of their tasks are held out, drawn with
``np.random.default_rng([seed, respondent_index])`` exactly as
``python -m pbo_core.experiments conjoint-accuracy --study S --seed SEED`` does;
respondents with no more tasks than that are skipped. Test accuracy counts a predicted
tie as one half and is averaged over respondents. Prints one line per model and the pooled
train-split coefficients.

    python tests/benchmarks/linear_baselines.py [--study train electricity] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from data_loaders.registry import load_study
from pbo_core.metrics import bootstrap_ci, paired_difference, pairwise_accuracy
from pbo_core.models.linear import LinearUtilitySurrogate, RespondentLinearSurrogate

TEST_TASKS = {"bela": 2, "presidential": 3, "train": 2, "electricity": 2}


def split(study, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Test mask over all pairs and the evaluated respondents (the experiments' split)."""
    resp = study.data.respondent
    task = study.data.task
    test = np.zeros(len(resp), dtype=bool)
    evaluated = []
    for idx, r in enumerate(study.respondents()):
        rows = np.flatnonzero(resp == r)
        uniq = np.unique(task[rows])
        if len(uniq) <= n_test:
            continue
        rng = np.random.default_rng([seed, idx])
        chosen = rng.choice(uniq, size=n_test, replace=False)
        test[rows] = np.isin(task[rows], chosen)
        evaluated.append(r)
    return test, np.asarray(evaluated)


def per_respondent_accuracy(study, test, evaluated, predict) -> np.ndarray:
    """Mean test accuracy per evaluated respondent; ``predict(X, r)`` gives utilities."""
    resp = study.data.respondent
    out = []
    for r in evaluated:
        pairs = study.data.pairs[(resp == r) & test]
        out.append(pairwise_accuracy(predict(study.data.X, r), pairs))
    return np.asarray(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--study", nargs="+", default=["train", "electricity"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--link", default="logit")
    args = ap.parse_args()
    rng = np.random.default_rng(12345)
    for key in args.study:
        study = load_study(key)
        test, evaluated = split(study, TEST_TASKS.get(key, 2), args.seed)
        train = study.data.select_pairs(~test)
        models = {
            "pooled": lambda: LinearUtilitySurrogate(args.link),
            "per-respondent": lambda: RespondentLinearSurrogate(args.link),
            "per-respondent (own alpha, log loss)": lambda: RespondentLinearSurrogate(
                args.link, alpha_selection="respondent", cv_score="log_loss"
            ),
            "pooled+shrink": lambda: RespondentLinearSurrogate(args.link, shrink=True),
            "pooled+shrink (log-loss CV)": lambda: RespondentLinearSurrogate(
                args.link, shrink=True, cv_score="log_loss"
            ),
        }
        accs = {}
        for name, make in models.items():
            t0 = time.perf_counter()
            m = make().fit(train)
            dt = time.perf_counter() - t0
            if isinstance(m, RespondentLinearSurrogate):
                predict = m.predict
            else:  # one model for everybody: the respondent is ignored
                predict = lambda X, r, m=m: m.predict(X)  # noqa: E731
            acc = accs[name] = per_respondent_accuracy(study, test, evaluated, predict)
            lo, hi = bootstrap_ci(acc, rng=rng)
            print(
                f"{key:12s} {name:38s} test acc {acc.mean():.3f} [{lo:.3f}, {hi:.3f}] "
                f"n={len(acc)} alpha={m.alpha_:.3g} fit {dt:.2f}s"
            )
            if name == "pooled":
                print(m.coef_table().to_string(index=False))
        d = paired_difference(accs["pooled+shrink"], accs["per-respondent"], rng=rng)
        print(
            f"{key:12s} shrink - per-respondent: {d.mean_diff:+.3f} "
            f"[{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]"
        )


if __name__ == "__main__":
    main()
