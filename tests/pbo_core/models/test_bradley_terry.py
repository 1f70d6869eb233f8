"""Item-utility baselines (Bradley-Terry / Thurstone, per-user offsets, Copeland)."""

from __future__ import annotations

import numpy as np
import pytest

from pbo_core.data import PreferenceData
from pbo_core.metrics import pairwise_accuracy
from pbo_core.models.base import Surrogate
from pbo_core.models.bradley_terry import (
    BradleyTerrySurrogate,
    CopelandSurrogate,
    ItemOffsetSurrogate,
    ItemUtilitySurrogate,
    ThurstoneSurrogate,
    item_map,
)
from pbo_core.models.linear import LinearUtilitySurrogate


def sushi_like(
    n_users: int = 200, n_items: int = 10, *, seed: int = 0, spread: float = 1.0
) -> tuple[PreferenceData, np.ndarray]:
    """Every user ranks all items by global + own utility + noise -> 45 comparisons."""
    rng = np.random.default_rng(seed)
    glob = np.linspace(1.5, -1.5, n_items)
    util = glob + spread * rng.normal(size=(n_users, n_items))
    pairs, resp = [], []
    for u in range(n_users):
        order = np.argsort(-(util[u] + rng.gumbel(size=n_items)))
        for a in range(n_items):
            for b in range(a + 1, n_items):
                pairs.append((order[a], order[b]))
                resp.append(u)
    X = rng.normal(size=(n_items, 3))
    return PreferenceData(X, np.array(pairs), respondent=np.array(resp)), util


def split_pairs(data: PreferenceData, seed: int = 0) -> np.ndarray:
    """Per user a random 20 % of the comparisons as test (the sushi-generalization split)."""
    rng = np.random.default_rng(seed)
    test = np.zeros(data.n_pairs, dtype=bool)
    for r in data.respondents():
        rows = np.flatnonzero(data.respondent == r)
        test[rng.choice(rows, size=round(0.2 * len(rows)), replace=False)] = True
    return test


def test_bt_with_item_indicators_equals_linear_logit():
    data, _ = sushi_like(n_users=30, seed=1)
    onehot = PreferenceData(np.eye(10), data.pairs)
    for link in ("logit", "probit"):
        bt = ItemUtilitySurrogate(link, alpha=0.7).fit(data)
        lin = LinearUtilitySurrogate(link, alpha=0.7, standardize=False).fit(onehot)
        np.testing.assert_allclose(bt.utility_, lin.coef_, atol=1e-8)
        np.testing.assert_allclose(bt.utility_cov_, lin.coef_cov_, atol=1e-8)


def test_item_map_matches_statsmodels_mle_up_to_a_reference_item():
    sm = pytest.importorskip("statsmodels.api")
    data, _ = sushi_like(n_users=40, seed=2)
    w, lo = data.pairs[:, 0], data.pairs[:, 1]
    u, _ = item_map(w, lo, np.ones(len(w)), 10, 1e-10, "logit", tol=1e-12)
    D = np.zeros((len(w), 10))
    D[np.arange(len(w)), w] = 1
    D[np.arange(len(w)), lo] = -1
    ref = sm.Logit(np.ones(len(w)), D[:, 1:]).fit(disp=0, method="newton", tol=1e-12)
    np.testing.assert_allclose(u[1:] - u[0], ref.params, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [BradleyTerrySurrogate, ThurstoneSurrogate])
def test_global_model_interface(cls):
    data, util = sushi_like(seed=3)
    m = cls().fit(data)
    assert isinstance(m, Surrogate)
    assert m.alpha_ in m.alphas_
    mean, cov = m.posterior(data.X)
    np.testing.assert_allclose(mean, m.utility_)
    np.testing.assert_array_equal(cov, cov.T)
    assert np.linalg.eigvalsh(cov).min() > -1e-10
    np.testing.assert_allclose(m.predict(np.arange(10)), mean)
    np.testing.assert_allclose(m.predict(data.X[[3, 1]]), mean[[3, 1]])  # rows of X
    assert np.corrcoef(mean, util.mean(axis=0))[0, 1] > 0.95
    p = m.prob_prefer(data.X[:5], data.X[5:])
    np.testing.assert_allclose(p + m.prob_prefer(data.X[5:], data.X[:5]), 1.0)
    assert np.all((p > 0.5) == (mean[:5] > mean[5:]))
    assert m.prob_prefer(data.X[:1], data.X[:1])[0] == 0.5
    assert list(m.rank(data.X)) == list(np.argsort(np.argsort(-mean)) + 1)
    # an item the model never saw gets the prior
    mu, var = m.posterior(np.full((1, 3), 99.0))
    assert mu[0] == 0.0 and var[0, 0] == pytest.approx(1.0 / m.alpha_)
    assert list(m.explain().columns) == ["item", "utility", "se", "rank"]


