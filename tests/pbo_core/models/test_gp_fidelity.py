"""The GP's BoTorch 0.6-era options (docs/fidelity.md)."""

import numpy as np
import pytest
from scipy.stats import gamma

from pbo_core.data import PreferenceData, Schema
from pbo_core.models.gp import FIDELITY_VARIANTS, GPSurrogate, variant_options
from pbo_core.models.gp import surrogate as gp_surrogate
from pbo_core.models.gp.laplace import (
    BOTORCH_ZLIM,
    PRIORS,
    evidence_and_gradient,
    laplace_map,
    log_prior,
    log_prior_grad,
    rbf_kernel,
)
from pbo_core.models.probit import clamped_probit_terms, probit_terms


def problem(seed: int, n: int = 12, d: int = 2, m: int = 20, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) * scale
    u = X @ rng.normal(size=d)
    w = rng.integers(0, n, m)
    lo = (w + rng.integers(1, n, m)) % n
    pairs = np.where((u[w] > u[lo])[:, None], np.c_[w, lo], np.c_[lo, w])
    return X, pairs


def incidence(pairs: np.ndarray, n: int) -> np.ndarray:
    C = np.zeros((len(pairs), n))
    C[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    C[np.arange(len(pairs)), pairs[:, 1]] = -1.0
    return C


def test_priors_06_are_botorch_06s() -> None:
    p = PRIORS["0.6"]
    assert p.lengthscale == (1.2, 0.5) and p.outputscale_box == (1.0, 4.0)
    assert p.lengthscale_mode == pytest.approx(0.4)
    assert p.outputscale0 == pytest.approx(np.log(2.0))  # softplus(0)
    ell = np.array([0.3, 1.7])
    inside = log_prior(ell, 2.0, p)
    assert inside == pytest.approx(gamma(1.2, scale=1 / 0.5).logpdf(ell).sum() - np.log(3.02506628))
    theta = np.log(np.r_[ell, 2.0])
    eps = 1e-6
    num = [
        (log_prior(*np.split(np.exp(theta + eps * e), [2]), p) - inside) / eps for e in np.eye(3)
    ]
    grad = log_prior_grad(theta, p)
    np.testing.assert_allclose(grad, num, atol=1e-4)


def test_fitted_outputscale_stays_in_the_06_box() -> None:
    X, pairs = problem(0)
    data = PreferenceData(X, pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (2, 1))))
    m = GPSurrogate(priors="0.6").fit(data)
    assert 1.0 <= m.outputscale_ <= 4.0
    with pytest.raises(ValueError, match=r"priors must be 'current' or '0\.6', got '0\.5'"):
        GPSurrogate(priors="0.5").fit(data)


def test_raw_inputs_put_the_prior_on_raw_lengthscales() -> None:
    """Gamma(a, b) on span * ell is Gamma(a, b span) on ell, up to the Jacobian log span."""
    span = np.array([20.0, 1.0])
    ell = np.array([0.05, 0.4])
    p = PRIORS["0.6"]
    raw = gamma(1.2, scale=1 / 0.5).logpdf(span * ell).sum() + np.log(span).sum()
    box = log_prior(ell, 2.0, p) - gamma(1.2, scale=1 / 0.5).logpdf(ell).sum()
    assert log_prior(ell, 2.0, p, span) == pytest.approx(raw + box)
    X, pairs = problem(1, scale=20.0)
    schema = Schema.numeric(np.array([[-10.0, 10.0], [0.0, 1.0]]))
    data = PreferenceData(X - [10.0, 0.0], pairs, schema=schema)
    m = GPSurrogate(priors="0.6", input_units="raw", fit_hyperparameters=False).fit(data)
    np.testing.assert_allclose(m.lengthscale_, 0.4 / np.array([20.0, 1.0]))  # mode / span


def test_clamped_probit_terms_are_botorchs_and_consistent() -> None:
    z = np.array([-5.0, -3.0, -1.0, 0.5, 3.0, 4.0, 8.0])
    lp, r, h, clamped = clamped_probit_terms(z, 3.0)
    lp3, r3, h3 = probit_terms(np.clip(z, -3.0, 3.0))
    np.testing.assert_array_equal(r, r3)  # gradient and curvature at the clamped z
    np.testing.assert_array_equal(h, h3)
    np.testing.assert_array_equal(clamped, np.abs(z) > 3.0)
    inner = ~clamped
    np.testing.assert_allclose(lp[inner], lp3[inner])
    eps = 1e-6  # (P.1): r is the derivative of lp everywhere
    num = (clamped_probit_terms(z + eps, 3.0)[0] - clamped_probit_terms(z - eps, 3.0)[0]) / 2e-6
    np.testing.assert_allclose(num, r, rtol=1e-6)
    none = clamped_probit_terms(z, None)
    np.testing.assert_array_equal(none[0], probit_terms(z)[0])
    assert not none[3].any()


