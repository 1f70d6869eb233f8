"""The mixed logit (pbo_core.models.mixed_logit): its likelihood, gradient, estimates,
individual-level predictions, and the published Electricity fit it reproduces."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pbo_core.data import DataValidationError
from pbo_core.models.mixed_logit import (
    DISTRIBUTIONS,
    MixedLogit,
    halton_normal,
    panel_design,
    panel_loglik,
)
from pbo_core.models.mnl import ConditionalLogit, choice_sets
from tests.pbo_core.models.choice_panels import INCOME_SCHEMA, panel_study

TABLE_COLUMNS = ["name", "feature", "kind", "coef", "se", "robust_se", "cluster_se", "z"]


def _labelled(G: int = 12, seed: int = 0):
    """A small labelled panel: constants and a case-specific variable besides 3 slopes."""
    rng = np.random.default_rng(seed)
    B = np.column_stack([rng.normal(-1, 0.5, G), rng.normal(0.8, 0.4, G), np.full(G, 0.3)])
    data = panel_study(
        B, tasks=4, J=3, seed=seed, asc=np.array([0.0, 0.5, -0.3]), income_effect=[0, 0.4, -0.2]
    )
    logit = ConditionalLogit(
        alternative="alternative",
        case_specific=("income",),
        user_schema=INCOME_SCHEMA,
        alpha=0.0,
    ).fit(data)
    cs = choice_sets(data)
    Z = logit.situation_rows(data, cs)
    design = panel_design(Z, cs, data.respondent[cs.pair])
    return data, logit, design


# ----------------------------------------------------------------------------- golden
def test_gradient_matches_finite_differences() -> None:
    """Eq. 3 against central differences of Eq. 2, with normal, log-normal and negative
    log-normal coefficients beside fixed constants and case-specific terms."""
    _, _logit, design = _labelled()
    K = design.Z.shape[1]
    rcol = np.array([0, 1, 2])
    dist = np.array([DISTRIBUTIONS["-ln"], DISTRIBUTIONS["n"], DISTRIBUTIONS["ln"]])
    eta = halton_normal(design.n_respondents, 30, 3, 7)
    rng = np.random.default_rng(1)
    theta = np.concatenate([rng.normal(0, 0.5, K), rng.uniform(0.2, 0.9, 3)])
    fit = panel_loglik(design, theta, rcol, dist, eta)
    grad = fit.scores.sum(axis=0)
    num = np.empty_like(theta)
    for k in range(len(theta)):
        h = 1e-6
        up, dn = theta.copy(), theta.copy()
        up[k] += h
        dn[k] -= h
        num[k] = (
            panel_loglik(design, up, rcol, dist, eta).ll.sum()
            - panel_loglik(design, dn, rcol, dist, eta).ll.sum()
        ) / (2 * h)
    assert grad == pytest.approx(num, rel=1e-5, abs=1e-6)


def test_zero_variance_is_the_conditional_logit() -> None:
    """With sigma = 0 every draw is the logit: Eq. 2 is ConditionalLogit's likelihood, and
    a mixed logit without random coefficients is the logit's fit."""
    data, logit, design = _labelled()
    K = design.Z.shape[1]
    rcol = np.array([0, 1])
    eta = halton_normal(design.n_respondents, 20, 2, 3)
    theta = np.concatenate([logit.coef_, np.zeros(2)])
    fit = panel_loglik(design, theta, rcol, np.zeros(2, dtype=np.int64), eta)
    assert fit.ll.sum() == pytest.approx(logit.loglik_, rel=1e-12)
    assert fit.scores[:, :K].sum(axis=0) == pytest.approx(np.zeros(K), abs=1e-6)
    plain = MixedLogit(
        alternative="alternative", case_specific=("income",), user_schema=INCOME_SCHEMA, random=()
    ).fit(data)
    assert plain.loglik_ == pytest.approx(logit.loglik_, abs=1e-6)
    assert plain.coef_ == pytest.approx(logit.coef_, abs=1e-4)
    assert plain.se_ == pytest.approx(logit.se_, rel=1e-3)


# ----------------------------------------------------------------------------- estimates
@pytest.fixture(scope="module")
def recovery():
    """500 respondents x 8 tasks: x0 ~ N(-1, 0.8), x1 ~ N(1.5, 0.6), x2 fixed at 0.7."""
    rng = np.random.default_rng(11)
    G = 500
    B = np.column_stack([rng.normal(-1.0, 0.8, G), rng.normal(1.5, 0.6, G), np.full(G, 0.7)])
    data = panel_study(B, tasks=8, J=3, seed=11)
    model = MixedLogit(random=["x0", "x1"], n_draws=200, random_state=0).fit(data)
    return B, data, model


