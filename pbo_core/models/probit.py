"""The probit comparison likelihood's pieces, shared by the leaf posterior and the GP.

For ``z = (f_w - f_l) / sqrt(2)`` (DT-PBO Eq. 2) the log likelihood of one comparison is
``log Phi(z)``. Everything is computed from ``scipy.special.log_ndtr`` so extreme or
contradictory comparisons give finite values:

* inverse Mills ratio ``r = phi(z) / Phi(z)`` in log space (:func:`mills_ratio`);
* curvature ``h = r (z + r)`` of ``-log Phi`` (:func:`probit_curvature`), in ``(0, 1)``;
* its derivative ``h' = r (1 - h) - h (z + r)`` (:func:`probit_h_prime`), used by the GP
  evidence gradient;
* the same terms with BoTorch's argument clamp ``|z| <= zlim`` (:func:`clamped_probit_terms`);
* ``log Phi`` of one number, compiled (:func:`log_ndtr_scalar`, to ~1e-15 relative of
  ``log_ndtr``), for the compiled leaf Newton of :mod:`pbo_core.models.solver`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.special import log_ndtr

__all__ = [
    "clamped_probit_terms",
    "log_ndtr_scalar",
    "mills_ratio",
    "probit_curvature",
    "probit_h_prime",
    "probit_terms",
]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_INV_SQRT2 = 1.0 / np.sqrt(2.0)
_DBL_EPS = float(np.finfo(float).eps)


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


def clamped_probit_terms(
    z: np.ndarray, zlim: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r""":func:`probit_terms` with the argument clamped to ``[-zlim, zlim]``, and a mask.

    BoTorch's ``PairwiseProbitLikelihood`` evaluates the gradient ``r`` and the curvature
    ``h`` at ``z_c = clip(z, -zlim, zlim)`` (``zlim = 3``), so beyond the clamp the
    gradient holds its value at ``+-zlim`` instead of decaying. The log likelihood
    returned is the one that gradient belongs to, ``log Phi`` continued linearly,

    .. math:: \ell(z) = \log\Phi(z_c) + r(z_c)\,(z - z_c),                     \qquad (P.1)

    so a line search on it and a root of its gradient (BoTorch's ``fsolve`` MAP) agree.

    Parameters
    ----------
    z
        Scaled utility differences.
    zlim
        Clamp; ``None`` gives :func:`probit_terms` and an all-False mask.

    Returns
    -------
    lp, r, h, clamped
        (P.1), ``r(z_c)``, ``h(z_c)`` and where ``|z| > zlim`` (there ``dh/dz = 0``).
    """
    z = np.asarray(z, dtype=float)
    if zlim is None:
        lp, r, h = probit_terms(z)
        return lp, r, h, np.zeros(z.shape, dtype=bool)
    zc = np.clip(z, -zlim, zlim)
    lp, r, h = probit_terms(zc)
    return lp + r * (z - zc), r, h, zc != z


def probit_h_prime(z: np.ndarray, r: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Derivative of ``h`` with respect to ``z``: ``r (1 - h) - h (z + r)``."""
    return r * (1.0 - h) - h * (z + r)


@njit(cache=True)
def log_ndtr_scalar(a):  # pragma: no cover - compiled
    """``log Phi(a)``, numba-compatible, to ~1e-15 relative of ``scipy.special.log_ndtr``.

    ``a > 0``: ``log1p(-Phi(-a))`` (no cancellation as ``Phi(a) -> 1``);
    ``-20 < a <= 0``: ``log(Phi(a))`` with ``Phi`` from ``erf``/``erfc`` (cephes ``ndtr``);
    below: the asymptotic expansion ``-a^2/2 - log(-a) - log sqrt(2 pi) + log S(a)``
    (cephes ``log_ndtr``), summed until a term no longer changes ``S``.
    """
    if a > 0.0:
        return math.log1p(-_ndtr_scalar(-a))
    if a > -20.0:
        return math.log(_ndtr_scalar(a))
    log_lhs = -0.5 * a * a - math.log(-a) - _LOG_SQRT_2PI
    last_total = 0.0
    rhs = 1.0
    numerator = 1.0
    denom_factor = 1.0
    denom_cons = 1.0 / (a * a)
    sign = 1.0
    i = 0
    while abs(last_total - rhs) > _DBL_EPS:
        i += 1
        last_total = rhs
        sign = -sign
        denom_factor *= denom_cons
        numerator *= 2 * i - 1
        rhs += sign * numerator * denom_factor
    return log_lhs + math.log(rhs)


@njit(cache=True)
def _ndtr_scalar(a):  # pragma: no cover - compiled
    """``Phi(a)`` (cephes ``ndtr``)."""
    x = a * _INV_SQRT2
    z = abs(x)
    if z < _INV_SQRT2:
        return 0.5 + 0.5 * math.erf(x)
    y = 0.5 * math.erfc(z)
    if x > 0:
        y = 1.0 - y
    return y
