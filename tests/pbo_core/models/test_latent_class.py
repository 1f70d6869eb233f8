"""The latent-class conditional logit (pbo_core.models.latent_class): the panel likelihood,
its gradient, the number of classes BIC chooses, memberships and predictions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pbo_core.data import DataValidationError
from pbo_core.models.latent_class import LatentClassLogit, _Classes
from pbo_core.models.mixed_logit import panel_design
from pbo_core.models.mnl import ConditionalLogit, choice_sets
from tests.pbo_core.models.choice_panels import INCOME_SCHEMA, panel_study

#: Three planted classes (coefficients of x0, x1, x2) and their shares.
CLASSES = np.array([[-1.5, 1.0, 0.0], [0.5, -1.0, 1.5], [-0.2, 0.2, -1.5]])
SHARES = np.array([0.5, 0.3, 0.2])


def _three_classes(G: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    cls = rng.choice(3, size=G, p=SHARES)
    return panel_study(CLASSES[cls], tasks=8, J=3, seed=seed), cls


@pytest.fixture(scope="module")
def planted():
    data, cls = _three_classes()
    return data, cls, LatentClassLogit(random_state=0).fit(data)


def test_bic_recovers_three_planted_classes(planted) -> None:
    _data, cls, m = planted
    table = m.bic_table_
    assert list(table["n_classes"]) == [1, 2, 3, 4, 5, 6]
    assert m.n_classes_ == 3 and int(table.loc[table["chosen"], "n_classes"].iloc[0]) == 3
    assert table["loglik"].is_monotonic_increasing  # more classes never fit worse
    assert m.converged_ and bool(table["converged"].all())
    # every planted class is found: its coefficients within 3 s.e., its share within 3 s.e.
    est = m.class_coef_
    se = m.se_[: 3 * 3].reshape(3, 3)
    for c in range(3):
        k = int(np.argmin(np.abs(est - CLASSES[c]).sum(axis=1)))
        assert np.all(np.abs(est[k] - CLASSES[c]) < 3 * se[k]), (c, est[k])
        assert abs(m.shares_[k] - SHARES[c]) < 3 * m.share_se_[k] + 0.02
    # the posterior memberships sort the respondents into their classes
    match = [int(np.argmin(np.abs(est - CLASSES[c]).sum(axis=1))) for c in range(3)]
    hit = np.mean(m.posterior_.argmax(axis=1) == np.array(match)[cls])
    assert hit > 0.8


def test_one_class_is_the_conditional_logit(planted) -> None:
    data, _, _ = planted
    one = LatentClassLogit(n_classes=1).fit(data)
    logit = ConditionalLogit(alpha=0.0).fit(data)
    assert one.loglik_ == pytest.approx(logit.loglik_, abs=1e-6)
    assert one.class_coef_[0] == pytest.approx(logit.coef_, abs=1e-4)
    assert one.se_ == pytest.approx(logit.se_, rel=1e-3)
    assert one.shares_ == pytest.approx([1.0])


@pytest.mark.parametrize("membership", [False, True])
def test_gradient_matches_finite_differences(membership: bool) -> None:
    """Eq. 3 against central differences of Eq. 1 (with constants and a case-specific
    variable in the design; constant shares, or shares by a respondent feature)."""
    data = panel_study(
        np.tile([-1.0, 0.5], (15, 1)),
        tasks=4,
        seed=2,
        asc=np.array([0.0, 0.3, -0.2]),
        income_effect=[0, 0.5, 0.0],
    )
    logit = ConditionalLogit(
        alternative="alternative", case_specific=("income",), user_schema=INCOME_SCHEMA, alpha=0
    ).fit(data)
    cs = choice_sets(data)
    design = panel_design(logit.situation_rows(data, cs), cs, data.respondent[cs.pair])
    Xm = np.ones((15, 1))
    if membership:
        Xm = np.column_stack([Xm, data.users.loc[design.respondents, "income"].to_numpy()])
    model = _Classes(design, 3, Xm)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.5, model.n_parameters)

    def ll(v: np.ndarray) -> float:
        return model.estep(*model.unpack(v))[0]

    _, scores = model.scores(*model.unpack(x))
    num = np.array(
        [(ll(x + h) - ll(x - h)) / 2e-6 for h in 1e-6 * np.eye(len(x))]  # central differences
    )
    assert scores.sum(axis=0) == pytest.approx(num, rel=1e-5, abs=1e-6)


def test_membership_by_respondent_features() -> None:
    """Classes whose shares follow a recorded feature: the membership logit finds the
    feature's effect, and a respondent never seen is predicted from their feature."""
    rng = np.random.default_rng(8)
    G = 300
    income = rng.standard_normal(G)
    p2 = 1 / (1 + np.exp(-(-0.3 + 1.5 * income)))
    cls = (rng.random(G) < p2).astype(int)
    B = CLASSES[:2][cls]
    data = panel_study(B, tasks=8, J=3, seed=8, income_effect=[0.0, 0.0, 0.0])
    data.users["income"] = income  # the simulated class driver, in the feature table
    held = [int(np.argmin(income)), int(np.argmax(income))]  # never seen in training
    train = data.select_pairs(~np.isin(data.respondent, held))
    m = LatentClassLogit(
        n_classes=2, membership=("income",), user_schema=INCOME_SCHEMA, random_state=0
    ).fit(train)
    table = m.coef_table().set_index("name")
    slope = table.loc["income [class 2 membership]"]
    assert slope["kind"] == "class 2: membership"
    # which class is "2" depends on the shares; the size of the effect is the planted one
    assert abs(abs(slope["coef"]) - 1.5) < 3 * slope["se"]
    low, high = (m.memberships(r) for r in held)
    gamma = m.membership_coef_[0]
    for r, h in zip(held, (low, high), strict=True):
        a = gamma @ [1.0, income[r]]
        assert h == pytest.approx([1 / (1 + np.exp(a)), 1 / (1 + np.exp(-a))])
    assert abs(low[0] - high[0]) > 0.5  # the feature moves the membership
    assert m.memberships("nobody") == pytest.approx(m.shares_)
    assert m.fit_statistics()["membership"] == ["income"]


