"""The item-space GP Laplace core against the former comparison-space one."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbo_core.models.gp.laplace import (
    comparison_laplacian,
    evidence_and_gradient,
    incidence_pairs,
    laplace_map,
    laplacian_factor,
    rbf_kernel,
    state_at,
)
from pbo_core.models.probit import probit_terms
from tests.pbo_core.models.gp_reference import (
    reference_evidence_and_gradient,
    reference_laplace_map,
    reference_state_at,
)


def _problem(seed: int, n: int, d: int, m: int, noise: float):
    rng = np.random.default_rng(seed)
    Z = rng.random((n, d))
    u = np.sin(3 * Z) @ rng.normal(size=d) * 2
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    win = u[a] + noise * rng.normal(size=m) > u[b]
    w, lo = np.where(win, a, b), np.where(win, b, a)
    C = np.zeros((m, n))
    C[np.arange(m), w] = 1.0
    C[np.arange(m), lo] = -1.0
    return Z, C, rng.integers(1, 3, m).astype(float)


def _distance_to_map(state, C, c, K) -> float:
    """Length of the exact Newton step from the state: (K^-1 + W)^-1 grad Psi."""
    _, r, h = probit_terms((C @ state.f) / np.sqrt(2.0))
    g = state.alpha - C.T @ (c * r) / np.sqrt(2.0)  # grad Psi in f (alpha = K^-1 f)
    W = C.T @ ((c * h * 0.5)[:, None] * C)
    # (K^-1 + W)^-1 g = K (I + W K)^-1 g, without inverting K
    return float(np.abs(K @ np.linalg.solve(np.eye(len(K)) + W @ K, g)).max())


def _same_posterior(new, ref, K) -> None:
    # the quantities prediction uses: L^T B^-1 L and log|B|
    def r1(s):
        return s.L.T @ np.linalg.solve(s.B_chol @ s.B_chol.T, s.L)

    np.testing.assert_allclose(r1(new), r1(ref), atol=1e-8, rtol=1e-8)
    np.testing.assert_allclose(
        np.log(np.diag(new.B_chol)).sum(), np.log(np.diag(ref.B_chol)).sum(), atol=1e-8
    )


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 25),
    m=st.integers(1, 60),
    noise=st.sampled_from([0.0, 0.5, 3.0]),
    warm=st.booleans(),
)
def test_item_space_map_and_evidence_match_the_comparison_space(seed, n, m, noise, warm) -> None:
    Z, C, c = _problem(seed, n, 2, m, noise)
    theta = np.log(np.r_[0.3, 0.6, 1.7])
    a0 = np.random.default_rng(seed).normal(size=n) if warm else None
    val, grad, new = evidence_and_gradient(theta, Z, C, c, a0)
    rval, rgrad, ref = reference_evidence_and_gradient(theta, Z, C, c, a0)
    K = rbf_kernel(Z, Z, np.exp(theta[:-1]), float(np.exp(theta[-1])))
    # the item-space Newton ends within its tolerance (1e-8) of the MAP ...
    assert _distance_to_map(new, C, c, K) <= 1e-8
    # ... which the former line search occasionally missed (rounding rejected its last
    # quadratically convergent step); compare wherever the reference converged
    if _distance_to_map(ref, C, c, K) > 1e-8:
        return
    np.testing.assert_allclose(new.f, ref.f, atol=1e-8)
    np.testing.assert_allclose(new.alpha, ref.alpha, atol=1e-8 * max(1.0, np.abs(ref.alpha).max()))
    assert abs(val - rval) <= 1e-8 * max(1.0, abs(rval))
    np.testing.assert_allclose(grad, rgrad, atol=1e-6 * max(1.0, np.abs(rgrad).max()))
    _same_posterior(new, ref, K)


@pytest.mark.parametrize("seed", [0, 1])
def test_extra_precision_and_state_at_match(seed) -> None:
    Z, C, c = _problem(seed, 30, 3, 120, 0.5)
    K = rbf_kernel(Z, Z, np.full(3, 0.4), 2.0)
    R = np.linspace(0.1, 2.0, 30)
    new = laplace_map(K, C, c, extra_precision=R)
    ref = reference_laplace_map(K, C, c, extra_precision=R)
    np.testing.assert_allclose(new.f, ref.f, atol=1e-8)
    s_new, s_ref = state_at(K, C, c, new.f), reference_state_at(K, C, c, new.f)
    np.testing.assert_allclose(s_new.grad_loglik, s_ref.grad_loglik, atol=1e-10)
    _same_posterior(s_new, s_ref, K)


def test_laplacian_and_factor() -> None:
    _, C, _ = _problem(3, 12, 2, 40, 1.0)
    C = np.vstack([C, C[:5]])  # repeated rows are allowed
    omega = np.random.default_rng(0).random(len(C))
    pairs = incidence_pairs(C)
    assert pairs is not None
    W = comparison_laplacian(C, omega, pairs)
    np.testing.assert_allclose(W, C.T @ (omega[:, None] * C), atol=1e-13)
    np.testing.assert_array_equal(W, W.T)
    np.testing.assert_allclose(W, comparison_laplacian(C, omega, None), atol=1e-13)
    L = laplacian_factor(W)
    np.testing.assert_allclose(L.T @ L, W, atol=1e-12)
    assert incidence_pairs(2.0 * C) is None
