"""LinearLeafDTSurrogate: one leaf = the Bayesian linear probit, slopes off = DT, posterior."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.explain.export import leaf_summaries, to_dot
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.leaves import condition_sum_to_zero
from pbo_core.models.linear import LinearUtilitySurrogate
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate, condition_on_sum

SCHEMA = Schema(
    (
        Feature("price", "numeric", bounds=(0.0, 100.0), label="Price", unit="guilders"),
        Feature("time", "numeric", bounds=(0.0, 200.0), label="Travel time", unit="min"),
        Feature("comfort", "ordinal", levels=("a", "b", "c"), label="Comfort"),
    )
)


def _data(seed: int = 0, n_resp: int = 5, n_pairs: int = 30) -> PreferenceData:
    rng = np.random.default_rng(seed)
    n = 80
    X = np.column_stack(
        [rng.uniform(0, 100, n), rng.uniform(0, 200, n), rng.integers(0, 3, n).astype(float)]
    )
    pairs, resp = [], []
    for r in range(n_resp):
        w = np.array([-0.05, -0.02, -0.3]) * rng.uniform(0.5, 1.5, 3)
        u = X @ w + rng.normal(0, 0.5, n)
        for _ in range(n_pairs):
            a, b = rng.choice(n, size=2, replace=False)
            pairs.append((a, b) if u[a] > u[b] else (b, a))
            resp.append(r)
    return PreferenceData(X=X, pairs=np.array(pairs), schema=SCHEMA, respondent=np.array(resp))


@pytest.mark.parametrize("slopes", ["leaf", "shared"])
def test_one_leaf_is_the_bayesian_linear_probit(slopes):
    """Depth 0: theta = sqrt(2) beta of ProbitSurrogate with alpha = 2 slope_ratio.

    (With ``slopes="both"`` one leaf has two slope blocks, shared plus deviation, whose
    priors add up to a different strength.)
    """
    data = _data(n_resp=1, n_pairs=60)
    rho = 0.7
    m = LinearLeafDTSurrogate(
        linear_features="all", slope_ratio=rho, max_depth=0, slopes=slopes
    ).fit(data)
    assert m.n_leaves_ == 1
    lin = LinearUtilitySurrogate("probit", alpha=2 * rho, tol=1e-12).fit(data)
    slopes = m.leaf_slopes(0).to_numpy()[0]
    np.testing.assert_allclose(slopes, np.sqrt(2.0) * lin.coef_, rtol=1e-6, atol=1e-9)
    u = m.predict(data.X, 0)
    np.testing.assert_allclose(
        u - u.mean(), np.sqrt(2) * (lin.predict(data.X) - lin.predict(data.X).mean()), atol=1e-7
    )
    # same predictive probabilities: Phi(d / sqrt(2 + v)) with the scaled posterior
    pa = m.prob_prefer(data.X[:10], data.X[10:20], 0)
    pb = lin.prob_prefer(data.X[:10], data.X[10:20])
    np.testing.assert_allclose(pa, pb, atol=1e-6)


def test_slopes_off_is_dt():
    data = _data(n_resp=1)
    dt = DTSurrogate().fit(data)
    m = LinearLeafDTSurrogate(linear_features=(), max_depth=None).fit(data)
    np.testing.assert_array_equal(m.leaf_mean_, dt.leaf_mean_)
    np.testing.assert_array_equal(m.leaf_cov_, dt.leaf_cov_)
    np.testing.assert_array_equal(m.predict(data.X, 0), dt.predict(data.X))


def test_condition_on_sum_matches_leaves():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(5, 5))
    S = A @ A.T + np.eye(5)
    mu = rng.normal(size=5)
    a, b = condition_on_sum(mu, S, 5)
    c, d = condition_sum_to_zero(mu, S)
    np.testing.assert_allclose(a, c)
    np.testing.assert_allclose(b, d)


@pytest.mark.parametrize("slopes", ["leaf", "shared", "both"])
@pytest.mark.parametrize("pooling", ["none", "shrink"])
def test_posterior_psd_no_ties_shapes(slopes, pooling):
    data = _data()
    m = LinearLeafDTSurrogate(slopes=slopes, pooling=pooling, max_depth=2, shrinkage=3.0).fit(data)
    assert 2 <= m.n_leaves_ <= 4
    for r in (None, 0, 3):
        mean, cov = m.posterior(data.X[:20], respondent=r)
        assert mean.shape == (20,) and cov.shape == (20, 20)
        assert np.isfinite(mean).all() and np.isfinite(cov).all()
        np.testing.assert_array_equal(cov, cov.T)
        assert np.linalg.eigvalsh(cov).min() > -1e-9
    leaf = m.apply(data.X)
    same = np.flatnonzero(leaf == leaf[0])[:2]
    p = m.prob_prefer(data.X[same[:1]], data.X[same[1:2]], 0)
    assert p[0] != 0.5  # points in one leaf no longer tie
    assert m.rank(data.X, 1).shape == (data.n_items,)
    assert m.leaf_slopes_.shape == (m.n_leaves_, 2)  # price, time (numeric features)
    assert "digraph" in to_dot(m) and len(leaf_summaries(m)) == m.n_leaves_


def test_slope_text_has_units():
    data = _data()
    m = LinearLeafDTSurrogate(pooling="shrink", max_depth=1, shrinkage=1.0).fit(data)
    txt = m.slope_text(0)
    assert txt[0].startswith("Price: -") and txt[0].endswith("per guilders")
    assert txt[1].startswith("Travel time: ") and txt[1].endswith("per min")
    one = m.for_respondent(2)
    np.testing.assert_allclose(one.leaf_slopes_.to_numpy(), m.leaf_slopes(2).to_numpy())


def test_extreme_data_finite():
    """Separable, huge-valued comparisons: finite MAP and PSD posterior (log_ndtr)."""
    X = np.array([[0.0, 0.0, 0], [1e6, 1e6, 2], [5e5, 1.0, 1], [2.0, 3e5, 0]])
    pairs = np.array([[0, 1], [0, 2], [0, 3], [3, 1], [2, 1], [0, 1], [3, 2]])
    data = PreferenceData(X=X, pairs=pairs, schema=SCHEMA)
    m = LinearLeafDTSurrogate(linear_features="all", slope_ratio=1e-6).fit(data)
    mean, cov = m.posterior(X)
    assert np.isfinite(mean).all() and np.isfinite(cov).all()
    assert np.linalg.eigvalsh(cov).min() > -1e-6 * max(1.0, np.abs(cov).max())
    assert np.isfinite(m.prob_prefer(X, X[::-1])).all()


def test_cv_uses_only_fit_data_and_stays_within_leaf_goal():
    data = _data(n_resp=6)
    tasks = np.arange(data.n_pairs) // 2
    test = np.isin(tasks, np.arange(0, tasks.max() + 1, 4))
    kw = dict(pooling="shrink", slope_ratio="cv", max_leaves=4)
    data = dataclasses.replace(data, task=tasks)
    a = LinearLeafDTSurrogate(**kw).fit(data.select_pairs(~test))
    flipped = data.pairs.copy()
    flipped[test] = flipped[test][:, ::-1]
    other = PreferenceData(
        X=data.X, pairs=flipped, schema=SCHEMA, respondent=data.respondent, task=tasks
    )
    b = LinearLeafDTSurrogate(**kw).fit(other.select_pairs(~test))
    assert a.cv_error_.equals(b.cv_error_)
    np.testing.assert_array_equal(a.respondent_theta_, b.respondent_theta_)
    assert a.n_leaves_ <= 4
    assert set(a.cv_error_["max_depth"]) <= {1, 2, 3, 4, 5, 6}  # never the 1-leaf tree


def test_bad_arguments():
    data = _data(n_resp=1)
    with pytest.raises(ValueError, match="pooling"):
        LinearLeafDTSurrogate(pooling="bogus").fit(data)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="linear_features"):
        LinearLeafDTSurrogate(linear_features=("nope",)).fit(data)
    with pytest.raises(RuntimeError):
        LinearLeafDTSurrogate().predict(data.X)


def _few_items(seed: int = 0, n_items: int = 12, n_resp: int = 4, n_pairs: int = 60):
    """Many comparisons among few items: the solver works in item space."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.uniform(0, 100, n_items),
            rng.uniform(0, 200, n_items),
            rng.integers(0, 3, n_items).astype(float),
        ]
    )
    pairs, resp = [], []
    for r in range(n_resp):
        u = X @ np.array([-0.05, -0.02, -0.3]) + rng.normal(0, 1.0, n_items)
        for _ in range(n_pairs):
            a, b = rng.choice(n_items, size=2, replace=False)
            pairs.append((a, b) if u[a] > u[b] else (b, a))
            resp.append(r)
    return PreferenceData(X=X, pairs=np.array(pairs), schema=SCHEMA, respondent=np.array(resp))


