"""Penalised comparison GLMs: links, the batched Newton solver, padding, CV strengths.

The linear-utility baselines (:mod:`pbo_core.models.linear`), the item-utility baselines
(:mod:`pbo_core.models.bradley_terry`) and the linear-leaf trees
(:mod:`pbo_core.models.linear_leaves`) all fit the same model family. A comparison
"``w`` beats ``l``" with difference row ``d`` (item features, item indicators or leaf
design, winner minus loser) has likelihood ``F(d @ beta)``, and every problem ``b`` of a
batch minimises

.. math::

    J_b(\\beta) = \\sum_n w_{bn} \\, \\ell(d_{bn}^\\top \\beta)
        + \\tfrac12 \\sum_p \\pi_{bp} (\\beta_p - m_{bp})^2, \\qquad
    \\ell(z) = -\\log F(z),                                                     (1)

with ``F`` the logistic function (``link="logit"``) or the standard normal CDF
(``"probit"``; its pieces come from :mod:`pbo_core.models.probit`, all from
``scipy.special.log_ndtr``), weights ``w`` (counts; 0 for padding or held-out rows),
diagonal prior precision ``pi`` and mean ``m``. ``J`` is strictly convex for ``pi > 0``.

Newton with backtracking (:func:`newton_batch`, on the batched entry point of the one
solver, :func:`pbo_core.models.solver.newton_minimize_batch`): the step solves ``H s = g``
with

.. math::

    g = D^\\top (w \\odot \\ell'(z)) + \\pi \\odot (\\beta - m), \\qquad
    H = D^\\top \\operatorname{diag}(w \\odot \\ell''(z)) D + \\operatorname{diag}(\\pi), (2)

a problem stops when its Newton decrement ``g^T H^-1 g`` is below ``tol^2`` or when the
line search finds no representable decrease, and the step length halves until the Armijo
condition ``J(beta - t s) <= J(beta) - t g^T s / 4`` holds. A problem still above the
tolerance after ``max_iter`` steps is reported in the ``converged`` mask and by a
:class:`~pbo_core.models.solver.ConvergenceWarning` (:class:`GLMConvergenceWarning` is
its old name; as scikit-learn's Newton GLM solver warns), never silently. :func:`item_map`
is the same Newton (:func:`pbo_core.models.solver.newton_minimize`) for item utilities
with the likelihood Hessian of Eq. 2 built as the weighted graph Laplacian of the
comparisons (``O(pairs + items^2)`` instead of a dense pairs x items design).

Batching: problems of unequal size are padded to a common length (:func:`pad_rows`,
padding with weight 0) and solved in chunks of at most :data:`BATCH_CELLS`
``problems x rows x columns`` (:func:`newton_chunked`). Cross-validated strengths: one
grid convention (:func:`alpha_grid`, strongest first so ties go to the stronger prior)
and one resolution of ``"cv"`` (:func:`resolve_strength`).

Prediction: every fitted model here has a Gaussian (Laplace) posterior ``N(theta, S)`` of
coefficients that enter the utility linearly, ``u(x) = phi(x)^T theta``, so the utilities
of any set of points are jointly Gaussian with mean ``Phi theta`` and covariance
``Phi S Phi^T`` (:class:`GaussianLinearUtility`).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import expit, log_ndtr, ndtr
from threadpoolctl import ThreadpoolController

from pbo_core.metrics import competition_rank, margin_scores
from pbo_core.models.base import (
    COUNT,
    NON_NEGATIVE,
    POSITIVE,
    RANDOM_STATE,
    ArrayOf,
    Estimator,
    Options,
)
from pbo_core.models.probit import probit_terms
from pbo_core.models.solver import (
    ConvergenceWarning,
    NewtonStep,
    newton_minimize,
    newton_minimize_batch,
)

__all__ = [
    "BATCH_CELLS",
    "CV_CONSTRAINTS",
    "DEFAULT_ALPHAS",
    "GLMConvergenceWarning",
    "GaussianLinearUtility",
    "PaddedBatch",
    "alpha_grid",
    "blas_single_thread",
    "chunks",
    "cv_respondents",
    "heldout_loss",
    "item_map",
    "link_nll",
    "link_terms",
    "newton_batch",
    "newton_chunked",
    "pad_respondents",
    "pad_rows",
    "predictive_prob",
    "resolve_strength",
    "respondent_rows",
    "spd_inv_batch",
]

#: Default log grid of prior strengths (on the standardised scale), strongest first.
DEFAULT_ALPHAS: np.ndarray = np.logspace(3, -3, 13)

#: Cap on ``problems x rows x columns`` of one batched Newton call (memory bound).
BATCH_CELLS = 4_000_000

#: What the parameters every penalised comparison GLM shares may be (the link, a
#: strength chosen by CV among ``alphas`` in ``n_folds`` folds by ``cv_score``, the
#: Newton controls), as the baselines declare them
#: (:attr:`pbo_core.models.base.Estimator._parameter_constraints`).
CV_CONSTRAINTS: dict[str, list] = {
    "link": [Options("logit", "probit")],
    "alpha": [NON_NEGATIVE, Options("cv")],
    "alphas": [ArrayOf(POSITIVE), None],
    "n_folds": [COUNT],
    "cv_score": [Options("log_loss", "error")],
    "random_state": list(RANDOM_STATE),
    "max_iter": [COUNT],
    "tol": [POSITIVE],
}


#: The old name of the one solver's warning (some fits stopped at ``max_iter`` above the
#: Newton tolerance).
GLMConvergenceWarning = ConvergenceWarning

#: Advice of the warning: what keeps a GLM from converging.
_GLM_HINT = "Raise max_iter, or strengthen the prior (separable comparisons have no finite MLE)."


# ----------------------------------------------------------------------------- links
def link_terms(z: np.ndarray, link: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``l(z) = -log F(z)`` and its first and second derivatives in ``z`` (Eq. 1)."""
    if link == "logit":
        nll = np.logaddexp(0.0, -z)
        s_neg = expit(-z)
        return nll, -s_neg, s_neg * expit(z)
    if link == "probit":
        log_phi, r, h = probit_terms(z)
        return -log_phi, -r, h
    raise ValueError(f"link must be 'logit' or 'probit', got {link!r}")


