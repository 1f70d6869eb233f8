import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbo_core.data import PreferenceData, Schema
from pbo_core.models.gp import GPSurrogate
from pbo_core.models.gp.kappasharp import (
    EQ1_NOISE_VAR,
    ETA_GRID,
    MODES,
    AdaptiveActivation,
    activation_for,
    calibrate_eta,
    condition_number,
    correction,
    decisiveness,
    isolated_pair_ceiling,
    isolated_pair_decisiveness,
)


@given(st.floats(1e-6, 1e6), st.floats(1e-6, 1e6), st.floats(1e-6, 1e6))
def test_correction_properties(a1, a2, eta) -> None:
    r1, r2 = correction(np.array([a1, a2]), eta)
    assert 0 < r1 < eta and 0 < r2 < eta  # bounded
    if a1 < a2:
        assert r1 >= r2  # more correction where the prior precision is weaker


def test_correction_limits() -> None:
    assert correction(np.array([1e-12]), 3.0)[0] == pytest.approx(3.0)
    assert correction(np.array([1e12]), 3.0)[0] == pytest.approx(0.0, abs=1e-9)


def disconnected_hessian(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((16, 3))
    pairs = np.array([[2 * i, 2 * i + 1] for i in range(8)])  # 8 disconnected components
    model = GPSurrogate(lengthscale=0.2, outputscale=2.0).fit(
        PreferenceData(X, pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (3, 1))))
    )
    W, H = model.hessians()
    K_inv = H - W
    return H, np.diag(K_inv).copy()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eta_calibration_meets_its_target_with_the_smallest_grid_value(seed) -> None:
    H, a = disconnected_hessian(seed)
    eta, k0, k1 = calibrate_eta(H, a)
    assert eta is not None
    target = k0**0.9
    assert k1 <= target
    assert condition_number(H + np.diag(correction(a, eta))) == pytest.approx(k1)
    i = int(np.flatnonzero(ETA_GRID == eta)[0])
    if i > 0:  # the previous grid value misses the target
        assert condition_number(H + np.diag(correction(a, ETA_GRID[i - 1]))) > target


def test_decisiveness_scale() -> None:
    assert decisiveness(0.0, 1.0) == pytest.approx(0.0)
    assert decisiveness(50.0, 0.0) > 0.999
    # the paper: tau = 0.30 corresponds to p >= 0.81
    from scipy.stats import norm

    z = norm.ppf(0.81)
    assert decisiveness(z * np.sqrt(2.0), 0.0) == pytest.approx(0.30, abs=0.01)
    # the noise term: the same gap is far more decisive against 2 sigma^2 = 0.02 than 2
    assert decisiveness(z * np.sqrt(0.02), 0.0, EQ1_NOISE_VAR) == pytest.approx(0.30, abs=0.01)
    assert decisiveness(0.5, 0.1, EQ1_NOISE_VAR) > decisiveness(0.5, 0.1) + 0.3
    with pytest.raises(ValueError, match="noise_var"):
        decisiveness(0.5, 0.1, 0.0)


def test_score_noise_reaches_the_surrogate_and_the_registry() -> None:
    from pbo_core.registry import MODELS

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(24, 2))
    u = 3.0 * X[:, 0] - 2.0 * X[:, 1]
    pairs = np.array([[a, b] if u[a] > u[b] else [b, a] for a, b in rng.integers(0, 24, (20, 2))])
    data = PreferenceData(X, pairs[pairs[:, 0] != pairs[:, 1]])
    scores = {}
    for var in (2.0, EQ1_NOISE_VAR):
        gp = GPSurrogate(kappasharp="adaptive", kappasharp_score_noise_var=var).fit(data)
        scores[var] = gp.decisiveness_
    assert scores[EQ1_NOISE_VAR] > scores[2.0]
    strat = MODELS["gp-ks-adaptive-eq1"].strategy()
    assert strat.model.kappasharp == "adaptive"
    assert strat.model.kappasharp_score_noise_var == EQ1_NOISE_VAR
    assert MODELS["gp-ks-adaptive"].strategy().model.kappasharp_score_noise_var == 2.0


def test_adaptive_activation_switches_on_and_off() -> None:
    ctl = AdaptiveActivation()
    states = [ctl.update(1.0) for _ in range(10)]
    # EMA = 1 - 0.8^t crosses 0.30 at t = 2, but the rule is eligible from step 8
    assert states[:7] == [False] * 7 and states[7:] == [True] * 3
    assert ctl.ema == pytest.approx(1 - 0.8**10)
    off = [ctl.update(0.0) for _ in range(10)]
    # the EMA decays by 0.8 per indecisive step: 0.893 * 0.8^k < 0.30 from k = 5
    assert off[:4] == [True] * 4 and not any(off[4:])
    ctl2 = AdaptiveActivation()
    assert not any(ctl2.update(0.2) for _ in range(30))  # never decisive enough


