import json

import numpy as np
import pandas as pd
import pytest

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


def test_summary_gives_mean_sd_se_t_interval_and_median() -> None:
    rows = pd.DataFrame(
        {
            "function": "f",
            "method": "m",
            "dim": 2,
            "iters": 1,
            "seed": [0, 1, 2],
            "step": 1,
            "regret": [1.0, 2.0, 6.0],
            "time_s": [0.1, 0.2, 0.6],
        }
    )
    (s,) = bench.summarize(rows)
    sd = np.std([1.0, 2.0, 6.0], ddof=1)
    assert s["final_regret_mean"] == 3.0 and s["final_regret_median"] == 2.0
    assert abs(s["final_regret_sd"] - sd) < 1e-12
    assert abs(s["final_regret_se"] - sd / 3**0.5) < 1e-12
    half = 4.302652729911275 * sd / 3**0.5  # t_{0.975, 2}
    lo, hi = s["final_regret_ci95"]
    assert abs(lo - (3.0 - half)) < 1e-9 and abs(hi - (3.0 + half)) < 1e-9
    assert s["ci95_method"] == "t"
    (rt,) = bench.runtime_summary(rows)
    assert abs(rt["time_per_run_mean_s"] - 0.3) < 1e-12 and rt["runs"] == 3
    assert abs(rt["time_per_run_median_s"] - 0.2) < 1e-12


def _run_json(capsys, args: list[str]) -> dict:
    assert bench.main([*args, "--json", "-", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_dt_sweeps_ratio_depth_dim_and_noise_grid(capsys, tmp_path) -> None:
    base = ["--methods", "dt", "--seeds", "2", "--iters", "3", "--n-init", "3"]
    out = _run_json(capsys, ["--functions", "levy", *base, "--ratio", "0.1,1", "--noise", "0,0.2"])
    combos = {(r["ratio"], r["noise"]) for r in out["summary"]}
    assert combos == {(0.1, 0.0), (0.1, 0.2), (1.0, 0.0), (1.0, 0.2)}
    assert {(r["ratio"], r["noise"]) for r in out["runtime"]} == combos
    assert all(r["seeds"] == 2 for r in out["summary"])
    out = _run_json(capsys, ["--functions", "levy", *base, "--max-depth", "1,none"])
    depth = {r["max_depth"]: r for r in out["summary"]}
    assert set(depth) == {1, "none"}
    d = str(tmp_path / "dims")
    out = _run_json(capsys, ["--functions", "levy,schwefel", *base, "--dim", "2,3", "--out", d])
    assert {(r["function"], r["dim"]) for r in out["summary"]} == {
        ("levy", 2),
        ("levy", 3),
        ("schwefel", 2),
        ("schwefel", 3),
    }
    # cell keys carry the new parameters only when set: an lhs cell without them is unchanged
    cell = {"function": "branin", "method": "dt", "seed": 0, "iters": 2, "n_init": 3}
    assert "ratio" not in bench.run_cell(cell).columns
    with pytest.raises(SystemExit, match="holder"):
        bench.main(["--functions", "holder", *base, "--dim", "3", "--quiet"])
    with pytest.raises(SystemExit, match="dt methods"):
        bench.main(["--functions", "branin", "--methods", "gp", "--ratio", "1", "--quiet"])


def test_kappasharp_grid_records_the_activation_trace(capsys) -> None:
    args = [
        "--functions",
        "hartmann6",
        "--methods",
        "gp,gp-ks-static,gp-fixed20",
        "--init",
        "pool_n6_k15",
        "--seeds",
        "1",
        "--iters",
        "2",
        "--eubo",
        "paper",
        "--ks-tau",
        "0.3",
    ]
    out = _run_json(capsys, args)
    act = {r["method"]: r for r in out["activation"]}
    assert set(act) == {"gp-ks-static", "gp-fixed20"}
    # three fits (steps t = 1, 2, 3): before step 8 nothing is active
    assert act["gp-ks-static"]["active_share_mean"] == 0.0
    assert act["gp-ks-static"]["first_active_step_median"] is None
    rows = bench.run_cell(
        {
            "function": "hartmann6",
            "method": "gp-ks-static",
            "seed": 0,
            "iters": 8,
            "n_init": 20,
            "init": "pool_n6_k15",
            "noise_sigma": 0.1,
            "eubo": "paper",
        }
    )
    assert rows["ks_step"].tolist() == list(range(1, 10))
    assert not rows["ks_active"].iloc[:7].any() and rows["ks_active"].iloc[7:].all()
    assert rows["ks_score"].between(0, 1).all() and (rows["eubo"] == "paper").all()


def test_pool_designs_are_nested() -> None:
    from pbo_core.benchmarks import get_benchmark
    from pbo_core.loop import initial_design
    from pbo_core.problem import Problem

    p = Problem.from_benchmark(get_benchmark("levy10"))
    for seed in range(3):
        X6, P6 = initial_design(p, 20, np.random.default_rng(seed), "pool_n6_k15")
        X8, P8 = initial_design(p, 20, np.random.default_rng(seed), "pool_n8_k15")
        np.testing.assert_array_equal(X6, X8[:6])
        assert len(P6) == len(P8) == 15
        assert len({tuple(sorted(q)) for q in P6.tolist()}) == 15  # distinct pairs (n6: all 15)
        assert P8.max() <= 7


def test_a_single_option_value_is_named_in_the_summary(capsys) -> None:
    args = ["--functions", "branin", "--methods", "dt", "--seeds", "1", "--iters", "2"]
    out = _run_json(capsys, [*args, "--n-init", "3", "--max-depth", "3"])
    assert out["summary"][0]["max_depth"] == 3
    out = _run_json(capsys, [*args, "--n-init", "3"])
    assert "max_depth" not in out["summary"][0] and "noise" not in out["summary"][0]


def test_gp_priors_variants_and_random_search(capsys) -> None:
    """The fidelity command: our GP with the 0.6 priors and a variant grid, beside random."""
    args = ["--functions", "dtlz2_8", "--methods", "gp,gp-ks-static,random", "--gp-priors"]
    args += ["0.6", "--gp-variant", "none,clamp+raw", "--init", "pool_n6_k15"]
    args += ["--seeds", "2", "--iters", "2", "--json", "-", "--quiet"]
    assert bench.main(args) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {(r["method"], r.get("gp_variant")): r for r in out["summary"]}
    assert set(rows) == {
        ("gp", "none"),
        ("gp", "raw+clamp"),  # canonical order
        ("gp-ks-static", "none"),
        ("gp-ks-static", "raw+clamp"),
        ("random", "none"),  # gp options do not apply to random search
    }
    assert rows[("gp", "none")]["gp_priors"] == "0.6"
    assert rows[("random", "none")]["seeds"] == 2
    cell = {"function": "dtlz2_8", "method": "gp", "seed": 0, "iters": 1, "n_init": 3}
    df = bench.run_cell({**cell, "gp_priors": "0.6", "gp_variant": "nomerge"})
    assert (df["gp_variant"] == "nomerge").all()
    assert {"fit_failures", "merged_items"} <= set(df.columns)
    with pytest.raises(SystemExit, match="unknown GP variant"):
        bench.main(["--functions", "branin", "--methods", "gp", "--gp-variant", "normalise"])
    with pytest.raises(SystemExit, match="gp methods"):
        bench.main(["--functions", "branin", "--methods", "dt", "--gp-priors", "0.6"])
