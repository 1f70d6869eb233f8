"""The probit comparison likelihood's pieces, shared by the leaf posterior and the GP.

For ``z = (f_w - f_l) / sqrt(2)`` (DT-PBO Eq. 2) the log likelihood of one comparison is
``log Phi(z)``. Everything is computed from ``scipy.special.log_ndtr`` so extreme or
contradictory comparisons give finite values:

* inverse Mills ratio ``r = phi(z) / Phi(z)`` in log space (:func:`mills_ratio`);
* curvature ``h = r (z + r)`` of ``-log Phi`` (:func:`probit_curvature`), in ``(0, 1)``;
* its derivative ``h' = r (1 - h) - h (z + r)`` (:func:`probit_h_prime`), used by the GP
  evidence gradient.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr

__all__ = ["mills_ratio", "probit_curvature", "probit_h_prime", "probit_terms"]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def mills_ratio(z: np.ndarray) -> np.ndarray:
    """``phi(z) / Phi(z)`` computed stably in log space."""
    z = np.asarray(z, dtype=float)
    return np.exp(-0.5 * z * z - _LOG_SQRT_2PI - log_ndtr(z))


def probit_curvature(z: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
    """Second derivative of ``-log Phi(z)``: ``r (z + r)`` with ``r = phi/Phi``, in (0, 1)."""
    if r is None:
        r = mills_ratio(z)
    h = r * (z + r)
    np.minimum(h, 1.0, out=h)
    return np.maximum(h, 0.0, out=h)


def probit_terms(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log Phi(z)``, ``r = phi/Phi`` and ``h = r (z + r)`` (curvature of ``-log Phi``)."""
    lp = log_ndtr(z)
    r = np.exp(-0.5 * z * z - _LOG_SQRT_2PI - lp)
    return lp, r, probit_curvature(z, r)


def probit_h_prime(z: np.ndarray, r: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Derivative of ``h`` with respect to ``z``: ``r (1 - h) - h (z + r)``."""
    return r * (1.0 - h) - h * (z + r)
