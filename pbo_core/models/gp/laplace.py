"""GP-probit Laplace core: kernel, input encoding, MAP by Newton, evidence and gradient.

The model and the algebra are described in :mod:`pbo_core.models.gp` (Chu & Ghahramani
2005; Rasmussen & Williams 2006, Alg. 3.1/5.1 generalised to a non-diagonal ``W``). This
module holds the numerical pieces shared by :class:`~pbo_core.models.gp.GPSurrogate` and
KappaSharp (:mod:`pbo_core.models.gp.kappasharp`): the ARD RBF kernel on unit-cube inputs,
:func:`laplace_map` (optionally with an added diagonal prior precision), the unaugmented
:func:`state_at` a given MAP, the Laplace evidence with its exact gradient, BoTorch's
hyperparameter priors and the merging of duplicate items.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg
from scipy.special import gammaln

from pbo_core.data import Schema
from pbo_core.models.probit import clamped_probit_terms, probit_h_prime
from pbo_core.models.solver import NewtonStep, newton_minimize

_INV_SQRT2 = 1.0 / np.sqrt(2.0)

#: BoTorch PairwiseGP defaults.
LENGTHSCALE_PRIOR = (2.4, 2.7)  # Gamma(concentration, rate)
OUTPUTSCALE_BOX = (0.01, 100.0)  # smoothed-box prior support
LENGTHSCALE_BOUNDS = (1e-4, 1e4)
_BOX_SIGMA = 0.01
#: BoTorch's ``PairwiseProbitLikelihood._zlim``: the probit argument clamp (since 0.6).
BOTORCH_ZLIM = 3.0


@dataclass(frozen=True)
class HyperPriors:
    """Hyperparameter priors of the GP (BoTorch ``PairwiseGP``'s defaults of one version).

    Attributes
    ----------
    lengthscale
        ``(concentration, rate)`` of the Gamma prior of every lengthscale.
    outputscale_box
        Support ``(lo, hi)`` of the smoothed-box prior of the outputscale (``sigma`` 0.01).
    outputscale0
        Starting outputscale: BoTorch's ``ScaleKernel`` starts at ``softplus(0) = log 2``.
    """

    lengthscale: tuple[float, float]
    outputscale_box: tuple[float, float]
    outputscale0: float = float(np.log(2.0))

    @property
    def lengthscale_mode(self) -> float:
        """Mode ``(a - 1) / b`` of the Gamma prior, where BoTorch starts the lengthscales."""
        a, b = self.lengthscale
        return (a - 1.0) / b


#: ``"current"``: the installed BoTorch's (0.18) defaults; ``"0.6"``: BoTorch 0.6.x's,
#: read from ``botorch/models/pairwise_gp.py`` at ``v0.6.0``-``v0.6.3`` (the KappaSharp
#: paper's stack; see docs/fidelity.md), lengthscale ``Gamma(1.2, 0.5)`` starting at its
#: mode 0.4, outputscale ``SmoothedBox(1, 4)``.
PRIORS = {
    "current": HyperPriors(LENGTHSCALE_PRIOR, OUTPUTSCALE_BOX),
    "0.6": HyperPriors((1.2, 0.5), (1.0, 4.0)),
}


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
@dataclass
class LaplaceState:
    """The Laplace fit of a GP on merged comparisons (all quantities at the MAP).

    ``L`` is an ``(r, n)`` factor of the likelihood Hessian, ``L^T L = W``, ``r = rank W``
    (item space):
    every quantity the prediction needs, ``L^T B^-1 L = W (I + K W)^-1``, and
    ``log|B| = log|I + K W|`` are the same as with the ``(M, n)`` comparison-space factor
    ``diag(sqrt(omega)) C``, but ``B`` is at most ``n x n`` however many comparisons there are.
    """

    f: np.ndarray  # MAP utilities (n,)
    alpha: np.ndarray  # K^-1 f (n,) (= grad log p at the MAP of the plain problem)
    grad_loglik: np.ndarray  # (n,)
    omega: np.ndarray  # (M,) comparison weights, W = C^T diag(omega) C
    L: np.ndarray  # (r, n) with L^T L = W, r = rank W <= n
    B_chol: np.ndarray  # lower Cholesky of I + L K L^T (r, r)
    loglik: float
    log_evidence: float
    n_iter: int  # accepted Newton steps of the MAP (0 for a state at a given f)
    W: np.ndarray | None = None  # (n, n) likelihood Hessian C^T diag(omega) C
    converged: bool = True  # the MAP met its tolerance within max_iter (else warned)


def incidence_pairs(C: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(winner, loser)`` columns of an incidence matrix, or ``None`` if ``C`` is not one.

    An incidence row holds exactly one ``+1`` (winner) and one ``-1`` (loser).
    """
    if C.shape[0] == 0 or C.shape[1] < 2:
        return None
    w = np.argmax(C, axis=1)
    lo = np.argmin(C, axis=1)
    rows = np.arange(C.shape[0])
    if (
        np.count_nonzero(C) != 2 * C.shape[0]
        or not np.all(C[rows, w] == 1.0)
        or not np.all(C[rows, lo] == -1.0)
    ):
        return None
    return w, lo


def _pair_ops(C: np.ndarray, pairs: tuple[np.ndarray, np.ndarray] | None):
    """``f -> C f`` and ``v -> C^T v``: O(M) from the pairs of an incidence ``C``."""
    if pairs is None:
        return (lambda f: C @ f), (lambda v: C.T @ v)
    w, lo = pairs
    n = C.shape[1]
    return (
        lambda f: f[w] - f[lo],
        lambda v: np.bincount(w, v, minlength=n) - np.bincount(lo, v, minlength=n),
    )


def comparison_laplacian(
    C: np.ndarray, omega: np.ndarray, pairs: tuple[np.ndarray, np.ndarray] | None
) -> np.ndarray:
    """``W = C^T diag(omega) C`` (n x n); O(M + n^2) from the pairs of an incidence ``C``."""
    n = C.shape[1]
    if pairs is None:
        W = (C.T * omega) @ C
    else:
        w, lo = pairs
        off = np.bincount(w * n + lo, weights=omega, minlength=n * n).reshape(n, n)
        W = -(off + off.T)
        W.flat[:: n + 1] = np.bincount(w, omega, minlength=n) + np.bincount(lo, omega, minlength=n)
    return 0.5 * (W + W.T)


def laplacian_factor(W: np.ndarray) -> np.ndarray:
    """``(r, n)`` matrix ``L`` with ``L^T L = W`` for a symmetric PSD ``W`` of rank ``r``.

    Pivoted Cholesky (LAPACK ``pstrf``: ``P^T W P = U^T U``, stopping at the numerical
    rank), so a graph Laplacian needs no regularisation; eigendecomposition as fallback.
    """
    n = W.shape[0]
    c, piv, rank, info = linalg.lapack.dpstrf(W, lower=0)
    if info < 0:
        lam, U = linalg.eigh(W, check_finite=False)
        return np.sqrt(np.maximum(lam, 0.0))[:, None] * U.T
    if rank == 0:
        return np.zeros((1, n))
    L = np.empty((rank, n))
    L[:, piv - 1] = np.triu(c[:rank])
    return L


def _factor_b(W: np.ndarray, K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``L`` (``L^T L = W``) and the Cholesky of ``B = I + L K L^T`` (at most ``n x n``)."""
    L = laplacian_factor(W)
    B = (L @ K) @ L.T
    B.flat[:: B.shape[0] + 1] += 1.0
    return L, cholesky_jitter(0.5 * (B + B.T))


def laplace_map(
    K: np.ndarray,
    C: np.ndarray,
    counts: np.ndarray,
    alpha0: np.ndarray | None = None,
    *,
    extra_precision: np.ndarray | None = None,
    zlim: float | None = None,
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
    zlim
        BoTorch's probit clamp (:data:`BOTORCH_ZLIM`): gradient and curvature at the
        clamped argument, log likelihood (P.1) of
        :func:`~pbo_core.models.probit.clamped_probit_terms`; ``None``: no clamp.
    tol, max_iter
        Stop when a Newton step changes no utility by more than ``tol``; at most
        ``max_iter`` steps (then ``converged`` is False and a
        :class:`~pbo_core.models.solver.ConvergenceWarning` is raised).

    Notes
    -----
    The loop is the one solver's, :func:`~pbo_core.models.solver.newton_minimize` with the
    rule ``"step"`` (on ``max |f_new - f|`` of the full step) and a non-increase line
    search with relative slack ``1e-13``, halving ``t`` down to ``1e-6``; the state is the
    pair ``(alpha, f)``, moved along ``(alpha_new - alpha, K alpha_new - f)``.

    Every Newton step factorises the item-space ``B = I + L K L^T`` (at most ``n x n``)
    with ``L^T L = W`` (:class:`LaplaceState`): O(M n + n^3) per step instead of the
    O(M^3) of the comparison-space ``B``.
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
    pairs = incidence_pairs(C)
    cf, ctv = _pair_ops(C, pairs)

    def value(x: tuple[np.ndarray, np.ndarray]) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
        alpha_, f_ = x
        z = cf(f_) * _INV_SQRT2
        lp, r, h, _ = clamped_probit_terms(z, zlim)
        return float(0.5 * alpha_ @ f_ - counts @ lp), (r, h)

    def newton(x: tuple[np.ndarray, np.ndarray], rh: tuple[np.ndarray, np.ndarray]) -> NewtonStep:
        alpha_, f_ = x
        r, h = rh
        omega = counts * h * 0.5
        W = comparison_laplacian(C, omega, pairs)
        L, B_chol = _factor_b(W, Kp)
        grad_ll = ctv(counts * r) * _INV_SQRT2
        a = W @ f_ + grad_ll
        Ka = Kp @ a
        alpha_new = a - L.T @ linalg.cho_solve((B_chol, True), L @ Ka, check_finite=False)
        d_f = Kp @ alpha_new - f_
        return NewtonStep(
            (alpha_new - alpha_, d_f),
            size=float(np.max(np.abs(d_f), initial=0.0)),
            info=(omega, W, L, B_chol, grad_ll),
        )

    def move(
        x: tuple[np.ndarray, np.ndarray], d: tuple[np.ndarray, np.ndarray], t: float
    ) -> tuple[np.ndarray, np.ndarray]:
        return x[0] + t * d[0], x[1] + t * d[1]

    # near the MAP a Newton step changes Psi by less than its rounding error, so the
    # acceptance test allows that much slack (otherwise rounding can reject the final
    # quadratically convergent steps and stall the MAP ~1e-7 short of stationarity)
    res = newton_minimize(
        value,
        newton,
        (alpha, f),
        max_iter=max_iter,
        tol=tol,
        stop="step",
        accept="nonincrease",
        slack=1e-13,
        min_step=1e-6,
        move=move,
        what="GP-probit MAP",
    )
    alpha, f = res.x
    assert res.step is not None  # rule "step" computes a step at the returned point
    omega, W, L, B_chol, grad_ll = res.step.info
    z = cf(f) * _INV_SQRT2
    loglik = float(counts @ clamped_probit_terms(z, zlim)[0])
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
        n_iter=res.n_iter - res.stalled,  # accepted steps
        W=W,
        converged=res.converged,
    )


# ----------------------------------------------------------------------------- priors
def state_at(
    K: np.ndarray,
    C: np.ndarray,
    counts: np.ndarray,
    f: np.ndarray,
    zlim: float | None = None,
) -> LaplaceState:
    """Unaugmented Laplace quantities (curvature, ``B``) of the plain GP at utilities ``f``.

    ``zlim``: the probit clamp of :func:`laplace_map`.
    """
    z = (C @ f) * _INV_SQRT2
    lp, r, h, _ = clamped_probit_terms(z, zlim)
    omega = counts * h * 0.5
    W = comparison_laplacian(C, omega, incidence_pairs(C))
    L, B_chol = _factor_b(W, K)
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
        W=W,
    )


def _gamma_logpdf(x: np.ndarray, a: float, b: float) -> np.ndarray:
    return a * np.log(b) - gammaln(a) + (a - 1.0) * np.log(x) - b * x


def _smoothed_box_logpdf(x: float, lo: float, hi: float, sigma: float) -> float:
    dist = max(lo - x, 0.0, x - hi)
    return -np.log(hi - lo + np.sqrt(2 * np.pi) * sigma) - 0.5 * (dist / sigma) ** 2


def log_prior(
    lengthscale: np.ndarray,
    outputscale: float,
    priors: HyperPriors = PRIORS["current"],
    input_span: np.ndarray | float = 1.0,
) -> float:
    r"""Log density of the BoTorch-like hyperparameter priors.

    Parameters
    ----------
    lengthscale, outputscale
        Hyperparameters; the lengthscales in unit-cube units.
    priors
        The priors (:data:`PRIORS`).
    input_span
        Width of each input in the units the Gamma prior is stated in: 1 (the prior is on
        unit-cube lengthscales, BoTorch with input normalisation) or the box widths (the
        prior is on raw-input lengthscales ``span * ell``, BoTorch 0.6 without a
        transform). ``Gamma(a, b)`` on ``span * ell`` is ``Gamma(a, b span)`` on ``ell``:

        .. math:: \log p(\ell) = \sum_d \log \mathrm{Gamma}(\ell_d;\, a,\, b\,w_d)
                  + \log \mathrm{SmoothedBox}(s;\, lo,\, hi,\, 0.01).  \qquad (L.1)
    """
    a, b = priors.lengthscale
    return float(
        _gamma_logpdf(lengthscale, a, b * np.asarray(input_span, dtype=float)).sum()
    ) + _smoothed_box_logpdf(outputscale, *priors.outputscale_box, _BOX_SIGMA)


def log_prior_grad(
    theta: np.ndarray,
    priors: HyperPriors = PRIORS["current"],
    input_span: np.ndarray | float = 1.0,
) -> np.ndarray:
    """Gradient of (L.1) (:func:`log_prior`) with respect to ``theta = log(ell..., s)``."""
    a, b = priors.lengthscale
    ell = np.exp(theta[:-1])
    s = float(np.exp(theta[-1]))
    g = np.empty_like(theta)
    # d/dlog ell of (a-1) log ell - b w ell
    g[:-1] = (a - 1.0) - b * np.asarray(input_span, dtype=float) * ell
    lo, hi = priors.outputscale_box
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
    zlim: float | None = None,
) -> tuple[float, np.ndarray, LaplaceState]:
    """Laplace log evidence and its exact gradient with respect to ``theta``.

    ``theta = (log ell_1, ..., log ell_p, log s)``. The gradient includes the implicit
    dependence of the MAP on ``theta``. With the probit clamp ``zlim`` the evidence is
    that of the clamped likelihood (P.1), whose curvature is constant where clamped.
    """
    ell = np.exp(theta[:-1])
    s = float(np.exp(theta[-1]))
    K = rbf_kernel(Z, Z, ell, s)
    st = laplace_map(K, C, counts, alpha0, zlim=zlim)
    b = st.grad_loglik
    Lm = st.L
    # R1 = L^T B^-1 L  (n x n)
    BinvL = linalg.cho_solve((st.B_chol, True), Lm, check_finite=False)
    R1 = Lm.T @ BinvL
    # variance of each comparison's difference under the posterior: the diagonal of
    # C S C^T with S = K - K R1 K the Laplace covariance (n x n; never M x M)
    S = K - K @ R1 @ K
    pairs = incidence_pairs(C)
    cf, ctv = _pair_ops(C, pairs)
    if pairs is None:
        v = np.einsum("ij,ij->i", C @ S, C)
    else:
        w, lo = pairs
        v = S[w, w] + S[lo, lo] - 2.0 * S[w, lo]
    z = cf(st.f) * _INV_SQRT2
    _, r, h, clamped = clamped_probit_terms(z, zlim)
    hp = np.where(clamped, 0.0, probit_h_prime(z, r, h))
    s2 = -0.5 * ctv(counts * hp * 0.5 * _INV_SQRT2 * v)
    if clamped.any():
        # the MAP moves with theta through the Hessian of the clamped log likelihood
        # (P.1), which is 0 where clamped (W keeps h(z_c) there, as BoTorch's does)
        W_true = comparison_laplacian(C, np.where(clamped, 0.0, counts * h * 0.5), pairs)
        Lt, Bt = _factor_b(W_true, K)
        u = s2 - Lt.T @ linalg.cho_solve((Bt, True), Lt @ (K @ s2), check_finite=False)
    else:
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