@pytest.mark.parametrize("compiled", [True, False])
def test_item_space_newton_finds_the_same_map_as_the_design_rows(monkeypatch, compiled):
    """Rows among N < min(n, p) items are solved in item space (an N x N solve per Newton
    step; compiled, or the NumPy batch): the same CV choice, held-out errors and
    posterior as the padded design rows."""
    from pbo_core.models import linear_leaves as ll

    monkeypatch.setattr(ll, "COMPILED", compiled)
    data = _few_items()
    kw = dict(linear_features="all", pooling="shrink", slope_ratio="cv", max_depth=3)
    rows = ll._Rows(np.eye(40), data.pairs, [np.arange(len(data.pairs))])
    assert rows.items and rows.N == 12 and rows.D is None
    fast = LinearLeafDTSurrogate(**kw).fit(data)
    original = ll._Rows.__init__

    def design_rows(self, phi, pairs, rows, items=True):
        original(self, phi, pairs, rows, items=False)

    monkeypatch.setattr(ll._Rows, "__init__", design_rows)
    slow = LinearLeafDTSurrogate(**kw).fit(data)
    assert (fast.shrinkage_, fast.slope_ratio_) == (slow.shrinkage_, slow.slope_ratio_)
    np.testing.assert_array_equal(fast.cv_error_["error"], slow.cv_error_["error"])
    np.testing.assert_allclose(fast.theta_, slow.theta_, atol=1e-7)
    np.testing.assert_allclose(fast.theta_cov_, slow.theta_cov_, atol=1e-7)
    np.testing.assert_allclose(fast.respondent_theta_, slow.respondent_theta_, atol=1e-7)