def test_planted_means_and_sds_are_recovered(recovery) -> None:
    _B, _, m = recovery
    truth = np.array([-1.0, 1.5, 0.7, 0.8, 0.6])
    assert m.converged_ and m.se_method_ == "hessian"
    assert np.all(np.abs(m.coef_ - truth) < 2.0 * m.se_), (m.coef_, m.se_)
    assert np.all(np.abs(m.coef_ - truth) < 2.0 * m.robust_se_)
    # the fixed-coefficient logit fits worse than the mixture, by far more than 2 parameters
    assert m.loglik_ - m.loglik_logit_ > 20


def test_individual_conditional_means_follow_each_respondents_choices(recovery) -> None:
    """E[beta | choices] tracks every respondent's own coefficient; a respondent the model
    never saw gets the population mean."""
    B, data, m = recovery
    own = m.individual_coef_[:, :2]
    for k in range(2):
        assert np.corrcoef(own[:, k], B[:, k])[0, 1] > 0.5
    # shrunk toward the mean: less spread than the population's s.d.
    assert np.all(own.std(axis=0) < m.coef_[3:5])
    X = data.X[:6]
    assert m.predict(X, respondent=0) == pytest.approx(X @ m.individual_coef_[0])
    assert m.predict(X, respondent="nobody") == pytest.approx(X @ m.coef_[:3])
    assert m.predict(X) == pytest.approx(X @ m.coef_[:3])


def test_probabilities_are_mixtures_over_the_weighted_draws(recovery) -> None:
    _, data, m = recovery
    X = data.X[:3]
    for who in (0, 17, "nobody", None):
        p = m.choice_probabilities(X, respondent=who)
        assert p.sum() == pytest.approx(1.0) and np.all(p > 0)
        pair = m.choice_probabilities(X[:2], respondent=who)[0]
        assert m.prob_prefer(X[:1], X[1:2], respondent=who)[0] == pytest.approx(pair)
        mean, cov = m.posterior(X, respondent=who)
        assert mean == pytest.approx(m.predict(X, respondent=who))
        assert np.all(np.linalg.eigvalsh(cov) > -1e-9)
    # a seen respondent's own draws differ from the population's
    assert not np.allclose(m.choice_probabilities(X, 0), m.choice_probabilities(X))


def test_tables_have_the_logits_columns_and_statistics(recovery) -> None:
    _, data, m = recovery
    table = m.coef_table()
    logit = ConditionalLogit(alpha=0.0).fit(data)
    assert list(table.columns) == list(logit.coef_table().columns)
    assert list(table["name"]) == ["x0", "x1", "x2", "sd.x0", "sd.x1"]
    assert list(table["kind"]) == ["mean", "mean", "attribute", "s.d.", "s.d."]
    assert np.all(table["cluster_se"] >= table["robust_se"])
    stats = m.fit_statistics()
    assert set(logit.fit_statistics()) <= set(stats)
    assert stats["alpha"] == 0 and stats["n_draws"] == 200 and stats["n_random"] == 2
    assert stats["n_respondents"] == 500 and stats["n_choices"] == 4000
    assert stats["rho2"] > logit.fit_statistics()["rho2"]


def test_constants_stay_fixed_and_lognormal_keeps_its_sign() -> None:
    """The default makes every attribute slope random and the constants and
    case-specific terms fixed; a "-ln" coefficient is negative for every draw."""
    rng = np.random.default_rng(3)
    G = 80
    B = np.column_stack([-np.exp(rng.normal(0.0, 0.3, G)), rng.normal(0.5, 0.3, G)])
    data = panel_study(
        B, tasks=6, J=3, seed=3, asc=np.array([0.0, 0.4, -0.4]), income_effect=[0, 0.3, 0.0]
    )
    params = dict(alternative="alternative", case_specific=("income",), user_schema=INCOME_SCHEMA)
    m = MixedLogit(n_draws=50, **params).fit(data)
    assert m.random_columns_ == ["x0", "x1"]
    kinds = dict(zip(m.coef_table()["name"], m.coef_table()["kind"], strict=True))
    assert kinds["ASC a1"] == "constant" and kinds["income [a1]"] == "case-specific"
    ln = MixedLogit(random={"x0": "-ln", "x1": "n"}, n_draws=50, **params).fit(data)
    draws, w = ln.coef_draws(0)
    assert np.all(draws[:, 0] < 0) and w.sum() == pytest.approx(1.0)
    table = ln.coef_table()
    assert list(table.loc[table["name"].isin(["x0", "sd.x0"]), "kind"]) == [
        "mean of log",
        "s.d. of log",
    ]
    assert ln.coef_mean()[0] == pytest.approx(
        -np.exp(ln.coef_[0] + 0.5 * ln.coef_[len(ln.coef_) - 2] ** 2)
    )


