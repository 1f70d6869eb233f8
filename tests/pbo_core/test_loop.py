import os

import numpy as np
import pytest

from pbo_core.benchmarks import get_benchmark
from pbo_core.data import Feature, Schema
from pbo_core.loop import recommend, run_pbo
from pbo_core.problem import PreferenceOracle, Problem
from pbo_core.registry import make_strategy, names
from pbo_core.strategies import DTStrategy


@pytest.fixture(scope="module")
def branin() -> Problem:
    return Problem.from_benchmark(get_benchmark("branin"))


def test_dt_converges_on_branin(branin) -> None:
    finals = [
        run_pbo(branin, make_strategy("dt"), n_iter=150, seed=s).final_regret for s in range(3)
    ]
    # Branin's range over the domain is ~300; the default reaches the optimum closely
    assert max(finals) < 0.05


def test_literal_rule_stalls_where_default_converges(branin) -> None:
    lit = run_pbo(branin, make_strategy("dt-literal"), n_iter=150, seed=0)
    dflt = run_pbo(branin, make_strategy("dt"), n_iter=150, seed=0)
    assert dflt.final_regret < lit.final_regret
    assert dflt.n_leaves[-1] > lit.n_leaves[-1]


def test_runs_are_reproducible_and_share_the_initial_design(branin) -> None:
    a = run_pbo(branin, make_strategy("dt"), n_iter=20, seed=7)
    b = run_pbo(branin, make_strategy("dt"), n_iter=20, seed=7)
    np.testing.assert_array_equal(a.regret, b.regret)
    np.testing.assert_array_equal(a.X, b.X)
    c = run_pbo(branin, make_strategy("dt-random"), n_iter=20, seed=7)
    np.testing.assert_array_equal(a.X[:40], c.X[:40])  # common random numbers
    assert not np.array_equal(a.X, run_pbo(branin, make_strategy("dt"), n_iter=20, seed=8).X)


def test_result_shapes_and_frame(branin) -> None:
    res = run_pbo(branin, make_strategy("dt"), n_init=5, n_iter=10, seed=0)
    assert res.regret.shape == (11,) and res.time.shape == (11,)
    assert res.pairs.shape == (15, 2)
    assert np.all(res.regret >= 0)
    df = res.to_frame()
    assert list(df["step"]) == list(range(11))
    assert {"method", "problem", "seed", "regret", "time_s", "cum_time_s"} <= set(df.columns)


# the botorch-gp-ks-* variants share botorch-gp's loop code (their hook is tested in
# tests/pbo_core/strategies/test_botorch_kappasharp.py); one BoTorch loop is enough here
@pytest.mark.parametrize(
    "method",
    [
        pytest.param(m, marks=pytest.mark.slow) if m == "botorch-gp" else m  # ~20 s: torch
        for m in sorted(m for m in names(pbo=True) if not m.startswith("botorch-gp-"))
    ],
)
def test_every_method_runs_on_continuous_and_finite_problems(method, branin) -> None:
    if method.startswith("botorch") and os.environ.get("DTPBO_REQUIRE_BENCH") != "1":
        pytest.importorskip("botorch", reason="botorch-gp needs the bench extra")
    res = run_pbo(branin, make_strategy(method), n_init=5, n_iter=12, seed=1)
    assert np.isfinite(res.regret).all()
    schema = Schema(
        (
            Feature("kind", "categorical", levels=("a", "b", "c", "d")),
            Feature("size", "numeric", bounds=(0, 3)),
        )
    )
    X = np.array([[k, s] for k in range(4) for s in range(4)], dtype=float)
    u = -np.abs(X[:, 0] - 2) * 2 - (X[:, 1] - 1) ** 2
    finite = Problem.from_items("grid", X, u, schema)
    res = run_pbo(finite, make_strategy(method), n_init=3, n_iter=15, seed=1)
    assert res.scores is not None and res.scores.shape == (16, 16)
    asked = {tuple(sorted(p)) for p in res.pairs.tolist()}
    assert all(a != b for a, b in asked)


def test_top_leaf_rule_finds_the_best_item() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((12, 3))
    u = X @ np.array([1.0, -2.0, 0.5])
    prob = Problem.from_items("items", X, u, Schema.numeric(np.tile([0.0, 1.0], (3, 1))))
    hits = [
        run_pbo(prob, make_strategy("dt"), n_init=2, n_iter=25, seed=s).regret[-1] == 0
        for s in range(5)
    ]
    assert sum(hits) >= 4


def test_noisy_oracle_follows_the_probit_model() -> None:
    prob = Problem.from_benchmark(get_benchmark("branin"))
    oracle = PreferenceOracle(prob, noise_r=1.0, rng=np.random.default_rng(0))
    scale = prob.noise_scale()
    diff = 0.5 * scale  # P(a > b) = Phi(0.5) = 0.6915
    wins = oracle.prefers_first(np.full(20000, diff), np.zeros(20000)).mean()
    assert wins == pytest.approx(0.6915, abs=0.01)
    exact = PreferenceOracle(prob, 0.0, np.random.default_rng(0))
    assert exact.prefers_first(np.array([1.0, 0.0]), np.array([0.0, 1.0])).tolist() == [True, False]
    with pytest.raises(ValueError, match="noise_r"):
        PreferenceOracle(prob, -1.0, np.random.default_rng(0))


def test_recommendation_ties_go_to_the_latest_winner() -> None:
    pred = np.array([1.0, 2.0, 2.0, 2.0])
    last_win = np.array([5, 3, 9, -1])
    assert recommend(pred, np.arange(4), last_win) == 2
    assert recommend(pred, np.arange(4), last_win, ties="first") == 1


def test_unknown_method_and_rule() -> None:
    with pytest.raises(KeyError, match="known models"):
        make_strategy("nope")
    with pytest.raises(ValueError, match="within-leaf rule"):
        DTStrategy(within="sometimes")  # type: ignore[arg-type]
