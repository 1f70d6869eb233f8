"""The conditional logit: published estimates (Biogeme, mlogit), golden values, invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.models.linear import LogitSurrogate
from pbo_core.models.mnl import ConditionalLogit, _CaseSpecific, _Problem, choice_sets


def sig4(x: float) -> str:
    """``x`` to 4 significant digits, as published tables round."""
    return f"{x:.4g}"


# ----------------------------------------------------------------------------- published
def test_reproduces_biogeme_swissmetro_01logit():
    """Biogeme's example 01logit: PURPOSE 1 or 3, CHOICE != 0 (6,768 choices of 752
    respondents), Train/Swissmetro cost 0 for GA holders, time/100 and cost/100, the
    Swissmetro constant fixed at 0; estimates and robust errors to 4 significant digits."""
    from data_loaders.swissmetro import BIOGEME_PURPOSES, load_swissmetro
    from pbo_core.evaluation import drop_features

    study = load_swissmetro(purposes=BIOGEME_PURPOSES)
    data = drop_features(study.data, study.schema, ["headway", "airline_seats"])
    m = ConditionalLogit(alternative="mode", reference="Swissmetro", alpha=0).fit(data)
    assert m.converged_ and m.n_situations_ == 6768 and m.n_respondents_ == 752
    assert f"{m.loglik_:.3f}" == "-5331.252"
    names = m.column_names_
    per100 = {"time": 100.0, "cost": 100.0, "ASC Train": 1.0, "ASC Car": 1.0}
    coef = {n: m.coef_[names.index(n)] * per100[n] for n in per100}
    rse = {n: m.robust_se_[names.index(n)] * per100[n] for n in per100}
    assert {n: sig4(v) for n, v in coef.items()} == {
        "time": "-1.278",
        "cost": "-1.084",
        "ASC Train": "-0.7012",
        "ASC Car": "-0.1546",
    }
    assert {n: sig4(v) for n, v in rse.items()} == {
        "time": "0.1043",
        "cost": "0.06823",  # Biogeme prints 0.0682
        "ASC Train": "0.08256",  # 0.0826
        "ASC Car": "0.05816",  # 0.0582
    }
    assert round(rse["cost"], 4) == 0.0682 and round(rse["ASC Train"], 4) == 0.0826
    assert round(rse["ASC Car"], 4) == 0.0582


def test_reproduces_mlogit_train_mnl():
    """mlogit's Train vignette, ``mlogit(choice ~ price + time + change + comfort | -1)``
    with price in euros (guilder cents / 100 * 2.20371) and time in hours: price -0.06736
    (se 0.003393), time -1.721 (0.1604), change -0.3263 (0.05949), comfort -0.9457
    (0.06495), log-likelihood -1724.2."""
    from data_loaders.registry import load_study

    m = ConditionalLogit(alpha=0).fit(load_study("train").data)
    price, time, change, comfort = m.coef_
    to_euro = 1 / 2.20371  # the file's price is in guilders: 1 guilder = 100 cents
    assert [sig4(price * to_euro), sig4(time * 60), sig4(change), sig4(comfort)] == [
        "-0.06736",
        "-1.721",
        "-0.3263",
        "-0.9457",
    ]
    se = m.se_
    assert [sig4(se[0] * to_euro), sig4(se[1] * 60), sig4(se[2]), sig4(se[3])] == [
        "0.003393",
        "0.1604",
        "0.05949",
        "0.06495",
    ]
    assert round(m.loglik_, 1) == -1724.2
    assert m.rho2_ == pytest.approx(1 - m.loglik_ / (2929 * -np.log(2)))


def test_cluster_robust_errors_match_statsmodels_on_binary_choices():
    """Binary choices: the conditional logit is the logit on differences, and its
    respondent-clustered errors are statsmodels' ``cov_type="cluster"``."""
    sm = pytest.importorskip("statsmodels.api")
    from data_loaders.registry import load_study

    data = load_study("train").data
    m = ConditionalLogit(alpha=0).fit(data)
    pair = LogitSurrogate(alpha=0).fit(data)
    np.testing.assert_allclose(m.coef_, pair.coef_, rtol=1e-6)
    X = data.X[data.pairs[:, 0]] - data.X[data.pairs[:, 1]]
    flip = np.arange(len(X)) % 2 == 1
    Xs = np.where(flip[:, None], -X, X)
    res = sm.Logit((~flip).astype(int), Xs).fit(
        disp=0, cov_type="cluster", cov_kwds={"groups": pd.factorize(data.respondent)[0]}
    )
    np.testing.assert_allclose(m.coef_, res.params, rtol=1e-6)
    np.testing.assert_allclose(m.cluster_se_, res.bse, rtol=1e-6)


