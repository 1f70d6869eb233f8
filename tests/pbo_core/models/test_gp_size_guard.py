"""The GP fit warns on large data and refuses very large data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pbo_core.data import PreferenceData, Schema
from pbo_core.models.gp.size_guard import (
    DEFAULT_LIMITS,
    GPSizeLimits,
    GPSizeWarning,
    GPTooLargeError,
)
from pbo_core.models.gp.surrogate import GPSurrogate


def _data(n_pairs: int, n_items: int, seed: int = 0) -> PreferenceData:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n_items, 2))
    a = np.arange(n_pairs) % n_items
    b = (a + 1 + rng.integers(0, n_items - 1, n_pairs)) % n_items
    return PreferenceData(X, np.column_stack([a, b]), schema=Schema.numeric([(0, 1), (0, 1)]))


SMALL = GPSizeLimits(warn_comparisons=5, max_comparisons=10, warn_items=6, max_items=12)


def test_default_limits_refuse_before_any_work() -> None:
    data = _data(DEFAULT_LIMITS.max_comparisons + 1, 50)
    with pytest.raises(GPTooLargeError, match=r"200001 comparisons \(limit 200000\).*allow_large"):
        GPSurrogate().fit(data)
    with pytest.raises(GPTooLargeError, match=r"1501 items \(limit 1500\)"):
        GPSurrogate().fit(_data(10, DEFAULT_LIMITS.max_items + 1))


def test_small_fits_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", GPSizeWarning)
        GPSurrogate(lengthscale=0.3, outputscale=1.0).fit(_data(5, 6))


def test_warns_above_the_warning_size_and_fits() -> None:
    gp = GPSurrogate(lengthscale=0.3, outputscale=1.0)
    gp.size_limits = SMALL
    with pytest.warns(GPSizeWarning, match="6 comparisons"):
        gp.fit(_data(6, 6))
    assert gp.f_map_.shape == (6,)


def test_refuses_above_the_limit_unless_allowed() -> None:
    gp = GPSurrogate(lengthscale=0.3, outputscale=1.0)
    gp.size_limits = SMALL
    with pytest.raises(GPTooLargeError, match="11 comparisons"):
        gp.fit(_data(11, 8))
    with pytest.warns(GPSizeWarning):
        gp.fit(_data(11, 8), allow_large=True)
    gp.allow_large = True
    with pytest.warns(GPSizeWarning):
        gp.fit(_data(11, 13))


def test_limits_must_be_ordered() -> None:
    with pytest.raises(ValueError):
        GPSizeLimits(warn_comparisons=10, max_comparisons=5)
