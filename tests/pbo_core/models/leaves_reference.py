"""Reference leaf Laplace fit: the former dense-incidence implementation.

``reference_laplace_fit`` builds the likelihood Hessian as ``(D.T * h) @ D`` over the
distinct comparisons (O(pairs x leaves^2)). The aggregated implementation in
:mod:`pbo_core.models.leaves` must give the same MAP, Hessians and posterior.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from pbo_core.models.leaves import (
    LaplaceResult,
    aggregate_pairs,
    condition_sum_to_zero,
    incidence_matrix,
    likelihood_hessian,
    neg_log_posterior,
    spd_inverse,
    spd_solve,
)


def reference_laplace_fit(
    leaf_winner: ArrayLike,
    leaf_loser: ArrayLike,
    n_leaves: int,
    ratio: float = 0.25,
    *,
    prior_mean: ArrayLike | None = None,
    prior_precision: ArrayLike | None = None,
    init: ArrayLike | None = None,
    max_iter: int = 100,
    tol: float = 1e-6,
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
        Newton iteration cap, and the tolerance on the Newton decrement
        ``sqrt(g^T H^-1 g)`` (the distance to the MAP in the posterior-precision norm).
    """
    m = int(n_leaves)
    if m < 1:
        raise ValueError(f"n_leaves must be >= 1, got {n_leaves}")
    if not ratio > 0:
        raise ValueError(f"ratio must be positive, got {ratio}")
    lw = np.asarray(leaf_winner, dtype=np.int64).ravel()
    ll = np.asarray(leaf_loser, dtype=np.int64).ravel()
    if lw.shape != ll.shape:
        raise ValueError(f"{lw.size} winners but {ll.size} losers")
    if lw.size and (max(lw.max(), ll.max()) >= m or min(lw.min(), ll.min()) < 0):
        raise ValueError(f"leaf indices must lie in [0, {m})")
    w, lo, c = aggregate_pairs(lw, ll, m)
    if prior_precision is None:
        p = np.full(m, float(ratio))
    else:
        p = np.broadcast_to(np.asarray(prior_precision, dtype=float), (m,)).copy()
        if np.any(p <= 0):
            raise ValueError("prior precision must be positive")
    m0 = np.zeros(m) if prior_mean is None else np.asarray(prior_mean, dtype=float).reshape(m)
    f = m0.copy() if init is None else np.asarray(init, dtype=float).reshape(m).copy()
    D = incidence_matrix(w, lo, m)
    P = np.diag(p)

    # Newton with backtracking; stops when the Newton decrement g^T H^-1 g (twice the
    # predicted decrease of L) falls below tol^2, i.e. f is within ~tol of the MAP in
    # the posterior-precision norm. H at the returned point is reused for the covariance.
    obj, grad, h = neg_log_posterior(f, D, c, p, m0)
    it = 0
    while True:
        lam = likelihood_hessian(D, h)
        H = P + lam
        if it >= max_iter:
            break
        step = spd_solve(H, grad)
        decrement = float(grad @ step)
        if decrement <= tol * tol:
            break
        it += 1
        t = 1.0
        while True:
            f_new = f - t * step
            obj_new, grad_new, h_new = neg_log_posterior(f_new, D, c, p, m0)
            if obj_new <= obj - 0.25 * t * decrement or t < 1e-8:
                break
            t *= 0.5
        if not obj_new < obj:
            break  # no further decrease is representable in floating point
        f, obj, grad, h = f_new, obj_new, grad_new, h_new
    cov = spd_inverse(H)
    mean_c, cov_c = condition_sum_to_zero(f, cov)
    return LaplaceResult(
        map=f,
        hessian=H,
        likelihood_hessian=lam,
        cov=cov,
        mean_c=mean_c,
        cov_c=cov_c,
        n_iter=it,
        grad_norm=float(np.abs(grad).max()),
    )
