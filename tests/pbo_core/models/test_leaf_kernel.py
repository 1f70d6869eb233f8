"""The compiled leaf Newton kernel against the numpy + LAPACK reference path."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_ndtr

from pbo_core.models.leaves import laplace_fit
from pbo_core.models.probit import log_ndtr_scalar


def test_log_ndtr_scalar_matches_scipy():
    z = np.linspace(-40.0, 40.0, 80_001)
    ours = np.array([log_ndtr_scalar(x) for x in z])
    ref = log_ndtr(z)
    normal = np.abs(ref) > 1e-300  # subnormal results carry fewer than 53 bits
    rel = np.zeros_like(z)
    rel[normal] = np.abs(ours - ref)[normal] / np.abs(ref[normal])
    # 1e-13 relative on [-40, 10]; beyond, log Phi(z) ~ -Phi(-z) has condition number
    # ~z^2 (one ulp of z moves it by z^2 ulps), so both libraries agree to ~z^2 ulps
    assert rel[z <= 10].max() <= 1e-13
    assert (rel / np.maximum(1.0, z * z)).max() <= 2e-15
    assert np.abs(ours - ref)[~normal].max() <= 1e-300
    for x in (-1e3, -38.5, -20.0, -5.0, 0.0, 6.0, 8.3, 1e-20, -1e-20):
        assert abs(log_ndtr_scalar(x) - log_ndtr(x)) <= 1e-13 * abs(log_ndtr(x)) + 1e-300


@settings(max_examples=150, deadline=None)
@given(
    m=st.integers(1, 30),
    n=st.integers(0, 300),
    seed=st.integers(0, 2**31 - 1),
    ratio=st.sampled_from([0.25, 1.0, 0.01]),
    warm=st.booleans(),
    prior=st.booleans(),
)
def test_compiled_newton_matches_reference(m, n, seed, ratio, warm, prior):
    rng = np.random.default_rng(seed)
    lw, ll = rng.integers(0, m, n), rng.integers(0, m, n)
    kw = {}
    if warm:
        kw["init"] = rng.normal(0, 3, m)
    if prior:
        kw["prior_mean"] = rng.normal(0, 1, m)
        kw["prior_precision"] = rng.uniform(0.05, 2.0, m)
    a = laplace_fit(lw, ll, m, ratio, compiled=True, **kw)
    b = laplace_fit(lw, ll, m, ratio, compiled=False, **kw)
    assert a.n_iter == b.n_iter
    for x, y in [
        (a.map, b.map),
        (a.mean_c, b.mean_c),
        (a.cov_c, b.cov_c),
        (a.cov, b.cov),
        (a.hessian, b.hessian),
        (a.likelihood_hessian, b.likelihood_hessian),
    ]:
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max()))
    np.testing.assert_array_equal(a.cov, a.cov.T)
