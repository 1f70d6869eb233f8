"""Reference GP Laplace core: the former comparison-space implementation.

These functions factorise ``B = I + L K L^T`` with ``L = diag(sqrt(omega)) C`` of size
``(comparisons, comparisons)``. :mod:`pbo_core.models.gp.laplace` now works in the item
space (``n x n``); tests check both give the same MAP, evidence and gradient.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.special import log_ndtr

from pbo_core.models.gp.laplace import LaplaceState, cholesky_jitter, rbf_kernel
from pbo_core.models.probit import probit_h_prime, probit_terms

_INV_SQRT2 = 1.0 / np.sqrt(2.0)


def reference_laplace_map(
    K: np.ndarray,
    C: np.ndarray,
    counts: np.ndarray,
    alpha0: np.ndarray | None = None,
    *,
    extra_precision: np.ndarray | None = None,
    tol: float = 1e-8,
    max_iter: int = 100,
) -> LaplaceState:
    """MAP of the GP-probit posterior by Newton's method in the ``alpha`` form.

    Parameters
    ----------
    K
        ``(n, n)`` prior covariance.
    C
        ``(M, n)`` incidence matrix of the distinct comparisons.
    counts
        ``(M,)`` multiplicities.
    alpha0
        Optional warm start for ``alpha = K^-1 f`` (e.g. the previous fit's, zero for new
        items).
    extra_precision
        Optional ``(n,)`` diagonal added to the prior precision (KappaSharp ``R``); the
        Newton iterations then run with the prior covariance ``(K^-1 + R)^-1``.
    tol
        Stop when a Newton step changes no utility by more than ``tol``.
    """
    n = K.shape[0]
    Kp = K
    if extra_precision is not None:
        # (K^-1 + R)^-1 = K - K (K + R^-1)^-1 K: no inverse of the ill-conditioned K
        M = K + np.diag(1.0 / np.asarray(extra_precision, dtype=float))
        Mc = cholesky_jitter(M)
        Kp = K - K @ linalg.cho_solve((Mc, True), K, check_finite=False)
        Kp = 0.5 * (Kp + Kp.T)
    alpha = np.zeros(n) if alpha0 is None else np.asarray(alpha0, dtype=float).copy()
    f = Kp @ alpha
    eye_m = np.eye(C.shape[0])

    def objective(f_: np.ndarray, alpha_: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        z = (C @ f_) * _INV_SQRT2
        lp, r, h = probit_terms(z)
        return float(0.5 * alpha_ @ f_ - counts @ lp), r, h

    psi, r, h = objective(f, alpha)
    it = 0
    while True:
        omega = counts * h * 0.5
        L = np.sqrt(omega)[:, None] * C
        B = eye_m + (L @ Kp) @ L.T
        B_chol = cholesky_jitter(0.5 * (B + B.T))
        grad_ll = C.T @ (counts * r) * _INV_SQRT2
        if it >= max_iter:
            break
        a = C.T @ (omega * (C @ f)) + grad_ll
        Ka = Kp @ a
        alpha_new = a - L.T @ linalg.cho_solve((B_chol, True), L @ Ka, check_finite=False)
        d_alpha = alpha_new - alpha
        d_f = Kp @ alpha_new - f
        if not np.max(np.abs(d_f), initial=0.0) > tol:
            break
        t = 1.0
        while True:
            a_t = alpha + t * d_alpha
            f_t = f + t * d_f
            psi_t, r_t, h_t = objective(f_t, a_t)
            if psi_t <= psi or t < 1e-6:
                break
            t *= 0.5
        if not psi_t <= psi:
            break  # no representable decrease: we are at the MAP to machine precision
        alpha, f, psi, r, h = a_t, f_t, psi_t, r_t, h_t
        it += 1
    z = (C @ f) * _INV_SQRT2
    loglik = float(counts @ log_ndtr(z))
    log_det_b = 2.0 * float(np.sum(np.log(np.diag(B_chol))))
    return LaplaceState(
        f=f,
        alpha=alpha,
        grad_loglik=grad_ll,
        omega=omega,
        L=L,
        B_chol=B_chol,
        loglik=loglik,
        log_evidence=loglik - 0.5 * float(alpha @ f) - 0.5 * log_det_b,
        n_iter=it,
    )


def reference_state_at(
    K: np.ndarray, C: np.ndarray, counts: np.ndarray, f: np.ndarray
) -> LaplaceState:
    """Unaugmented Laplace quantities (curvature, ``B``) of the plain GP at utilities ``f``."""
    z = (C @ f) * _INV_SQRT2
    lp, r, h = probit_terms(z)
    omega = counts * h * 0.5
    L = np.sqrt(omega)[:, None] * C
    B = np.eye(C.shape[0]) + (L @ K) @ L.T
    B_chol = cholesky_jitter(0.5 * (B + B.T))
    grad_ll = C.T @ (counts * r) * _INV_SQRT2
    loglik = float(counts @ lp)
    return LaplaceState(
        f=f,
        alpha=np.zeros_like(f),
        grad_loglik=grad_ll,
        omega=omega,
        L=L,
        B_chol=B_chol,
        loglik=loglik,
        log_evidence=float("nan"),
        n_iter=0,
    )


def reference_evidence_and_gradient(
    theta: np.ndarray,
    Z: np.ndarray,
    C: np.ndarray,
    counts: np.ndarray,
    alpha0: np.ndarray | None = None,
) -> tuple[float, np.ndarray, LaplaceState]:
    """Laplace log evidence and its exact gradient with respect to ``theta``.

    ``theta = (log ell_1, ..., log ell_p, log s)``. The gradient includes the implicit
    dependence of the MAP on ``theta``.
    """
    ell = np.exp(theta[:-1])
    s = float(np.exp(theta[-1]))
    K = rbf_kernel(Z, Z, ell, s)
    st = reference_laplace_map(K, C, counts, alpha0)
    b = st.grad_loglik
    Lm = st.L
    # R1 = L^T B^-1 L  (n x n)
    BinvL = linalg.cho_solve((st.B_chol, True), Lm, check_finite=False)
    R1 = Lm.T @ BinvL
    # variance of each comparison's difference under the posterior
    G = C @ K @ C.T  # (M, M)
    GL = G * np.sqrt(st.omega)[None, :]  # G Omega^1/2
    v = np.diag(G) - np.einsum("ij,ji->i", GL, linalg.cho_solve((st.B_chol, True), GL.T))
    z = (C @ st.f) * _INV_SQRT2
    _, r, h = probit_terms(z)
    hp = probit_h_prime(z, r, h)
    s2 = -0.5 * C.T @ (counts * hp * 0.5 * _INV_SQRT2 * v)
    u = s2 - R1 @ (K @ s2)
    # d logZ / d theta_j = <dK_j, M_A> with M_A = b b^T / 2 - R1 / 2 + u b^T
    MA = 0.5 * np.outer(b, b) - 0.5 * R1 + np.outer(u, b)
    P = MA * K
    P = 0.5 * (P + P.T)
    grad = np.empty_like(theta)
    rowsum = P.sum(axis=1)
    for d in range(Z.shape[1]):
        x = Z[:, d]
        # sum_ij P_ij (x_i - x_j)^2 / ell^2  with symmetric P
        grad[d] = (2.0 * (x * x) @ rowsum - 2.0 * x @ (P @ x)) / (ell[d] ** 2)
    grad[-1] = float(P.sum())
    return st.log_evidence, grad, st
