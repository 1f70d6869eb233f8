"""Paired comparison of two methods' final regret in a benchmark folder (docs/fidelity.md).

Reads the per-cell files that ``python -m pbo_core.bench ... --out DIR`` wrote and prints,
per function (and dimension or noise level, when the grid sweeps them), each method's
final regret (the recommendation's, after the last query) as mean +- s.e. (median), on
how many common seeds the first method ends lower, and the paired t-test of the final
regrets over those seeds (``python -m pbo_core.bench`` itself tests the final *best
found* utility, a different quantity).

Usage: ``PYTHONPATH=. python docs/scripts/paired_regret.py results/fig2 --methods dt,gp``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats


def final_regrets(folder: Path) -> pd.DataFrame:
    """One row per cell: function, method, seed, dim, noise, final regret, seconds."""
    rows = []
    for f in sorted(folder.glob("*.parquet")):
        d = pd.read_parquet(f)
        last = d.loc[d["step"].idxmax()]
        rows.append(
            {
                "function": last["function"],
                "method": last["method"],
                "seed": int(last["seed"]),
                "dim": last.get("dim"),
                "noise": last.get("noise"),
                "regret": last["regret"],
                "seconds": last["cum_time_s"],
            }
        )
    return pd.DataFrame(rows)


def _cell(r: pd.Series) -> str:
    se = r.std(ddof=1) / np.sqrt(len(r)) if len(r) > 1 else float("nan")
    return f"{r.mean():.4g} +- {se:.4g} ({r.median():.4g})"


def table(runs: pd.DataFrame, first: str, second: str, seeds: int | None = None) -> str:
    """The Markdown table: one row per function (and per dimension / noise level when a
    grid has several)."""
    if seeds is not None:
        runs = runs[runs["seed"] < seeds]
    swept = runs.groupby("function")[["dim", "noise"]].nunique(dropna=True).max()
    keys = ["function"] + [c for c in ("dim", "noise") if swept[c] > 1]
    out = [
        f"| {' | '.join(keys)} | {first}: final regret mean +- s.e. (median) | "
        f"{second}: the same | "
        f"seeds | {first} lower in | p (paired t on final regret) | {first} s/run | "
        f"{second} s/run |",
        "|---" * (len(keys) + 7) + "|",
    ]
    for key, g in runs.groupby(keys):
        a = g[g["method"] == first].set_index("seed")
        b = g[g["method"] == second].set_index("seed")
        common = a.index.intersection(b.index)
        if len(common) == 0:
            continue
        ra, rb = a.loc[common, "regret"], b.loc[common, "regret"]
        p = stats.ttest_rel(ra, rb).pvalue if len(common) > 1 else float("nan")
        out.append(
            f"| {' | '.join(f'{k:g}' if isinstance(k, float) else str(k) for k in key)} | "
            f"{_cell(ra)} | {_cell(rb)} | {len(common)} | "
            f"{int((ra < rb).sum())} of {len(common)} | {p:.3g} | "
            f"{a.loc[common, 'seconds'].median():.2f} | {b.loc[common, 'seconds'].median():.0f} |"
        )
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="the bench command's --out folder")
    p.add_argument("--methods", default="dt,gp", help="two methods, comma-separated")
    p.add_argument("--seeds", type=int, default=None, help="only seeds below this")
    args = p.parse_args()
    first, second = args.methods.split(",")
    print(table(final_regrets(args.folder), first, second, args.seeds))


if __name__ == "__main__":
    main()