def test_static_kappasharp_shifts_the_map_but_not_the_covariance_formula() -> None:
    rng = np.random.default_rng(3)
    X = rng.random((14, 2))
    pairs = np.array([[2 * i, 2 * i + 1] for i in range(7)])
    schema = Schema.numeric(np.tile([0.0, 1.0], (2, 1)))
    data = PreferenceData(X, pairs, schema=schema)
    plain = GPSurrogate(lengthscale=0.15, outputscale=4.0).fit(data)
    ks = GPSurrogate(lengthscale=0.15, outputscale=4.0, kappasharp="static")
    for _ in range(7):  # Static KS is eligible from step 8 (App. G.2)
        assert not ks.fit(data).kappasharp_active_
    ks.fit(data)
    assert ks.kappasharp_active_ and ks.eta_ is not None
    assert not np.allclose(ks.f_map_, plain.f_map_)
    # MAP-only: the covariance is the unaugmented Hessian at the shifted MAP
    _W, H = ks.hessians()
    _, cov = ks.posterior(X)
    np.testing.assert_allclose(cov, np.linalg.inv(H), rtol=1e-5, atol=1e-8)
    rec = ks.kappasharp_history_[-1]
    assert rec["active"] and rec["kappa_after"] <= rec["kappa_before"] ** 0.9 * (1 + 1e-9)


def test_adaptive_mode_is_off_before_step_eight() -> None:
    rng = np.random.default_rng(4)
    X = rng.random((10, 2))
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    model = GPSurrogate(lengthscale=0.2, outputscale=2.0, kappasharp="adaptive")
    model.fit(PreferenceData(X, pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (2, 1)))))
    assert not model.kappasharp_active_
    assert model.kappasharp_history_[-1]["step"] == 1


def test_static_and_adaptive_activation_on_a_constructed_trace() -> None:
    # decisiveness scores: indecisive for 10 steps, then decisive
    scores = [0.05] * 10 + [1.0] * 10
    static = activation_for("static")
    adaptive = activation_for("adaptive")
    fixed = activation_for("fixed20")
    s_on = [static.update(v) for v in scores]
    a_on = [adaptive.update(v) for v in scores]
    f_on = [fixed.update(v) for v in scores]
    # Static: inactive before step 8, then active whatever the score (no threshold)
    assert s_on[:7] == [False] * 7 and all(s_on[7:])
    # Adaptive: eligible from step 8 but inactive while the EMA is below tau = 0.30;
    # after the jump the EMA is 0.05 + 0.95 (1 - 0.8^k): >= 0.30 from k = 2 (step 12)
    ema = [0.0]
    for v in scores:
        ema.append(0.8 * ema[-1] + 0.2 * v)
    expected = [t >= 8 and e >= 0.30 for t, e in zip(range(1, 21), ema[1:], strict=True)]
    assert a_on == expected
    assert not any(a_on[:11]) and all(a_on[11:])
    # Fixed20: only the step rule, from step 20
    assert f_on == [False] * 19 + [True]
    # the thresholds are parameters
    low = activation_for("adaptive", tau=0.04)
    assert [low.update(v) for v in scores][7:10] == [True] * 3
    assert activation_for("static", min_step=3).min_step == 3
    with pytest.raises(ValueError):
        activation_for("off")