# ----------------------------------------------------------------------------- golden math
def _labelled(n_resp: int = 40, n_tasks: int = 6, seed: int = 0) -> tuple[PreferenceData, Schema]:
    """Choices among 2-4 labelled alternatives with a respondent feature (income)."""
    rng = np.random.default_rng(seed)
    alts = ("bus", "car", "train", "bike")
    items, pairs, resp, task = [], [], [], []
    income = {r: float(rng.uniform(1, 5)) for r in range(n_resp)}
    for r in range(n_resp):
        for t in range(n_tasks):
            k = int(rng.integers(2, 5))
            chosen_alts = rng.choice(4, size=k, replace=False)
            base = len(items)
            v = []
            for a in chosen_alts:
                cost = float(rng.uniform(1, 10))
                items.append((int(a), cost))
                v.append(-0.4 * cost + [0, 0.5, -0.2, -1][a] + (0.3 * income[r] if a == 1 else 0))
            u = np.array(v) + rng.gumbel(size=k)
            w = int(np.argmax(u))
            for j in range(k):
                if j != w:
                    pairs.append((base + w, base + j))
                    resp.append(r)
                    task.append(t)
    schema = Schema(
        (
            Feature("mode", "categorical", levels=alts),
            Feature("cost", "numeric", bounds=(1.0, 10.0), unit="EUR"),
        )
    )
    users = pd.DataFrame({"income": [income[r] for r in range(n_resp)]}, index=range(n_resp))
    data = PreferenceData(
        X=np.array(items, dtype=float),
        pairs=np.array(pairs),
        schema=schema,
        respondent=np.array(resp),
        task=np.array(task),
        users=users,
    )
    user_schema = Schema((Feature("income", "numeric", bounds=(1.0, 5.0)),))
    return data, user_schema


