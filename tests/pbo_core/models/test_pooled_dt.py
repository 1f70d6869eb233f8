"""PooledDTSurrogate: reduction to DTSurrogate, pooling, CV on training data only."""

from __future__ import annotations

import numpy as np
import pytest

from pbo_core.data import PreferenceData
from pbo_core.explain.export import leaf_summaries, to_dot
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.pooled_dt import PooledDTSurrogate


def _pooled_data(seed: int = 0, n_resp: int = 6, n_pairs: int = 24) -> PreferenceData:
    """Respondents share a utility shape (x0 good, x1 bad) plus personal noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(60, 3))
    pairs, resp = [], []
    for r in range(n_resp):
        w = np.array([2.0, -1.5, 0.0]) + rng.normal(0, 0.5, 3)
        u = X @ w
        for _ in range(n_pairs):
            a, b = rng.choice(60, size=2, replace=False)
            win = a if u[a] + rng.normal(0, 0.3) > u[b] else b
            pairs.append((win, b if win == a else a))
            resp.append(r)
    return PreferenceData(X=X, pairs=np.array(pairs), respondent=np.array(resp))


def test_no_pooling_one_respondent_is_dt_exactly():
    data = _pooled_data(n_resp=1, n_pairs=40)
    dt = DTSurrogate().fit(data)
    pd_ = PooledDTSurrogate(shrinkage=0.0, max_depth=None).fit(data)
    assert pd_.n_leaves_ == dt.n_leaves_
    np.testing.assert_array_equal(pd_.tree_.threshold, dt.tree_.threshold)
    np.testing.assert_array_equal(pd_.respondent_theta_[0], dt.leaf_mean_)
    np.testing.assert_array_equal(pd_.respondent_cov_[0], dt.leaf_cov_)
    r = data.respondents()[0]
    np.testing.assert_array_equal(pd_.predict(data.X, r), dt.predict(data.X))
    np.testing.assert_allclose(
        pd_.prob_prefer(data.X[:10], data.X[10:20], r), dt.prob_prefer(data.X[:10], data.X[10:20])
    )
    # the "none" pooling mode is the same thing
    none = PooledDTSurrogate(pooling="none", max_depth=None).fit(data)
    np.testing.assert_array_equal(none.respondent_theta_[0], dt.leaf_mean_)


def test_no_pooling_many_respondents_is_dt_on_the_pooled_tree():
    data = _pooled_data()
    m = PooledDTSurrogate(shrinkage=0.0, max_depth=3).fit(data)
    leaf = m.tree_.apply(data.X)
    for i, r in enumerate(m.respondents_):
        rows = data.respondent == r
        p = data.pairs[rows]
        from pbo_core.models.leaves import laplace_fit

        res = laplace_fit(leaf[p[:, 0]], leaf[p[:, 1]], m.n_leaves_, 0.25)
        np.testing.assert_allclose(m.respondent_theta_[i], res.mean_c)


def test_strong_pooling_gives_everyone_the_pooled_leaves():
    data = _pooled_data()
    m = PooledDTSurrogate(shrinkage=1e8, max_depth=3).fit(data)
    for i in range(len(m.respondents_)):
        np.testing.assert_allclose(m.respondent_theta_[i], m.leaf_mean_, atol=1e-5)
    weak = PooledDTSurrogate(shrinkage=0.0, max_depth=3).fit(data)
    spread_weak = np.std(weak.respondent_theta_, axis=0).mean()
    mid = PooledDTSurrogate(shrinkage=3.0, max_depth=3).fit(data)
    assert np.std(mid.respondent_theta_, axis=0).mean() < spread_weak


def test_cv_chooses_within_grid_and_leaf_goal():
    data = _pooled_data(n_resp=8)
    m = PooledDTSurrogate(max_leaves=6).fit(data)
    assert m.shrinkage_ in (0.0, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
    assert m.n_leaves_ <= 6 and m.n_leaves_ >= 2
    assert m.cv_error_ is not None and np.isfinite(m.cv_error_["error"]).all()


def test_cv_never_touches_pairs_outside_fit_data():
    """Changing the answers of pairs not given to fit() changes nothing; given pairs do."""
    data = _pooled_data(n_resp=6)
    test = np.zeros(data.n_pairs, dtype=bool)
    test[::5] = True
    train = data.select_pairs(~test)
    a = PooledDTSurrogate().fit(train)
    flipped = data.pairs.copy()
    flipped[test] = flipped[test][:, ::-1]
    data2 = PreferenceData(X=data.X, pairs=flipped, respondent=data.respondent)
    b = PooledDTSurrogate().fit(data2.select_pairs(~test))
    assert a.cv_error_.equals(b.cv_error_)
    np.testing.assert_array_equal(a.respondent_theta_, b.respondent_theta_)


def test_shapes_psd_export_and_unknown_respondent():
    data = _pooled_data()
    m = PooledDTSurrogate(max_depth=3).fit(data)
    mean, cov = m.posterior(data.X[:15], respondent=2)
    assert mean.shape == (15,) and cov.shape == (15, 15)
    np.testing.assert_array_equal(cov, cov.T)
    assert np.linalg.eigvalsh(cov).min() > -1e-10
    assert m.rank(data.X[:15], respondent=2).shape == (15,)
    assert m.prob_prefer(data.X[:5], data.X[5:10]).shape == (5,)
    assert "digraph" in to_dot(m)
    assert len(leaf_summaries(m)) == m.n_leaves_
    with pytest.raises(KeyError):
        m.predict(data.X, respondent=99)
    # items in one leaf tie (constant leaves)
    leaf = m.apply(data.X)
    same = np.flatnonzero(leaf == leaf[0])
    if len(same) > 1:
        assert m.prob_prefer(data.X[same[:1]], data.X[same[1:2]], 2)[0] == 0.5