def _disconnected_data(seed: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.random((14, 2))
    pairs = np.array([[2 * i, 2 * i + 1] for i in range(7)])
    schema = Schema.numeric(np.tile([0.0, 1.0], (2, 1)))
    return X, PreferenceData(X, pairs, schema=schema)


def _fit(mode: str, data):
    return GPSurrogate(
        lengthscale=0.15, outputscale=4.0, kappasharp=mode, kappasharp_min_step=1
    ).fit(data)


def test_ablations_follow_their_definitions() -> None:
    X, data = _disconnected_data()
    plain = GPSurrogate(lengthscale=0.15, outputscale=4.0).fit(data)
    W, H = plain.hessians()
    a = np.diag(H - W)
    static = _fit("static", data)
    eta = static.eta_
    r = correction(a, eta)
    fits = {m: _fit(m, data) for m in MODES if m not in ("off", "fixed20", "adaptive")}
    for m, model in fits.items():
        assert model.kappasharp_active_ and model.eta_ == pytest.approx(eta), m
    # Jitter / Diagonal shift the MAP by a uniform R (trace-matched / eta* I) ...
    from pbo_core.models.gp.laplace import laplace_map

    for mode, R in (("jitter", np.full_like(r, r.mean())), ("diagonal", np.full_like(r, eta))):
        ref = laplace_map(plain.K_, plain.C_, plain.counts_, extra_precision=R)
        np.testing.assert_allclose(fits[mode].f_map_, ref.f, atol=1e-6)
        assert not np.allclose(fits[mode].f_map_, static.f_map_, atol=1e-4)
        # ... with the unaugmented (MAP-only) covariance
        _W, Hm = fits[mode].hessians()
        np.testing.assert_allclose(
            fits[mode].posterior(X)[1], np.linalg.inv(Hm), rtol=1e-5, atol=1e-8
        )
    # MetricOnly: the Newton matrix changes, the objective does not: same MAP as plain
    np.testing.assert_allclose(fits["metriconly"].f_map_, plain.f_map_, atol=1e-5)
    assert fits["metriconly"].kappasharp_history_[-1]["newton_iter"] >= 1
    # CovOnly: the plain MAP with covariance (H + R)^-1
    np.testing.assert_allclose(fits["covonly"].f_map_, plain.f_map_, atol=1e-10)
    np.testing.assert_allclose(
        fits["covonly"].posterior(X)[1], np.linalg.inv(H + np.diag(r)), rtol=1e-5, atol=1e-8
    )
    assert np.all(np.diag(fits["covonly"].posterior(X)[1]) < np.diag(plain.posterior(X)[1]))


def test_calibration_exponent_is_a_parameter() -> None:
    _X, data = _disconnected_data()
    strong = GPSurrogate(
        lengthscale=0.15,
        outputscale=4.0,
        kappasharp="static",
        kappasharp_min_step=1,
        kappasharp_alpha=0.5,
    ).fit(data)
    rec = strong.kappasharp_history_[-1]
    assert rec["kappa_after"] <= rec["kappa_before"] ** 0.5 * (1 + 1e-9)
    assert strong.eta_ > _fit("static", data).eta_


@pytest.mark.parametrize(
    ("noise_var", "ceiling"), [(2.0, 0.2243), (EQ1_NOISE_VAR, 0.2834), (0.0, 0.2843)]
)
def test_isolated_pair_decisiveness_has_a_ceiling_below_tau(noise_var, ceiling) -> None:
    """docs/fidelity.md: a pair informed only by its own comparison never reaches tau."""
    best, v0 = isolated_pair_ceiling(noise_var)
    assert best == pytest.approx(ceiling, abs=5e-5)
    assert best < 0.30
    # an interior maximum: smaller and larger prior variances score lower
    for factor in (1e-3, 0.3, 3.0, 1e3, 1e8):
        assert isolated_pair_decisiveness(v0 * factor, noise_var) < best
    # so the EMA (rate 0.2, from 0), even after a first score of 1, stays below tau
    act = AdaptiveActivation()
    assert not act.update(1.0)
    assert not any(act.update(best) for _ in range(200))
    assert act.ema < 0.30


@pytest.mark.parametrize(
    ("lengthscale", "outputscale"), [(0.05, 1.0), (0.1, 4.0), (0.15, 30.0), (0.15, 0.2)]
)
def test_isolated_pair_formula_matches_the_gp(lengthscale, outputscale) -> None:
    """(K.1) is the GP's own Laplace posterior of a pair far from every other comparison."""
    rng = np.random.default_rng(3)
    schema = Schema.numeric(np.tile([0.0, 100.0], (2, 1)))
    # three earlier pairs far away (own components), then the pair scored last
    X = np.vstack([rng.random((6, 2)) * 5.0, [[70.0, 95.0], [95.0, 70.0]]])
    pairs = np.array([[0, 1], [3, 2], [4, 5], [6, 7]])
    data = PreferenceData(X, pairs, schema=schema)
    model = GPSurrogate(kappasharp="adaptive", lengthscale=lengthscale, outputscale=outputscale)
    model.fit(data)
    Z = model.Z_[[6, 7]]
    rho = float(np.exp(-0.5 * (((Z[0] - Z[1]) / lengthscale) ** 2).sum()))
    expected = isolated_pair_decisiveness(2.0 * outputscale * (1.0 - rho))
    assert 0.001 < expected < 0.30
    assert model.decisiveness_ == pytest.approx(expected, rel=1e-5)
