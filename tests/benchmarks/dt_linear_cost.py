"""The linear-leaf tree's cost and results, to compare two versions of the code.

For every study given: CPU seconds of the Tree explorer's held-out comparison of
``dt-linear`` (5-fold CV on :func:`pbo_core.experiments.tree_choice.choice_split`, every
fold's fit with its own inner CV) and of one fit on the whole study; and the results
(held-out and training accuracy per unit, the chosen strengths, the CV grid, the pooled
posterior, predictions of a few respondents) pickled to ``--dump FILE``. ``--compare A B``
prints, per study, whether the choices and CV grids are identical and the largest
differences of accuracies, posteriors and predictions, with the CPU seconds before/after.

    OMP_NUM_THREADS=1 python tests/benchmarks/dt_linear_cost.py --dump after.pkl train electricity swissmetro pmr-demo
    python tests/benchmarks/dt_linear_cost.py --compare before.pkl after.pkl

An imported study (e.g. Ecdat Car, ``python -m data_loaders import-study``) is found
through ``DTPBO_DATA_HOME``.
"""  # noqa: E501

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def dump(path: str, keys: list[str]) -> None:
    from data_loaders.registry import load_study
    from pbo_core.evaluation import score_model
    from pbo_core.experiments.tree_choice import choice_split
    from pbo_core.registry import get

    out = {}
    for key in keys:
        s = load_study(key)
        t = time.process_time()
        rows = score_model(choice_split(s), "dt-linear")
        cv_cpu = time.process_time() - t
        t = time.process_time()
        m = get("dt-linear").make().fit(s.data)
        fit_cpu = time.process_time() - t
        resp = list(s.respondents()) if s.data.respondent is not None else [None]
        picks = resp[:3] + resp[-2:] if resp[0] is not None else [None]
        preds = {str(r): m.predict(s.data.X[:200], respondent=r) for r in picks}
        out[key] = dict(
            rows=rows.drop(columns=["fit_s"]),
            theta=m.theta_,
            cov=m.theta_cov_,
            preds=preds,
            choice=(m.max_depth_, m.shrinkage_, m.slope_ratio_),
            cv=m.cv_error_,
            cv_cpu=cv_cpu,
            fit_cpu=fit_cpu,
        )
        print(f"{key}: choice CV {cv_cpu:.2f} s CPU, whole-study fit {fit_cpu:.2f} s CPU")
    Path(path).write_bytes(pickle.dumps(out))


def compare(a_path: str, b_path: str) -> None:
    a = pickle.loads(Path(a_path).read_bytes())
    b = pickle.loads(Path(b_path).read_bytes())
    for k in a:
        if k not in b:
            continue
        x, y = a[k], b[k]
        acc = np.nanmax(np.abs(x["rows"].test_acc.to_numpy(float) - y["rows"].test_acc))
        tr = np.nanmax(np.abs(x["rows"].train_acc.to_numpy(float) - y["rows"].train_acc))
        same_cv = (x["cv"] is None and y["cv"] is None) or (
            x["cv"] is not None
            and y["cv"] is not None
            and np.array_equal(x["cv"]["error"].fillna(-1), y["cv"]["error"].fillna(-1))
        )
        dp = max(np.max(np.abs(x["preds"][r] - y["preds"][r])) for r in x["preds"])
        print(
            f"{k}: strengths {x['choice']} -> {y['choice']}; CV grid "
            f"{'identical' if same_cv else 'DIFFERENT'}; max |diff| held-out acc {acc:.1e}, "
            f"train acc {tr:.1e}, pooled theta {np.max(np.abs(x['theta'] - y['theta'])):.1e}, "
            f"predictions {dp:.1e}; CPU: choice CV {x['cv_cpu']:.2f} -> {y['cv_cpu']:.2f} s, "
            f"whole-study fit {x['fit_cpu']:.2f} -> {y['fit_cpu']:.2f} s"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", metavar="FILE")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument(
        "studies", nargs="*", default=["train", "electricity", "swissmetro", "pmr-demo"]
    )
    args = ap.parse_args(argv)
    if args.compare:
        compare(*args.compare)
    elif args.dump:
        dump(args.dump, args.studies)
    else:
        ap.error("--dump FILE or --compare BEFORE AFTER")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
