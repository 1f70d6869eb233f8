"""Acquisition for pairwise queries: analytic EUBO (qEUBO with q = 2) and DT leaf rules.

EUBO
----
For a pair ``(a, b)`` with jointly Gaussian utilities, the expected utility of the best
option is (Astudillo et al. 2023; DT-PBO App. D.2)::

    EUBO(a, b) = E[max(f_a, f_b)] = mu_b + mu_d Phi(mu_d / s_d) + s_d phi(mu_d / s_d)

with ``mu_d = mu_a - mu_b`` and ``s_d^2 = var_a + var_b - 2 cov_ab``. When ``s_d = 0`` it is
``max(mu_a, mu_b)``.

DT rules (Sec. 3.3, App. C.3)
-----------------------------
Because the DT surrogate is piecewise constant, qEUBO is constant on each leaf pair, so
the search is over ordered leaf pairs of the conditioned posterior
(:func:`best_leaf_pair`). Within a leaf qEUBO collapses to the leaf mean; the
structural-refinement term ``I_struct`` of App. C.3 (:func:`structural_gain`) scores
within-leaf comparisons by the expected change of the leaf's best consistency score.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr

from pbo_core.tree import best_split

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


@lru_cache(maxsize=128)
def _upper_pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    iu = np.triu_indices(m, k=1)
    for a in iu:
        a.setflags(write=False)
    return iu


def best_leaf_pair(
    mean: np.ndarray,
    cov: np.ndarray,
    rng: np.random.Generator | None = None,
    allowed: np.ndarray | None = None,
) -> tuple[int, int, float]:
    """Leaf pair ``(a, b)``, ``a != b``, maximising EUBO.

    Parameters
    ----------
    mean, cov
        Conditioned posterior of the leaf utilities.
    rng
        Breaks exact ties uniformly at random (first pair in row-major order if ``None``).
    allowed
        Optional ``(m, m)`` boolean mask of admissible pairs.

    Returns
    -------
    a, b, value
        ``a < b`` (EUBO is symmetric) and the EUBO value. With one leaf, ``(0, 0, mean)``.
    """
    m = len(mean)
    if m < 2:
        return 0, 0, float(mean[0]) if m else 0.0
    ia, ib = _upper_pairs(m)
    if allowed is not None:
        ok = allowed[ia, ib] | allowed[ib, ia]
        if not ok.any():
            return 0, 0, float(np.max(mean))
        ia, ib = ia[ok], ib[ok]
    v = np.diagonal(cov)
    vals = eubo(mean[ia], mean[ib], v[ia], v[ib], cov[ia, ib])
    k = int(vals.argmax())
    best = float(vals[k])
    if rng is not None:
        ties = (vals >= best - 1e-12 * max(1.0, abs(best))).nonzero()[0]
        if ties.size > 1:
            k = int(ties[rng.integers(ties.size)])
    return int(ia[k]), int(ib[k]), best


def structural_gain(
    Xw: np.ndarray,
    Xl: np.ndarray,
    xa: np.ndarray,
    xb: np.ndarray,
    is_categorical: np.ndarray,
    n_categories: np.ndarray,
    span: np.ndarray,
) -> float:
    """``I_struct`` of App. C.3 for one within-leaf candidate pair.

    The expected absolute change of the leaf's best consistency score when the comparison
    ``(xa, xb)`` is appended to the leaf's split-search set, averaged over both outcomes
    (the within-leaf predictive is 1/2 each).

    Parameters
    ----------
    Xw, Xl
        ``(N, d)`` winners and losers of the leaf's current split-search set ``D_A``.
    xa, xb
        The candidate pair (``(d,)`` each).
    is_categorical, n_categories, span
        Column metadata as for :func:`pbo_core.tree.best_split`.
    """

    def top(w: np.ndarray, lo: np.ndarray) -> float:
        s = best_split(w, lo, is_categorical, n_categories, span)
        return 0.0 if s is None else s.score

    base = top(Xw, Xl)
    gains = []
    for w, lo in ((xa, xb), (xb, xa)):
        gains.append(abs(top(np.vstack([Xw, w]), np.vstack([Xl, lo])) - base))
    return 0.5 * (gains[0] + gains[1])
