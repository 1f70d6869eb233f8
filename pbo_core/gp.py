"""GP-Laplace preference surrogate (Chu & Ghahramani 2005), the standard PBO baseline.

Model
-----
Latent utilities ``f`` of the distinct items have a zero-mean GP prior with a scaled RBF
kernel with one lengthscale per input column (ARD), on inputs scaled to the unit cube
(categorical features one-hot). Comparisons follow the probit likelihood of DT-PBO Eq. 2
with the noise fixed to 1 (the outputscale carries the signal-to-noise ratio, as in
BoTorch's ``PairwiseGP``)::

    P(w > l | f) = Phi((f_w - f_l) / sqrt(2))

Laplace approximation
---------------------
With the comparison incidence matrix ``C`` (row ``k``: +1 at the winner, -1 at the loser,
identical comparisons merged into counts ``c``), the likelihood Hessian is the weighted
graph Laplacian ``W = C^T diag(omega) C`` with ``omega_k = c_k h(z_k) / 2`` and
``h(z) = r(z) (z + r(z))``, ``r = phi / Phi`` (computed with ``log_ndtr``). Everything
is done without inverting ``K``, following Rasmussen & Williams (2006, Alg. 3.1/5.1)
generalised to the non-diagonal ``W``: with ``L = diag(sqrt(omega)) C`` the only matrix
factorised is the well-conditioned ``B = I + L K L^T`` (eigenvalues >= 1), and

* Newton for the MAP: ``alpha <- a - L^T B^-1 L K a`` with ``a = W f + grad log p``,
  ``f = K alpha``, with a backtracking line search on
  ``Psi = -log p(D|f) + alpha^T K alpha / 2``;
* posterior covariance ``(K^-1 + W)^-1 = K - K L^T B^-1 L K``;
* log evidence ``log p(D|f) - f^T alpha / 2 - log|B| / 2`` (Chu & Ghahramani Eq. 12).

Hyperparameters
---------------
Lengthscales and outputscale maximise the Laplace evidence plus log priors like BoTorch's
``PairwiseGP`` defaults (lengthscale ``Gamma(2.4, 2.7)``; outputscale smoothed box on
``[0.01, 100]``, used as the optimiser's bounds), by L-BFGS-B in log space with the exact
gradient, including the implicit dependence of the MAP on the hyperparameters
(R&W Eq. 5.22-5.24 with ``dW/df`` of the probit). Each fit warm-starts from the previous
hyperparameters and MAP.

Duplicate items (equal after encoding, to ``merge_atol``) are merged, so repeated queries
do not make ``K`` singular; ``K`` is factorised with escalating jitter when needed.

KappaSharp (Shao et al., "Adaptive KappaSharp") is in :mod:`pbo_core.kappasharp`; this
module exposes the pieces it needs (``K^-1``, the Hessian, a MAP re-solve with an added
diagonal precision).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import linalg
from scipy.optimize import minimize
from scipy.special import gammaln, log_ndtr

from pbo_core.data import PreferenceData, Schema
from pbo_core.laplace import aggregate_pairs, probit_curvature
from pbo_core.surrogate import check_input, competition_rank, probit_preference

_INV_SQRT2 = 1.0 / np.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)

#: BoTorch PairwiseGP defaults.
LENGTHSCALE_PRIOR = (2.4, 2.7)  # Gamma(concentration, rate)
OUTPUTSCALE_BOX = (0.01, 100.0)  # smoothed-box prior support
LENGTHSCALE_BOUNDS = (1e-4, 1e4)
_BOX_SIGMA = 0.01


# ----------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class InputEncoder:
    """Maps encoded item rows (schema columns) to GP inputs in the unit cube.

    Threshold columns are scaled by their schema bounds; each categorical column becomes
    one-hot columns. ``from_unit`` inverts the scaling for all-threshold schemas (used by
    continuous acquisition optimisation).
    """

    lower: np.ndarray
    span: np.ndarray
    categorical: tuple[int, ...]
    n_categories: tuple[int, ...]
    threshold_cols: np.ndarray

    @classmethod
    def from_schema(cls, schema: Schema) -> InputEncoder:
        """Encoder for a schema (bounds from the schema)."""
        b = schema.bounds
        span = b[:, 1] - b[:, 0]
        span = np.where(span > 0, span, 1.0)
        cat = tuple(int(c) for c in np.flatnonzero(schema.is_categorical))
        return cls(
            lower=b[:, 0].copy(),
            span=span,
            categorical=cat,
            n_categories=tuple(int(schema.n_categories[c]) for c in cat),
            threshold_cols=np.flatnonzero(~schema.is_categorical),
        )

    @property
    def n_inputs(self) -> int:
        """Width of the GP input."""
        return len(self.threshold_cols) + sum(self.n_categories)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        parts = [
            (X[:, self.threshold_cols] - self.lower[self.threshold_cols])
            / self.span[self.threshold_cols]
        ]
        for c, n in zip(self.categorical, self.n_categories, strict=True):
            parts.append(np.eye(n)[X[:, c].astype(int)])
        return np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]

    def from_unit(self, U: np.ndarray) -> np.ndarray:
        """Inverse scaling for schemas without categorical columns."""
        if self.categorical:
            raise ValueError("from_unit is only defined without categorical columns")
        return self.lower + np.asarray(U) * self.span


# ----------------------------------------------------------------------------- kernel
def rbf_kernel(
    A: np.ndarray, B: np.ndarray, lengthscale: np.ndarray, outputscale: float
) -> np.ndarray:
    """Scaled ARD RBF kernel ``s exp(-|a - b|^2_ell / 2)``."""
    As = A / lengthscale
    Bs = B / lengthscale
    sq = (As * As).sum(1)[:, None] + (Bs * Bs).sum(1)[None, :] - 2.0 * As @ Bs.T
    np.maximum(sq, 0.0, out=sq)
    return outputscale * np.exp(-0.5 * sq)


def cholesky_jitter(K: np.ndarray, jitter: float = 1e-6, max_tries: int = 6) -> np.ndarray:
    """Lower Cholesky factor of ``K``, adding escalating diagonal jitter if needed.

    Jitter is relative to the mean diagonal: ``jitter * 10^i * mean(diag K)`` for
    ``i = 0, 1, ...`` after a first attempt without jitter.
    """
    scale = float(np.mean(np.diag(K))) if K.size else 1.0
    for i in range(max_tries + 1):
        add = 0.0 if i == 0 else jitter * 10 ** (i - 1) * scale
        c, info = linalg.lapack.dpotrf(K + add * np.eye(len(K)) if add else K, lower=1)
        if info == 0:
            return np.tril(c)
    raise np.linalg.LinAlgError(
        f"kernel matrix not positive definite even with jitter {jitter * 10 ** (max_tries - 1):g}"
    )


# ----------------------------------------------------------------------------- likelihood
def _probit_terms(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log Phi(z)``, ``r = phi/Phi`` and ``h = r (z + r)`` (curvature of ``-log Phi``)."""
    lp = log_ndtr(z)
    r = np.exp(-0.5 * z * z - _LOG_SQRT_2PI - lp)
    return lp, r, probit_curvature(z, r)