def link_nll(z: np.ndarray, link: str) -> np.ndarray:
    """``-log F(z)`` only."""
    if link == "logit":
        return np.logaddexp(0.0, -z)
    if link == "probit":
        return -log_ndtr(z)
    raise ValueError(f"link must be 'logit' or 'probit', got {link!r}")


def predictive_prob(mean_diff: np.ndarray, var_diff: np.ndarray, link: str) -> np.ndarray:
    """``P(a > b)`` integrated over a Gaussian utility difference ``N(mean, var)``.

    Probit: exact, ``Phi(m / sqrt(1 + v))``. Logit: the probit approximation
    ``sigma(m / sqrt(1 + pi v / 8))`` (MacKay 1992).
    """
    m = np.asarray(mean_diff, dtype=float)
    v = np.maximum(np.asarray(var_diff, dtype=float), 0.0)
    if link == "probit":
        return ndtr(m / np.sqrt(1.0 + v))
    return expit(m / np.sqrt(1.0 + (math.pi / 8.0) * v))


class GaussianLinearUtility(Estimator):
    """Prediction from a Gaussian posterior of linear coefficients.

    The utility is ``u(x) = phi(x)^T theta`` with ``theta ~ N(mean, S)`` (one posterior,
    or one per respondent). A subclass gives the design rows :meth:`_design_rows`
    ``(n, p)``, the posterior :meth:`_gaussian` ``(p,)``, ``(p, p)`` and the preference
    probability of a Gaussian utility difference :meth:`_preference`.
    """

    def _design_rows(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _gaussian(self, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _preference(self, mean_diff: np.ndarray, var_diff: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def predict(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Posterior mean utility ``phi(x)^T theta`` ``(n,)`` (``respondent=None``: pooled)."""
        theta, _ = self._gaussian(respondent)
        return self._design_rows(X) @ theta

    def posterior(self, X: np.ndarray, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean ``Phi theta`` ``(n,)`` and covariance ``Phi S Phi^T`` ``(n, n)`` (symmetric PSD)."""
        theta, S = self._gaussian(respondent)
        Phi = self._design_rows(X)
        cov = Phi @ S @ Phi.T
        return Phi @ theta, 0.5 * (cov + cov.T)

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray, respondent: Any = None) -> np.ndarray:
        """``P(a > b)`` ``(n,)`` for paired rows, integrated over the Gaussian posterior."""
        theta, S = self._gaussian(respondent)
        d = self._design_rows(Xa) - self._design_rows(Xb)
        v = np.einsum("np,pq,nq->n", d, S, d)
        return self._preference(d @ theta, v)

    def rank(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Competition ranks (1 = best) by posterior mean utility."""
        return competition_rank(self.predict(X, respondent))


def heldout_loss(z: np.ndarray, score: str, link: str) -> np.ndarray:
    """CV loss of held-out comparisons with latent differences ``z`` (winner minus loser).

    ``"log_loss"``: ``-log F(z)``; ``"error"``: 1 if ``z < 0``, 1/2 if ``z == 0`` (the
    accuracy of :func:`pbo_core.metrics.pairwise_accuracy`, as a loss).
    """
    if score == "log_loss":
        return link_nll(z, link)
    if score == "error":
        return 1.0 - margin_scores(z)
    raise ValueError(f"cv_score must be 'log_loss' or 'error', got {score!r}")


# ----------------------------------------------------------------------------- solver
def _objective(
    D: np.ndarray, w: np.ndarray, prec: np.ndarray, mean: np.ndarray, beta: np.ndarray, link: str
) -> np.ndarray:
    z = (D @ beta[:, :, None])[:, :, 0]
    dev = beta - mean
    return (w * link_nll(z, link)).sum(axis=1) + 0.5 * (prec * dev * dev).sum(axis=1)


def _solve(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(H, g[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.einsum("bpq,bq->bp", np.linalg.pinv(H, hermitian=True), g)


def newton_batch(
    D: np.ndarray,
    w: np.ndarray,
    prec: np.ndarray,
    mean: np.ndarray,
    link: str,
    *,
    init: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-9,
    return_converged: bool = False,
    hessian: bool = True,
) -> tuple[np.ndarray, Any] | tuple[np.ndarray, Any, np.ndarray]:
    """MAP of ``B`` independent penalised GLMs on pair differences (Eq. 1), batched Newton.

    Parameters
    ----------
    D
        ``(B, n, p)`` difference rows (may be a broadcast view); padded rows need weight 0.
    w
        ``(B, n)`` non-negative weights (counts; 0 = not in this problem).
    prec, mean
        ``(B, p)`` diagonal prior precision and mean.
    link
        ``"logit"`` or ``"probit"``.
    init
        Optional ``(B, p)`` starting point (default: the prior mean).
    max_iter, tol
        Newton cap, and tolerance on the Newton decrement ``sqrt(g^T H^-1 g)``.
    return_converged
        Also return the ``(B,)`` mask of problems that met the tolerance (or stopped
        because no representable decrease remained).
    hessian
        ``False``: the MAP only (``None`` for the Hessian). When ``n < p`` the Newton
        step is then taken in the ``n``-dimensional dual (Woodbury): with ``P = diag(prec)``
        and ``Omega = diag(w h)``,

        .. math::

            H^{-1} g = P^{-1} g - P^{-1} D^\\top \\Omega^{1/2} (I + \\Omega^{1/2} K
            \\Omega^{1/2})^{-1} \\Omega^{1/2} D P^{-1} g, \\qquad K = D P^{-1} D^\\top,

        where ``K`` does not change between iterations (``P`` is fixed): ``O(n^2 p)``
        once, then ``O(n^3 + n p)`` per iteration instead of ``O(n p^2 + p^3)``. Same
        MAP (the objective is strictly convex; steps agree to rounding).

    Returns
    -------
    beta : ndarray, shape (B, p)
    hessian : ndarray, shape (B, p, p), or None
        Hessian of the objective at ``beta`` (the Laplace posterior precision); ``None``
        with ``hessian=False``.
    converged : ndarray of bool, shape (B,)
        Only with ``return_converged``. Problems that hit ``max_iter`` above the tolerance
        also raise a :class:`~pbo_core.models.solver.ConvergenceWarning`.
    """
    B, n, p = D.shape
    start = (mean if init is None else init).astype(float, copy=True)
    eye = np.eye(p)
    dual = not hessian and n < p
    H_out = np.empty((B, p, p)) if hessian else None
    K = (D / prec[:, None, :]) @ np.swapaxes(D, 1, 2) if dual else None
    eye_n = np.eye(n) if dual else None

    def newton(active: np.ndarray, ba: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        Da, wa, pa, ma = D[active], w[active], prec[active], mean[active]
        z = (Da @ ba[:, :, None])[:, :, 0]
        nll, g1, h1 = link_terms(z, link)
        dev = ba - ma
        obj = (wa * nll).sum(axis=1) + 0.5 * (pa * dev * dev).sum(axis=1)
        Dt = np.swapaxes(Da, 1, 2)
        grad = (Dt @ (wa * g1)[:, :, None])[:, :, 0] + pa * dev
        if K is not None and eye_n is not None:
            sq = np.sqrt(np.maximum(wa * h1, 0.0))
            M = eye_n + sq[:, :, None] * K[active] * sq[:, None, :]
            gp = grad / pa
            r = sq * (Da @ gp[:, :, None])[:, :, 0]
            y = _solve(M, r)
            step = gp - (Dt @ (sq * y)[:, :, None])[:, :, 0] / pa
        else:
            H = (Dt * (wa * h1)[:, None, :]) @ Da + pa[:, :, None] * eye
            if H_out is not None:
                H_out[active] = H
            step = _solve(H, grad)
        return obj, step, (grad * step).sum(axis=1)

    def objective(idx: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _objective(D[idx], w[idx], prec[idx], mean[idx], b, link)

    res = newton_minimize_batch(
        newton,
        objective,
        start,
        max_iter=max_iter,
        tol=tol,
        min_step=2.0**-38,  # 40 trial steps, t = 1 ... 2^-39
        what=f"penalised {link} GLM",
        hint=_GLM_HINT,
    )
    if return_converged:
        return res.x, H_out, res.converged
    return res.x, H_out


@lru_cache(maxsize=1)
def _threadpools() -> ThreadpoolController:
    """One controller per process (inspecting the loaded libraries is the slow part)."""
    return ThreadpoolController()


def blas_single_thread() -> Any:
    """Context manager limiting BLAS to one thread.

    The batched solves work on many small matrices: BLAS threads only add overhead, and
    on a machine shared by several processes they oversubscribe the cores (docs/speed.md,
    "Figures behind design choices").
    """
    return _threadpools().limit(limits=1, user_api="blas")


def kernel_threads() -> int:
    """Threads a compiled batch kernel may split its problems over: the cores this process
    may run on, at most ``DTPBO_THREADS`` (or ``OMP_NUM_THREADS``, which joblib's workers
    set so that parallel workers do not oversubscribe the cores) when set, at most 8.

    The problems of a batch are independent, so the split changes no result; the
    background worker of the dashboard runs in Linux's idle class, so a visitor's job
    splitting over both cores takes the second one from it.
    """
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for name in ("DTPBO_THREADS", "OMP_NUM_THREADS"):
        v = os.environ.get(name, "")
        if v.strip().isdigit() and int(v) > 0:
            n = min(n or 1, int(v))
            break
    return max(1, min(8, n or 1))


@lru_cache(maxsize=1)
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="dtpbo-kernel")


def run_split(kernel: Callable[[slice], None], n_problems: int, min_per_thread: int = 8) -> None:
    """Call ``kernel(slice)`` on consecutive slices covering ``n_problems`` problems, on
    :func:`kernel_threads` threads (a compiled kernel with ``nogil=True`` runs them at
    once); one slice in the calling thread when there are few problems."""
    t = min(kernel_threads(), n_problems // max(1, min_per_thread))
    if t <= 1:
        kernel(slice(0, n_problems))
        return
    bounds = np.linspace(0, n_problems, t + 1).round().astype(int)
    parts = [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
    futures = [_executor().submit(kernel, sl) for sl in parts[1:]]
    kernel(parts[0])
    for f in futures:
        f.result()


def chunks(n_problems: int, cells_per_problem: int) -> list[slice]:
    """Slices of ``n_problems`` with at most :data:`BATCH_CELLS` cells per chunk."""
    size = max(1, BATCH_CELLS // max(1, cells_per_problem))
    return [slice(i, min(i + size, n_problems)) for i in range(0, n_problems, size)]


def newton_chunked(
    D: np.ndarray,
    w: np.ndarray,
    prec: np.ndarray,
    mean: np.ndarray,
    link: str,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`newton_batch` over chunks of at most :data:`BATCH_CELLS` cells (same result)."""
    B, n, p = D.shape
    beta = np.empty((B, p))
    H = np.empty((B, p, p))
    for sl in chunks(B, n * p):
        beta[sl], H[sl] = newton_batch(
            D[sl], w[sl], prec[sl], mean[sl], link, max_iter=max_iter, tol=tol
        )
    return beta, H


def item_map(
    winner: np.ndarray,
    loser: np.ndarray,
    weight: np.ndarray,
    n_items: int,
    prec: float,
    link: str,
    *,
    mean: np.ndarray | None = None,
    init: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray]:
    """MAP item utilities and the Hessian (posterior precision) of one pooled model.

    Minimises ``sum_k weight_k (-log F(u[w_k] - u[l_k])) + prec/2 ||u - mean||^2`` (Eq. 1
    with item-indicator rows) by the Newton of :func:`newton_batch` (the one solver,
    :func:`~pbo_core.models.solver.newton_minimize`, line search down to ``t < 1e-10``);
    the likelihood Hessian of Eq. 2 is the weighted graph Laplacian of the comparisons,
    built in
    ``O(pairs + items^2)``. Warns (:class:`~pbo_core.models.solver.ConvergenceWarning`)
    when ``max_iter`` steps end above the tolerance.
    """
    m = int(n_items)
    mu = np.zeros(m) if mean is None else np.asarray(mean, dtype=float)
    u = mu.copy() if init is None else np.asarray(init, dtype=float).copy()
    w, lo, c = np.asarray(winner), np.asarray(loser), np.asarray(weight, dtype=float)

    def terms(u: np.ndarray, need: bool) -> tuple[float, np.ndarray, np.ndarray]:
        z = u[w] - u[lo]
        nll, g1, h1 = link_terms(z, link)
        dev = u - mu
        obj = float(c @ nll + 0.5 * prec * (dev @ dev))
        if not need:
            return obj, dev, dev
        gz = c * g1
        grad = np.bincount(w, gz, minlength=m) - np.bincount(lo, gz, minlength=m) + prec * dev
        hz = c * h1
        H = np.zeros((m, m))
        np.add.at(H, (w, lo), -hz)
        H = H + H.T
        H[np.diag_indices(m)] = (
            np.bincount(w, hz, minlength=m) + np.bincount(lo, hz, minlength=m) + prec
        )
        return obj, grad, H

    def newton(u: np.ndarray, _: None) -> NewtonStep:
        _, grad, H = terms(u, True)
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(H, grad, rcond=None)[0]
        return NewtonStep(step, float(grad @ step), info=H)

    res = newton_minimize(
        lambda u: (terms(u, False)[0], None),
        newton,
        u,
        max_iter=max_iter,
        tol=tol,
        min_step=1e-10,
        what=f"{link} item-utility",
        hint=_GLM_HINT,
    )
    assert res.step is not None  # rule "decrement" computes a step at the returned point
    return res.x, res.step.info


def spd_inv_batch(H: np.ndarray) -> np.ndarray:
    """Symmetric inverse of a batch of SPD matrices (pseudo-inverse if singular)."""
    try:
        inv = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        inv = np.linalg.pinv(H, hermitian=True)
    return 0.5 * (inv + np.swapaxes(inv, -1, -2))


# ----------------------------------------------------------------------------- padding
@dataclass
class PaddedBatch:
    """Per-respondent difference rows padded to a common length."""

    ids: np.ndarray  # (R,) respondent ids
    D: np.ndarray  # (R, n_max, p)
    mask: np.ndarray  # (R, n_max) real rows
    folds: np.ndarray  # (R, n_max) fold of every row (-1 on padding)
    rows: list[np.ndarray]  # pair indices of every respondent


def respondent_rows(respondent: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Respondent ids in order of first appearance, and the comparison rows of each."""
    ids, first = np.unique(respondent, return_index=True)
    ids = ids[np.argsort(first)]
    return ids, [np.flatnonzero(respondent == r) for r in ids]


def pad_rows(
    d: np.ndarray, rows: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``d[rows[i]]`` of every problem padded to one length.

    Returns ``D`` ``(R, n_max, p)`` (zeros on padding), the ``(R, n_max)`` mask of real
    rows and the ``(R, n_max)`` index of each row in ``d`` (-1 on padding).
    """
    n_max = max(1, max((len(r) for r in rows), default=0))
    R, p = len(rows), d.shape[1]
    D = np.zeros((R, n_max, p))
    mask = np.zeros((R, n_max), dtype=bool)
    idx = np.full((R, n_max), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        D[i, : len(r)] = d[r]
        mask[i, : len(r)] = True
        idx[i, : len(r)] = r
    return D, mask, idx


def pad_respondents(d: np.ndarray, respondent: np.ndarray, folds: np.ndarray) -> PaddedBatch:
    """:class:`PaddedBatch` of the rows ``d`` grouped by ``respondent`` (with their folds)."""
    ids, rows = respondent_rows(respondent)
    D, mask, idx = pad_rows(d, rows)
    return PaddedBatch(ids, D, mask, np.where(mask, folds[idx], -1), rows)


# ----------------------------------------------------------------------------- strengths
def alpha_grid(alphas: Sequence[float] | np.ndarray | None) -> np.ndarray:
    """The strength grid (default :data:`DEFAULT_ALPHAS`), strongest first.

    Strongest first so that ``argmin`` ties go to the stronger prior.
    """
    g = DEFAULT_ALPHAS if alphas is None else np.asarray(alphas, dtype=float).ravel()
    if g.size == 0 or np.any(g <= 0) or not np.all(np.isfinite(g)):
        raise ValueError("alphas must be a non-empty grid of positive numbers")
    return np.sort(g)[::-1]


def resolve_strength(
    value: Any,
    grid: np.ndarray,
    n_folds: int,
    cv_loss: Callable[[], np.ndarray],
    *,
    name: str = "alpha",
    positive: bool = False,
    what: str = "",
) -> tuple[float, np.ndarray | None]:
    """A prior strength: a fixed number (validated) or ``"cv"``.

    ``"cv"``: with at least two folds, ``cv_loss()`` gives the held-out loss per grid value
    (``(A,)``, or ``(R, A)`` per respondent, summed over respondents here) and the grid
    value with the smallest loss is chosen (the first, i.e. the strongest, on ties);
    with fewer folds the grid's middle value. A number must be ``>= 0`` (``> 0`` with
    ``positive``).

    Returns
    -------
    strength : float
    loss : ndarray or None
        What ``cv_loss()`` returned (``None`` when it was not called).
    """
    if isinstance(value, str):
        if value != "cv":
            raise ValueError(f"{name} must be a number or 'cv', got {value!r}")
        if n_folds < 2:
            return float(grid[len(grid) // 2]), None
        loss = np.asarray(cv_loss())
        total = loss if loss.ndim == 1 else loss.sum(axis=0)
        return float(grid[int(np.argmin(total))]), loss
    v = float(value)
    if not (v > 0 if positive else v >= 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}{what}, got {v}")
    return v, None


def cv_respondents(
    P: PaddedBatch,
    K: int,
    prec_unit: np.ndarray,
    grid: np.ndarray,
    prior_mean: np.ndarray,
    link: str,
    max_iter: int,
    tol: float,
    score: str = "log_loss",
) -> np.ndarray:
    """Held-out loss ``(R, A)`` of per-respondent fits over the strength grid.

    ``prior_mean`` is ``(K, R, p)`` (fold-specific prior centres) and ``prec_unit`` the
    ``(p,)`` precision of strength 1. All (respondent, strength) fits of a fold are one
    batched Newton call (in chunks of :data:`BATCH_CELLS`).
    """
    R, n, p = P.D.shape
    A = len(grid)
    loss = np.zeros((R, A))
    for k in range(K):
        train_w = (P.mask & (P.folds != k)).astype(float)  # (R, n)
        held = P.mask & (P.folds == k)
        if not held.any():
            continue
        for sl in chunks(R, A * n * p):
            r_idx = np.arange(R)[sl]
            nr = len(r_idx)
            Db = np.repeat(P.D[r_idx], A, axis=0)  # (nr*A, n, p)
            W = np.repeat(train_w[r_idx], A, axis=0)
            prec = np.tile(grid[:, None] * prec_unit[None, :], (nr, 1))
            mean = np.repeat(prior_mean[k, r_idx], A, axis=0)
            beta, _ = newton_batch(Db, W, prec, mean, link, max_iter=max_iter, tol=tol)
            z = np.einsum("bnp,bp->bn", Db, beta).reshape(nr, A, n)
            nll = heldout_loss(z, score, link) * held[r_idx][:, None, :]
            loss[r_idx] += nll.sum(axis=2)
    return loss
