"""Analytic EUBO (qEUBO with q = 2), model-agnostic.

For a pair ``(a, b)`` with jointly Gaussian utilities, the expected utility of the best
option is (Astudillo et al. 2023; DT-PBO App. D.2)::

    EUBO(a, b) = E[max(f_a, f_b)] = mu_b + mu_d Phi(mu_d / s_d) + s_d phi(mu_d / s_d)

with ``mu_d = mu_a - mu_b`` and ``s_d^2 = var_a + var_b - 2 cov_ab``. When ``s_d = 0`` it is
``max(mu_a, mu_b)``. Only posterior moments enter, so any surrogate's posterior works.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr

__all__ = ["eubo", "eubo_matrix"]

_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def eubo(
    mu_a: ArrayLike, mu_b: ArrayLike, var_a: ArrayLike, var_b: ArrayLike, cov_ab: ArrayLike
) -> np.ndarray:
    """Analytic EUBO ``E[max(f_a, f_b)]`` for q = 2, vectorised with broadcasting.

    Parameters
    ----------
    mu_a, mu_b
        Posterior means of the two options.
    var_a, var_b
        Posterior variances.
    cov_ab
        Posterior covariance between the two options.

    Returns
    -------
    ndarray
        EUBO values, broadcast shape of the inputs; always ``>= max(mu_a, mu_b)``.
    """
    mu_a = np.asarray(mu_a, dtype=float)
    mu_b = np.asarray(mu_b, dtype=float)
    var_d = np.asarray(var_a, dtype=float) + np.asarray(var_b, dtype=float)
    var_d = var_d - 2.0 * np.asarray(cov_ab, dtype=float)
    s = np.sqrt(np.maximum(var_d, 0.0))
    d = mu_a - mu_b
    pos = s > 1e-12 * np.maximum(1.0, np.abs(d))
    s_safe = np.where(pos, s, 1.0)
    z = d / s_safe
    val = mu_b + d * ndtr(z) + s_safe * _INV_SQRT_2PI * np.exp(-0.5 * z * z)
    return np.where(pos, val, np.maximum(mu_a, mu_b))


def eubo_matrix(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """EUBO of every ordered pair of options: ``out[a, b] = EUBO(a, b)``; diagonal = mean."""
    mean = np.asarray(mean, dtype=float)
    v = np.diag(cov)
    return eubo(mean[:, None], mean[None, :], v[:, None], v[None, :], cov)
