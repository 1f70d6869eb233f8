import json

import numpy as np
import pandas as pd

from pbo_core.experiments import bench
from pbo_core.experiments.runner import read_results


def test_bench_cli_writes_resumable_results(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "res"
    args = [
        "--functions",
        "branin,holder",
        "--methods",
        "dt,dt-literal",
        "--seeds",
        "2",
        "--iters",
        "5",
        "--n-init",
        "4",
        "--out",
        str(out),
        "--json",
        "-",
        "--quiet",
    ]
    assert bench.main(args) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert [(r["function"], r["method"]) for r in summary] == [
        ("branin", "dt"),
        ("branin", "dt-literal"),
        ("holder", "dt"),
        ("holder", "dt-literal"),
    ]
    keys = {
        "function",
        "method",
        "dim",
        "seeds",
        "iters",
        "final_regret_mean",
        "final_regret_median",
        "final_regret_std",
        "time_per_run_median_s",
    }
    assert all(keys <= set(r) for r in summary)
    rows = read_results(out)
    assert len(rows) == 2 * 2 * 2 * 6  # functions x methods x seeds x steps
    assert rows.groupby(["function", "method", "seed"]).size().eq(6).all()

    # a second run resumes: no cell is recomputed
    calls = []
    real = bench.run_cell
    monkeypatch.setattr(bench, "run_cell", lambda cell: calls.append(cell) or real(cell))
    assert bench.main(args) == 0
    again = json.loads(capsys.readouterr().out)["summary"]
    assert calls == []
    assert again == summary

    # a grown grid computes only the new cells
    assert bench.main([*args[:5], "3", *args[6:]]) == 0
    assert len(calls) == 4


def test_summarize_statistics() -> None:
    rows = pd.DataFrame(
        {
            "function": "f",
            "method": "m",
            "dim": 2,
            "iters": 1,
            "seed": [0, 0, 1, 1],
            "step": [0, 1, 0, 1],
            "regret": [5.0, 1.0, 5.0, 3.0],
            "time_s": [0.1, 0.2, 0.1, 0.4],
        }
    )
    (s,) = bench.summarize(rows)
    assert s["final_regret_mean"] == 2.0 and s["final_regret_median"] == 2.0
    assert abs(s["final_regret_std"] - 2**0.5) < 1e-12
    assert abs(s["time_per_run_median_s"] - 0.4) < 1e-12


def test_paired_gain_and_p_value_against_a_baseline(capsys) -> None:
    args = [
        "--functions",
        "branin",
        "--methods",
        "dt-literal,dt",
        "--seeds",
        "3",
        "--iters",
        "4",
        "--init",
        "pure_k3",
        "--baseline",
        "dt-literal",
        "--json",
        "-",
        "--quiet",
    ]
    assert bench.main(args) == 0
    rows = {r["method"]: r for r in json.loads(capsys.readouterr().out)["summary"]}
    assert "gain_pct_vs" not in rows["dt-literal"]
    assert rows["dt"]["baseline"] == "dt-literal"
    assert 0.0 <= rows["dt"]["p_value_vs"] <= 1.0
    assert isinstance(rows["dt"]["gain_pct_vs"], float)


def test_summary_gain_matches_hand_computation() -> None:
    rows = pd.DataFrame(
        {
            "function": "f",
            "dim": 2,
            "iters": 1,
            "step": 1,
            "time_s": 0.1,
            "regret": 0.0,
            "method": ["B", "B", "B", "M", "M", "M"],
            "seed": [0, 1, 2, 0, 1, 2],
            "best_value": [-2.0, -1.0, -3.0, -1.0, -1.0, -1.0],
        }
    )
    m = {r["method"]: r for r in bench.summarize(rows, baseline="B")}["M"]
    # means: B = -2, M = -1 -> gain = (-1 - -2) / 2 = +50 %
    assert abs(m["gain_pct_vs"] - 50.0) < 1e-12
    from scipy.stats import ttest_rel

    assert abs(m["p_value_vs"] - ttest_rel([-1.0, -1.0, -1.0], [-2.0, -1.0, -3.0]).pvalue) < 1e-12


def test_bad_init_is_reported() -> None:
    import pytest

    with pytest.raises(SystemExit, match="unknown initial design"):
        bench.main(["--functions", "branin", "--init", "pool6", "--quiet"])


def test_run_benchmark_cell_matches_the_bench_format_and_calls_back() -> None:

    cell = {"function": "branin", "method": "dt", "seed": 0, "iters": 5, "n_init": 3, "noise": 0.0}
    steps: list[int] = []
    mine = bench.run_cell(cell, lambda t, res: steps.append(t))
    ref = bench.run_cell(cell)
    assert steps == list(range(6))
    assert list(mine.columns) == list(ref.columns)
    np.testing.assert_allclose(mine["regret"], ref["regret"])
