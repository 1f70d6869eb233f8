"""The mixed (random-coefficients) logit on panel data, by simulated maximum likelihood.

Model
-----
Respondent ``n`` has their own coefficients ``beta_n``; alternative ``j`` of their choice
situation ``s`` has the utility of the conditional logit (:mod:`pbo_core.models.mnl`,
Eq. 1: attributes, alternative constants, case-specific variables), ``V_sj = z_sj^T
beta_n``. Every coefficient ``k`` is fixed (``beta_nk = b_k``; the constants and
case-specific terms by default) or random,

.. math::

    \\beta_{nk} = \\mu_k + \\sigma_k \\eta_{nk} \\;\\; (\\text{normal}), \\qquad
    \\beta_{nk} = \\pm\\exp(\\mu_k + \\sigma_k \\eta_{nk}) \\;\\; (\\text{log-normal}),
    \\qquad \\eta_n \\sim N(0, I),                                                 \\qquad (1)

(log-normal ``"ln"`` keeps a coefficient positive, ``"-ln"`` negative: a price). Given
``beta``, a respondent's choices are independent logits, and the *panel* likelihood
integrates their product over the population distribution (Revelt & Train 1998),

.. math::

    P_n(\\beta) = \\prod_{s \\in n} \\frac{e^{V_{s c_s}(\\beta)}}{\\sum_{j \\in C_s}
    e^{V_{sj}(\\beta)}}, \\qquad
    L_n(\\theta) = \\int P_n(\\beta) f(\\beta \\mid \\theta)\\, d\\beta
    \\approx \\frac1R \\sum_{r=1}^R P_n(\\beta_{nr}), \\qquad
    \\ell(\\theta) = \\sum_n \\log L_n.                                            \\qquad (2)

Draws
-----
``eta_nr = Phi^{-1}(u_nr)`` with ``u`` one scrambled Halton sequence in ``Q`` dimensions
(``Q`` random coefficients; :class:`scipy.stats.qmc.Halton` with ``scramble=True``, seeded
by ``random_state``) of ``N R`` points, respondent ``n`` taking the ``n``-th block of
``R`` consecutive points (Train 2009, Sec. 9.3.3). Everything is computed in logs:
``log P_n(beta_nr) = sum_s (V_sc - lse_s)`` with a per-situation log-sum-exp, and
``log L_n`` is a log-mean-exp over draws, so no value overflows on any input.

Gradient
--------
With the posterior weight of draw ``r``, ``omega_nr = P_n(beta_nr) / sum_r' P_n(beta_nr')``,

.. math::

    \\frac{\\partial \\log L_n}{\\partial \\theta} = \\sum_r \\omega_{nr}
    \\sum_{s \\in n} (z_{s c_s} - \\bar z_s(\\beta_{nr}))^\\top
    \\frac{\\partial \\beta_{nr}}{\\partial \\theta}, \\qquad
    \\bar z_s(\\beta) = \\sum_j P_s(j \\mid \\beta) z_{sj},                       \\qquad (3)

``d beta_k / d mu_k = 1`` and ``d beta_k / d sigma_k = eta_k`` for a normal coefficient,
``beta_k`` and ``beta_k eta_k`` for a log-normal one. One compiled kernel
(:func:`_panel_kernel`) evaluates (2) and every respondent's score (3) in one pass over
respondents and draws (no Python loop over respondents); respondents are independent, so
slices of them run on :func:`pbo_core.models.glm.kernel_threads` threads (the same
results).

Estimation
----------
BFGS (:func:`scipy.optimize.minimize`) on ``-l(theta) / N`` with the gradient (3), from the
conditional logit's maximum-likelihood estimate (:class:`~pbo_core.models.mnl.
ConditionalLogit`, ``alpha=0``; its design and its column names are this model's) and
small standard deviations; the initial inverse Hessian is the inverse BHHH matrix
(``sum_n g_n g_n^T``) at the start. ``sigma`` may turn negative on the way (the likelihood
does not tell ``sigma`` from ``-sigma``); it is reported as ``|sigma|`` with the draws'
sign flipped to match, so the stored model is exactly the fitted one.

Standard errors
---------------
``se_`` (classical): ``sqrt(diag(H^-1))``, ``H`` the Hessian of ``-l`` by central
differences of (3) (the BHHH matrix if that is not positive definite: ``se_method_``).
``robust_se_``: the sandwich ``H^-1 (sum_n g_n g_n^T) H^-1`` with the respondents' scores
(respondents are the independent units of the panel likelihood); ``cluster_se_``: the same
scaled by ``G/(G-1)`` (``G`` respondents), as a cluster-robust error by respondent. They
are computed on first use (:class:`LazyErrors`: ``2 P`` gradient evaluations that a fit
used only to predict, as in held-out scores, never pays).

Prediction
----------
A respondent seen in training is predicted with their *individual-level* distribution:
the population distribution conditioned on their choices (Revelt & Train 2000; Train 2009,
ch. 11), represented by their own draws ``beta_nr`` weighted by ``omega_nr``. Their
conditional mean ``E[beta | choices] = sum_r omega_nr beta_nr`` gives ``predict`` (the
utilities), and :meth:`MixedLogit.choice_probabilities` / :meth:`MixedLogit.prob_prefer`
average the logit over the weighted draws. A respondent not seen (or ``respondent=None``)
gets the population distribution: its mean (``mu``; ``exp(mu + sigma^2/2)`` for a
log-normal) for ``predict``, and the average over ``n_draws`` population draws for the
probabilities; their case-specific variables enter as in the conditional logit.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numba import njit
from scipy.optimize import minimize
from scipy.special import expit, logsumexp, ndtr, ndtri
from scipy.stats import qmc

from pbo_core.data import DataValidationError, PreferenceData, Schema
from pbo_core.models.base import (
    COUNT,
    NAMES,
    POSITIVE,
    RANDOM_STATE,
    Estimator,
    check_input,
    competition_rank,
)
from pbo_core.models.compiled import kernel_array
from pbo_core.models.glm import blas_single_thread, run_split
from pbo_core.models.mnl import DESIGN_CONSTRAINTS, ChoiceSets, ConditionalLogit, choice_sets
from pbo_core.models.solver import ConvergenceWarning

__all__ = [
    "DISTRIBUTIONS",
    "Errors",
    "LazyErrors",
    "MixedLogit",
    "PanelDesign",
    "halton_normal",
    "panel_design",
    "panel_loglik",
    "sandwich_errors",
]

#: Mixing distributions (Eq. 1): normal, log-normal (positive), log-normal (negative).
DISTRIBUTIONS: dict[str, int] = {"n": 0, "ln": 1, "-ln": 2}
#: Exponents of a log-normal coefficient are capped here (``exp(50)`` ~ 5e21), so a wild
#: BFGS trial point gives a finite, very poor likelihood instead of an overflow.
_MAX_EXP = 50.0


# ----------------------------------------------------------------------------- draws
def halton_normal(
    n_blocks: int, n_draws: int, dim: int, seed: int | np.random.Generator | None
) -> np.ndarray:
    """``(n_blocks, n_draws, dim)`` standard normal draws from one scrambled Halton
    sequence of ``n_blocks * n_draws`` points, block ``b`` its ``b``-th run of ``n_draws``
    consecutive points (one block per respondent)."""
    if dim == 0 or n_blocks * n_draws == 0:
        return np.zeros((n_blocks, n_draws, dim))
    u = qmc.Halton(d=dim, scramble=True, seed=seed).random(n_blocks * n_draws)
    u = np.clip(u, 1e-12, 1.0 - 1e-12)
    return ndtri(u).reshape(n_blocks, n_draws, dim)


# ----------------------------------------------------------------------------- panel
@dataclass(frozen=True)
class PanelDesign:
    """Choice situations grouped by respondent, rows grouped by situation.

    Attributes
    ----------
    Z : ndarray, shape (m, K)
        Design rows (the conditional logit's columns).
    start : ndarray, shape (S + 1,)
        Rows ``start[s] .. start[s+1]-1`` are situation ``s``.
    chosen : ndarray, shape (S,)
        Row of the chosen alternative of every situation.
    gstart : ndarray, shape (G + 1,)
        Situations ``gstart[g] .. gstart[g+1]-1`` are respondent ``g``'s.
    respondents : list
        The respondent of every ``g`` (``None``-free keys; without respondent ids, the
        situation number).
    """

    Z: np.ndarray
    start: np.ndarray
    chosen: np.ndarray
    gstart: np.ndarray
    respondents: list[Any]

    @property
    def n_respondents(self) -> int:
        """Number of respondents ``G``."""
        return len(self.gstart) - 1

    @property
    def n_situations(self) -> int:
        """Number of choice situations ``S``."""
        return len(self.chosen)


def panel_design(
    Z: np.ndarray, cs: ChoiceSets, respondent: np.ndarray | None, key: Any = None
) -> PanelDesign:
    """The situations ``cs`` (rows ``Z``) regrouped by ``respondent`` (one per situation;
    ``None``: every situation a respondent of its own); ``key`` maps an id to its key."""
    S = cs.n_situations
    if respondent is None:
        codes, uniq = np.arange(S), list(range(S))
    else:
        codes, uniq_arr = pd.factorize(pd.Series(respondent), sort=False)
        uniq = [key(r) if key is not None else r for r in uniq_arr.tolist()]
    order = np.argsort(codes, kind="stable")
    sizes = cs.sizes[order]
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = np.concatenate([np.arange(cs.start[s], cs.start[s + 1]) for s in order]) if S else []
    rows = np.asarray(rows, dtype=np.int64)
    offset = cs.chosen[order] - cs.start[:-1][order]
    counts = np.bincount(codes, minlength=len(uniq))
    gstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return PanelDesign(
        Z=kernel_array(Z[rows], np.float64),
        start=start,
        chosen=(start[:-1] + offset).astype(np.int64),
        gstart=gstart,
        respondents=uniq,
    )


@njit(cache=True, nogil=True)
def _panel_kernel(
    g0: int,
    g1: int,
    Z: np.ndarray,
    Zr: np.ndarray,
    start: np.ndarray,
    chosen: np.ndarray,
    gstart: np.ndarray,
    vfix: np.ndarray,
    dist: np.ndarray,
    mu: np.ndarray,
    sd: np.ndarray,
    eta: np.ndarray,
    max_exp: float,
    out_ll: np.ndarray,
    out_lr: np.ndarray,
    out_gk: np.ndarray,
    out_gmu: np.ndarray,
    out_gsd: np.ndarray,
) -> None:
    """Eq. 2 and the scores of Eq. 3 of respondents ``g0 .. g1-1`` (see the module doc).

    ``Zr`` ``(m, Q)``: the random columns of ``Z``; ``vfix`` ``(m,)``: every row's utility
    from the fixed coefficients (random columns left out); ``dist`` the random columns'
    distribution codes (:data:`DISTRIBUTIONS`), ``mu``, ``sd`` their parameters; ``eta``
    ``(G, R, Q)``. Outputs: ``out_ll`` ``(G,)`` ``log L_n``; ``out_lr`` ``(G, R)``
    ``log P_n(beta_nr)``; ``out_gk`` ``(G, K)`` the score of every column's coefficient
    taken as fixed (the fixed coefficients' and the normal means' scores); ``out_gmu``,
    ``out_gsd`` ``(G, Q)`` the scores of ``mu`` and ``sigma``.
    """
    R = eta.shape[1]
    Q = Zr.shape[1]
    K = Z.shape[1]
    max_rows = 0
    for g in range(g0, g1):
        max_rows = max(max_rows, start[gstart[g + 1]] - start[gstart[g]])
    P = np.empty((R, max_rows))
    e = np.empty(max_rows)
    grq = np.empty((R, Q))
    dmu = np.empty((R, Q))
    beta = np.empty(Q)
    gq = np.empty(Q)
    pbar = np.empty(max_rows)
    w = np.empty(R)
    for g in range(g0, g1):
        s0 = gstart[g]
        s1 = gstart[g + 1]
        r0 = start[s0]
        r1 = start[s1]
        for r in range(R):
            for q in range(Q):
                x = mu[q] + sd[q] * eta[g, r, q]
                if dist[q] == 0:
                    beta[q] = x
                    dmu[r, q] = 1.0
                else:
                    ex = np.exp(min(x, max_exp))
                    beta[q] = ex if dist[q] == 1 else -ex
                    dmu[r, q] = beta[q]
                gq[q] = 0.0
            lsum = 0.0
            for s in range(s0, s1):
                a = start[s]
                b = start[s + 1]
                c = chosen[s]
                vmax = -np.inf
                vc = 0.0
                for j in range(a, b):
                    u = vfix[j]
                    for q in range(Q):
                        u += Zr[j, q] * beta[q]
                    e[j - r0] = u
                    if j == c:
                        vc = u
                    if u > vmax:
                        vmax = u
                tot = 0.0
                for j in range(a, b):
                    ex = np.exp(e[j - r0] - vmax)
                    e[j - r0] = ex
                    tot += ex
                lsum += vc - vmax - np.log(tot)
                inv = 1.0 / tot
                for j in range(a, b):
                    p = e[j - r0] * inv
                    P[r, j - r0] = p
                    for q in range(Q):
                        gq[q] -= p * Zr[j, q]
                for q in range(Q):
                    gq[q] += Zr[c, q]
            out_lr[g, r] = lsum
            for q in range(Q):
                grq[r, q] = gq[q]
        # log-mean-exp over draws and the posterior weights of the draws
        m = -np.inf
        for r in range(R):
            m = max(m, out_lr[g, r])
        tot = 0.0
        for r in range(R):
            w[r] = np.exp(out_lr[g, r] - m)
            tot += w[r]
        out_ll[g] = m + np.log(tot) - np.log(R)
        for r in range(R):
            w[r] /= tot
        for q in range(Q):
            a1 = 0.0
            a2 = 0.0
            for r in range(R):
                t = w[r] * grq[r, q] * dmu[r, q]
                a1 += t
                a2 += t * eta[g, r, q]
            out_gmu[g, q] = a1
            out_gsd[g, q] = a2
        n = r1 - r0
        for i in range(n):
            pbar[i] = 0.0
        for r in range(R):
            wr = w[r]
            for i in range(n):
                pbar[i] += wr * P[r, i]
        for k in range(K):
            out_gk[g, k] = 0.0
        for s in range(s0, s1):
            c = chosen[s]
            for k in range(K):
                out_gk[g, k] += Z[c, k]
            for j in range(start[s], start[s + 1]):
                p = pbar[j - r0]
                for k in range(K):
                    out_gk[g, k] -= p * Z[j, k]


@dataclass(frozen=True)
class PanelFit:
    """Eq. 2 and Eq. 3 at one parameter vector: per respondent ``log L_n`` ``(G,)``, the
    draws' ``log P_n(beta_nr)`` ``(G, R)`` and the scores ``(G, P)`` (``theta``'s layout)."""

    ll: np.ndarray
    lr: np.ndarray
    scores: np.ndarray


def panel_loglik(
    design: PanelDesign,
    theta: np.ndarray,
    rcol: np.ndarray,
    dist: np.ndarray,
    eta: np.ndarray,
) -> PanelFit:
    """The simulated panel log-likelihood (2) and its scores (3) at ``theta``.

    ``theta`` is ``(K + Q,)``: entry ``k < K`` is column ``k``'s fixed coefficient, or
    ``mu`` when column ``k`` is random; entry ``K + q`` is ``sigma`` of random column
    ``rcol[q]``. ``eta`` ``(G, R, Q)`` are the respondents' standard normal draws."""
    Z = design.Z
    K = Z.shape[1]
    Q = len(rcol)
    theta = np.asarray(theta, dtype=float)
    b = theta[:K].copy()
    b[rcol] = 0.0
    vfix = Z @ b
    G, R = design.n_respondents, eta.shape[1]
    ll = np.empty(G)
    lr = np.empty((G, R))
    gk = np.empty((G, K))
    gmu = np.empty((G, Q))
    gsd = np.empty((G, Q))
    args = (
        Z,
        kernel_array(Z[:, rcol], np.float64),
        design.start,
        design.chosen,
        design.gstart,
        kernel_array(vfix, np.float64),
        kernel_array(dist, np.int64),
        kernel_array(theta[rcol], np.float64),
        kernel_array(theta[K:], np.float64),
        kernel_array(eta, np.float64),
        _MAX_EXP,
        ll,
        lr,
        gk,
        gmu,
        gsd,
    )
    # respondents are independent: slices on threads (the kernel releases the GIL)
    run_split(lambda sl: _panel_kernel(sl.start, sl.stop, *args), G, min_per_thread=64)
    scores = np.concatenate([gk, gsd], axis=1)
    scores[:, rcol] = gmu
    return PanelFit(ll, lr, scores)


