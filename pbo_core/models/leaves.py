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
backtracking line search (the objective is strictly convex), by the one solver of
:mod:`pbo_core.models.solver` (rule ``"decrement"``: stop when ``g^T H^-1 g <= tol^2``;
a fit that reaches ``max_iter`` first is reported by ``LaplaceResult.converged`` and a
:class:`~pbo_core.models.solver.ConvergenceWarning`). ``log Phi`` is
``scipy.special.log_ndtr`` and the inverse Mills ratio ``phi/Phi`` is formed in log space,
so extreme or contradictory comparisons never produce NaN. Up to
:data:`COMPILED_MAX_LEAVES` leaves the whole Newton loop runs in one numba kernel (the
solver's compiled specialisation, :func:`~pbo_core.models.solver.newton_probit_pairs`,
with :func:`~pbo_core.models.probit.log_ndtr_scalar`); the numpy + LAPACK path
(:func:`~pbo_core.models.solver.newton_minimize` on :func:`pair_objective`) stays as the
reference (``compiled=False``) and for bigger fits, and
``tests/pbo_core/models/test_leaf_kernel.py`` checks both give the same MAP, covariance
and iteration count. The Laplace covariance
``(P + Lambda)^-1`` is then conditioned on ``1^T f = 0`` (Prop. 2, App. E): with the
default isotropic prior the MAP already sums to zero and the conditioning removes the
variance ``1/(ratio * m)`` of the constant-shift direction from every entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import lapack

from pbo_core.models.probit import probit_terms
from pbo_core.models.solver import NewtonStep, newton_minimize, newton_probit_pairs

_INV_SQRT2 = 1.0 / np.sqrt(2.0)

#: Largest leaf count fitted by the compiled Newton kernel
#: (:func:`~pbo_core.models.solver.newton_probit_pairs`); its hand-written Cholesky is
#: O(m^3) without BLAS, so bigger fits use the LAPACK path.
COMPILED_MAX_LEAVES = 256


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
        Newton iterations used (line searches, a last one that found no decrease
        included).
    grad_norm
        Max-norm of the gradient at the returned point.
    converged
        Whether the Newton decrement met ``tol`` (or no representable decrease remained)
        within ``max_iter``; when not, a
        :class:`~pbo_core.models.solver.ConvergenceWarning` was raised.
    """

    map: np.ndarray
    hessian: np.ndarray
    likelihood_hessian: np.ndarray
    cov: np.ndarray
    mean_c: np.ndarray
    cov_c: np.ndarray
    n_iter: int
    grad_norm: float
    converged: bool = True


def aggregate_pairs(
    winner: np.ndarray, loser: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop self-pairs and merge identical (winner, loser) rows into counts."""
    winner = np.asarray(winner, dtype=np.int64).ravel()
    loser = np.asarray(loser, dtype=np.int64).ravel()
    keep = winner != loser
    code = winner[keep] * n + loser[keep]
    if n * n <= 4 * code.size + 4096:
        counts = np.bincount(code, minlength=n * n)
        uniq = counts.nonzero()[0]
        counts = counts[uniq]
    else:
        uniq, counts = np.unique(code, return_counts=True)
    return uniq // n, uniq % n, counts.astype(float)


def incidence_matrix(w: np.ndarray, lo: np.ndarray, m: int) -> np.ndarray:
    """``(K, m)`` matrix ``D`` with ``D[k, w_k] = 1`` and ``D[k, l_k] = -1``."""
    D = np.zeros((w.size, m))
    rows = np.arange(w.size)
    D[rows, w] = 1.0
    D[rows, lo] = -1.0
    return D