def test_clamped_map_is_the_root_botorch_solves_for_and_its_evidence_gradient_is_exact() -> None:
    X, pairs = problem(2, n=8, m=30)  # many repeated comparisons: |z| > 3 at the MAP
    pairs = np.vstack([pairs] * 4)
    n = len(X)
    C = incidence(pairs, n)
    counts = np.ones(len(C))
    theta = np.log(np.r_[0.6, 0.9, 4.0])
    K = rbf_kernel(X, X, np.exp(theta[:2]), 4.0)
    st = laplace_map(K, C, counts, zlim=BOTORCH_ZLIM)
    z = C @ st.f / np.sqrt(2.0)
    assert np.abs(z).max() > BOTORCH_ZLIM
    _, r, _, _ = clamped_probit_terms(z, BOTORCH_ZLIM)
    # K^-1 f = C^T r(z_c) / sqrt 2 (BoTorch's fsolve root), i.e. f = K C^T r / sqrt 2
    np.testing.assert_allclose(st.f, K @ (C.T @ r) / np.sqrt(2.0), atol=1e-6)
    plain = laplace_map(K, C, counts)
    assert np.abs(plain.f - st.f).max() > 1e-3  # the clamp changes the MAP
    _, grad, _ = evidence_and_gradient(theta, X, C, counts, zlim=BOTORCH_ZLIM)
    eps = 1e-5
    num = [
        (
            evidence_and_gradient(theta + eps * e, X, C, counts, zlim=BOTORCH_ZLIM)[0]
            - evidence_and_gradient(theta - eps * e, X, C, counts, zlim=BOTORCH_ZLIM)[0]
        )
        / (2 * eps)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(grad, num, rtol=1e-4, atol=1e-6)


def test_nomerge_keeps_duplicates_as_items() -> None:
    X = np.array([[0.2, 0.2], [0.8, 0.1], [0.2, 0.2], [0.5, 0.9]])
    pairs = np.array([[0, 1], [2, 3], [3, 1]])
    data = PreferenceData(X, pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (2, 1))))
    merged = GPSurrogate().fit(data)
    kept = GPSurrogate(merge=False).fit(data)
    assert merged.merged_items_ == 1 and len(merged.Z_) == 3
    assert kept.merged_items_ == 0 and len(kept.Z_) == 4
    mean, cov = kept.posterior(X)
    assert np.all(np.isfinite(mean))
    np.testing.assert_allclose(cov, cov.T)
    assert np.linalg.eigvalsh(cov).min() > -1e-8


def test_failed_fits_are_counted_and_fall_back_to_botorchs_initial_values(monkeypatch) -> None:
    X, pairs = problem(3)
    data = PreferenceData(X, pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (2, 1))))
    ok = GPSurrogate(priors="0.6", fit_failure="initial").fit(data)
    assert ok.fit_failures_ == []

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("synthetic: not positive definite")

    monkeypatch.setattr(gp_surrogate, "evidence_and_gradient", broken)
    kept = GPSurrogate(priors="0.6").fit(data)
    assert kept.fit_failures_ == [1]
    back = GPSurrogate(priors="0.6", fit_failure="initial").fit(data)
    assert back.fit_failures_ == [1]
    np.testing.assert_allclose(back.lengthscale_, 0.4)
    assert back.outputscale_ == pytest.approx(np.log(2.0))
    back.fit(data)
    assert back.fit_failures_ == [1, 2]


def test_unfitted_keeps_the_initial_values_at_every_fit() -> None:
    X, pairs = problem(4)
    data = PreferenceData(X, pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (2, 1))))
    m = GPSurrogate(priors="0.6", **variant_options("unfitted")).fit(data)
    np.testing.assert_allclose(m.lengthscale_, 0.4)
    assert m.outputscale_ == pytest.approx(np.log(2.0))
    assert m.fit_failures_ == []


def test_variant_options() -> None:
    assert variant_options(None) == variant_options("none") == {}
    assert variant_options("raw+clamp") == {"input_units": "raw", "zlim": BOTORCH_ZLIM}
    every = variant_options("all")
    assert every == {
        "input_units": "raw",
        "fit_failure": "initial",
        "zlim": BOTORCH_ZLIM,
        "merge": False,
    }
    assert set(FIDELITY_VARIANTS) == {"raw", "fallback", "unfitted", "clamp", "nomerge"}
    with pytest.raises(ValueError, match="unknown GP variant"):
        variant_options("raw+normalise")
