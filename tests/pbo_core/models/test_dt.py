import numpy as np
import pytest

from pbo_core.data import PreferenceData, Schema
from pbo_core.models.base import Surrogate, competition_rank
from pbo_core.models.dt import DTSurrogate


def chain_data() -> PreferenceData:
    # utility = x: items 0.1 < 0.3 < 0.6 < 0.9, fully ordered comparisons
    X = np.array([[0.1], [0.3], [0.6], [0.9]])
    pairs = np.array([[1, 0], [2, 1], [3, 2], [3, 0], [2, 0]])
    return PreferenceData(X, pairs, schema=Schema.numeric([[0.0, 1.0]]))


def test_fit_returns_self_and_fitted_attributes() -> None:
    data = chain_data()
    model = DTSurrogate()
    assert model.fit(data) is model
    assert isinstance(model, Surrogate)
    assert model.leaf_mean_.shape == (model.n_leaves_,)
    assert model.leaf_cov_.shape == (model.n_leaves_, model.n_leaves_)
    np.testing.assert_allclose(model.leaf_mean_.sum(), 0.0, atol=1e-9)
    assert np.all(np.diff(model.predict(data.X)) > 0)


def test_posterior_prob_prefer_and_rank() -> None:
    model = DTSurrogate().fit(chain_data())
    X = np.array([[0.05], [0.95], [0.92]])
    mean, cov = model.posterior(X)
    assert mean.shape == (3,) and cov.shape == (3, 3)
    assert mean[1] == mean[2]  # same leaf, same utility
    p = model.prob_prefer(X[[1, 2, 1]], X[[0, 1, 2]])
    assert p[0] > 0.5 and p[1] == 0.5 and p[2] == 0.5
    np.testing.assert_allclose(
        model.prob_prefer(X[[0]], X[[1]]) + model.prob_prefer(X[[1]], X[[0]]), 1.0
    )
    assert model.rank(X).tolist() == [3, 1, 1]


def test_competition_rank() -> None:
    assert competition_rank(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [1, 4, 1, 3]


def test_unfitted_and_wrong_width() -> None:
    with pytest.raises(RuntimeError, match="not fitted"):
        DTSurrogate().predict(np.zeros((1, 1)))
    model = DTSurrogate().fit(chain_data())
    with pytest.raises(ValueError, match="2 columns"):
        model.predict(np.zeros((1, 2)))


def test_refit_on_unrelated_data_is_not_polluted_by_the_cache() -> None:
    model = DTSurrogate()
    model.fit(chain_data())
    flipped = chain_data()
    flipped.pairs = flipped.pairs[:, ::-1].copy()
    fresh = DTSurrogate().fit(flipped)
    model.fit(flipped)
    np.testing.assert_allclose(model.leaf_mean_, fresh.leaf_mean_, atol=1e-5)
    np.testing.assert_array_equal(model.tree_.threshold, fresh.tree_.threshold)
