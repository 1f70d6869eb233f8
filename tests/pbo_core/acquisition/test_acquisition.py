import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbo_core.acquisition.eubo import eubo, eubo_matrix
from pbo_core.acquisition.leaves import best_leaf_pair, structural_gain


def test_eubo_golden_values() -> None:
    # independent standard normals: E[max] = 1/sqrt(pi)
    assert eubo(0.0, 0.0, 1.0, 1.0, 0.0) == pytest.approx(1 / np.sqrt(np.pi))
    # no uncertainty: the larger mean
    assert eubo(1.0, 3.0, 0.0, 0.0, 0.0) == 3.0
    # perfectly correlated equal variances: the difference is deterministic
    assert eubo(0.5, -0.2, 2.0, 2.0, 2.0) == pytest.approx(0.5)


def test_eubo_matches_monte_carlo() -> None:
    rng = np.random.default_rng(0)
    mu = np.array([0.3, -0.4])
    cov = np.array([[1.5, 0.4], [0.4, 0.7]])
    draws = rng.multivariate_normal(mu, cov, size=400_000)
    mc = draws.max(axis=1).mean()
    val = eubo(mu[0], mu[1], cov[0, 0], cov[1, 1], cov[0, 1])
    assert val == pytest.approx(mc, abs=5e-3)


real = st.floats(-50, 50, allow_nan=False)
var = st.floats(0, 25, allow_nan=False)


@given(real, real, var, var, st.floats(-1, 1))
def test_eubo_bounds_and_symmetry(ma, mb, va, vb, rho) -> None:
    cab = rho * np.sqrt(va * vb)
    e = eubo(ma, mb, va, vb, cab)
    assert np.isfinite(e)
    assert e >= max(ma, mb) - 1e-9 * max(1.0, abs(ma), abs(mb))
    assert e == pytest.approx(float(eubo(mb, ma, vb, va, cab)), rel=1e-9, abs=1e-9)


def test_eubo_is_vectorised() -> None:
    mean = np.array([0.0, 1.0, -1.0])
    cov = np.diag([1.0, 0.5, 2.0])
    E = eubo_matrix(mean, cov)
    assert E.shape == (3, 3)
    np.testing.assert_allclose(np.diag(E), mean)
    assert E[0, 1] == pytest.approx(float(eubo(0.0, 1.0, 1.0, 0.5, 0.0)))


def test_best_leaf_pair() -> None:
    mean = np.array([0.0, 2.0, 1.9, -5.0])
    cov = np.diag([0.1, 0.1, 0.1, 0.1])
    a, b, val = best_leaf_pair(mean, cov)
    assert (a, b) == (1, 2) and val >= 2.0
    assert best_leaf_pair(np.array([0.0]), np.zeros((1, 1)))[:2] == (0, 0)


def test_structural_gain_within_an_empty_leaf_is_one() -> None:
    empty = np.zeros((0, 2))
    g = structural_gain(
        empty,
        empty,
        np.array([0.1, 0.5]),
        np.array([0.9, 0.5]),
        np.zeros(2, bool),
        np.zeros(2, int),
        np.ones(2),
    )
    assert g == pytest.approx(1.0)
    # identical points cannot change any split score
    g0 = structural_gain(
        empty,
        empty,
        np.array([0.5, 0.5]),
        np.array([0.5, 0.5]),
        np.zeros(2, bool),
        np.zeros(2, int),
        np.ones(2),
    )
    assert g0 == 0.0