def test_respondent_posteriors_are_computed_when_asked_and_equal_the_batch():
    """A respondent's posterior is fitted when first asked for, alone; bit for bit the
    same as every respondent's at once (the batched solver treats problems separately)."""
    data = _data(n_resp=6, n_pairs=25)
    kw = dict(linear_features="all", pooling="shrink", shrinkage=3.0, slope_ratio=0.1)
    one = LinearLeafDTSurrogate(**kw).fit(data)
    assert one._post_all is None  # nothing computed by the fit itself
    theta, cov = one._params(4)
    assert one._post_all is None and set(one._post_one) == {4}
    every = LinearLeafDTSurrogate(**kw).fit(data)
    np.testing.assert_array_equal(theta, every.respondent_theta_[4])
    np.testing.assert_array_equal(cov, every.respondent_cov_[4])
    np.testing.assert_array_equal(
        one.predict(data.X, respondent=4), every.predict(data.X, respondent=4)
    )


def test_prepared_respondents_are_solved_in_one_batch_bit_for_bit(monkeypatch):
    """``prepare_respondents`` (what the evaluation calls before scoring every unit)
    solves the named respondents in one batch, skips unknown ones, and predicts bit for bit
    what one respondent at a time does."""
    data = _data(n_resp=6, n_pairs=25)
    kw = dict(linear_features="all", pooling="shrink", shrinkage=3.0, slope_ratio=0.1)
    alone = LinearLeafDTSurrogate(**kw).fit(data)
    batch = LinearLeafDTSurrogate(**kw).fit(data)
    calls = []
    solve = LinearLeafDTSurrogate._posteriors

    def counted(self, idx):
        calls.append(list(idx))
        return solve(self, idx)

    monkeypatch.setattr(LinearLeafDTSurrogate, "_posteriors", counted)
    batch.prepare_respondents([5, 1, 3, "nobody", 1])
    assert calls == [[1, 3, 5]] and set(batch._post_one) == {1, 3, 5}
    for r in (1, 3, 5):
        np.testing.assert_array_equal(
            batch.predict(data.X, respondent=r), alone.predict(data.X, respondent=r)
        )
    assert len(calls) == 1 + 3  # the batch, then the three alone; none more for the batch
    batch.prepare_respondents([1, 3])
    assert len(calls) == 4  # nothing left to solve