def test_offsets_beat_popularity_and_copeland_is_a_floor():
    data, _ = sushi_like(n_users=300, seed=4, spread=1.5)
    test = split_pairs(data)
    train = data.select_pairs(~test)
    glob = BradleyTerrySurrogate().fit(train)
    off = ItemOffsetSurrogate().fit(train)
    cop = CopelandSurrogate().fit(train)
    assert off.tau_ in off.global_.alphas_
    np.testing.assert_allclose(off.global_.utility_, glob.utility_)

    def acc(predict):
        out = []
        for r in data.respondents():
            pr = data.pairs[(data.respondent == r) & test]
            out.append(pairwise_accuracy(predict(r), pr))
        return float(np.mean(out))

    a_glob = acc(lambda r: glob.predict(data.X))
    a_off = acc(lambda r: off.predict(data.X, respondent=r))
    a_cop = acc(lambda r: cop.predict(data.X, respondent=r))
    assert a_off > a_glob + 0.05
    assert a_cop > 0.5 and a_off >= a_cop - 0.01
    # per-user utilities are global + offset, with a PSD covariance
    r0 = data.respondents()[0]
    mean, cov = off.posterior(data.X, respondent=r0)
    np.testing.assert_allclose(mean, off.utilities(r0))
    assert np.linalg.eigvalsh(cov).min() > -1e-10
    np.testing.assert_allclose(off.predict(data.X), glob.predict(data.X))


def test_offsets_limits_of_tau():
    data, _ = sushi_like(n_users=20, seed=5)
    strong = ItemOffsetSurrogate(alpha=1.0, tau=1e8).fit(data)
    assert np.abs(strong.offset_).max() < 1e-5
    weak = ItemOffsetSurrogate(alpha=1.0, tau=1e-2).fit(data)
    one = data.for_respondent(0)
    solo = ItemUtilitySurrogate(alpha=1e-2).fit(one)
    # with a weak prior the user's utilities follow their own comparisons
    assert np.corrcoef(weak.utilities(0)[one.ids()], solo.utility_)[0, 1] > 0.99


def test_copeland_counts_unseen_items_zero():
    X = np.zeros((4, 0))
    pairs = np.array([[0, 1], [0, 2], [1, 2], [2, 0]])
    data = PreferenceData(X, pairs, respondent=np.array([7, 7, 7, 8]))
    m = CopelandSurrogate().fit(data)
    np.testing.assert_array_equal(m.predict(np.arange(4), respondent=7), [2, 0, -2, 0])
    np.testing.assert_array_equal(m.predict(np.arange(4), respondent=8), [-1, 0, 1, 0])
    np.testing.assert_array_equal(m.predict(X), [1, 0, -1, 0])  # summed over users
    np.testing.assert_array_equal(m.prob_prefer(np.array([0, 3]), np.array([1, 3]), 7), [1, 0.5])
    assert m.rank(np.arange(4), respondent=7).tolist() == [1, 2, 4, 2]
    with pytest.raises(KeyError):
        m.predict(np.arange(4), respondent=9)


def test_item_lookup_errors():
    m = BradleyTerrySurrogate()
    with pytest.raises(RuntimeError):
        m.predict(np.arange(3))
    data, _ = sushi_like(n_users=5)
    m.fit(data)
    with pytest.raises(ValueError):
        m.predict(np.array([10]))
    with pytest.raises(ValueError):
        m.predict(np.zeros((2, 5)))


@pytest.mark.slow
def test_offsets_fit_thousands_of_users():
    data, _ = sushi_like(n_users=2000, seed=6)
    m = ItemOffsetSurrogate().fit(data)
    assert len(m.respondents_) == 2000
    # the wall time (target < 60 s) is measured by tests/benchmarks/fit_timings.py
