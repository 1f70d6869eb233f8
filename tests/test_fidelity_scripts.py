"""docs/scripts/ks_fidelity.py and sushi_ties.py: the tables of docs/fidelity.md's round three."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

SCRIPTS = Path(__file__).resolve().parents[1] / "docs" / "scripts"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ks_table_pairs_static_with_gp_by_seed_and_puts_random_beside(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    best = {
        ("gp", 0): -1.0,
        ("gp", 1): -2.0,
        ("gp", 2): -1.5,
        ("gp-ks-static", 0): -0.5,
        ("gp-ks-static", 1): -1.0,
        ("gp-ks-static", 2): -2.0,
        ("random", 0): -3.0,
        ("random", 1): -4.0,
    }
    for k, ((method, seed), v) in enumerate(best.items()):
        rows = pd.DataFrame(
            {
                "function": "dtlz2_16",
                "method": method,
                "seed": seed,
                "step": [0, 1],
                "best_value": [v - 1.0, v],
                "gp_variant": None if method == "random" else "clamp",
                "fit_failures": 0 if method == "random" else 1,
                "merged_items": 0,
                "ks_step": [1, 2],
                "ks_score": [0.9, 0.2 + 0.01 * seed],
                "ks_ema": [0.18, 0.3],
            }
        )
        rows.to_parquet(tmp_path / f"cell-{k}.parquet")
    mod = _load("ks_fidelity")
    (row,) = mod.table(mod.last_rows(tmp_path))
    x, y = np.array([-0.5, -1.0, -2.0]), np.array([-1.0, -2.0, -1.5])
    assert row["variant"] == "clamp" and row["seeds"] == 3
    assert row["gain"] == f"{100 * (x.mean() - y.mean()) / abs(y.mean()):+.1f} %"
    assert row["p (paired t)"] == f"{stats.ttest_rel(x, y).pvalue:.3f}"
    assert row["static better"] == "2 of 3"
    assert row["failed fits"] == 6
    assert row["max score / EMA"] == "0.220 / 0.300"  # the first fit's score is left out
    assert row["random"].endswith("(2)") and row["random"].startswith("-3.5 +- ")


def test_sushi_tie_scores_follow_from_the_half_score_and_the_tie_share() -> None:
    mod = _load("sushi_ties")
    rows = pd.DataFrame(
        {
            "test_acc": [0.75, 0.5, np.nan],
            "test_ties": [0.5, 1.0, 0.0],
            "n_test": [4, 2, 0],
        }
    )
    s = mod.user_scores(rows)
    assert len(s) == 2  # a user without a test score is left out
    # user 0: 2 of 4 right, 2 tied, none wrong
    assert s.loc[0, "1/2"] == 0.75 and s.loc[0, "correct"] == 1.0
    assert s.loc[0, "wrong"] == 0.5 and s.loc[0, "dropped"] == pytest.approx(1.0)
    assert np.isnan(s.loc[1, "dropped"])  # every pair tied: nothing left to score
