"""Laplace-approximated Gaussian posterior over leaf utilities (DT-PBO Sec. 3.2, App. D-E).

Model
-----
Leaf utilities ``f`` (one per leaf) have an independent Gaussian prior and the probit
pairwise likelihood of Eq. 2. Only the ratio ``sigma_noise^2 / sigma_prior^2`` is
identifiable (App. D), so utilities are expressed in units of ``sigma_noise``
(``f~ = f / sigma_noise``) and the negative log posterior is (Eq. 10)::

    L(f) = - sum_k c_k log Phi((f[w_k] - f[l_k]) / sqrt(2)) + 1/2 (f - m)^T P (f - m)

with ``P = ratio * I`` and ``m = 0`` by default (``P`` and ``m`` can be changed to
warm-start a leaf posterior from earlier users). Comparisons inside one leaf carry no
information and are dropped; identical leaf pairs are merged into counts ``c_k``.

The MAP is found by Newton's method with the exact gradient and Hessian and a
backtracking line search (the objective is strictly convex). ``log Phi`` is
``scipy.special.log_ndtr`` and the inverse Mills ratio ``phi/Phi`` is formed in log space,
so extreme or contradictory comparisons never produce NaN. The Laplace covariance
``(P + Lambda)^-1`` is then conditioned on ``1^T f = 0`` (Prop. 2, App. E): with the
default isotropic prior the MAP already sums to zero and the conditioning removes the
variance ``1/(ratio * m)`` of the constant-shift direction from every entry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import cho_factor, cho_solve
from scipy.special import log_ndtr

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_SQRT2 = np.sqrt(2.0)


def mills_ratio(z: np.ndarray) -> np.ndarray:
    """``phi(z) / Phi(z)`` computed stably in log space."""
    z = np.asarray(z, dtype=float)
    return np.exp(-0.5 * z * z - _LOG_SQRT_2PI - log_ndtr(z))


def probit_curvature(z: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
    """Second derivative of ``-log Phi(z)``: ``r (z + r)`` with ``r = phi/Phi``, in (0, 1)."""
    if r is None:
        r = mills_ratio(z)
    return np.clip(r * (z + r), 0.0, 1.0)


@dataclass
class LaplaceResult:
    """Everything the Laplace fit computes.

    Attributes
    ----------
    map
        MAP utilities (unconditioned), shape ``(m,)``.
    hessian
        Negative log-posterior Hessian at the MAP, ``P + Lambda``.
    likelihood_hessian
        ``Lambda``: the likelihood part, a weighted graph Laplacian.
    cov
        Laplace covariance ``hessian^-1``.
    mean_c, cov_c
        Posterior conditioned on ``1^T f = 0``.
    n_iter
        Newton iterations used.
    grad_norm
        Max-norm of the gradient at the returned point.
    """

    map: np.ndarray
    hessian: np.ndarray
    likelihood_hessian: np.ndarray
    cov: np.ndarray
    mean_c: np.ndarray
    cov_c: np.ndarray
    n_iter: int
    grad_norm: float


def aggregate_pairs(
    winner: np.ndarray, loser: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop self-pairs and merge identical (winner, loser) rows into counts."""
    winner = np.asarray(winner, dtype=np.int64).ravel()
    loser = np.asarray(loser, dtype=np.int64).ravel()
    keep = winner != loser
    code = winner[keep] * n + loser[keep]
    uniq, counts = np.unique(code, return_counts=True)
    return uniq // n, uniq % n, counts.astype(float)


