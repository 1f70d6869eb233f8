import itertools

import numpy as np
import pytest
from scipy.special import log_ndtr

from pbo_core.acquisition.gp import eubo_value_and_grad, gp_pair_eubo, maximize_gp_eubo
from pbo_core.benchmarks import get_benchmark
from pbo_core.data import PreferenceData, Schema
from pbo_core.explain.diagnostics import diagnose
from pbo_core.loop import run_pbo
from pbo_core.models.gp import GPSurrogate
from pbo_core.models.gp.laplace import evidence_and_gradient, laplace_map, rbf_kernel
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy


def unit_schema(d: int) -> Schema:
    return Schema.numeric(np.tile([0.0, 1.0], (d, 1)))


def random_problem(seed: int, n: int = 14, d: int = 3, m: int = 24, flips: int = 3):
    rng = np.random.default_rng(seed)
    Z = rng.random((n, d))
    u = Z @ rng.normal(size=d) * 3
    w = rng.integers(0, n, m)
    lo = (w + rng.integers(1, n, m)) % n
    win = np.where(u[w] > u[lo], w, lo)
    los = np.where(u[w] > u[lo], lo, w)
    win[:flips], los[:flips] = los[:flips].copy(), win[:flips].copy()
    C = np.zeros((m, n))
    C[np.arange(m), win] = 1.0
    C[np.arange(m), los] = -1.0
    return Z, C, np.c_[win, los]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_evidence_gradient_matches_finite_differences(seed) -> None:
    Z, C, _ = random_problem(seed)
    theta = np.log(np.r_[0.4, 0.7, 1.3, 2.0])
    c = np.ones(len(C))
    _, grad, _ = evidence_and_gradient(theta, Z, C, c)
    eps = 1e-5
    num = np.array(
        [
            (
                evidence_and_gradient(theta + eps * e, Z, C, c)[0]
                - evidence_and_gradient(theta - eps * e, Z, C, c)[0]
            )
            / (2 * eps)
            for e in np.eye(len(theta))
        ]
    )
    np.testing.assert_allclose(grad, num, rtol=1e-4, atol=1e-6)


def test_map_is_stationary_and_hessian_matches_finite_differences() -> None:
    Z, C, _ = random_problem(3)
    K = rbf_kernel(Z, Z, np.full(3, 0.5), 1.5)
    c = np.ones(len(C))
    st = laplace_map(K, C, c)
    # stationarity: K^-1 f = grad log p(D | f)  <=>  alpha = b
    np.testing.assert_allclose(st.alpha, st.grad_loglik, atol=1e-7)

    def loglik_grad(f):
        z = C @ f / np.sqrt(2)
        r = np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - log_ndtr(z))
        return C.T @ r / np.sqrt(2)

    eps = 1e-6
    num = np.array(
        [
            (loglik_grad(st.f + eps * e) - loglik_grad(st.f - eps * e)) / (2 * eps)
            for e in np.eye(len(st.f))
        ]
    )
    W = C.T @ (st.omega[:, None] * C)
    np.testing.assert_allclose(-num, W, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_likelihood_hessian_is_a_laplacian_with_rank_n_minus_components(seed) -> None:
    rng = np.random.default_rng(seed)
    n = 12
    X = rng.random((n, 2))
    # a random graph on a random partition of the items into groups
    groups = rng.integers(0, rng.integers(2, 5), n)
    pairs = []
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        for a, b in itertools.pairwise(members):  # a spanning path
            pairs.append([a, b] if rng.random() < 0.5 else [b, a])
    model = GPSurrogate(lengthscale=0.3, outputscale=1.0).fit(
        PreferenceData(X, np.array(pairs).reshape(-1, 2), schema=unit_schema(2))
    )
    W, _ = model.hessians()
    np.testing.assert_allclose(W.sum(axis=1), 0.0, atol=1e-12)  # Laplacian rows sum to 0
    assert np.all(W - np.diag(np.diag(W)) <= 1e-15)  # non-positive off-diagonal
    diag = diagnose(model)
    assert diag.n_components == len(np.unique(groups))
    assert diag.hessian_rank == n - diag.n_components
    assert 0 <= diag.d_eff <= diag.hessian_rank


def test_duplicates_are_merged_and_contradictions_stay_finite() -> None:
    X = np.array([[0.2, 0.2], [0.2, 0.2], [0.8, 0.1], [0.2 + 1e-9, 0.2]])
    pairs = np.array([[0, 2], [2, 1], [3, 2], [2, 0], [0, 1]])  # contradictions, self pair
    model = GPSurrogate().fit(PreferenceData(X, pairs, schema=unit_schema(2)))
    assert len(model.Z_) == 2
    mean, cov = model.posterior(X)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))
    np.testing.assert_allclose(cov, cov.T)
    assert np.linalg.eigvalsh(cov).min() > -1e-8
    assert mean[0] == pytest.approx(mean[1])