def _coef_draws(theta: np.ndarray, K: int, rcol: np.ndarray, dist: np.ndarray, eta: np.ndarray):
    """``(..., R, K)`` coefficient draws ``beta`` of Eq. 1 for draws ``eta`` ``(..., R, Q)``."""
    shape = eta.shape[:-1]
    B = np.broadcast_to(theta[:K], (*shape, K)).copy()
    x = theta[rcol] + theta[K:] * eta
    e = np.exp(np.minimum(x, _MAX_EXP))
    B[..., rcol] = np.where(dist == 0, x, np.where(dist == 1, e, -e))
    return B


# ----------------------------------------------------------------------------- errors
@dataclass(frozen=True)
class Errors:
    """Covariances of an estimate ``x`` (module doc, Standard errors): classical
    (``method``: ``"hessian"``, or ``"bhhh"`` when the Hessian is not positive definite),
    robust (sandwich) and cluster-robust by respondent."""

    cov: np.ndarray
    robust: np.ndarray
    cluster: np.ndarray
    method: str


def sandwich_errors(
    gradient: Callable[[np.ndarray], np.ndarray], x: np.ndarray, scores: np.ndarray
) -> Errors:
    """The errors of the maximiser ``x`` of ``l``: ``H`` the Hessian of ``-l`` by central
    differences of ``gradient`` (of ``-l``), ``scores`` ``(G, P)`` the respondents'
    scores of ``l`` at ``x``."""
    G, P = scores.shape
    meat = scores.T @ scores
    H = np.empty((P, P))
    for k in range(P):
        h = 1e-5 * max(1.0, abs(float(x[k])))
        up, dn = x.copy(), x.copy()
        up[k] += h
        dn[k] -= h
        H[:, k] = (gradient(up) - gradient(dn)) / (2 * h)
    H = 0.5 * (H + H.T)
    method = "hessian"
    try:
        np.linalg.cholesky(H)
        cov = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        method = "bhhh"
        cov = np.linalg.pinv(meat, hermitian=True)
    robust = cov @ meat @ cov
    robust = 0.5 * (robust + robust.T)
    return Errors(0.5 * (cov + cov.T), robust, robust * (G / max(G - 1, 1)), method)