def test_gradient_and_hessian_match_finite_differences():
    data, us = _labelled()
    m = ConditionalLogit(
        alternative="mode", case_specific=("income",), user_schema=us, alpha=0
    ).fit(data)
    cs = choice_sets(data)
    users = m._U
    U = np.array([users[r] for r in data.respondent[cs.pair]])[cs.situation]
    Z = m._rows(data.X[cs.item], U)
    prob = _Problem(Z, cs.start, cs.chosen, np.ones(cs.n_situations))
    theta = np.random.default_rng(1).normal(size=Z.shape[1]) * 0.3
    _, scores, H = prob.terms(theta)
    g = scores.sum(axis=0)
    eps = 1e-6
    for j in range(len(theta)):
        e = np.zeros_like(theta)
        e[j] = eps
        num = (prob.loglik(theta + e).sum() - prob.loglik(theta - e).sum()) / (2 * eps)
        assert num == pytest.approx(g[j], rel=1e-5, abs=1e-6)
        _, s_plus, _ = prob.terms(theta + e)
        _, s_minus, _ = prob.terms(theta - e)
        col = -(s_plus.sum(axis=0) - s_minus.sum(axis=0)) / (2 * eps)
        np.testing.assert_allclose(col, H[:, j], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(H, H.T)
    assert np.linalg.eigvalsh(H).min() > -1e-9


def test_case_specific_sums_per_respondent_match_the_dense_design():
    """With the case-specific layout (what ``fit`` passes), utilities, log-likelihood,
    score and Hessian are the dense Eq. 3 on ``Z``, held-out situations weighted 0."""
    data, us = _labelled(n_resp=30)
    rng = np.random.default_rng(2)
    data.users["band"] = rng.choice(["low", "mid", "high"], size=len(data.users))
    us = Schema((*us.features, Feature("band", "categorical", levels=("low", "mid", "high"))))
    m = ConditionalLogit(
        alternative="mode", case_specific=("income", "band"), user_schema=us, alpha=0
    ).fit(data)
    cs = choice_sets(data)
    ids, who = np.unique(data.respondent[cs.pair], return_inverse=True)
    U = np.array([m._U[r] for r in ids.tolist()])
    Z = m._rows(data.X[cs.item], U[who][cs.situation])
    A = m._alt_onehot(data.X[cs.item])
    assert U.shape[1] == 3 and A.shape[1] == 3
    layout = _CaseSpecific(
        p1=Z.shape[1] - A.shape[1] * U.shape[1],
        alt=np.where(A.any(axis=1), A.argmax(axis=1), -1),
        who=who,
        U=U,
    )
    weight = (rng.random(cs.n_situations) < 0.8).astype(float)
    fast = _Problem(Z, cs.start, cs.chosen, weight, layout)
    dense = _Problem(Z, cs.start, cs.chosen, weight)
    theta = rng.normal(size=Z.shape[1]) * 0.5
    np.testing.assert_allclose(fast.utilities(theta), Z @ theta, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast.loglik(theta), dense.loglik(theta), rtol=1e-12)
    g, H = fast.gradient_hessian(theta)
    _, scores, H0 = dense.terms(theta)
    np.testing.assert_allclose(g, (weight[:, None] * scores).sum(axis=0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, H0, rtol=1e-10, atol=1e-12)
    assert np.abs(H[layout.p1 :, layout.p1 :]).max() > 0.1  # the blocks are not all zero
    np.testing.assert_array_equal(H, H.T)


def test_labelled_fit_recovers_constants_and_case_specific_slope():
    data, us = _labelled(n_resp=400, n_tasks=8)
    m = ConditionalLogit(
        alternative="mode", case_specific=("income",), user_schema=us, alpha=0
    ).fit(data)
    t = m.coef_table().set_index("name")
    assert t.loc["cost", "coef"] == pytest.approx(-0.4, abs=0.06)
    assert t.loc["ASC bike", "coef"] == pytest.approx(-1.0, abs=0.3)
    assert t.loc["income [car]", "coef"] == pytest.approx(0.3, abs=0.12)
    assert set(t["kind"]) == {"attribute", "constant", "case-specific"}
    assert list(t.index[:2]) == ["cost", "ASC car"]
    # a respondent's utilities use their own income, seen in training or not
    X = np.array([[1.0, 5.0], [0.0, 5.0]])
    rich, poor = int(np.argmax(data.users["income"])), int(np.argmin(data.users["income"]))
    d_rich = np.diff(m.predict(X, respondent=rich))[0]
    d_poor = np.diff(m.predict(X, respondent=poor))[0]
    assert d_rich < d_poor  # car (row 0) gains on bus with income
    stats = m.fit_statistics()
    assert 0 < stats["rho2_bar"] < stats["rho2"] < 1
    assert np.all(m.cluster_se_ > 0) and np.all(m.robust_se_ > 0)


def test_choice_sets_rebuild_choices_rankings_and_pairs():
    X = np.arange(6, dtype=float)[:, None]
    # task 0: 0 chosen over 1, 2; task 1: ranking 3 > 4 > 5; task 2: a cycle
    pairs = np.array([[0, 1], [0, 2], [3, 4], [3, 5], [4, 5], [1, 2], [2, 0], [0, 1]])
    task = np.array([0, 0, 1, 1, 1, 2, 2, 2])
    cs = choice_sets(PreferenceData(X, pairs, task=task, respondent=np.zeros(8, dtype=int)))
    sets = [
        (int(cs.item[cs.chosen[s]]), sorted(cs.item[cs.start[s] : cs.start[s + 1]].tolist()))
        for s in range(cs.n_situations)
    ]
    assert sets[0] == (0, [0, 1, 2])
    assert (3, [3, 4, 5]) in sets and (4, [4, 5]) in sets
    assert sorted(s for s in sets if len(s[1]) == 2 and 3 not in s[1] and 4 not in s[1]) == [
        (0, [0, 1]),
        (1, [1, 2]),
        (2, [0, 2]),
    ]
    # without task ids every comparison is a binary choice
    cs2 = choice_sets(PreferenceData(X, pairs))
    assert cs2.n_situations == len(pairs) and set(cs2.sizes) == {2}


def test_extreme_and_separable_choices_give_finite_estimates():
    X = np.array([[0.0], [1.0], [1e6], [-1e6]])
    pairs = np.array([[1, 0], [2, 1], [2, 0], [0, 3], [2, 3]])
    data = PreferenceData(X, pairs)
    for alpha in ("cv", 1e-3, 1.0):
        m = ConditionalLogit(alpha=alpha).fit(data)
        assert np.all(np.isfinite(m.coef_)) and np.all(np.isfinite(m.coef_cov_))
        p = m.prob_prefer(np.array([[1e9]]), np.array([[-1e9]]))
        assert np.isfinite(p).all() and p[0] > 0.5


def test_cv_picks_a_grid_strength_on_training_tasks_only():
    data, us = _labelled(n_resp=60, n_tasks=6, seed=3)
    m = ConditionalLogit(alternative="mode", case_specific=("income",), user_schema=us, alpha="cv")
    m.fit(data)
    assert m.alpha_ in (100.0, 10.0, 1.0, 0.1, 0.01, 0.0)
    assert m.cv_loglik_.shape == (6,) and np.all(m.cv_loglik_ < 0)
    stats = m.fit_statistics()
    assert stats["penalty"] == m.alpha_
    assert (stats["penalty_reason"] == "") == (m.alpha_ == 0)
    if m.alpha_ > 0:
        assert "cross-validation" in stats["penalty_reason"]
    with pytest.raises(ValueError):
        ConditionalLogit(alpha=-1.0).fit(data)


def test_maximum_likelihood_by_default_and_said():
    """The default is the MLE (no CV, no penalty); its score is zero at the estimate, and
    the statistics say no penalty; AIC and BIC from the log-likelihood."""
    data, us = _labelled(n_resp=60, n_tasks=6, seed=3)
    m = ConditionalLogit(alternative="mode", case_specific=("income",), user_schema=us)
    m.fit(data)
    stats = m.fit_statistics()
    assert m.alpha_ == 0 and m.cv_loglik_ is None
    assert stats["penalty"] == 0 and stats["penalty_reason"] == ""
    K, N = len(m.coef_), m.n_situations_
    assert stats["aic"] == pytest.approx(2 * K - 2 * m.loglik_)
    assert stats["bic"] == pytest.approx(K * np.log(N) - 2 * m.loglik_)
    asked = ConditionalLogit(alternative="mode", alpha=0.5).fit(data).fit_statistics()
    assert asked["penalty"] == 0.5 and asked["penalty_reason"].startswith("asked")


def test_a_penalty_when_the_mle_is_not_identified_and_why():
    """Separated choices make the MLE infinite, a column constant within every choice
    makes the Hessian singular: each is refitted with a ridge chosen by inner CV among the
    positive strengths, and the reason names the coefficient."""
    X = np.array([[0.0], [1.0], [1e6], [-1e6]])
    pairs = np.array([[1, 0], [2, 1], [2, 0], [0, 3], [2, 3]])
    m = ConditionalLogit().fit(PreferenceData(X, pairs))
    stats = m.fit_statistics()
    assert stats["penalty"] > 0 and np.all(np.isfinite(m.coef_))
    assert "not identified" in stats["penalty_reason"] and "x1" in stats["penalty_reason"]
    assert "separated" in stats["penalty_reason"]
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=(40, 1)), np.ones(40)]
    pairs = [rng.choice(40, 2, replace=False) for _ in range(200)]
    m = ConditionalLogit().fit(PreferenceData(X, np.array(pairs)))
    reason = m.fit_statistics()["penalty_reason"]
    assert m.alpha_ > 0 and "singular" in reason and "(x2)" in reason