def _probit_h_prime(z: np.ndarray, r: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Derivative of ``h`` with respect to ``z``: ``r (1 - h) - h (z + r)``."""
    return r * (1.0 - h) - h * (z + r)


@dataclass
class LaplaceState:
    """The Laplace fit of a GP on merged comparisons (all quantities at the MAP)."""

    f: np.ndarray  # MAP utilities (n,)
    alpha: np.ndarray  # K^-1 f (n,) (= grad log p at the MAP of the plain problem)
    grad_loglik: np.ndarray  # (n,)
    omega: np.ndarray  # (M,) comparison weights, W = C^T diag(omega) C
    L: np.ndarray  # (M, n) = diag(sqrt(omega)) C
    B_chol: np.ndarray  # lower Cholesky of I + L K L^T
    loglik: float
    log_evidence: float
    n_iter: int


def laplace_map(
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
        lp, r, h = _probit_terms(z)
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


# ----------------------------------------------------------------------------- priors
def _gamma_logpdf(x: np.ndarray, a: float, b: float) -> np.ndarray:
    return a * np.log(b) - gammaln(a) + (a - 1.0) * np.log(x) - b * x


def _smoothed_box_logpdf(x: float, lo: float, hi: float, sigma: float) -> float:
    dist = max(lo - x, 0.0, x - hi)
    return -np.log(hi - lo + np.sqrt(2 * np.pi) * sigma) - 0.5 * (dist / sigma) ** 2


def log_prior(lengthscale: np.ndarray, outputscale: float) -> float:
    """Log density of the BoTorch-like hyperparameter priors."""
    a, b = LENGTHSCALE_PRIOR
    return float(_gamma_logpdf(lengthscale, a, b).sum()) + _smoothed_box_logpdf(
        outputscale, *OUTPUTSCALE_BOX, _BOX_SIGMA
    )


def _log_prior_grad(theta: np.ndarray) -> np.ndarray:
    """Gradient of :func:`log_prior` with respect to ``theta = log(ell..., s)``."""
    a, b = LENGTHSCALE_PRIOR
    ell = np.exp(theta[:-1])
    s = float(np.exp(theta[-1]))
    g = np.empty_like(theta)
    g[:-1] = (a - 1.0) - b * ell  # d/dlog ell of (a-1) log ell - b ell
    lo, hi = OUTPUTSCALE_BOX
    dist = lo - s if s < lo else (s - hi if s > hi else 0.0)
    sign = -1.0 if s < lo else 1.0
    g[-1] = -(dist / _BOX_SIGMA**2) * sign * s if dist > 0 else 0.0
    return g


# ----------------------------------------------------------------------------- evidence
def evidence_and_gradient(
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
    st = laplace_map(K, C, counts, alpha0)
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
    _, r, h = _probit_terms(z)
    hp = _probit_h_prime(z, r, h)
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


# ----------------------------------------------------------------------------- surrogate
def merge_duplicates(
    Z: np.ndarray, pairs: np.ndarray, atol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge rows of ``Z`` equal within ``atol``; returns (unique Z, remapped pairs, index)."""
    if len(Z) == 0:
        return Z, pairs, np.zeros(0, dtype=np.int64)
    key = np.round(Z / atol).astype(np.int64) if atol > 0 else Z
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(first)  # keep first-appearance order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    idx = rank[inverse]
    return Z[first[order]], idx[pairs] if len(pairs) else pairs, idx


KappaSharpMode = Literal["off", "static", "adaptive"]


@dataclass
class _KSState:
    ema: float = 0.0
    steps: int = 0
    history: list[dict] = field(default_factory=list)


class GPSurrogate:
    """GP-Laplace preference surrogate with optional Adaptive KappaSharp.

    Parameters
    ----------
    kappasharp
        ``"off"`` (default), ``"static"`` (correction at every fit) or ``"adaptive"``
        (activated by the decisiveness rule); see :mod:`pbo_core.kappasharp`.
    lengthscale, outputscale
        Fixed hyperparameters; when both are given no hyperparameter fitting happens.
    fit_hyperparameters
        Maximise the Laplace evidence + priors at every fit (default True).
    max_opt_iter
        L-BFGS-B iterations per hyperparameter fit.
    merge_atol
        Items closer than this in every unit-cube input are merged.
    jitter
        Relative jitter for the kernel Cholesky when needed.

    Attributes
    ----------
    lengthscale_, outputscale_ : fitted hyperparameters
    f_map_ : MAP utilities of the merged training items
    Z_ : merged training inputs (unit cube)
    laplace_ : LaplaceState
    kappasharp_active_ : bool, whether the correction shaped this fit's MAP
    eta_ : float or None, the calibrated correction strength
    """

    def __init__(
        self,
        *,
        kappasharp: KappaSharpMode = "off",
        lengthscale: float | np.ndarray | None = None,
        outputscale: float | None = None,
        fit_hyperparameters: bool = True,
        max_opt_iter: int = 50,
        merge_atol: float = 1e-6,
        jitter: float = 1e-6,
    ) -> None:
        if kappasharp not in ("off", "static", "adaptive"):
            raise ValueError(
                f"kappasharp must be 'off', 'static' or 'adaptive', got {kappasharp!r}"
            )
        self.kappasharp = kappasharp
        self.lengthscale = lengthscale
        self.outputscale = outputscale
        self.fit_hyperparameters = fit_hyperparameters
        self.max_opt_iter = max_opt_iter
        self.merge_atol = merge_atol
        self.jitter = jitter
        self._ks = _KSState()

    # ------------------------------------------------------------------ fitting
    def _initial_theta(self, p: int) -> np.ndarray:
        prev = getattr(self, "theta_", None)
        if prev is not None and len(prev) == p + 1:
            return prev.copy()
        a, b = LENGTHSCALE_PRIOR
        ell0 = (a - 1.0) / b  # prior mode, as BoTorch initialises
        ell = (
            np.full(p, ell0)
            if self.lengthscale is None
            else np.broadcast_to(np.asarray(self.lengthscale, dtype=float), (p,))
        )
        s = 1.0 if self.outputscale is None else float(self.outputscale)
        return np.log(np.r_[ell, s])

    def fit(self, data: PreferenceData) -> GPSurrogate:
        """Merge duplicates, fit hyperparameters, find the MAP (and apply KappaSharp)."""
        schema = data.get_schema()
        self.encoder_ = InputEncoder.from_schema(schema)
        Z_all = self.encoder_(data.X) if data.n_items else np.zeros((0, self.encoder_.n_inputs))
        Z, pairs, item_index = merge_duplicates(Z_all, data.pairs, self.merge_atol)
        w, lo, counts = (
            aggregate_pairs(pairs[:, 0], pairs[:, 1], len(Z))
            if len(pairs)
            else (np.zeros(0, int), np.zeros(0, int), np.zeros(0))
        )
        n = len(Z)
        C = np.zeros((len(w), n))
        C[np.arange(len(w)), w] = 1.0
        C[np.arange(len(w)), lo] = -1.0
        p = Z.shape[1]
        theta = self._initial_theta(p)
        alpha0 = self._warm_alpha(item_index, n)
        fixed = not self.fit_hyperparameters or (
            self.lengthscale is not None and self.outputscale is not None
        )
        if not fixed and len(w):
            theta = self._optimise(theta, Z, C, counts, alpha0)
        ell = np.exp(theta[:-1])
        s = float(np.exp(theta[-1]))
        K = rbf_kernel(Z, Z, ell, s)
        st = laplace_map(K, C, counts, alpha0)
        self.theta_ = theta
        self.lengthscale_ = ell
        self.outputscale_ = s
        self.Z_ = Z
        self.C_ = C
        self.counts_ = counts
        self.K_ = K
        self.item_index_ = item_index
        self.laplace_ = st
        self.kappasharp_active_ = False
        self.eta_ = None
        self.decisiveness_ = None
        if self.kappasharp != "off" and len(w):
            from pbo_core.kappasharp import apply_kappasharp

            apply_kappasharp(self, data)
        self._finalise()
        self.n_features_in_ = data.X.shape[1]
        self._X_fit = data.X
        return self

    def _warm_alpha(self, item_index: np.ndarray, n: int) -> np.ndarray | None:
        """Previous ``alpha`` on the items that were already there (0 for new items)."""
        prev = getattr(self, "laplace_", None)
        prev_idx = getattr(self, "item_index_", None)
        if prev is None or prev_idx is None:
            return None
        k = min(len(prev_idx), len(item_index))
        a0 = np.zeros(n)
        a0[item_index[:k]] = prev.alpha[prev_idx[:k]]
        return a0

    def _optimise(
        self,
        theta0: np.ndarray,
        Z: np.ndarray,
        C: np.ndarray,
        counts: np.ndarray,
        alpha0: np.ndarray | None,
    ) -> np.ndarray:
        cache: dict[str, np.ndarray | None] = {"alpha": alpha0}

        def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
            ell = np.exp(theta[:-1])
            s = float(np.exp(theta[-1]))
            try:
                val, grad, st = evidence_and_gradient(theta, Z, C, counts, cache["alpha"])
            except (np.linalg.LinAlgError, FloatingPointError):
                return 1e10, np.zeros_like(theta)
            cache["alpha"] = st.alpha
            val += log_prior(ell, s)
            grad = grad + _log_prior_grad(theta)
            if not np.isfinite(val) or not np.all(np.isfinite(grad)):
                return 1e10, np.zeros_like(theta)
            return -val, -grad

        p = len(theta0) - 1
        # BoTorch's smoothed box prior (sigma = 0.01) is numerically a hard box: outside
        # [0.01, 100] it costs 0.5 (dist / 0.01)^2. Bounding the optimiser to the box
        # avoids line-search failures at its kinks and loses nothing.
        bounds = [tuple(np.log(LENGTHSCALE_BOUNDS))] * p + [tuple(np.log(OUTPUTSCALE_BOX))]
        theta0 = np.clip(theta0, [b[0] for b in bounds], [b[1] for b in bounds])
        res = minimize(
            fun,
            theta0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": self.max_opt_iter},
        )
        return res.x if np.all(np.isfinite(res.x)) else theta0

    def _finalise(self) -> None:
        """Quantities for prediction from the current MAP (and unaugmented Hessian)."""
        K = self.K_
        self.K_chol_ = cholesky_jitter(K, self.jitter)
        st = self.laplace_
        # alpha = K^-1 f (equals grad log p at the plain MAP; recomputed for KappaSharp MAPs)
        self.alpha_ = linalg.cho_solve((self.K_chol_, True), st.f, check_finite=False)
        self.f_map_ = st.f

    # ------------------------------------------------------------------ prediction
    def _check(self, X: np.ndarray) -> np.ndarray:
        fitted = getattr(self, "n_features_in_", None) if hasattr(self, "laplace_") else None
        return check_input(X, fitted, "GPSurrogate")

    def posterior_unit(
        self, Zq: np.ndarray, full_cov: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and covariance (or variance) at GP inputs ``Zq``."""
        Kq = rbf_kernel(Zq, self.Z_, self.lengthscale_, self.outputscale_)
        mean = Kq @ self.alpha_
        st = self.laplace_
        V = linalg.solve_triangular(st.B_chol, st.L @ Kq.T, lower=True, check_finite=False)
        if full_cov:
            cov = rbf_kernel(Zq, Zq, self.lengthscale_, self.outputscale_) - V.T @ V
            cov = 0.5 * (cov + cov.T)
            return mean, cov
        var = self.outputscale_ - np.einsum("ij,ij->j", V, V)
        return mean, np.maximum(var, 0.0)

    def posterior(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean ``(n,)`` and covariance ``(n, n)`` of the utilities of ``X``."""
        X = self._check(X)
        return self.posterior_unit(self.encoder_(X))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utility."""
        if X is getattr(self, "_X_fit", None):
            return self.f_map_[self.item_index_]
        X = self._check(X)
        Kq = rbf_kernel(self.encoder_(X), self.Z_, self.lengthscale_, self.outputscale_)
        return Kq @ self.alpha_

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray) -> np.ndarray:
        """Predictive ``P(a > b)`` for paired rows."""
        Xa, Xb = self._check(Xa), self._check(Xb)
        n = len(Xa)
        mean, cov = self.posterior_unit(self.encoder_(np.vstack([Xa, Xb])))
        md = mean[:n] - mean[n:]
        vd = np.diag(cov)[:n] + np.diag(cov)[n:] - 2.0 * cov[np.arange(n), n + np.arange(n)]
        return probit_preference(md, vd)

    def rank(self, X: np.ndarray) -> np.ndarray:
        """Competition ranks (1 = best)."""
        return competition_rank(self.predict(X))

    # ------------------------------------------------------------------ diagnostics
    def hessians(self) -> tuple[np.ndarray, np.ndarray]:
        """``(H_lik, H)``: likelihood Hessian ``W`` and posterior Hessian ``K^-1 + W``."""
        W = self.C_.T @ (self.laplace_.omega[:, None] * self.C_)
        K_inv = linalg.cho_solve((self.K_chol_, True), np.eye(len(self.K_)), check_finite=False)
        K_inv = 0.5 * (K_inv + K_inv.T)
        return W, K_inv + W
