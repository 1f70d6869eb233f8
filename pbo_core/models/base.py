"""The interface every surrogate shares, and helpers built on it.

The loop, metrics, experiments and dashboard speak only this interface::

    model = SomeSurrogate(...).fit(data)      # returns self
    mean, cov = model.posterior(X)            # joint posterior of the utilities of X
    p = model.prob_prefer(Xa, Xb)             # P(a preferred to b), elementwise
    ranks = model.rank(X)                     # competition ranks, 1 = best, ties share

Utilities are in units of the comparison noise ``sigma_noise`` (see
:mod:`pbo_core.models.leaves`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from scipy.special import ndtr

from pbo_core.data import PreferenceData
from pbo_core.metrics import competition_rank

__all__ = ["Surrogate", "check_input", "competition_rank", "probit_preference"]


@runtime_checkable
class Surrogate(Protocol):
    """Structural type of a fitted preference surrogate."""

    def fit(self, data: PreferenceData) -> Surrogate:
        """Fit to comparisons; returns self."""
        ...

    def posterior(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean ``(n,)`` and covariance ``(n, n)`` of the utilities of ``X``."""
        ...

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utility ``(n,)``."""
        ...

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray) -> np.ndarray:
        """``P(a > b)`` for paired rows of ``Xa`` and ``Xb``."""
        ...

    def rank(self, X: np.ndarray) -> np.ndarray:
        """Competition ranks (1 = best) of the rows of ``X``."""
        ...


def check_input(X: np.ndarray, n_features: int | None, name: str) -> np.ndarray:
    """``X`` as a 2-D float array with ``n_features`` columns (``None``: not fitted)."""
    if n_features is None:
        raise RuntimeError(f"{name} is not fitted; call fit(data) first")
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[None, :]
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} columns, the model was fitted on {n_features}")
    return X


def probit_preference(mean_diff: np.ndarray, var_diff: np.ndarray) -> np.ndarray:
    """Predictive ``P(a > b) = Phi(mu_d / sqrt(2 + s_d^2))`` under the probit likelihood.

    ``mean_diff`` and ``var_diff`` are the posterior mean and variance of ``f(a) - f(b)`` in
    ``sigma_noise`` units (Eq. 2 integrated over the Gaussian posterior).
    """
    return ndtr(np.asarray(mean_diff) / np.sqrt(2.0 + np.maximum(var_diff, 0.0)))
