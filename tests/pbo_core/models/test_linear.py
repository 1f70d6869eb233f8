"""Linear-utility baselines: golden values against statsmodels / scikit-learn, invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.models.base import Surrogate
from pbo_core.models.linear import (
    LinearDesign,
    LinearUtilitySurrogate,
    LogitSurrogate,
    ProbitSurrogate,
    RespondentLinearSurrogate,
)

SCHEMA = Schema(
    (
        Feature("price", "numeric", bounds=(0, 50), label="Price", unit="guilders"),
        Feature("comfort", "ordinal", levels=("low", "mid", "high"), label="Comfort"),
        Feature("party", "categorical", levels=("A", "B", "C"), label="Party"),
        Feature("local", "binary", levels=("no", "yes"), label="Local"),
        Feature("flags", "multi_hot", levels=("x", "y"), label="Flags"),
    )
)
TRUE_COEF = np.array([-0.08, 0.6, 0.8, -0.5, 0.7, 0.4, -0.3])  # design columns


def synthetic(
    n_items: int = 60,
    n_pairs: int = 800,
    *,
    n_resp: int = 1,
    seed: int = 0,
    link: str = "logit",
    spread: float = 0.0,
) -> tuple[PreferenceData, np.ndarray]:
    """Items of SCHEMA, comparisons from a linear utility (per-respondent spread)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.uniform(0, 50, n_items),
            rng.integers(0, 3, n_items),
            rng.integers(0, 3, n_items),
            rng.integers(0, 2, n_items),
            rng.integers(0, 2, (n_items, 2)),
        ]
    ).astype(float)
    Z = LinearDesign(SCHEMA).transform(X)
    resp = np.repeat(np.arange(n_resp), n_pairs // n_resp)
    coefs = TRUE_COEF + spread * rng.normal(size=(n_resp, len(TRUE_COEF))) * np.abs(TRUE_COEF)
    a = rng.integers(0, n_items, len(resp))
    b = (a + rng.integers(1, n_items, len(resp))) % n_items
    diff = np.einsum("np,np->n", Z[a] - Z[b], coefs[resp])
    noise = rng.logistic(size=len(resp)) if link == "logit" else rng.normal(size=len(resp))
    win = diff + noise > 0
    pairs = np.where(win[:, None], np.column_stack([a, b]), np.column_stack([b, a]))
    return PreferenceData(X, pairs, schema=SCHEMA, respondent=resp), coefs


def pair_diffs(data: PreferenceData) -> np.ndarray:
    Z = LinearDesign(data.get_schema()).transform(data.X)
    return Z[data.pairs[:, 0]] - Z[data.pairs[:, 1]]


# ----------------------------------------------------------------------------- design
def test_design_encodes_schema_with_reference_levels_and_units():
    design = LinearDesign(SCHEMA)
    assert design.names == [
        "price",
        "comfort",
        "party=B",
        "party=C",
        "local",
        "flags=x",
        "flags=y",
    ]
    assert design.labels[0] == "Price (guilders)"
    assert design.labels[2] == "Party = B (vs A)"
    assert design.labels[4] == "Local = yes (vs no)"
    assert design.labels[5] == "Flags includes x"
    X = np.array([[10.0, 2, 0, 1, 1, 0], [3.5, 0, 2, 0, 0, 1]])
    np.testing.assert_array_equal(
        design.transform(X), [[10, 2, 0, 0, 1, 1, 0], [3.5, 0, 0, 1, 0, 0, 1]]
    )


# ----------------------------------------------------------------------------- golden
@pytest.mark.parametrize("link", ["logit", "probit"])
def test_unpenalised_fit_matches_statsmodels(link):
    sm = pytest.importorskip("statsmodels.api")
    data, _ = synthetic(link=link, seed=1)
    m = LinearUtilitySurrogate(link, alpha=0).fit(data)
    d = pair_diffs(data)
    ref = (sm.Logit if link == "logit" else sm.Probit)(np.ones(len(d)), d)
    res = ref.fit(disp=0, method="newton", tol=1e-12, maxiter=100)
    np.testing.assert_allclose(m.coef_, res.params, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(m.coef_se_, res.bse, rtol=1e-6)
    np.testing.assert_allclose(m.coef_cov_, res.cov_params(), rtol=1e-6, atol=1e-12)
    table = m.coef_table()
    np.testing.assert_allclose(table["z"], res.tvalues, rtol=1e-6)


def test_l2_logit_matches_sklearn():
    linear_model = pytest.importorskip("sklearn.linear_model")
    data, _ = synthetic(n_pairs=300, seed=2)
    d = pair_diffs(data)
    # the same likelihood with both classes: flip every other comparison
    flip = np.arange(len(d)) % 2 == 1
    Xs = np.where(flip[:, None], -d, d)
    y = (~flip).astype(int)
    for C in (0.05, 1.0, 20.0):
        ref = linear_model.LogisticRegression(
            C=C, fit_intercept=False, tol=1e-12, max_iter=10_000
        ).fit(Xs, y)
        m = LogitSurrogate(alpha=1.0 / C, standardize=False).fit(data)
        np.testing.assert_allclose(m.coef_, ref.coef_[0], rtol=1e-5, atol=1e-7)


def test_standardised_penalty_equals_sklearn_on_scaled_columns():
    linear_model = pytest.importorskip("sklearn.linear_model")
    data, _ = synthetic(n_pairs=300, seed=3)
    m = LogitSurrogate(alpha=2.0).fit(data)
    d = pair_diffs(data)
    s = np.sqrt((d * d).mean(axis=0))
    np.testing.assert_allclose(m.scale_, s)
    flip = np.arange(len(d)) % 2 == 1
    Xs = np.where(flip[:, None], -d, d) / s
    ref = linear_model.LogisticRegression(C=0.5, fit_intercept=False, tol=1e-12, max_iter=10_000)
    ref.fit(Xs, (~flip).astype(int))
    np.testing.assert_allclose(m.coef_, ref.coef_[0] / s, rtol=1e-5, atol=1e-7)


def test_train_pooled_mle_matches_published_mnl():
    """mlogit's Train MNL: price -0.0673 per (guilder x 2.20371), time -1.72 per hour."""
    from data_loaders.registry import load_study

    study = load_study("train")
    m = LogitSurrogate(alpha=0).fit(study.data)
    price, time_min, changes, comfort = m.coef_
    assert price / 2.20371 == pytest.approx(-0.0673, abs=5e-4)  # -0.148 per guilder
    assert time_min * 60 == pytest.approx(-1.72, abs=5e-3)
    assert changes == pytest.approx(-0.326, abs=5e-3)
    assert comfort == pytest.approx(-0.946, abs=5e-3)
    assert m.feature_names_[:2] == ["Price (guilders)", "Travel time (min)"]


# ----------------------------------------------------------------------------- interface
@pytest.mark.parametrize("cls", [LogitSurrogate, ProbitSurrogate])
def test_interface_posterior_and_probabilities(cls):
    data, _ = synthetic(n_pairs=200, seed=4)
    m = cls().fit(data)
    assert isinstance(m, Surrogate)
    assert m.alpha_ in m.alphas_ and m.cv_loss_.shape == m.alphas_.shape
    X = data.X[:12]
    mean, cov = m.posterior(X)
    Z = LinearDesign(SCHEMA).transform(X)
    np.testing.assert_allclose(mean, Z @ m.coef_)
    np.testing.assert_allclose(cov, Z @ m.coef_cov_ @ Z.T, atol=1e-12)
    np.testing.assert_array_equal(cov, cov.T)
    assert np.linalg.eigvalsh(cov).min() > -1e-10
    np.testing.assert_allclose(m.predict(X), mean)
    p = m.prob_prefer(data.X[:10], data.X[10:20])
    q = m.prob_prefer(data.X[10:20], data.X[:10])
    np.testing.assert_allclose(p + q, 1.0)
    assert np.all((p > 0) & (p < 1))
    assert np.all((p > 0.5) == (mean[:10] > m.predict(data.X[10:20])))
    r = m.rank(np.vstack([X[:3], X[:1]]))
    assert r[0] == r[3] and set(r) <= {1, 2, 3, 4}
    table = m.explain()
    assert list(table.columns[:5]) == ["feature", "coef", "se", "z", "p_value"]
    assert table["unit"][0] == "per guilders"
    assert isinstance(table, pd.DataFrame)


def test_unfitted_and_wrong_width():
    m = LogitSurrogate()
    with pytest.raises(RuntimeError):
        m.predict(np.zeros((1, 6)))
    data, _ = synthetic(n_pairs=100)
    m.fit(data)
    with pytest.raises(ValueError):
        m.predict(np.zeros((1, 5)))
    with pytest.raises(ValueError):
        LinearUtilitySurrogate("cauchit").fit(data)


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_extreme_and_separable_inputs_give_no_nan(link):
    X = np.array([[0.0], [1.0], [1e6], [-1e6]])
    pairs = np.array([[1, 0], [2, 1], [2, 0], [0, 3], [2, 3]])  # perfectly ordered
    data = PreferenceData(X, pairs)
    for alpha in ("cv", 1e-6, 1.0):
        m = LinearUtilitySurrogate(link, alpha=alpha).fit(data)
        assert np.all(np.isfinite(m.coef_)) and np.all(np.isfinite(m.coef_cov_))
        p = m.prob_prefer(np.array([[1e9], [-1e9]]), np.array([[-1e9], [1e9]]))
        # finite, and bounded away from 0/1 by the coefficient's own uncertainty
        assert np.all(np.isfinite(p)) and p[0] > 0.5 > p[1]
        assert p[0] + p[1] == pytest.approx(1.0)
    # contradictory comparisons only
    data = PreferenceData(np.array([[0.0], [1.0]]), np.array([[0, 1], [1, 0]]))
    m = LinearUtilitySurrogate(link, alpha=0).fit(data)
    assert m.coef_[0] == pytest.approx(0.0, abs=1e-9)


def test_cv_prefers_weak_prior_with_much_data_and_strong_with_noise():
    data, _ = synthetic(n_pairs=2000, seed=5)
    rich = LogitSurrogate().fit(data)
    assert np.all(np.abs(rich.coef_ - TRUE_COEF) < 4 * rich.coef_se_)
    rng = np.random.default_rng(0)
    noise = PreferenceData(data.X, rng.permutation(data.pairs, axis=1)[:60], schema=SCHEMA)
    noise.pairs = np.array([p if rng.random() < 0.5 else p[::-1] for p in noise.pairs])
    poor = LogitSurrogate().fit(noise)
    assert poor.alpha_ >= rich.alpha_


# ----------------------------------------------------------------------------- respondents
def test_per_respondent_fits_equal_separate_fits():
    data, _ = synthetic(n_pairs=400, n_resp=4, seed=6, spread=0.5)
    joint = RespondentLinearSurrogate(alpha=0.5, standardize=False).fit(data)
    for i, r in enumerate(joint.respondents_):
        single = LogitSurrogate(alpha=0.5, standardize=False).fit(data.for_respondent(r))
        np.testing.assert_allclose(joint.respondent_coef_[i], single.coef_, atol=1e-8)
        np.testing.assert_allclose(joint.respondent_cov_[i], single.coef_cov_, atol=1e-8)
        view = joint.for_respondent(r)
        np.testing.assert_allclose(view.predict(data.X), joint.predict(data.X, respondent=r))
        mean, cov = joint.posterior(data.X[:5], respondent=r)
        np.testing.assert_allclose(cov, single.posterior(data.X[:5])[1], atol=1e-8)
        np.testing.assert_allclose(mean, single.posterior(data.X[:5])[0], atol=1e-8)
    with pytest.raises(KeyError):
        joint.predict(data.X, respondent=99)


def test_shrinkage_interpolates_between_pooled_and_independent():
    data, _ = synthetic(n_pairs=600, n_resp=6, seed=7, spread=0.3)
    pooled = LogitSurrogate(alpha=1.0).fit(data)
    strong = RespondentLinearSurrogate(shrink=True, alpha=1e6, pooled_alpha=1.0).fit(data)
    np.testing.assert_allclose(strong.coef_, pooled.coef_, atol=1e-10)
    np.testing.assert_allclose(strong.respondent_coef_, np.tile(pooled.coef_, (6, 1)), atol=1e-3)
    weak = RespondentLinearSurrogate(shrink=True, alpha=1e-8, pooled_alpha=1.0).fit(data)
    indep = RespondentLinearSurrogate(alpha=1e-8).fit(data)
    np.testing.assert_allclose(weak.respondent_coef_, indep.respondent_coef_, rtol=1e-3, atol=1e-4)
    cv = RespondentLinearSurrogate(shrink=True).fit(data)
    assert cv.alpha_ in cv.alphas_ and np.all(cv.respondent_alpha_ == cv.alpha_)
    assert cv.pooled_ is not None
    np.testing.assert_allclose(cv.predict(data.X[:4]), cv.pooled_.predict(data.X[:4]))
    table = cv.respondent_table()
    assert len(table) == 6 and "price" in table.columns


def test_per_respondent_alpha_selection_modes():
    data, _ = synthetic(n_pairs=600, n_resp=6, seed=8, spread=0.3)
    own = RespondentLinearSurrogate(alpha_selection="respondent").fit(data)
    assert own.cv_loss_.shape == (6, len(own.alphas_))
    assert set(own.respondent_alpha_) <= set(own.alphas_)
    shared = RespondentLinearSurrogate().fit(data)
    assert len(set(shared.respondent_alpha_)) == 1


def test_per_respondent_cv_fits_every_train_respondent():
    from data_loaders.registry import load_study

    study = load_study("train")
    m = RespondentLinearSurrogate(shrink=True).fit(study.data)
    RespondentLinearSurrogate().fit(study.data)
    assert len(m.respondents_) == 235
    # the wall time (target < 30 s; about 1.5 s on one core) is measured by
    # tests/benchmarks/fit_timings.py


# ----------------------------------------------------------------------------- case studies
def _conjoint_split(study, n_test: int, seed: int = 0):
    """The held-out tasks of ``python -m pbo_core.experiments conjoint-accuracy``."""
    resp, task = study.data.respondent, study.data.task
    test = np.zeros(len(resp), dtype=bool)
    evaluated = []
    for idx, r in enumerate(study.respondents()):
        rows = np.flatnonzero(resp == r)
        uniq = np.unique(task[rows])
        if len(uniq) <= n_test:
            continue
        chosen = np.random.default_rng([seed, idx]).choice(uniq, size=n_test, replace=False)
        test[rows] = np.isin(task[rows], chosen)
        evaluated.append(r)
    return test, evaluated


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("train", {"pooled": 0.704, "respondent": 0.800, "shrink-ll": 0.794, "shrink": 0.804}),
        (
            "electricity",
            {"pooled": 0.696, "respondent": 0.855, "shrink-ll": 0.858, "shrink": 0.858},
        ),
    ],
)
def test_conjoint_test_accuracy_reproduces_reference(key, expected):
    """Reference table (first split seed); shrink-ll = shrinkage strength by log loss."""
    from data_loaders.registry import load_study
    from pbo_core.metrics import pairwise_accuracy

    study = load_study(key)
    test, evaluated = _conjoint_split(study, 2)
    train = study.data.select_pairs(~test)
    models = {
        "pooled": LogitSurrogate().fit(train),
        "respondent": RespondentLinearSurrogate().fit(train),
        "shrink": RespondentLinearSurrogate(shrink=True).fit(train),
        "shrink-ll": RespondentLinearSurrogate(shrink=True, cv_score="log_loss").fit(train),
    }
    resp = study.data.respondent
    for name, m in models.items():
        acc = [
            pairwise_accuracy(
                m.predict(study.data.X, r) if name != "pooled" else m.predict(study.data.X),
                study.data.pairs[(resp == r) & test],
            )
            for r in evaluated
        ]
        assert np.mean(acc) == pytest.approx(expected[name], abs=0.01), name


def test_degenerate_data_fit_without_errors():
    X = np.random.default_rng(0).normal(size=(5, 2))
    m = LogitSurrogate().fit(PreferenceData(X, np.zeros((0, 2), dtype=int)))
    np.testing.assert_array_equal(m.coef_, 0.0)
    assert np.all(m.coef_se_ > 0)  # the prior
    one_each = PreferenceData(X, np.array([[0, 1], [2, 3]]), respondent=np.array(["a", "b"]))
    for shrink in (False, True):
        r = RespondentLinearSurrogate(shrink=shrink).fit(one_each)
        assert np.all(np.isfinite(r.predict(X, "a")))
        assert r.get_params()["shrink"] is shrink