def test_rows_with_fewer_comparisons_than_items_are_solved_as_their_own_items(monkeypatch):
    """Each respondent compares few pairs of many items (n + 1 < N, fewer than the
    parameters): the compiled loop solves in the rows' space (each row against a zero
    item), the same fit as the design rows."""
    from pbo_core.models import linear_leaves as ll

    data = _data(seed=3, n_resp=6, n_pairs=8)  # 8 comparisons among ~16 items each
    phi = np.random.default_rng(0).normal(size=(data.n_items, 30))
    per = [np.flatnonzero(data.respondent == r) for r in range(6)]
    rows = ll._Rows(phi, data.pairs, per)
    assert rows.items and rows.N == 9 and (rows.li[:, :8] == 8).all()
    z = rows.margins(np.arange(6), np.ones((6, 30)))
    d = (phi[data.pairs[:, 0]] - phi[data.pairs[:, 1]]).sum(axis=1) / np.sqrt(2.0)
    np.testing.assert_allclose(z[0], d[per[0]], rtol=1e-12)
    kw = dict(linear_features="all", pooling="shrink", shrinkage="cv", slope_ratio=0.3)
    fast = LinearLeafDTSurrogate(**kw).fit(data)
    monkeypatch.setattr(ll, "COMPILED", False)  # the earlier rule: the design rows here
    assert ll._Rows(phi, data.pairs, per).D is not None
    slow = LinearLeafDTSurrogate(**kw).fit(data)
    assert fast.shrinkage_ == slow.shrinkage_
    np.testing.assert_array_equal(fast.cv_error_["error"], slow.cv_error_["error"])
    np.testing.assert_allclose(fast.respondent_theta_, slow.respondent_theta_, atol=1e-7)


def test_compiled_problems_split_over_threads_give_the_same_fit(monkeypatch):
    """The compiled item-space loop splits its independent problems over threads
    (:func:`pbo_core.models.glm.run_split`): bit for bit the fit of one thread."""
    data = _data(n_resp=40, n_pairs=20)
    kw = dict(linear_features="all", pooling="shrink", slope_ratio="cv", max_depth=2)
    monkeypatch.setenv("DTPBO_THREADS", "1")
    one = LinearLeafDTSurrogate(**kw).fit(data)
    monkeypatch.setenv("DTPBO_THREADS", "3")
    three = LinearLeafDTSurrogate(**kw).fit(data)
    np.testing.assert_array_equal(one.cv_error_["error"], three.cv_error_["error"])
    np.testing.assert_array_equal(one.respondent_theta_, three.respondent_theta_)


def test_cv_on_a_sample_of_respondents_scores_their_share_of_the_full_cv(monkeypatch):
    """``cv_respondents``: the grid is scored by a sample's held-out errors, the folds'
    trees and pooled fits still use every training comparison, so the samples of a
    partition of the respondents add up to the full CV; the final fit is everyone's."""
    data = _data(n_resp=6, n_pairs=24)
    kw = dict(linear_features="all", pooling="shrink", slope_ratio="cv", max_depth=2)
    full = LinearLeafDTSurrogate(**kw).fit(data)
    same = LinearLeafDTSurrogate(cv_respondents=6, **kw).fit(data)
    assert full.cv_respondents_ == same.cv_respondents_ == 6
    np.testing.assert_array_equal(full.cv_error_["error"], same.cv_error_["error"])
    np.testing.assert_array_equal(full.respondent_theta_, same.respondent_theta_)

    sampled = LinearLeafDTSurrogate(cv_respondents=2, **kw).fit(data)
    again = LinearLeafDTSurrogate(cv_respondents=2, **kw).fit(data)
    assert sampled.cv_respondents_ == 2
    np.testing.assert_array_equal(sampled.cv_error_["error"], again.cv_error_["error"])
    assert len(sampled.respondents_) == 6  # the final fit: every respondent

    rows = [np.flatnonzero(data.respondent == r) for r in range(6)]
    total = np.zeros(len(full.cv_error_))
    for part in (np.array([0, 3]), np.array([1, 4]), np.array([2, 5])):
        monkeypatch.setattr(LinearLeafDTSurrogate, "_cv_sample", lambda self, n, rng, p=part: p)
        m = LinearLeafDTSurrogate(cv_respondents=2, **kw).fit(data)
        total += m.cv_error_["error"].to_numpy() * sum(len(rows[i]) for i in part)
    np.testing.assert_allclose(total / data.n_pairs, full.cv_error_["error"], rtol=1e-12)

    monkeypatch.undo()
    for bad in (0, 100.5, "all"):  # whatever the number of respondents
        with pytest.raises(ValueError, match="cv_respondents"):
            LinearLeafDTSurrogate(cv_respondents=bad, **kw).fit(data)
