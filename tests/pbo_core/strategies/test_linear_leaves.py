"""Linear-leaf strategies (``dt-linear``, ``linear-eubo``): pairs, EUBO, priors, the loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

from data_loaders.cached import load_study_cached
from pbo_core.acquisition.eubo import eubo
from pbo_core.benchmarks import get_benchmark
from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.experiments import cli as experiments
from pbo_core.experiments.rho_regret import population_prior, rho_cells
from pbo_core.loop import run_pbo
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate, SlopePrior
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy
from pbo_core.session import ElicitationSession
from pbo_core.strategies import LinearLeafStrategy, LoopState
from pbo_core.strategies.linear_leaves import pooled_slope_prior


def _schema() -> Schema:
    return Schema(
        [
            Feature("price", "numeric", bounds=(0.0, 10.0)),
            Feature("time", "numeric", bounds=(0.0, 5.0)),
        ]
    )


def _items(n: int = 24, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(0, 10, n), rng.uniform(0, 5, n)])
    u = -0.8 * X[:, 0] - 1.5 * X[:, 1] + 2.0 * (X[:, 0] > 5)
    return X, u


def _finite_problem() -> Problem:
    X, u = _items()
    return Problem.from_items("toy", X, u, _schema())


def _state(problem: Problem, pairs: np.ndarray) -> LoopState:
    data = PreferenceData(problem.items, pairs, schema=problem.schema)
    n = len(problem.items)
    asked = {(int(min(a, b)), int(max(a, b))) for a, b in pairs}
    return LoopState(problem, data, len(pairs), np.full(n, -1), int(pairs[0, 0]), asked)


def _answers(problem: Problem, k: int, seed: int = 0) -> np.ndarray:
    """``k`` truthful comparisons between random distinct items."""
    rng = np.random.default_rng(seed)
    u = problem.utility(problem.items)
    out = []
    while len(out) < k:
        a, b = rng.choice(len(u), size=2, replace=False)
        out.append((a, b) if u[a] > u[b] else (b, a))
    return np.array(out)


@pytest.mark.parametrize("name", ["dt-linear", "linear-eubo"])
def test_registry_strategies_propose_valid_unasked_pairs(name: str) -> None:
    s = make_strategy(name)
    assert isinstance(s, LinearLeafStrategy) and s.name == name
    problem = _finite_problem()
    pairs = _answers(problem, 8)
    state = _state(problem, pairs)
    s.fit(state.data)
    a, b = s.propose(state, np.random.default_rng(0))
    assert isinstance(a, int) and isinstance(b, int)
    assert 0 <= a < len(problem.items) and 0 <= b < len(problem.items) and a != b
    assert (min(a, b), max(a, b)) not in state.asked_pairs
    # the chosen pair maximises the EUBO of the model's public posterior over unasked pairs
    mean, cov = s.model.posterior(problem.items)
    v = np.diag(cov)
    best = -np.inf
    for i in range(len(v)):
        for j in range(i + 1, len(v)):
            if (i, j) not in state.asked_pairs:
                best = max(best, float(eubo(mean[i], mean[j], v[i], v[j], cov[i, j])))
    got = float(eubo(mean[a], mean[b], v[a], v[b], cov[a, b]))
    assert got == pytest.approx(best, rel=1e-12)
    if name == "linear-eubo":
        assert s.n_leaves == 1


def test_within_leaf_pairs_get_distinct_eubo() -> None:
    problem = _finite_problem()
    s = make_strategy("dt-linear")
    s.fit(PreferenceData(problem.items, _answers(problem, 12), schema=problem.schema))
    leaf = s.model.apply(problem.items)
    counts = np.bincount(leaf)
    big = int(np.argmax(counts))
    assert counts[big] >= 3
    idx = np.flatnonzero(leaf == big)
    mean, cov = s.model.posterior(problem.items[idx])
    v = np.diag(cov)
    ia, ib = np.triu_indices(len(idx), k=1)
    vals = eubo(mean[ia], mean[ib], v[ia], v[ib], cov[ia, ib])
    # constant leaves would give every within-leaf pair the same EUBO; slopes separate them
    assert np.ptp(vals) > 1e-3 and len(np.unique(np.round(vals, 9))) == len(vals)


def test_box_candidates_lie_in_the_box_and_the_leaves() -> None:
    f = get_benchmark("branin")
    problem = Problem.from_benchmark(f)
    res = run_pbo(problem, make_strategy("dt-linear"), n_init=6, n_iter=6, seed=3)
    b = problem.schema.bounds
    assert np.all(res.X >= b[:, 0] - 1e-12) and np.all(res.X <= b[:, 1] + 1e-12)
    s = make_strategy("dt-linear")
    data = PreferenceData(res.X, res.pairs, schema=problem.schema)
    s.fit(data)
    state = LoopState(problem, data, 6, np.full(len(res.X), -1), 0, set())
    cand = s.box_candidates(state, np.random.default_rng(0))
    assert cand.shape[1] == 2 and len(cand) >= 256
    assert np.all(cand >= b[:, 0]) and np.all(cand <= b[:, 1])
    # per leaf: its samples, then its mean-maximising corner, which beats every sample
    m = s.model.n_leaves_
    per = max(8, -(-256 // m))
    mu = s.model.predict(cand)
    leaf = s.model.apply(cand)
    start = 0
    for lf in range(m):
        block = slice(start, start + per)
        assert np.all(leaf[block] == lf)
        if start + per < len(cand) and leaf[start + per] == lf:  # the corner is there
            assert mu[start + per] >= mu[block].max() - 1e-9
            start += 1
        start += per
    assert start == len(cand)


@pytest.mark.parametrize("name", ["dt-linear", "linear-eubo"])
def test_loop_runs_and_is_seeded(name: str) -> None:
    problem = _finite_problem()
    r1 = run_pbo(problem, make_strategy(name), n_init=1, n_iter=8, seed=5)
    r2 = run_pbo(problem, make_strategy(name), n_init=1, n_iter=8, seed=5)
    r3 = run_pbo(problem, make_strategy(name), n_init=1, n_iter=8, seed=6)
    assert r1.method == name and len(r1.regret) == 9 and len(r1.pairs) == 9
    np.testing.assert_array_equal(r1.pairs, r2.pairs)
    np.testing.assert_array_equal(r1.scores, r2.scores)
    assert not np.array_equal(r1.pairs, r3.pairs)
    assert np.all(r1.n_leaves >= 1)
    # a linear truth: the linear model finds a near-best item within 8 questions
    assert r1.regret[-1] <= r1.regret[0]
    pairs = {(min(a, b), max(a, b)) for a, b in r1.pairs}
    assert len(pairs) == len(r1.pairs)  # no pair asked twice


def _respondents(n_resp: int = 6, per: int = 12) -> PreferenceData:
    """Respondents with a common linear utility (price matters, time matters more)."""
    X, _ = _items(30, seed=1)
    rng = np.random.default_rng(2)
    pairs, resp = [], []
    for r in range(n_resp):
        w = np.array([-0.8, -1.5]) * rng.uniform(0.7, 1.3, 2)
        u = X @ w
        for _ in range(per):
            a, b = rng.choice(len(X), size=2, replace=False)
            pairs.append((a, b) if u[a] > u[b] else (b, a))
            resp.append(r)
    return PreferenceData(X, np.array(pairs), schema=_schema(), respondent=np.array(resp))


def test_pooled_prior_is_used() -> None:
    data = _respondents()
    prior = pooled_slope_prior(data)
    assert prior.columns == ("price", "time")
    assert prior.mean[0] < 0 and prior.mean[1] < 0 and np.all(prior.precision > 0)
    # one answer alone: the prior's slopes carry over (a strong prior pins them)
    X, _ = _items(30, seed=1)
    one = PreferenceData(X, np.array([[0, 1]]), schema=_schema())
    strong = SlopePrior(prior.columns, prior.mean, prior.precision * 1e6)
    m = LinearLeafDTSurrogate(linear_features="all", max_depth=0, slopes="shared")
    m_prior = LinearLeafDTSurrogate(
        linear_features="all", max_depth=0, slopes="shared", slope_prior=strong
    )
    b0 = m.fit(one).leaf_slopes().iloc[0].to_numpy()
    b1 = m_prior.fit(one).leaf_slopes().iloc[0].to_numpy()
    np.testing.assert_allclose(b1, prior.mean, rtol=1e-3)
    assert not np.allclose(b0, prior.mean, rtol=0.1)
    # the strategy passes it on; a prior on columns the model lacks is an error
    s = make_strategy("dt-linear", slope_prior=prior)
    assert s.model.slope_prior is prior
    bad = SlopePrior(("cost",), np.zeros(1), np.ones(1))
    with pytest.raises(ValueError, match="no slope for design columns"):
        LinearLeafDTSurrogate(linear_features="all", slope_prior=bad).fit(one)
    with pytest.raises(ValueError, match="precisions positive"):
        SlopePrior(("price",), np.zeros(1), np.zeros(1))


def test_no_comparisons_fit_is_the_prior() -> None:
    X, _ = _items(10)
    empty = PreferenceData(X, np.zeros((0, 2), dtype=np.int64), schema=_schema())
    m = LinearLeafDTSurrogate(linear_features="all").fit(empty)
    assert m.n_leaves_ == 1 and np.allclose(m.predict(X), 0.0)
    _, cov = m.posterior(X)
    assert np.all(np.isfinite(cov)) and np.all(np.diag(cov) > 0)


def test_session_answers_with_dt_linear_and_a_prior() -> None:
    data = _respondents()
    X, _ = _items(30, seed=1)
    s = ElicitationSession.for_items(
        X,
        _schema(),
        "dt-linear",
        utilities=-0.8 * X[:, 0] - 1.5 * X[:, 1],
        strategy_options={"slope_prior": pooled_slope_prior(data)},
    )
    for _ in range(10):
        s.answer(s.oracle_winner(s.next_query()))
    assert s.n_answers == 10 and s.is_tree and s.regret() < 1.0
    assert s.config()["strategy_options"]["slope_prior"].columns == ("price", "time")


def test_rho_regret_cells_carry_the_prior_only_for_linear_methods() -> None:
    cells = rho_cells("train", ["dt", "dt-linear"], units=2, seeds=1, iters=3)
    by = {c["method"]: c for c in cells if c["unit"] == 0}
    assert "prior" not in by["dt"] and by["dt-linear"]["prior"] == "pooled"
    assert by["dt-linear"]["n_units"] == 2
    with pytest.raises(ValueError, match="prior must be one of"):
        rho_cells("train", ["dt-linear"], units=1, seeds=1, iters=1, prior="flat")
    prior = population_prior("train", 2, load_study=load_study_cached)
    assert prior.columns == ("price", "time", "changes", "comfort")


def test_rho_regret_cli_with_linear_methods(capsys) -> None:
    args = ["--methods", "dt-linear,linear-eubo", "--iters", "4", "--json", "-", "--quiet"]
    assert experiments.main(["rho-regret", "--study", "train", "--units", "2", *args]) == 0
    out = json.loads(capsys.readouterr().out)["summary"]
    assert out["study"] == "train" and set(out["methods"]) == {"dt-linear", "linear-eubo"}
    for d in out["methods"].values():
        assert d["runs"] == 2 and len(d["rho_regret_mean"]) == 5
        assert len(d["rho_regret_median"]) == 5
    argv = ["rho-regret", "--study", "pmr-demo", "--units", "1", "--seeds", "1", *args]
    assert experiments.main(argv) == 0
    out = json.loads(capsys.readouterr().out)["summary"]
    assert out["methods"]["dt-linear"]["runs"] == 1