def test_predictions_mix_the_classes_by_membership(planted) -> None:
    data, _, m = planted
    X = data.X[:3]
    h = m.memberships(5)
    assert h == pytest.approx(m.posterior_[5]) and h.sum() == pytest.approx(1.0)
    assert m.memberships("nobody") == pytest.approx(m.shares_)
    assert m.predict(X, respondent=5) == pytest.approx(X @ (h @ m.class_coef_))
    for who in (5, None):
        p = m.choice_probabilities(X, respondent=who)
        assert p.sum() == pytest.approx(1.0) and np.all(p > 0)
        pair = m.choice_probabilities(X[:2], respondent=who)[0]
        assert m.prob_prefer(X[:1], X[1:2], respondent=who)[0] == pytest.approx(pair)
        mean, _cov = m.posterior(X, respondent=who)
        assert mean == pytest.approx(m.predict(X, respondent=who))


def test_tables_name_classes_and_shares(planted) -> None:
    data, _, m = planted
    table = m.coef_table()
    logit = ConditionalLogit(alpha=0.0).fit(data)
    assert list(table.columns) == list(logit.coef_table().columns)
    assert len(table) == 3 * 3 + 3
    assert table["name"].iloc[0] == "x0 [class 1]" and table["kind"].iloc[0] == "class 1: attribute"
    shares = table[table["kind"] == "class share"]
    assert shares["coef"].sum() == pytest.approx(1.0) and np.all(shares["se"] > 0)
    assert list(shares["coef"]) == sorted(shares["coef"], reverse=True)
    stats = m.fit_statistics()
    assert set(logit.fit_statistics()) <= set(stats)
    assert stats["n_classes"] == 3 and len(stats["bic_table"]) == 6
    assert stats["n_parameters"] == 3 * 3 + 2 and stats["n_respondents"] == 300


def test_a_study_without_classes_keeps_one() -> None:
    data = panel_study(np.tile([-1.0, 0.8, 0.3], (200, 1)), tasks=6, seed=4)
    m = LatentClassLogit(max_classes=3, random_state=1).fit(data)
    assert m.n_classes_ == 1


def test_classes_need_respondents() -> None:
    data = panel_study(np.ones((3, 2)), tasks=4, seed=0)
    with pytest.raises(DataValidationError, match="respondents"):
        LatentClassLogit(n_classes=4).fit(data)
    # BIC stops where classes would outnumber respondents or parameters reach the choices
    m = LatentClassLogit(max_classes=6).fit(data)
    assert m.bic_table_["n_classes"].max() <= 3


def test_extreme_inputs_give_no_nan() -> None:
    rng = np.random.default_rng(5)
    B = np.column_stack([rng.choice([-40.0, 40.0], 30), np.full(30, 20.0)])
    data = panel_study(B, tasks=5, J=4, seed=5, scale=1e3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LatentClassLogit(max_classes=3, max_iter=50).fit(data)
    assert np.isfinite(m.loglik_) and np.all(np.isfinite(m.coef_))
    for who in (0, None):
        assert np.all(np.isfinite(m.predict(data.X[:8], respondent=who)))
        p = m.choice_probabilities(data.X[:8], respondent=who)
        assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)