class LazyErrors:
    """Standard errors computed on first use (``2 P`` gradient evaluations a fit whose
    estimates only predict never pays): a subclass gives :meth:`_compute_errors`."""

    _errors_cache: Errors | None = None

    def _compute_errors(self) -> Errors:
        raise NotImplementedError

    def _errors(self) -> Errors:
        if self._errors_cache is None:
            self._errors_cache = self._compute_errors()
        return self._errors_cache

    @property
    def coef_cov_(self) -> np.ndarray:
        """Classical covariance (inverse Hessian of ``-l``)."""
        return self._errors().cov

    @property
    def robust_cov_(self) -> np.ndarray:
        """Sandwich covariance with the respondents' scores."""
        return self._errors().robust

    @property
    def cluster_cov_(self) -> np.ndarray:
        """The sandwich times ``G / (G - 1)``."""
        return self._errors().cluster

    @property
    def se_method_(self) -> str:
        """``"hessian"`` or ``"bhhh"``."""
        return self._errors().method

    @property
    def se_(self) -> np.ndarray:
        """Classical standard errors."""
        return np.sqrt(np.maximum(np.diag(self.coef_cov_), 0.0))

    @property
    def robust_se_(self) -> np.ndarray:
        """Robust (sandwich) standard errors."""
        return np.sqrt(np.maximum(np.diag(self.robust_cov_), 0.0))

    @property
    def cluster_se_(self) -> np.ndarray:
        """Cluster-robust standard errors by respondent."""
        return np.sqrt(np.maximum(np.diag(self.cluster_cov_), 0.0))