def neg_log_posterior(
    f: np.ndarray,
    D: np.ndarray,
    c: np.ndarray,
    prior_precision: np.ndarray,
    prior_mean: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Objective, gradient and pair curvatures at ``f``.

    Parameters
    ----------
    f
        Leaf utilities ``(m,)``.
    D
        ``(K, m)`` incidence matrix of the distinct comparisons (see
        :func:`incidence_matrix`).
    c
        ``(K,)`` multiplicity of each distinct comparison.
    prior_precision, prior_mean
        ``(m,)`` Gaussian prior.

    Returns
    -------
    obj, grad, h
        ``L(f)``, its gradient, and the curvature ``h_k`` of each comparison with respect
        to ``f[w_k] - f[l_k]``, so that ``Lambda = D^T diag(h) D``.
    """
    z = (D @ f) * _INV_SQRT2
    lp, r, hz = probit_terms(z)  # log Phi(z), phi(z) / Phi(z), curvature
    dev = f - prior_mean
    pdev = prior_precision * dev
    obj = float(0.5 * (pdev @ dev) - c @ lp)
    grad = pdev - D.T @ (c * r) * _INV_SQRT2
    h = c * hz * 0.5
    return obj, grad, h


def likelihood_hessian(D: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``Lambda = D^T diag(h) D``: a weighted graph Laplacian over the leaves."""
    return (D.T * h) @ D


def pair_objective(
    f: np.ndarray,
    w: np.ndarray,
    lo: np.ndarray,
    c: np.ndarray,
    prior_precision: np.ndarray,
    prior_mean: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray]:
    """:func:`neg_log_posterior` on aggregated pairs ``(w, lo, c)``, without forming ``D``.

    ``D f`` is ``f[w] - f[lo]`` and ``D^T v`` two bincounts: O(pairs + leaves) per call.
    """
    z = (f[w] - f[lo]) * _INV_SQRT2
    lp, r, hz = probit_terms(z)
    dev = f - prior_mean
    pdev = prior_precision * dev
    obj = float(0.5 * (pdev @ dev) - c @ lp)
    cr = c * r
    m = f.size
    grad = pdev - (np.bincount(w, cr, minlength=m) - np.bincount(lo, cr, minlength=m)) * _INV_SQRT2
    h = c * hz * 0.5
    return obj, grad, h


def laplacian_codes(w: np.ndarray, lo: np.ndarray, m: int) -> np.ndarray:
    """Flat ``(m, m)`` positions of the four entries each pair adds to the Laplacian."""
    return np.concatenate((w * m + lo, lo * m + w, w * (m + 1), lo * (m + 1)))


def pair_laplacian(
    w: np.ndarray, lo: np.ndarray, h: np.ndarray, m: int, codes: np.ndarray | None = None
) -> np.ndarray:
    """``Lambda = D^T diag(h) D`` from pairs ``(w, lo)`` in O(pairs + m^2) (one bincount).

    Pair ``k`` adds ``-h_k`` at ``(w_k, l_k)`` and ``(l_k, w_k)`` and ``h_k`` at both
    diagonal entries; ``codes`` (:func:`laplacian_codes`) can be passed when the pairs are
    fixed across calls. Entries ``(a, b)`` and ``(b, a)`` add the same two numbers, so the
    result is exactly symmetric.
    """
    if codes is None:
        codes = laplacian_codes(w, lo, m)
    return np.bincount(codes, np.concatenate((-h, -h, h, h)), minlength=m * m).reshape(m, m)


def spd_solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``A x = b`` for symmetric positive definite ``A`` (LAPACK ``posv``)."""
    _, x, info = lapack.dposv(A, b, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"matrix is not positive definite (LAPACK info {info})")
    return x


def _cholesky(A: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor (LAPACK ``potrf``; upper triangle left as in ``A``)."""
    c, info = lapack.dpotrf(A, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"matrix is not positive definite (LAPACK info {info})")
    return c


def _inverse_from_cholesky(c: np.ndarray) -> np.ndarray:
    """``A^-1`` from :func:`_cholesky` of ``A`` (``potri``; exactly symmetric)."""
    inv, info = lapack.dpotri(c, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"matrix is not positive definite (LAPACK info {info})")
    inv = np.tril(inv)
    inv += np.tril(inv, -1).T
    return inv


def spd_inverse(A: np.ndarray) -> np.ndarray:
    """Inverse of a symmetric positive definite matrix (Cholesky; exactly symmetric).

    LAPACK ``potrf`` + ``potri`` (n^3 flops, a third of solving against the identity).
    """
    return _inverse_from_cholesky(_cholesky(A))


def condition_sum_to_zero(mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Condition ``N(mean, cov)`` on ``1^T f = 0`` (Eaton's formula, App. E)."""
    s = cov.sum(axis=1)
    tot = float(s.sum())
    if tot <= 0:
        return mean - mean.mean(), np.zeros_like(cov)
    mean_c = mean - (mean.sum() / tot) * s
    cov_c = cov - np.outer(s, s / tot)
    cov_c += cov_c.T  # exact symmetry (rounding in the outer product is not symmetric)
    cov_c *= 0.5
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
    tol: float = 1e-6,
    compiled: bool | None = None,
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
    compiled
        Run the Newton loop in the compiled kernel
        (:func:`~pbo_core.models.solver.newton_probit_pairs`: same steps, results equal to
        rounding) instead of numpy + LAPACK, the reference. Default ``None``: compiled up
        to :data:`COMPILED_MAX_LEAVES` leaves.

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` Newton steps end above ``tol`` (``LaplaceResult.converged`` is
        then False).
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
    if compiled is None:
        compiled = m <= COMPILED_MAX_LEAVES
    what = "leaf-utility"
    if compiled:
        res_k = newton_probit_pairs(w, lo, c, p, m0, f, max_iter=max_iter, tol=tol, what=what)
        if res_k is not None:
            mean_c, cov_c = condition_sum_to_zero(res_k.f, res_k.cov)
            return LaplaceResult(
                map=res_k.f,
                hessian=res_k.hessian,
                likelihood_hessian=res_k.likelihood_hessian,
                cov=res_k.cov,
                mean_c=mean_c,
                cov_c=cov_c,
                n_iter=res_k.n_iter,
                grad_norm=float(np.abs(res_k.grad).max()),
                converged=res_k.converged,
            )
    P = np.diag(p)
    codes = laplacian_codes(w, lo, m)

    # The pairs stay aggregated (distinct leaf pairs with counts): the objective costs
    # O(pairs + m) and the Hessian O(pairs + m^2), never a dense (pairs, m) incidence.
    def value(f_: np.ndarray) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
        obj, grad, h = pair_objective(f_, w, lo, c, p, m0)
        return obj, (grad, h)

    # Lambda, H and the Cholesky factor of H at the current point (the factor is reused
    # for the covariance). They are replaced one at a time, so each old (m, m) matrix is
    # freed as its successor is made and the allocator reuses its memory (keeping all
    # three until the next step exists cost ~40% more page faults at 300 leaves).
    mats: dict[str, Any] = {}

    def newton(f_: np.ndarray, gh: tuple[np.ndarray, np.ndarray]) -> NewtonStep:
        grad, h = gh
        mats["lam"] = pair_laplacian(w, lo, h, m, codes)
        mats["H"] = P + mats["lam"]
        mats["chol"] = None
        mats["chol"] = H_chol = _cholesky(mats["H"])  # = the factor dposv (spd_solve) computes
        step, info = lapack.dpotrs(H_chol, grad, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"LAPACK potrs info {info}")
        return NewtonStep(step, float(grad @ step), info=grad)

    res = newton_minimize(value, newton, f, max_iter=max_iter, tol=tol, min_step=1e-8, what=what)
    assert res.step is not None  # rule "decrement" computes a step at the returned point
    H, lam, H_chol, grad = mats["H"], mats["lam"], mats["chol"], res.step.info
    cov = _inverse_from_cholesky(H_chol)
    mean_c, cov_c = condition_sum_to_zero(res.x, cov)
    return LaplaceResult(
        map=res.x,
        hessian=H,
        likelihood_hessian=lam,
        cov=cov,
        mean_c=mean_c,
        cov_c=cov_c,
        n_iter=res.n_iter,
        grad_norm=float(np.abs(grad).max()),
        converged=res.converged,
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
