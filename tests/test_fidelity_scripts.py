"""docs/scripts/ks_fidelity.py, sushi_ties.py and botorch063_fidelity.py: round three and four."""

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


def _row(function: str, method: str, seed: int, best: float, outcomes: list[str]) -> dict:
    fits = [
        {
            "outcome": o,
            "failed_tries": 0 if o == "ok" else 1,
            "notpsd_tries": 0,
            "lengthscales": [0.4, 0.4] if o != "ok" else [0.2, 0.6],
            "outputscale": 0.693147 if o != "ok" else 4.0,
            "at_initial": o != "ok",
        }
        for o in outcomes
    ]
    if method == "static":
        for k, f in enumerate(fits):
            f["ks"] = {"step": k + 1, "score": 0.1, "active": k >= 1}
    return {
        "function": function,
        "method": method,
        "seed": seed,
        "iters": 2,
        "final_best": best,
        "best_value": [best - 1.0, best],
        "fits": fits,
        "seconds": 10.0 + seed,
    }


def test_botorch063_help_builds_nothing() -> None:
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, str(SCRIPTS / "botorch063_fidelity.py"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--summary-only" in res.stdout and "--env" in res.stdout
    assert "BoTorch 0.6.3" in res.stdout


def test_botorch063_summary_pairs_static_with_plain_by_seed(tmp_path: Path) -> None:
    import json

    rows = [
        _row("levy10", "plain", 0, -10.0, ["ok", "error"]),
        _row("levy10", "plain", 1, -20.0, ["ok", "ok"]),
        _row("levy10", "plain", 2, -15.0, ["failed", "ok"]),
        _row("levy10", "static", 0, -8.0, ["ok", "ok"]),
        _row("levy10", "static", 1, -21.0, ["error", "error"]),
        _row("levy10", "static", 2, -12.0, ["ok", "ok"]),
        _row("levy10", "static", 3, -1.0, ["ok", "ok"]),  # no plain partner: left out
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn": ')
    mod = _load("botorch063_fidelity")
    got = mod.read_rows(path)
    assert len(got) == 7  # the torn last line of a killed run is ignored
    (row,) = mod.summarize(got)
    x, y = np.array([-8.0, -21.0, -12.0]), np.array([-10.0, -20.0, -15.0])
    assert row["function"] == "levy10" and row["seeds"] == 3
    assert row["gain"] == f"{100 * (x.mean() - y.mean()) / abs(y.mean()):+.1f} %"
    assert row["p (paired t)"] == f"{stats.ttest_rel(x, y).pvalue:.3f}"
    assert row["static better"] == "2 of 3"
    assert row["fits failed (plain / static)"] == "4 of 12 (2 / 2)"
    assert row["of which raised"] == 3
    assert row["fits at initial values"] == "4 of 12"
    assert row["KS active fits"] == "3 of 6"
    assert row["s / run (median)"] == "11"


def test_botorch063_worker_helpers_match_the_project() -> None:
    from pbo_core.benchmarks import get_benchmark
    from pbo_core.models.gp import kappasharp as ks

    worker = _load("botorch063_worker")
    rng = np.random.default_rng(0)
    B = rng.normal(size=(8, 8))
    H = B @ B.T + 1e-3 * np.eye(8)
    a = np.abs(rng.normal(size=8)) + 0.5
    assert worker.calibrate_eta(H, a) == ks.calibrate_eta(H, a)
    assert np.allclose(worker.correction(a, 0.7), ks.correction(a, 0.7))
    for md, vd in ((0.3, 0.5), (-2.0, 0.1), (0.0, 1.0)):
        assert worker.decisiveness(md, vd) == ks.decisiveness(md, vd)
    assert worker.ALPHA == ks.ALPHA and worker.MIN_STEP == ks.MIN_STEP
    assert np.array_equal(worker.ETA_GRID, ks.ETA_GRID)
    bm = worker.load_benchmarks(Path(__file__).resolve().parents[1])
    X = rng.uniform(size=(5, 16))
    assert np.array_equal(bm.get_benchmark("dtlz2_16").fn(X), get_benchmark("dtlz2_16").fn(X))


def test_botorch063_design_is_run_pbos() -> None:
    from pbo_core.benchmarks import get_benchmark
    from pbo_core.loop import run_pbo
    from pbo_core.problem import Problem
    from pbo_core.strategies.random import RandomSearchStrategy

    mod = _load("botorch063_fidelity")
    design = mod.make_design("levy10", 3)
    problem = Problem.from_benchmark(get_benchmark("levy10"))
    res = run_pbo(
        problem,
        RandomSearchStrategy(),
        n_init=15,
        n_iter=0,
        seed=3,
        noise_sigma=0.1,
        init="pool_n6_k15",
    )
    assert np.array_equal(res.X, np.array(design["X0"]))
    assert {tuple(sorted(p)) for p in res.pairs.tolist()} == {
        tuple(sorted(p)) for p in design["idx0"]
    }
    assert np.allclose(design["u0"], problem.utility(res.X))