def neg_log_posterior(
    f: np.ndarray,
    w: np.ndarray,
    lo: np.ndarray,
    c: np.ndarray,
    prior_precision: np.ndarray,
    prior_mean: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Objective, gradient and likelihood-curvature weights at ``f``.

    Returns ``(L, grad, h)`` where ``h[k]`` is the curvature of pair ``k`` with respect to
    ``f[w_k] - f[l_k]`` (so ``Lambda = sum_k h_k (e_w - e_l)(e_w - e_l)^T``).
    """
    z = (f[w] - f[lo]) / _SQRT2
    lp = log_ndtr(z)
    r = mills_ratio(z)
    dev = f - prior_mean
    obj = float(-np.dot(c, lp) + 0.5 * np.dot(prior_precision * dev, dev))
    m = f.shape[0]
    g_pair = -c * r / _SQRT2
    grad = prior_precision * dev + np.bincount(w, g_pair, m) - np.bincount(lo, g_pair, m)
    h = c * probit_curvature(z, r) / 2.0
    return obj, grad, h


def likelihood_hessian(w: np.ndarray, lo: np.ndarray, h: np.ndarray, m: int) -> np.ndarray:
    """Weighted graph Laplacian ``sum_k h_k (e_w - e_l)(e_w - e_l)^T`` as a dense matrix."""
    idx = np.concatenate([w * m + w, lo * m + lo, w * m + lo, lo * m + w])
    val = np.concatenate([h, h, -h, -h])
    return np.bincount(idx, val, m * m).reshape(m, m)


def condition_sum_to_zero(
    mean: np.ndarray, cov: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Condition ``N(mean, cov)`` on ``1^T f = 0`` (Eaton's formula, App. E)."""
    s = cov.sum(axis=1)
    tot = float(s.sum())
    if tot <= 0:
        return mean - mean.mean(), np.zeros_like(cov)
    mean_c = mean - (mean.sum() / tot) * s
    cov_c = cov - np.outer(s, s) / tot
    cov_c = 0.5 * (cov_c + cov_c.T)
    return mean_c, cov_c


def laplace_fit(
    leaf_winner: ArrayLike,
    leaf_loser: ArrayLike,
    n_leaves: int,
    ratio: float = 0.25,
    *,
    prior_mean: ArrayLike | None = None,
    prior_precision: ArrayLike | None = None,
    init: ArrayLike | None = None,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> LaplaceResult:
    """Laplace approximation of the leaf-utility posterior.

    Parameters
    ----------
    leaf_winner, leaf_loser
        Leaf index of the winner and the loser of every comparison.
    n_leaves
        Number of leaves ``m``.
    ratio
        ``sigma_noise^2 / sigma_prior^2`` (default 1/4, App. D); the prior precision of
        every leaf in ``sigma_noise`` units.
    prior_mean
        Optional prior mean of the leaves (default 0).
    prior_precision
        Optional per-leaf prior precision, overriding ``ratio``.
    init
        Optional starting point for Newton (warm start).
    max_iter, tol
        Newton iteration cap and gradient max-norm tolerance.
    """
    m = int(n_leaves)
    if m < 1:
        raise ValueError(f"n_leaves must be >= 1, got {n_leaves}")
    if not ratio > 0:
        raise ValueError(f"ratio must be positive, got {ratio}")
    w, lo, c = aggregate_pairs(np.asarray(leaf_winner), np.asarray(leaf_loser), m)
    if w.size and (w.max() >= m or min(w.min(), lo.min()) < 0 or lo.max() >= m):
        raise ValueError(f"leaf indices must lie in [0, {m})")
    p = (
        np.full(m, float(ratio))
        if prior_precision is None
        else np.broadcast_to(np.asarray(prior_precision, dtype=float), (m,)).copy()
    )
    if np.any(p <= 0):
        raise ValueError("prior precision must be positive")
    m0 = np.zeros(m) if prior_mean is None else np.asarray(prior_mean, dtype=float).reshape(m)
    f = m0.copy() if init is None else np.asarray(init, dtype=float).reshape(m).copy()

    obj, grad, h = neg_log_posterior(f, w, lo, c, p, m0)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - reported in the result
        if np.max(np.abs(grad)) < tol:
            it -= 1
            break
        H = likelihood_hessian(w, lo, h, m)
        H[np.diag_indices(m)] += p
        step = cho_solve(cho_factor(H, lower=True, check_finite=False), grad, check_finite=False)
        decrement = float(np.dot(grad, step))
        t = 1.0
        while True:
            f_new = f - t * step
            obj_new, grad_new, h_new = neg_log_posterior(f_new, w, lo, c, p, m0)
            if obj_new <= obj - 0.25 * t * decrement or t < 1e-10:
                break
            t *= 0.5
        f, obj, grad, h = f_new, obj_new, grad_new, h_new
        if decrement < 1e-20:
            break
    lam = likelihood_hessian(w, lo, h, m)
    H = lam.copy()
    H[np.diag_indices(m)] += p
    cf = cho_factor(H, lower=True, check_finite=False)
    cov = cho_solve(cf, np.eye(m), check_finite=False)
    cov = 0.5 * (cov + cov.T)
    mean_c, cov_c = condition_sum_to_zero(f, cov)
    return LaplaceResult(
        map=f,
        hessian=H,
        likelihood_hessian=lam,
        cov=cov,
        mean_c=mean_c,
        cov_c=cov_c,
        n_iter=it,
        grad_norm=float(np.max(np.abs(grad))) if m else 0.0,
    )


def fit_leaf_posterior(
    leaf_winner: ArrayLike,
    leaf_loser: ArrayLike,
    n_leaves: int,
    ratio: float = 0.25,
    **kwargs: object,
) -> tuple[np.ndarray, np.ndarray]:
    """Sum-to-zero conditioned Laplace posterior of the leaf utilities.

    Parameters
    ----------
    leaf_winner, leaf_loser
        Leaf index of the winner and the loser of each comparison (same-leaf pairs are
        allowed and ignored).
    n_leaves
        Number of leaves.
    ratio
        ``sigma_noise^2 / sigma_prior^2`` (default 1/4).
    **kwargs
        Passed to :func:`laplace_fit` (``prior_mean``, ``prior_precision``, ``init``...).

    Returns
    -------
    mean : ndarray, shape (n_leaves,)
        Conditioned posterior mean, in units of ``sigma_noise``; sums to zero.
    cov : ndarray, shape (n_leaves, n_leaves)
        Conditioned posterior covariance: symmetric PSD with ``cov @ 1 = 0``.
    """
    res = laplace_fit(leaf_winner, leaf_loser, n_leaves, ratio, **kwargs)  # type: ignore[arg-type]
    return res.mean_c, res.cov_c