# ----------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class _Row:
    name: str
    label: str
    kind: str
    unit: str


class MixedLogit(LazyErrors, Estimator):
    """Mixed (random-coefficients) logit with the panel likelihood (module doc, Eqs. 1-3).

    Parameters
    ----------
    alternative, reference, case_specific, user_schema, exclude
        The conditional logit's design (:class:`~pbo_core.models.mnl.ConditionalLogit`):
        the alternative attribute, its reference level, the respondent features entering
        each non-reference alternative, their schema, attributes left out.
    random
        Which coefficients are random, and how: ``None`` (default) every attribute slope
        normal and the constants and case-specific terms fixed; a sequence of names
        (design columns such as ``"price"`` or ``"brand=b"``, or attributes, meaning all
        their columns), each normal; or a mapping ``name -> "n" | "ln" | "-ln"``
        (normal, log-normal, negative log-normal). ``()``: none (the conditional logit).
    n_draws
        Scrambled Halton draws per respondent ``R``.
    random_state
        Seed (or ``numpy.random.Generator``) of the Halton scrambling.
    max_iter, tol
        BFGS iterations and its tolerance on the gradient of ``-l / N`` (max norm).

    Attributes
    ----------
    coef_ : ndarray, shape (K + Q,)
        Fixed coefficients and means (``mu``, one per design column), then the ``Q``
        standard deviations ``sigma`` (``>= 0``).
    coef_cov_, robust_cov_, cluster_cov_ : ndarray, shape (K + Q, K + Q)
    se_, robust_se_, cluster_se_ : ndarray, shape (K + Q,)
        Computed on first use (:class:`LazyErrors`).
    random_columns_ : list of str
        Design columns with random coefficients; ``distributions_`` their codes.
    individual_coef_ : ndarray, shape (G, K)
        Every training respondent's conditional mean ``E[beta | choices]``.
    loglik_, loglik_null_, loglik_logit_, rho2_, rho2_bar_ : float
        ``loglik_logit_``: the conditional logit's log-likelihood (the start).
    n_situations_, n_respondents_, n_iter_ : int
    converged_ : bool
    se_method_ : str
        ``"hessian"`` or ``"bhhh"``.
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **DESIGN_CONSTRAINTS,
        "random": [NAMES, str, Mapping, None],
        "n_draws": [COUNT],
        "random_state": list(RANDOM_STATE),
        "max_iter": [COUNT],
        "tol": [POSITIVE],
    }

    def __init__(
        self,
        *,
        alternative: str | None = None,
        reference: str | None = None,
        case_specific: Sequence[str] = (),
        user_schema: Schema | None = None,
        exclude: Sequence[str] = (),
        random: Sequence[str] | Mapping[str, str] | None = None,
        n_draws: int = 200,
        random_state: int | np.random.Generator | None = 0,
        max_iter: int = 500,
        tol: float = 1e-6,
    ) -> None:
        self.alternative = alternative
        self.reference = reference
        self.case_specific = case_specific
        self.user_schema = user_schema
        self.exclude = exclude
        self.random = random
        self.n_draws = n_draws
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol

    # ------------------------------------------------------------------ design
    def _random_spec(self, logit: ConditionalLogit, source: str) -> tuple[np.ndarray, np.ndarray]:
        """The random columns (indices) and their distribution codes."""
        names = logit.column_names_
        kinds = logit.column_kinds_
        if self.random is None:
            spec = {n: "n" for n, k in zip(names, kinds, strict=True) if k == "attribute"}
        elif isinstance(self.random, Mapping):
            spec = dict(self.random)
        elif isinstance(self.random, str):
            spec = {self.random: "n"}
        else:
            spec = {n: "n" for n in self.random}
        attr_of = {c.name: f.name for f, c in logit.attribute_columns_}
        cols: dict[int, int] = {}
        for name, how in spec.items():
            if how not in DISTRIBUTIONS:
                raise ValueError(
                    f"random coefficient {name!r}: distribution {how!r} is not one of "
                    f"{list(DISTRIBUTIONS)}"
                )
            hit = [j for j, n in enumerate(names) if n == name or attr_of.get(n) == name]
            if not hit:
                raise DataValidationError(
                    f"{source}: random coefficient {name!r} is not a column of the model ({names})"
                )
            for j in hit:
                cols[j] = DISTRIBUTIONS[how]
        order = sorted(cols)
        return np.array(order, dtype=np.int64), np.array([cols[j] for j in order], dtype=np.int64)

    def _logit(self) -> ConditionalLogit:
        return ConditionalLogit(
            alternative=self.alternative,
            reference=self.reference,
            case_specific=self.case_specific,
            user_schema=self.user_schema,
            exclude=self.exclude,
            alpha=0.0,
        )

    # ------------------------------------------------------------------ fit
    def fit(self, data: PreferenceData) -> MixedLogit:
        """Estimate Eq. 2 on the choice situations of ``data``, grouped by respondent."""
        self._validate_params()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a separable start is fine
            logit = self._logit().fit(data)
        cs = choice_sets(data)
        Z = logit.situation_rows(data, cs)
        resp = data.respondent[cs.pair] if data.respondent is not None else None
        design = panel_design(Z, cs, resp, ConditionalLogit._key)
        rcol, dist = self._random_spec(logit, data.source)
        K, Q, G = Z.shape[1], len(rcol), design.n_respondents
        R = int(self.n_draws) if Q else 1
        rng = self.random_state
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        eta = halton_normal(G, R, Q, rng)
        theta0 = self._start(logit, rcol, dist)

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            fit = panel_loglik(design, theta, rcol, dist, eta)
            return -float(fit.ll.sum()) / G, -fit.scores.sum(axis=0) / G

        first = panel_loglik(design, theta0, rcol, dist, eta)
        opg = first.scores.T @ first.scores / G
        try:
            h0 = np.linalg.inv(opg + 1e-8 * np.trace(opg) / len(opg) * np.eye(len(opg)))
            h0 = 0.5 * (h0 + h0.T)
            np.linalg.cholesky(h0)
        except np.linalg.LinAlgError:
            h0 = np.eye(len(theta0))
        # small dense algebra (BFGS's P x P updates): BLAS threads would only oversubscribe
        with np.errstate(over="ignore", invalid="ignore"), blas_single_thread():
            res = minimize(
                objective,
                theta0,
                jac=True,
                method="BFGS",
                options={"gtol": float(self.tol), "maxiter": int(self.max_iter), "hess_inv0": h0},
            )
        theta = np.asarray(res.x, dtype=float)
        final = panel_loglik(design, theta, rcol, dist, eta)
        gmax = float(np.abs(final.scores.sum(axis=0)).max()) / G
        self.converged_ = bool(res.success or gmax <= 10 * float(self.tol))
        if not self.converged_:
            warnings.warn(
                f"mixed logit: BFGS stopped after {res.nit} iterations with a gradient of "
                f"{gmax:.2g} per respondent ({res.message}); raise max_iter or n_draws, or "
                "make fewer coefficients random",
                ConvergenceWarning,
                stacklevel=2,
            )
        # sigma's sign is not identified: report |sigma| with the draws flipped to match
        neg = theta[K:] < 0
        if neg.any():
            theta[K:] = np.abs(theta[K:])
            eta = eta.copy()
            eta[:, :, neg] *= -1.0
            final = panel_loglik(design, theta, rcol, dist, eta)
        self._errors_cache = None
        self._panel = (design, final.scores)
        # the fitted model
        self.coef_ = theta
        self.n_iter_ = int(res.nit)
        self.random_columns_ = [logit.column_names_[j] for j in rcol]
        self.distributions_ = [next(k for k, v in DISTRIBUTIONS.items() if v == d) for d in dist]
        self.loglik_ = float(final.ll.sum())
        self.loglik_logit_ = float(logit.loglik_)
        self.loglik_null_ = float(-np.log(cs.sizes).sum())
        null, P = self.loglik_null_, len(theta)
        self.rho2_ = 1.0 - self.loglik_ / null if null < 0 else float("nan")
        self.rho2_bar_ = 1.0 - (self.loglik_ - P) / null if null < 0 else float("nan")
        self.n_situations_ = cs.n_situations
        self.n_respondents_ = G if resp is not None else 0
        self.n_features_in_ = data.X.shape[1]
        self.schema_ = data.get_schema()
        self.logit_ = logit
        self._rcol, self._dist = rcol, dist
        self._K = K
        # individual-level distributions: every respondent's draws and their weights
        lr = final.lr
        w = np.exp(lr - lr.max(axis=1, keepdims=True))
        self.draw_weights_ = w / w.sum(axis=1, keepdims=True)
        self.draws_ = eta
        B = _coef_draws(theta, K, rcol, dist, eta)
        self.individual_coef_ = np.einsum("gr,grk->gk", self.draw_weights_, B)
        self._index = {r: g for g, r in enumerate(design.respondents)} if resp is not None else {}
        self.population_draws_ = halton_normal(1, int(self.n_draws) if Q else 1, Q, rng)[0]
        return self

    def _start(self, logit: ConditionalLogit, rcol: np.ndarray, dist: np.ndarray) -> np.ndarray:
        """The logit's estimate as the means, small standard deviations (module doc)."""
        b = np.where(np.isfinite(logit.coef_), logit.coef_, 0.0).astype(float)
        typical = 1.0 / logit.scale_  # one typical difference of the column moves V by 1
        sd = np.empty(len(rcol))
        for q, (j, d) in enumerate(zip(rcol.tolist(), dist.tolist(), strict=True)):
            if d == 0:
                sd[q] = 0.1 * max(abs(b[j]), typical[j])
            else:  # log-normal: mu = log |b| on the coefficient's side
                mag = b[j] if d == 1 else -b[j]
                b[j] = np.log(mag if mag > 0 else 0.1 * typical[j])
                sd[q] = 0.5
        return np.concatenate([b, sd])

    def _compute_errors(self) -> Errors:
        self._require_fitted()
        design, scores = self._panel
        rcol, dist, eta = self._rcol, self._dist, self.draws_

        def gradient(theta: np.ndarray) -> np.ndarray:
            return -panel_loglik(design, theta, rcol, dist, eta).scores.sum(axis=0)

        return sandwich_errors(gradient, self.coef_, scores)

    # ------------------------------------------------------------------ prediction
    def _require_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise RuntimeError("MixedLogit is not fitted; call fit(data) first")

    def _design(self, X: np.ndarray, respondent: Any) -> np.ndarray:
        self._require_fitted()
        X = check_input(X, self.n_features_in_, type(self).__name__)
        return self.logit_._design_for(X, respondent)

    def _who(self, respondent: Any) -> int | None:
        if respondent is None:
            return None
        return self._index.get(ConditionalLogit._key(respondent))

    def coef_draws(self, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The coefficient draws ``(R, K)`` of ``respondent``'s distribution and their
        weights ``(R,)``: their own draws weighted by their choices (seen in training),
        or the population draws with equal weights (module doc, Prediction)."""
        self._require_fitted()
        g = self._who(respondent)
        eta = self.population_draws_ if g is None else self.draws_[g]
        B = _coef_draws(self.coef_, self._K, self._rcol, self._dist, eta)
        w = np.full(len(B), 1.0 / len(B)) if g is None else self.draw_weights_[g]
        return B, w

    def coef_mean(self, respondent: Any = None) -> np.ndarray:
        """``(K,)`` the respondent's conditional mean coefficients (seen in training), or
        the population means (``mu``; ``+-exp(mu + sigma^2/2)`` for a log-normal)."""
        self._require_fitted()
        g = self._who(respondent)
        if g is not None:
            return self.individual_coef_[g]
        b = self.coef_[: self._K].copy()
        mu, sd = self.coef_[self._rcol], self.coef_[self._K :]
        e = np.exp(np.minimum(mu + 0.5 * sd * sd, _MAX_EXP))
        b[self._rcol] = np.where(self._dist == 0, mu, np.where(self._dist == 1, e, -e))
        return b

    def predict(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Utilities ``(n,)`` of items ``X`` at ``respondent``'s mean coefficients
        (:meth:`coef_mean`)."""
        return self._design(X, respondent) @ self.coef_mean(respondent)

    def posterior(self, X: np.ndarray, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean ``(n,)`` and covariance ``(n, n)`` of the utilities of ``X`` over
        ``respondent``'s coefficient distribution (their weighted draws)."""
        D = self._design(X, respondent)
        B, w = self.coef_draws(respondent)
        m = w @ B
        C = (B - m).T @ ((B - m) * w[:, None])
        cov = D @ C @ D.T
        return D @ self.coef_mean(respondent), 0.5 * (cov + cov.T)

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray, respondent: Any = None) -> np.ndarray:
        """``P(a > b)`` ``(n,)`` of paired rows: the binary logit averaged over
        ``respondent``'s weighted coefficient draws."""
        d = self._design(Xa, respondent) - self._design(Xb, respondent)
        B, w = self.coef_draws(respondent)
        return expit(d @ B.T) @ w

    def choice_probabilities(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Choice probabilities ``(n,)`` among the items ``X`` offered together: the
        logit averaged over ``respondent``'s weighted coefficient draws."""
        V = self._design(X, respondent) @ self.coef_draws(respondent)[0].T  # (n, R)
        w = self.coef_draws(respondent)[1]
        logp = V - logsumexp(V, axis=0, keepdims=True)
        return np.exp(logp) @ w

    def rank(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Competition ranks (1 = best) by :meth:`predict`."""
        return competition_rank(self.predict(X, respondent))

    # ------------------------------------------------------------------ explanation
    def _rows(self) -> list[_Row]:
        logit = self.logit_
        table = logit.coef_table()
        random = dict(zip(self._rcol.tolist(), self._dist.tolist(), strict=True))
        out = []
        for j, row in enumerate(table.itertuples()):
            d = random.get(j)
            if d is None:
                out.append(_Row(row.name, row.feature, row.kind, row.unit))
            elif d == 0:
                out.append(_Row(row.name, f"{row.feature}: mean", "mean", row.unit))
            else:
                side = "" if d == 1 else ", negative"
                label = f"{row.feature}: mean of log (log-normal{side})"
                out.append(_Row(row.name, label, "mean of log", ""))
        for j, d in random.items():
            row = table.iloc[j]
            if d == 0:
                out.append(
                    _Row(f"sd.{row['name']}", f"{row['feature']}: s.d.", "s.d.", row["unit"])
                )
            else:
                label = f"{row['feature']}: s.d. of log"
                out.append(_Row(f"sd.{row['name']}", label, "s.d. of log", ""))
        return out

    def coef_table(self, respondent: Any = None, se: str = "cluster") -> pd.DataFrame:
        """One row per parameter: ``name`` (a random coefficient's s.d. is ``sd.<name>``),
        ``feature`` (label), ``kind`` (``attribute``, ``constant``, ``case-specific`` for a
        fixed coefficient; ``mean`` / ``s.d.`` for a normal one, ``mean of log`` / ``s.d. of
        log`` for a log-normal one), ``coef``, ``se`` (classical), ``robust_se``,
        ``cluster_se``, ``z`` and ``p_value`` (from ``se``: ``"cluster"`` by respondent,
        ``"robust"`` or ``"classical"``), ``unit``. ``respondent`` is accepted for the
        common signature; the table is the population's."""
        self._require_fitted()
        use = {"cluster": self.cluster_se_, "robust": self.robust_se_, "classical": self.se_}[se]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(use > 0, self.coef_ / use, np.nan)
        rows = self._rows()
        return pd.DataFrame(
            {
                "name": [r.name for r in rows],
                "feature": [r.label for r in rows],
                "kind": [r.kind for r in rows],
                "coef": self.coef_,
                "se": self.se_,
                "robust_se": self.robust_se_,
                "cluster_se": self.cluster_se_,
                "z": z,
                "p_value": 2.0 * ndtr(-np.abs(z)),
                "unit": [r.unit for r in rows],
            }
        )

    def explain(self, respondent: Any = None) -> pd.DataFrame:
        """The model's explanation: its coefficient table (:meth:`coef_table`)."""
        return self.coef_table(respondent)

    def fit_statistics(self) -> dict[str, Any]:
        """The conditional logit's statistics (simulated log-likelihood, null, rho^2,
        rho-bar^2, sizes, ``alpha`` 0, ``converged``) plus ``n_draws``, ``n_random``,
        ``draws`` (their kind), ``loglik_logit`` (the fixed-coefficient logit's), ``n_iter``
        and ``se_method``."""
        self._require_fitted()
        return {
            "loglik": self.loglik_,
            "loglik_null": self.loglik_null_,
            "rho2": self.rho2_,
            "rho2_bar": self.rho2_bar_,
            "n_parameters": len(self.coef_),
            "n_choices": self.n_situations_,
            "n_respondents": self.n_respondents_,
            "aic": 2.0 * len(self.coef_) - 2.0 * self.loglik_,
            "bic": len(self.coef_) * float(np.log(self.n_situations_)) - 2.0 * self.loglik_,
            "penalty": 0.0,
            "penalty_reason": "",
            "alpha": 0.0,
            "converged": self.converged_,
            "n_draws": int(self.draws_.shape[1]),
            "n_random": len(self._rcol),
            "draws": "scrambled Halton",
            "loglik_logit": self.loglik_logit_,
            "n_iter": self.n_iter_,
            "se_method": self.se_method_,
        }