def test_unknown_random_names_and_distributions_are_refused() -> None:
    data = panel_study(np.ones((5, 2)), tasks=3, seed=0)
    with pytest.raises(DataValidationError, match="not a column"):
        MixedLogit(random=["price"]).fit(data)
    with pytest.raises(ValueError, match="distribution"):
        MixedLogit(random={"x0": "triangular"}).fit(data)


def test_extreme_inputs_give_no_nan() -> None:
    """Huge attribute values and choices an attribute separates: finite likelihood,
    utilities and probabilities (log-sum-exp over alternatives and draws)."""
    rng = np.random.default_rng(5)
    B = np.column_stack([rng.normal(50.0, 10.0, 20), np.full(20, -30.0)])
    data = panel_study(B, tasks=5, J=4, seed=5, scale=1e4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MixedLogit(n_draws=20, max_iter=30).fit(data)
    assert np.isfinite(m.loglik_) and np.all(np.isfinite(m.coef_))
    for who in (0, None):
        assert np.all(np.isfinite(m.predict(data.X[:8], respondent=who)))
        p = m.choice_probabilities(data.X[:8], respondent=who)
        assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)
    # a wild trial point of a log-normal coefficient: still finite
    small = panel_study(np.ones((4, 2)), tasks=3, seed=1, scale=1e3)
    logit = ConditionalLogit(alpha=0.0).fit(small)
    cs = choice_sets(small)
    design = panel_design(logit.situation_rows(small, cs), cs, small.respondent[cs.pair])
    eta = halton_normal(4, 10, 1, 0)
    fit = panel_loglik(design, np.array([300.0, 1.0, 80.0]), np.array([0]), np.array([1]), eta)
    assert np.all(np.isfinite(fit.ll)) and np.all(np.isfinite(fit.scores))


def test_the_seed_fixes_the_draws() -> None:
    data = panel_study(np.tile([-1.0, 1.0], (30, 1)), tasks=4, seed=2)
    a = MixedLogit(n_draws=20, random_state=4).fit(data)
    b = MixedLogit(n_draws=20, random_state=np.random.default_rng(4)).fit(data)
    c = MixedLogit(n_draws=20, random_state=5).fit(data)
    assert np.array_equal(a.coef_, b.coef_) and not np.array_equal(a.coef_, c.coef_)


# ----------------------------------------------------------------------------- published
#: xlogit's README (Arteaga et al.; github.com/arteagac/xlogit, quick start): the panel
#: mixed logit of mlogit's Electricity data, 6 normal coefficients, 600 Halton draws:
#: estimate and standard error, and the log-likelihood.
XLOGIT_ELECTRICITY = {
    "price": (-0.9996286, 0.0331488),
    "contract": (-0.2355334, 0.0220401),
    "local": (2.2307891, 0.1164263),
    "known": (1.6251657, 0.0918755),
    "time_of_day": (-9.6067367, 0.3112721),
    "seasonal": (-9.7892800, 0.2913063),
    "sd.price": (0.2357813, 0.0181892),
    "sd.contract": (0.4025377, 0.0220183),
    "sd.local": (1.9262893, 0.1187850),
    "sd.known": (1.2192931, 0.0944581),  # xlogit prints -1.219: the sign of sigma is free
    "sd.time_of_day": (2.3354462, 0.1741859),
    "sd.seasonal": (1.4200913, 0.2095869),
}
XLOGIT_LOGLIK = -3888.413


@pytest.mark.slow
def test_reproduces_xlogits_electricity_fit() -> None:
    """The same model with 600 scrambled Halton draws: every estimate within 2 of the
    published standard errors (the rest is simulation noise: other draws move them by
    about one), the log-likelihood within 6 (ours is higher, docs/case-studies.md)."""
    from data_loaders.registry import load_study

    study = load_study("electricity")
    m = MixedLogit(n_draws=600, random_state=0).fit(study.data)
    table = m.coef_table().set_index("name")
    assert m.converged_ and m.n_respondents_ == 361 and m.n_situations_ == 4308
    for name, (coef, se) in XLOGIT_ELECTRICITY.items():
        assert abs(table.loc[name, "coef"] - coef) < 2 * se, name
    assert m.loglik_ == pytest.approx(XLOGIT_LOGLIK, abs=6.0)
