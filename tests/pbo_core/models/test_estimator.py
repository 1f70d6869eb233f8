"""Every surrogate follows scikit-learn's estimator contract (``Estimator``)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import sklearn.base

from pbo_core.data import PreferenceData, Schema
from pbo_core.models import DTSurrogate, GPSurrogate
from pbo_core.models.base import Estimator, clone
from pbo_core.models.bradley_terry import (
    BradleyTerrySurrogate,
    CopelandSurrogate,
    ItemOffsetSurrogate,
    ItemUtilitySurrogate,
    ThurstoneSurrogate,
)
from pbo_core.models.gp.size_guard import GPSizeLimits, GPSizeWarning, GPTooLargeError
from pbo_core.models.linear import (
    LinearUtilitySurrogate,
    LogitSurrogate,
    ProbitSurrogate,
    RespondentLinearSurrogate,
)
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
from pbo_core.models.pooled_dt import PooledDTSurrogate

CLASSES = [
    DTSurrogate,
    GPSurrogate,
    LinearUtilitySurrogate,
    RespondentLinearSurrogate,
    ItemUtilitySurrogate,
    ItemOffsetSurrogate,
    CopelandSurrogate,
    LinearLeafDTSurrogate,
    PooledDTSurrogate,
]
ALIASES = [LogitSurrogate, ProbitSurrogate, BradleyTerrySurrogate, ThurstoneSurrogate]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_params_are_the_init_signature(cls: type) -> None:
    names = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
    if cls is CopelandSurrogate:
        names = []  # no parameters
    model = cls()
    assert isinstance(model, Estimator)
    assert sorted(model.get_params()) == sorted(names)
    for name, p in inspect.signature(cls).parameters.items():
        assert model.get_params()[name] is p.default or model.get_params()[name] == p.default


@pytest.mark.parametrize("cls", CLASSES + ALIASES, ids=lambda c: c.__name__)
def test_clone_and_set_params(cls: type) -> None:
    model = cls()
    params = model.get_params()
    for twin in (clone(model), sklearn.base.clone(model)):
        assert type(twin) is cls and twin is not model
        assert twin.get_params().keys() == params.keys()
    if params:
        name = sorted(params)[0]
        assert model.set_params(**{name: params[name]}) is model
    with pytest.raises(ValueError, match="invalid parameter 'no_such'"):
        model.set_params(no_such=1)


def test_dt_params_include_the_prior_and_clone_copies_them() -> None:
    mean = np.array([0.5, -0.5])
    m = DTSurrogate(0.5, prior_mean=mean, prior_precision=np.ones(2))
    p = m.get_params()
    assert p["prior_mean"] is mean and p["ratio"] == 0.5
    twin = clone(m)
    np.testing.assert_array_equal(twin.prior_mean, mean)
    assert twin.prior_mean is not mean  # a deep copy, as sklearn.base.clone makes
    assert "prior_mean" in repr(m) and "ratio=0.5" in repr(m)


@pytest.mark.parametrize("alias", ALIASES, ids=lambda c: c.__name__)
def test_fixed_link_aliases_keep_their_link(alias: type) -> None:
    m = alias(max_iter=7)
    assert "link" not in m.get_params() and m.get_params()["max_iter"] == 7
    assert clone(m).link == m.link == ("probit" if "Probit" in alias.__name__ or
                                       "Thurstone" in alias.__name__ else "logit")  # fmt: skip


def test_gp_size_limits_are_constructor_parameters() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(8, 2))
    pairs = np.column_stack([np.arange(11) % 8, (np.arange(11) + 3) % 8])
    data = PreferenceData(X, pairs, schema=Schema.numeric([(0, 1), (0, 1)]))
    small = GPSizeLimits(warn_comparisons=5, max_comparisons=10, warn_items=6, max_items=12)
    gp = GPSurrogate(lengthscale=0.3, outputscale=1.0, size_limits=small)
    with pytest.raises(GPTooLargeError, match="11 comparisons"):
        gp.fit(data)
    with pytest.warns(GPSizeWarning):
        gp.set_params(allow_large=True).fit(data)
    assert clone(gp).get_params()["size_limits"] == small


def test_an_init_with_kwargs_only_is_rejected() -> None:
    class Loose(Estimator):
        def __init__(self, *args: object) -> None:
            pass

    with pytest.raises(TypeError, match="must name every parameter"):
        Loose().get_params()
