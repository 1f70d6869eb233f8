import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from pbo_core.models.leaves import (
    fit_leaf_posterior,
    incidence_matrix,
    laplace_fit,
    likelihood_hessian,
    neg_log_posterior,
)
from tests.pbo_core.models.leaves_reference import reference_laplace_fit


def test_two_leaves_one_comparison_golden() -> None:
    # f = (a, -a) by symmetry; a solves sqrt(2) phi(sqrt2 a)/Phi(sqrt2 a) = a/2 (ratio 1/4)
    mean, cov = fit_leaf_posterior([0], [1], 2, ratio=0.25)
    np.testing.assert_allclose(mean, [0.7506053566884631, -0.7506053566884631], atol=1e-7)
    v = 0.83038512
    np.testing.assert_allclose(cov, [[v, -v], [-v, v]], atol=1e-7)


def test_same_leaf_pairs_are_ignored() -> None:
    m1, c1 = fit_leaf_posterior([0, 2, 2], [1, 2, 2], 3)
    m2, c2 = fit_leaf_posterior([0], [1], 3)
    np.testing.assert_allclose(m1, m2)
    np.testing.assert_allclose(c1, c2)


def test_map_matches_a_generic_optimiser() -> None:
    rng = np.random.default_rng(0)
    m = 6
    w = rng.integers(0, m, 40)
    lo = (w + rng.integers(1, m, 40)) % m
    res = laplace_fit(w, lo, m, ratio=0.5)
    D = incidence_matrix(w, lo, m)
    c = np.ones(len(w))
    p = np.full(m, 0.5)
    z0 = np.zeros(m)
    ref = minimize(
        lambda f: neg_log_posterior(f, D, c, p, z0)[0],
        z0,
        jac=lambda f: neg_log_posterior(f, D, c, p, z0)[1],
        method="BFGS",
        options={"gtol": 1e-10},
    )
    np.testing.assert_allclose(res.map, ref.x, atol=1e-5)


def test_gradient_and_hessian_match_finite_differences() -> None:
    rng = np.random.default_rng(1)
    m = 5
    w = rng.integers(0, m, 30)
    lo = (w + rng.integers(1, m, 30)) % m
    D = incidence_matrix(w, lo, m)
    c = rng.integers(1, 4, 30).astype(float)
    p = np.full(m, 0.25)
    m0 = rng.normal(size=m)
    f = rng.normal(scale=2.0, size=m)
    _obj, grad, h = neg_log_posterior(f, D, c, p, m0)
    eps = 1e-6
    num_grad = np.array(
        [
            (
                neg_log_posterior(f + eps * e, D, c, p, m0)[0]
                - neg_log_posterior(f - eps * e, D, c, p, m0)[0]
            )
            / (2 * eps)
            for e in np.eye(m)
        ]
    )
    np.testing.assert_allclose(grad, num_grad, rtol=1e-6, atol=1e-7)
    H = np.diag(p) + likelihood_hessian(D, h)
    num_hess = np.array(
        [
            (
                neg_log_posterior(f + eps * e, D, c, p, m0)[1]
                - neg_log_posterior(f - eps * e, D, c, p, m0)[1]
            )
            / (2 * eps)
            for e in np.eye(m)
        ]
    )
    np.testing.assert_allclose(H, num_hess, rtol=1e-5, atol=1e-6)


@st.composite
def comparisons(draw):
    m = draw(st.integers(1, 8))
    n = draw(st.integers(0, 40))
    w = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
    lo = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
    ratio = draw(st.sampled_from([0.01, 0.25, 1.0, 10.0]))
    return np.array(w, dtype=int), np.array(lo, dtype=int), m, ratio


@given(comparisons())
def test_posterior_invariants(data) -> None:
    w, lo, m, ratio = data
    mean, cov = fit_leaf_posterior(w, lo, m, ratio)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))
    assert abs(mean.sum()) < 1e-8 * max(1.0, np.abs(mean).max())
    np.testing.assert_array_equal(cov, cov.T)
    np.testing.assert_allclose(cov @ np.ones(m), 0.0, atol=1e-10 * max(1.0, np.abs(cov).max()))
    eig = np.linalg.eigvalsh(cov)
    assert eig.min() >= -1e-10 * max(1.0, eig.max())


def test_extreme_and_contradictory_comparisons_stay_finite() -> None:
    # a thousand identical wins, plus contradictions, with a tiny prior precision
    w = np.r_[np.zeros(1000, int), 1, 2, 1]
    lo = np.r_[np.ones(1000, int), 0, 1, 2]
    res = laplace_fit(w, lo, 3, ratio=1e-6)
    assert np.all(np.isfinite(res.mean_c)) and np.all(np.isfinite(res.cov_c))
    assert res.mean_c[0] > res.mean_c[1]
    assert res.grad_norm < 1e-6
    # a separable chain with a huge ratio-free spread: still finite, correctly ordered
    mean, _ = fit_leaf_posterior(np.arange(9), np.arange(1, 10), 10, ratio=1e-8)
    assert np.all(np.diff(mean) < 0)


def test_warm_start_reaches_the_same_posterior() -> None:
    rng = np.random.default_rng(4)
    w = rng.integers(0, 7, 50)
    lo = (w + rng.integers(1, 7, 50)) % 7
    cold = laplace_fit(w, lo, 7)
    warm = laplace_fit(w, lo, 7, init=cold.map + rng.normal(scale=3, size=7))
    np.testing.assert_allclose(warm.mean_c, cold.mean_c, atol=1e-7)
    assert warm.n_iter >= 1


def test_prior_mean_moves_the_posterior() -> None:
    prior = np.array([2.0, -1.0, -1.0])
    mean, _ = fit_leaf_posterior([], [], 3, prior_mean=prior)
    np.testing.assert_allclose(mean, prior)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="leaf indices"):
        fit_leaf_posterior([0], [3], 3)
    with pytest.raises(ValueError, match="ratio must be positive"):
        fit_leaf_posterior([0], [1], 2, ratio=0)


@given(
    m=st.integers(2, 12),
    n=st.integers(0, 80),
    seed=st.integers(0, 10_000),
    ratio=st.sampled_from([0.05, 0.25, 1.0]),
    warm=st.booleans(),
)
def test_aggregated_fit_matches_the_dense_reference(m, n, seed, ratio, warm) -> None:
    # the aggregated Hessian against the former dense (D.T * h) @ D fit
    rng = np.random.default_rng(seed)
    w = rng.integers(0, m, n)
    lo = rng.integers(0, m, n)  # self-pairs included: both drop them
    init = rng.normal(size=m) if warm else None
    new = laplace_fit(w, lo, m, ratio, init=init)
    ref = reference_laplace_fit(w, lo, m, ratio, init=init)
    assert new.n_iter == ref.n_iter
    for a, b in [
        (new.map, ref.map),
        (new.hessian, ref.hessian),
        (new.likelihood_hessian, ref.likelihood_hessian),
        (new.cov, ref.cov),
        (new.mean_c, ref.mean_c),
        (new.cov_c, ref.cov_c),
    ]:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(new.likelihood_hessian, new.likelihood_hessian.T)
    assert np.linalg.eigvalsh(new.cov_c).min() > -1e-10