def test_a_ridge_centre_is_a_prior_mean():
    """``center``/``scale``: the penalty alpha/2 sum (s_j (theta_j - c_j))^2; a strong ridge
    keeps the estimate at the centre, a zero centre is the plain ridge, and the score of
    the fit balances the prior's pull (the MAP's first-order condition)."""
    data, _ = _labelled(n_resp=40, n_tasks=6, seed=5)
    plain = ConditionalLogit(alternative="mode", alpha=1.0).fit(data)
    same = ConditionalLogit(
        alternative="mode", alpha=1.0, center=np.zeros(4), scale=plain.scale_
    ).fit(data)
    assert np.allclose(same.coef_, plain.coef_, atol=1e-8)
    c = np.array([-1.0, 2.0, 0.5, -0.5])
    tight = ConditionalLogit(alternative="mode", alpha=1e7, center=c, scale=plain.scale_)
    assert np.allclose(tight.fit(data).coef_, c, atol=1e-3)
    mid = ConditionalLogit(alternative="mode", alpha=50.0, center=c, scale=plain.scale_).fit(data)
    cs = choice_sets(data)
    Z = mid._rows(data.X[cs.item], None)
    _, scores, _ = _Problem(Z, cs.start, cs.chosen, np.ones(cs.n_situations)).terms(mid.coef_)
    assert np.allclose(scores.sum(0), 50.0 * plain.scale_**2 * (mid.coef_ - c), atol=1e-5)
    with pytest.raises(ValueError, match="center"):
        ConditionalLogit(alternative="mode", alpha="cv", center=c).fit(data)
    with pytest.raises(ValueError, match="center and scale"):
        ConditionalLogit(alternative="mode", alpha=1.0, center=np.zeros(2)).fit(data)


def test_bad_plan_names_are_clear_errors():
    data, us = _labelled(n_resp=5, n_tasks=2)
    with pytest.raises(ValueError, match="not a categorical attribute"):
        ConditionalLogit(alternative="cost").fit(data)
    with pytest.raises(ValueError, match="not respondent features"):
        ConditionalLogit(alternative="mode", case_specific=("age",), user_schema=us).fit(data)
    with pytest.raises(ValueError, match="reference"):
        ConditionalLogit(alternative="mode", reference="plane").fit(data)