def test_fitted_hyperparameters_respect_bounds_and_improve_the_evidence() -> None:
    Z, _C, pairs = random_problem(5, n=20, m=40, flips=2)
    data = PreferenceData(Z, pairs, schema=unit_schema(3))
    fitted = GPSurrogate().fit(data)
    fixed = GPSurrogate(lengthscale=(2.4 - 1) / 2.7, outputscale=1.0).fit(data)
    from pbo_core.models.gp.laplace import log_prior

    def objective(m):
        return m.laplace_.log_evidence + log_prior(m.lengthscale_, m.outputscale_)

    assert objective(fitted) >= objective(fixed) - 1e-6
    assert 0.01 <= fitted.outputscale_ <= 100.0


def test_gp_eubo_gradient_and_maximiser() -> None:
    Z, _, pairs = random_problem(7, d=2)
    model = GPSurrogate().fit(PreferenceData(Z, pairs, schema=unit_schema(2)))
    rng = np.random.default_rng(0)
    za, zb = rng.random(2), rng.random(2)
    val, grad = eubo_value_and_grad(model, za, zb)
    assert val == pytest.approx(float(gp_pair_eubo(model, za[None], zb[None])[0]))
    x = np.r_[za, zb]
    eps = 1e-6
    num = np.array(
        [
            (
                eubo_value_and_grad(model, *np.split(x + eps * e, 2))[0]
                - eubo_value_and_grad(model, *np.split(x - eps * e, 2))[0]
            )
            / (2 * eps)
            for e in np.eye(4)
        ]
    )
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-7)
    a, b, best = maximize_gp_eubo(model, rng, n_raw=256, n_restarts=4)
    cand = gp_pair_eubo(model, rng.random((2000, 2)), rng.random((2000, 2)))
    assert best >= cand.max() - 1e-9
    assert np.abs(a - b).max() > 1e-4


@pytest.mark.parametrize("method", ["gp", "gp-ks-static", "gp-ks-adaptive"])
def test_gp_methods_run_in_the_loop(method) -> None:
    prob = Problem.from_benchmark(get_benchmark("branin"))
    res = run_pbo(
        prob, make_strategy(method), n_init=6, n_iter=8, seed=0, init="pool_n6_k15", noise_sigma=0.1
    )
    assert np.all(np.isfinite(res.regret))
    assert np.all(np.diff(res.best_value) >= 0)
    assert len(res.X) > 6  # new points were queried
    # each query compares two different points
    assert np.all(np.abs(res.X[res.pairs[:, 0]] - res.X[res.pairs[:, 1]]).max(1) > 0)


def test_prediction_interface() -> None:
    Z, _, pairs = random_problem(8)
    model = GPSurrogate().fit(PreferenceData(Z, pairs, schema=unit_schema(3)))
    p = model.prob_prefer(Z[:3], Z[3:6])
    q = model.prob_prefer(Z[3:6], Z[:3])
    np.testing.assert_allclose(p + q, 1.0)
    assert model.rank(Z).min() == 1
    with pytest.raises(ValueError, match="columns"):
        model.predict(np.zeros((1, 2)))
