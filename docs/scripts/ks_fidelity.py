"""Static KappaSharp against the plain GP under each BoTorch 0.6-era variant.

Reads the per-cell files of ``python -m pbo_core.bench ... --gp-variant ... --out DIR``
(methods ``gp``, ``gp-ks-static`` and ``random``) and prints one row per (function,
variant): the final best utility of ``gp`` and ``gp-ks-static`` as mean +- s.e., the gain
of Static over ``gp`` (KappaSharp's "Gain", on the means), the paired difference
``static - gp`` as mean +- s.e. with its paired t-test over the common seeds, in how many
of them Static ends higher, the hyperparameter fits that failed and the duplicate items
merged (summed over the runs of both methods), the largest decisiveness score of Eq. 12
after the first fit and the largest EMA in the Static runs (Adaptive switches on at EMA
>= 0.30; the ceiling of an isolated pair is 0.224, docs/fidelity.md), and ``random``
(random search) beside.

Usage: ``PYTHONPATH=. python docs/scripts/ks_fidelity.py /work/runs/fidelity/ks``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats


def last_rows(folder: Path) -> pd.DataFrame:
    """The last step of every run, with the run's largest score (steps >= 2) and EMA."""
    rows = []
    for f in sorted(folder.glob("*.parquet")):
        d = pd.read_parquet(f)
        row = d.loc[d["step"].idxmax()].copy()
        if "ks_score" in d:
            row["max_score"] = d.loc[d["ks_step"] >= 2, "ks_score"].max()
            row["max_ema"] = d["ks_ema"].max()
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in ("gp_variant", "gp_priors"):
        out[col] = out[col].fillna("none") if col in out else "none"
    return out


def fmt(v: np.ndarray) -> str:
    se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
    return f"{v.mean():.3g} +- {se:.2g}"


#: Row order of the variants (others after them, alphabetically).
ORDER = (
    "none",
    "raw",
    "fallback",
    "clamp",
    "nomerge",
    "raw+fallback+clamp+nomerge",
    "unfitted",
    "unfitted+clamp+nomerge",
)


def table(last: pd.DataFrame) -> list[dict]:
    out = []
    for fn, g in last.groupby("function", sort=True):
        rnd = g[g["method"] == "random"]["best_value"].to_numpy()
        groups = dict(tuple(g[g["method"] != "random"].groupby("gp_variant")))
        rank = {v: i for i, v in enumerate(ORDER)}
        for var in sorted(groups, key=lambda v: (rank.get(v, len(ORDER)), v)):
            h = groups[var]
            gp = h[h["method"] == "gp"].set_index("seed")["best_value"]
            ks = h[h["method"] == "gp-ks-static"].set_index("seed")["best_value"]
            common = gp.index.intersection(ks.index)
            if len(common) == 0:
                continue
            x, y = ks.loc[common].to_numpy(), gp.loc[common].to_numpy()
            d = x - y
            p = stats.ttest_rel(x, y).pvalue if len(d) > 1 and np.any(d != 0) else 1.0
            fails = h["fit_failures"].sum() if "fit_failures" in h else 0
            merged = h["merged_items"].sum() if "merged_items" in h else 0
            st = h[h["method"] == "gp-ks-static"]
            out.append(
                {
                    "function": fn,
                    "variant": var,
                    "seeds": len(common),
                    "gp": fmt(y),
                    "gp-ks-static": fmt(x),
                    "gain": f"{100 * (x.mean() - y.mean()) / abs(y.mean()):+.1f} %",
                    "static - gp": fmt(d),
                    "p (paired t)": f"{p:.3f}",
                    "static better": f"{int((d > 0).sum())} of {len(d)}",
                    "failed fits": int(fails),
                    "merged items": int(merged),
                    "max score / EMA": f"{st['max_score'].max():.3f} / {st['max_ema'].max():.3f}",
                    "random": f"{fmt(rnd)} ({len(rnd)})",
                }
            )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folder", type=Path)
    args = p.parse_args()
    rows = table(last_rows(args.folder))
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
