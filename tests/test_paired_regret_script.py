"""docs/scripts/paired_regret.py: the paired table of final regrets the fidelity page quotes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "scripts" / "paired_regret.py"


def _load():
    spec = importlib.util.spec_from_file_location("paired_regret", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_final_regrets_are_paired_by_seed(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    finals = {
        ("dt", 0): 1.0,
        ("dt", 1): 3.0,
        ("dt", 2): 2.0,
        ("gp", 0): 2.0,
        ("gp", 1): 5.0,
        ("gp", 2): 1.0,
    }
    for (method, seed), final in finals.items():
        pd.DataFrame(
            {
                "function": "branin",
                "method": method,
                "seed": seed,
                "step": [0, 1, 2],
                "regret": [9.0, 5.0, final],
                "cum_time_s": [0.0, 0.5, 1.0],
            }
        ).to_parquet(tmp_path / f"cell-{method}-{seed}.parquet")
    mod = _load()
    runs = mod.final_regrets(tmp_path)
    assert sorted(runs["regret"]) == sorted(finals.values())
    text = mod.table(runs, "dt", "gp")
    row = text.splitlines()[2].split(" | ")
    assert row[1] == "2 +- 0.5774 (2)" and row[2] == "2.667 +- 1.202 (2)"
    assert row[4] == "2 of 3"
    # paired t over the differences -1, -2, +1
    assert row[5] == "0.529"  # t = -0.756, 2 d.f.
    assert mod.table(runs, "dt", "gp", seeds=2).splitlines()[2].split(" | ")[3] == "2"
