"""The one Newton solver: every MAP of the package is found here, none stops silently.

Every model of :mod:`pbo_core.models` fits a strictly convex, twice differentiable
objective (a negative log posterior)

.. math::

    J(x) = -\\log p(\\text{comparisons} \\mid x) - \\log p(x),                      (1)

by Newton's method with a backtracking line search. The model supplies only its problem:
the objective ``J`` (``value``) and, at the current point, the Newton direction ``s``
(``newton``: it owns the Hessian, its factorisation or a dual solve). This module owns the
loop, the stopping rule, the iteration count, the ``converged`` flag and the warning.

Step. The direction is the Newton step and the decrement its inner product with the
gradient,

.. math::

    s = H(x)^{-1} \\nabla J(x), \\qquad \\lambda^2 = \\nabla J(x)^\\top s,              (2)

(``lambda`` is the distance to the minimiser in the ``H`` norm; the GP's alpha form
supplies an equivalent step in its own coordinates). The line search tries
``x_t = x - t s`` for ``t = 1, 1/2, 1/4, ...`` and takes the first ``t`` with

.. math::

    J(x_t) \\le J(x) - c \\, t \\lambda^2 \\quad (\\texttt{accept="armijo"}, c = 1/4)
    \\qquad\\text{or}\\qquad
    J(x_t) \\le J(x) + \\epsilon \\max(1, |J(x)|) \\quad (\\texttt{"nonincrease"}),    (3)

or stops halving once ``t < min_step`` (every trial point is evaluated; the last is kept
only if it decreases ``J``: strictly under Armijo, within the slack ``epsilon`` otherwise).

Stopping (``stop``), tolerance ``tol``:

.. math::

    \\texttt{"decrement"}: \\lambda^2 \\le \\mathrm{tol}^2, \\qquad
    \\texttt{"step"}: \\max_i |s_i| \\le \\mathrm{tol}, \\qquad
    \\texttt{"taken"}: \\max_i |x_{k+1} - x_k|_i \\le \\mathrm{tol},               (4)

the first two tested before a step (on the problem's full step), the last after the line
search (on the step taken). A fit is **converged** when its rule holds, or when the line
search finds no representable decrease (the minimiser to machine precision; not when the
step or objective is NaN). ``max_iter`` caps the line searches; a fit that reaches it
above the tolerance keeps its last iterate, is reported as ``converged=False`` and raises
one :class:`ConvergenceWarning` (as scikit-learn's solvers warn). ``n_iter`` counts the
line searches run, a last one that found no decrease included.

Entry points:

* :func:`newton_minimize`: one problem, any state (an array, or a tuple such as the GP's
  ``(alpha, f)`` with its own ``move``);
* :func:`newton_minimize_batch`: ``B`` independent problems with ``(B, p)`` states, each
  leaving the batch when it stops (the penalised GLMs of :mod:`pbo_core.models.glm`);
* :func:`newton_probit_pairs`: the compiled specialisation for the hot path of the PBO
  loop, the probit comparison posterior with a diagonal Gaussian prior

  .. math::

      J(f) = -\\sum_k c_k \\log\\Phi\\Big(\\frac{f_{w_k} - f_{l_k}}{\\sqrt2}\\Big)
          + \\tfrac12 \\sum_i p_i (f_i - m_i)^2, \\qquad
      H = \\operatorname{diag}(p) + \\Lambda, \\quad
      \\Lambda = \\sum_k h_k (e_{w_k} - e_{l_k})(e_{w_k} - e_{l_k})^\\top,          (5)

  (the leaf posterior of :mod:`pbo_core.models.leaves`, ``h_k`` the curvature of
  ``-log Phi`` over 2) with the rule ``"decrement"`` and Armijo. The whole loop is one
  numba kernel; the objective is compiled into it, because numba cannot cache a loop that
  takes its objective as an argument (a function argument recompiles in every process).
  It returns its ``converged`` flag and warns through :class:`ConvergenceWarning`;
* :func:`newton_probit_items`: the compiled batch specialisation of
  :func:`newton_minimize_batch`, ``B`` penalised probit GLMs whose comparisons live in item
  space (the linear-leaf tree's per-respondent fits, :mod:`pbo_core.models.linear_leaves`):
  with item utilities ``f = F x`` (``F`` ``(N, p)``) and a diagonal Gaussian prior,

  .. math::

      J(x) = -\\sum_k w_k \\log\\Phi\\Big(\\frac{f_{a_k} - f_{b_k}}{\\sqrt2}\\Big)
          + \\tfrac12 \\sum_j p_j (x_j - m_j)^2, \\qquad
      H^{-1} g = P^{-1} g - P^{-1} F^\\top (I + L K)^{-1} L F P^{-1} g,          (6)

  ``L`` the comparison graph's Laplacian weighted by the curvatures ``w_k h_k / 2`` and
  ``K = F P^{-1} F^\\top`` (the push-through identity: an ``N x N`` solve per step instead
  of ``p x p``). Every problem's loop (rule ``"decrement"``, Armijo, ``min_step``) is one
  numba kernel, step for step :func:`newton_minimize_batch`; problems are independent, so
  a caller may split them over threads (``split``).

Users: :func:`pbo_core.models.glm.newton_batch` and :func:`~pbo_core.models.glm.item_map`,
:func:`pbo_core.models.leaves.laplace_fit` (both paths),
:func:`pbo_core.models.gp.laplace.laplace_map`,
:func:`pbo_core.models.gp.kappasharp.metric_only_map` and the covariate-interaction logit
of :mod:`pbo_core.segments`; the item-space fits of
:class:`pbo_core.models.linear_leaves.LinearLeafDTSurrogate` through
:func:`newton_probit_items` (or, as the reference, :func:`newton_minimize_batch`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import numpy as np
from numba import njit

from pbo_core.models.compiled import kernel_array
from pbo_core.models.probit import log_ndtr_scalar

__all__ = [
    "BatchNewtonResult",
    "ConvergenceWarning",
    "NewtonResult",
    "NewtonStep",
    "ProbitPairsResult",
    "newton_minimize",
    "newton_minimize_batch",
    "newton_probit_items",
    "newton_probit_pairs",
    "warn_unconverged",
]

X = TypeVar("X")
C = TypeVar("C")

Stop = Literal["decrement", "step", "taken"]
Accept = Literal["armijo", "nonincrease"]

#: What each stopping rule (Eq. 4) measures, for the warning.
_CRITERION = {"decrement": "Newton decrement", "step": "Newton step", "taken": "last step"}

#: Default advice of the warning.
RAISE_MAX_ITER = "Raise max_iter."


class ConvergenceWarning(UserWarning):
    """Some Newton fits stopped at ``max_iter`` above their tolerance (Eq. 4)."""


def warn_unconverged(
    n_bad: int,
    n: int,
    what: str,
    max_iter: int,
    tol: float,
    stop: Stop = "decrement",
    hint: str = RAISE_MAX_ITER,
    stacklevel: int = 2,
) -> None:
    """Raise one :class:`ConvergenceWarning` when ``n_bad`` of ``n`` fits did not converge.

    ``stacklevel`` counts from the caller of this function (1: the caller, 2: its caller).
    """
    if n_bad:
        warnings.warn(
            f"{n_bad} of {n} {what} fits did not converge in {max_iter} Newton steps "
            f"({_CRITERION[stop]} above tol={tol:g}); their estimate is the last iterate. "
            f"{hint}",
            ConvergenceWarning,
            stacklevel=stacklevel + 1,
        )


# ----------------------------------------------------------------------------- one problem
@dataclass(frozen=True)
class NewtonStep:
    """The Newton step a problem proposes at the current point.

    Attributes
    ----------
    direction
        ``s`` of Eq. 2: the line search tries ``x - t s`` (or ``move(x, s, t)``).
    decrement
        ``lambda^2 = g^T s`` (Eq. 2): the Armijo slope and the ``"decrement"`` measure;
        NaN when neither is used.
    size
        The ``"step"`` measure (e.g. ``max |s|`` of the utilities); NaN when not used.
    info
        Anything the problem computed at this point and wants back (Hessian, factor).
    """

    direction: Any
    decrement: float = math.nan
    size: float = math.nan
    info: Any = None


@dataclass
class NewtonResult(Generic[X]):
    """Outcome of :func:`newton_minimize`.

    Attributes
    ----------
    x
        The returned point (the last accepted iterate).
    value
        ``J(x)``.
    step
        The last :class:`NewtonStep` computed: at ``x`` (its ``info`` holds what the
        problem computed there, e.g. the Hessian), except with ``stop="taken"``, where
        it is the step into ``x`` (``None`` when ``max_iter`` is 0).
    n_iter
        Line searches run (a last one that found no decrease included).
    converged
        The stopping rule held, or no representable decrease remained.
    stalled
        Stopped because the line search found no decrease.
    """

    x: X
    value: float
    step: NewtonStep | None
    n_iter: int
    converged: bool
    stalled: bool


def newton_minimize(
    value: Callable[[X], tuple[float, C]],
    newton: Callable[[X, C], NewtonStep],
    x0: X,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
    stop: Stop = "decrement",
    accept: Accept = "armijo",
    armijo: float = 0.25,
    slack: float = 0.0,
    min_step: float = 1e-8,
    move: Callable[[X, Any, float], X] | None = None,
    what: str = "Newton",
    hint: str = RAISE_MAX_ITER,
    warn: bool = True,
    stacklevel: int = 2,
) -> NewtonResult[X]:
    """Minimise one strictly convex ``J`` by damped Newton (Eqs. 2-4).

    Parameters
    ----------
    value
        ``x -> (J(x), cache)``; ``cache`` (gradient pieces, curvatures) goes to ``newton``
        at the same point, so an accepted trial point is never re-evaluated.
    newton
        ``(x, cache) -> NewtonStep`` at ``x``.
    x0
        Starting point (not modified).
    max_iter, tol
        Cap on line searches, and the tolerance of the stopping rule.
    stop
        ``"decrement"``, ``"step"`` or ``"taken"`` (Eq. 4).
    accept
        ``"armijo"`` (constant ``armijo``) or ``"nonincrease"`` (relative ``slack``), Eq. 3.
    min_step
        The line search stops halving once ``t < min_step``.
    move
        ``(x, s, t) -> x_t``; default ``x - t s`` (arrays).
    what, hint
        The fit's name and the advice in the warning.
    warn
        Raise a :class:`ConvergenceWarning` when not converged.
    stacklevel
        Of the warning, counted from the caller (1: the caller, 2: its caller; the
        default names the caller of the model function that calls this one).

    Returns
    -------
    NewtonResult
    """
    if stop not in _CRITERION:
        raise ValueError(f"stop must be one of {tuple(_CRITERION)}, got {stop!r}")
    if accept not in ("armijo", "nonincrease"):
        raise ValueError(f"accept must be 'armijo' or 'nonincrease', got {accept!r}")
    use_armijo = accept == "armijo"
    x = x0
    fx, cache = value(x)
    it = 0
    step: NewtonStep | None = None
    converged = stalled = False
    while True:
        if stop == "taken" and it >= max_iter:
            break  # no pre-step test: the cap needs no new step
        step = newton(x, cache)
        if stop == "decrement":
            measure = step.decrement
            if measure <= tol * tol:
                converged = True
                break
        elif stop == "step":
            measure = step.size
            if measure <= tol:
                converged = True
                break
        else:
            measure = 0.0
        if it >= max_iter:
            break
        it += 1
        bound = fx + slack * max(1.0, abs(fx)) if slack else fx  # "nonincrease" (Eq. 3)
        t = 1.0
        while True:
            x_t = move(x, step.direction, t) if move is not None else x - t * step.direction
            f_t, cache_t = value(x_t)
            ok = f_t <= fx - armijo * t * step.decrement if use_armijo else f_t <= bound
            if ok or t < min_step:
                break
            t *= 0.5
        if not (f_t < fx if use_armijo else f_t <= bound):
            stalled = True  # no representable decrease: the minimiser to machine precision
            converged = math.isfinite(fx) and not math.isnan(measure)
            break
        moved = float(np.max(np.abs(x_t - x), initial=0.0)) if stop == "taken" else 0.0
        x, fx, cache = x_t, f_t, cache_t
        if stop == "taken" and moved <= tol:
            converged = True
            break
    if warn and not converged:
        warn_unconverged(1, 1, what, max_iter, tol, stop, hint, stacklevel + 1)
    return NewtonResult(x, fx, step, it, converged, stalled)


# ----------------------------------------------------------------------------- a batch
@dataclass
class BatchNewtonResult:
    """Outcome of :func:`newton_minimize_batch`.

    Attributes
    ----------
    x
        ``(B, p)`` returned points.
    converged
        ``(B,)`` mask: the decrement rule held or no representable decrease remained.
    n_iter
        ``(B,)`` line searches run per problem.
    """

    x: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray


def newton_minimize_batch(
    newton: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]],
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    x0: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
    armijo: float = 0.25,
    min_step: float = 2.0**-38,
    what: str = "Newton",
    hint: str = RAISE_MAX_ITER,
    warn: bool = True,
    stacklevel: int = 2,
) -> BatchNewtonResult:
    """Minimise ``B`` independent strictly convex problems together (Eqs. 2-4).

    Rule ``"decrement"`` with Armijo (Eq. 3); a problem leaves the batch when it stops,
    so the callbacks only see the active ones.

    Parameters
    ----------
    newton
        ``(idx, x) -> (J, s, lambda^2)`` for the problems ``idx`` ``(k,)`` at ``x``
        ``(k, p)``: objective ``(k,)``, Newton step ``(k, p)`` and decrement ``(k,)``.
    objective
        ``(idx, x) -> J`` ``(k,)`` (the line search).
    x0
        ``(B, p)`` starting points (copied).
    max_iter, tol, armijo
        Cap on line searches, tolerance on ``sqrt(lambda^2)``, Armijo constant.
    min_step
        Stop halving once ``t < min_step``; the default gives 40 trial steps
        ``t = 1, ..., 2^-39``.
    what, hint, warn, stacklevel
        As in :func:`newton_minimize`; one warning counts the unconverged problems.
    """
    x = np.array(x0, dtype=float, copy=True)
    B = x.shape[0]
    active = np.arange(B)
    converged = np.ones(B, dtype=bool)
    n_iter = np.zeros(B, dtype=np.int64)
    it = 0
    while active.size:
        xa = x[active]
        obj, step, dec = newton(active, xa)
        go = ~(dec <= tol * tol)
        if it >= max_iter:
            converged[active[go]] = False
            break
        if not go.any():
            break
        it += 1
        active, xa, step, dec, obj = active[go], xa[go], step[go], dec[go], obj[go]
        n_iter[active] += 1
        t = np.ones(active.size)
        new = xa - step
        obj_new = np.empty(active.size)
        todo = np.arange(active.size)  # problems still backtracking
        while todo.size:
            obj_new[todo] = objective(active[todo], new[todo])
            ok = obj_new[todo] <= obj[todo] - armijo * t[todo] * dec[todo]
            todo = todo[~(ok | (t[todo] < min_step))]
            t[todo] *= 0.5
            new[todo] = xa[todo] - t[todo, None] * step[todo]
        improved = obj_new < obj
        x[active] = np.where(improved[:, None], new, xa)
        # no representable decrease: converged, unless the step or objective is not finite
        stuck = active[~improved]
        converged[stuck] = np.isfinite(obj[~improved]) & ~np.isnan(dec[~improved])
        active = active[improved]
    if warn:
        n_bad = int((~converged).sum())
        warn_unconverged(n_bad, B, what, max_iter, tol, "decrement", hint, stacklevel + 1)
    return BatchNewtonResult(x, converged, n_iter)


# ----------------------------------------------------------------------------- compiled
_INV_SQRT2 = 1.0 / np.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@njit(cache=True)
def _pairs_objective(f, w, lo, c, p, m0, grad, h):  # pragma: no cover - compiled
    """``J`` of Eq. 5 in one loop; fills the gradient ``grad`` and pair curvatures ``h``."""
    m = f.size
    quad = 0.0
    for i in range(m):
        dev = f[i] - m0[i]
        pd = p[i] * dev
        grad[i] = pd
        quad += pd * dev
    like = 0.0
    for k in range(w.size):
        z = (f[w[k]] - f[lo[k]]) * _INV_SQRT2
        lp = log_ndtr_scalar(z)
        r = math.exp(-0.5 * z * z - _LOG_SQRT_2PI - lp)
        hz = r * (z + r)
        if hz > 1.0:
            hz = 1.0
        if hz < 0.0:
            hz = 0.0
        like += c[k] * lp
        g = c[k] * r * _INV_SQRT2
        grad[w[k]] -= g
        grad[lo[k]] += g
        h[k] = c[k] * hz * 0.5
    return 0.5 * quad - like


@njit(cache=True)
def _pairs_hessian(w, lo, h, p, lam, H):  # pragma: no cover - compiled
    """``lam = Lambda`` and ``H = diag(p) + Lambda`` of Eq. 5."""
    m = p.size
    lam[:, :] = 0.0
    for k in range(w.size):
        a = w[k]
        b = lo[k]
        lam[a, b] -= h[k]
        lam[b, a] -= h[k]
        lam[a, a] += h[k]
        lam[b, b] += h[k]
    for i in range(m):
        for j in range(m):
            H[i, j] = lam[i, j]
        H[i, i] += p[i]


@njit(cache=True)
def _cholesky(A, L):  # pragma: no cover - compiled
    """Lower Cholesky factor of ``A`` into ``L``; False if ``A`` is not positive definite."""
    m = A.shape[0]
    L[:, :] = 0.0
    for j in range(m):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, m):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@njit(cache=True)
def _cholesky_solve(L, b, x):  # pragma: no cover - compiled
    """``x = (L L^T)^-1 b``."""
    m = b.size
    for i in range(m):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(m - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, m):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@njit(cache=True)
def _cholesky_inverse(L):  # pragma: no cover - compiled
    """``(L L^T)^-1`` (exactly symmetric) from the lower factor ``L``."""
    m = L.shape[0]
    Li = np.zeros((m, m))
    for j in range(m):
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, m):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * Li[k, j]
            Li[i, j] = s / L[i, i]
    inv = np.empty((m, m))
    for i in range(m):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, m):
                s += Li[k, i] * Li[k, j]
            inv[i, j] = s
            inv[j, i] = s
    return inv


@njit(cache=True)
def _newton_probit_pairs_kernel(w, lo, c, p, m0, f0, max_iter, tol):  # pragma: no cover
    """:func:`newton_minimize` (rule ``"decrement"``, Armijo 1/4, ``min_step`` 1e-8) on Eq. 5.

    Returns ``(f, H, lam, cov, n_iter, grad, ok, converged)``; ``ok`` is False when a
    Hessian was not positive definite (the caller then reruns the LAPACK path, which
    raises).
    """
    m = f0.size
    f = f0.copy()
    grad = np.empty(m)
    h = np.empty(w.size)
    grad_new = np.empty(m)
    h_new = np.empty(w.size)
    f_new = np.empty(m)
    step = np.empty(m)
    lam = np.empty((m, m))
    H = np.empty((m, m))
    L = np.empty((m, m))
    obj = _pairs_objective(f, w, lo, c, p, m0, grad, h)
    it = 0
    converged = False
    while True:
        _pairs_hessian(w, lo, h, p, lam, H)
        if not _cholesky(H, L):
            return f, H, lam, H, it, grad, False, False
        _cholesky_solve(L, grad, step)
        decrement = 0.0
        for i in range(m):
            decrement += grad[i] * step[i]
        if decrement <= tol * tol:
            converged = True
            break
        if it >= max_iter:
            break
        it += 1
        t = 1.0
        while True:
            for i in range(m):
                f_new[i] = f[i] - t * step[i]
            obj_new = _pairs_objective(f_new, w, lo, c, p, m0, grad_new, h_new)
            if obj_new <= obj - 0.25 * t * decrement or t < 1e-8:
                break
            t *= 0.5
        if not obj_new < obj:
            # no representable decrease (converged unless the step or objective is NaN)
            converged = math.isfinite(obj) and not math.isnan(decrement)
            break
        f, f_new = f_new, f
        grad, grad_new = grad_new, grad
        h, h_new = h_new, h
        obj = obj_new
    cov = _cholesky_inverse(L)
    return f, H, lam, cov, it, grad, True, converged


@dataclass
class ProbitPairsResult:
    """Outcome of :func:`newton_probit_pairs` (all at the returned ``f``).

    Attributes
    ----------
    f
        The MAP ``(m,)``.
    hessian, likelihood_hessian, cov
        ``H``, ``Lambda`` (Eq. 5) and ``H^-1`` (exactly symmetric).
    grad
        Gradient of ``J``.
    n_iter, converged
        As in :class:`NewtonResult`.
    """

    f: np.ndarray
    hessian: np.ndarray
    likelihood_hessian: np.ndarray
    cov: np.ndarray
    grad: np.ndarray
    n_iter: int
    converged: bool


def newton_probit_pairs(
    w: np.ndarray,
    lo: np.ndarray,
    c: np.ndarray,
    p: np.ndarray,
    m0: np.ndarray,
    f0: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
    what: str = "probit comparison",
    warn: bool = True,
    stacklevel: int = 2,
) -> ProbitPairsResult | None:
    """Compiled Newton MAP of Eq. 5 (rule ``"decrement"``, Armijo 1/4, ``min_step`` 1e-8).

    Parameters
    ----------
    w, lo, c
        ``(K,)`` winner and loser indices (int64) and multiplicities of the comparisons.
    p, m0
        ``(m,)`` diagonal prior precision and prior mean.
    f0
        ``(m,)`` starting point.
    max_iter, tol, what, warn, stacklevel
        As in :func:`newton_minimize`.

    Returns
    -------
    ProbitPairsResult or None
        ``None`` when a Hessian was not positive definite (rounding; the caller falls
        back to its LAPACK path, which reports the error).
    """
    i8, f8 = np.int64, np.float64
    f, H, lam, cov, it, grad, ok, converged = _newton_probit_pairs_kernel(
        kernel_array(w, i8),
        kernel_array(lo, i8),
        kernel_array(c, f8),
        kernel_array(p, f8),
        kernel_array(m0, f8),
        kernel_array(f0, f8),
        int(max_iter),
        float(tol),
    )
    if not ok:
        return None
    if warn and not converged:
        warn_unconverged(1, 1, what, max_iter, tol, "decrement", RAISE_MAX_ITER, stacklevel + 1)
    return ProbitPairsResult(f, H, lam, cov, grad, int(it), bool(converged))


# ----------------------------------------------------------------------------- compiled batch
@njit(cache=True)
def _items_objective(F, wi, li, w, prec, mean, b):  # pragma: no cover - compiled
    """``J(b)`` of one item-space problem (Eq. 6)."""
    f = F @ b
    d = b - mean
    obj = 0.5 * np.sum(prec * d * d)
    for k in range(w.size):
        if w[k] == 0.0:
            continue
        obj -= w[k] * log_ndtr_scalar((f[wi[k]] - f[li[k]]) * _INV_SQRT2)
    return obj


@njit(cache=True)
def _lu_solve(M, y, piv):  # pragma: no cover - compiled
    """Solve ``M y_new = y`` in place (LU with partial pivoting; ``M`` is overwritten)."""
    n = M.shape[0]
    for c in range(n):
        best, arg = abs(M[c, c]), c
        for r in range(c + 1, n):
            if abs(M[r, c]) > best:
                best, arg = abs(M[r, c]), r
        piv[c] = arg
        if arg != c:
            for q in range(n):
                M[c, q], M[arg, q] = M[arg, q], M[c, q]
            y[c], y[arg] = y[arg], y[c]
        d = M[c, c]
        if d == 0.0:
            continue
        for r in range(c + 1, n):
            m = M[r, c] / d
            if m != 0.0:
                M[r, c] = m
                for q in range(c + 1, n):
                    M[r, q] -= m * M[c, q]
                y[r] -= m * y[c]
    for c in range(n - 1, -1, -1):
        t = y[c]
        for q in range(c + 1, n):
            t -= M[c, q] * y[q]
        y[c] = t / M[c, c] if M[c, c] != 0.0 else 0.0


@njit(cache=True)
def _items_step(F, wi, li, w, prec, mean, K, x, M, y, c, piv):  # pragma: no cover - compiled
    """Objective, Newton step and decrement of one item-space problem at ``x`` (Eq. 6:
    ``H^{-1} g`` by the push-through identity; ``L K`` and ``L u`` accumulated comparison
    by comparison, 4 entries of ``L`` each). ``M``, ``y``, ``c`` and ``piv`` are work
    space."""
    N = F.shape[0]
    f = F @ x
    d = x - mean
    obj = 0.5 * np.sum(prec * d * d)
    grad = prec * d
    s = np.zeros(N)
    for k in range(w.size):
        c[k] = 0.0
        if w[k] == 0.0:
            continue
        a, b = wi[k], li[k]
        z = (f[a] - f[b]) * _INV_SQRT2
        lp = log_ndtr_scalar(z)
        r = math.exp(-0.5 * z * z - _LOG_SQRT_2PI - lp)
        h = min(max(r * (z + r), 0.0), 1.0)
        obj -= w[k] * lp
        v = -w[k] * r * _INV_SQRT2
        s[a] += v
        s[b] -= v
        c[k] = w[k] * h * 0.5
    grad += F.T @ s
    gp = grad / prec
    u = F @ gp
    M[:, :] = 0.0
    for a in range(N):
        M[a, a] = 1.0
    y[:] = 0.0
    for k in range(w.size):
        ck = c[k]
        if ck == 0.0:
            continue
        a, b = wi[k], li[k]
        for q in range(N):
            dk = ck * (K[a, q] - K[b, q])
            M[a, q] += dk
            M[b, q] -= dk
        du = ck * (u[a] - u[b])
        y[a] += du
        y[b] -= du
    _lu_solve(M, y, piv)
    step = gp - (F.T @ y) / prec
    return obj, step, np.dot(grad, step)


@njit(cache=True, nogil=True)
def _newton_probit_items_kernel(
    F, wi, li, w, prec, mean, x0, max_iter, tol, armijo, min_step, x, ok, n_iter
):  # pragma: no cover - compiled
    """Every problem's Newton loop, step for step :func:`newton_minimize_batch` (rule
    ``"decrement"``, Armijo backtracking down to ``min_step``): the MAPs into ``x``,
    whether each converged into ``ok``, its line searches into ``n_iter``.

    Each problem is solved on the items its weighted comparisons compare (in their
    order): an item no such comparison touches has no curvature, so its row of ``I + L
    K`` is the identity and its ``y`` is 0 (the held-out rows of a cross-validation fold,
    padding); leaving it out changes no step beyond rounding and saves its share of ``K``
    and of the ``N x N`` solve."""
    B, N, _ = F.shape
    M_all = np.empty(N * N)
    y_all = np.empty(N)
    c = np.empty(w.shape[1])
    piv_all = np.empty(N, dtype=np.int64)
    local = np.empty(N, dtype=np.int64)
    wia = np.empty(w.shape[1], dtype=np.int64)
    lia = np.empty(w.shape[1], dtype=np.int64)
    for i in range(B):
        w_i, pi, mi = w[i], prec[i], mean[i]
        local[:] = -1
        for k in range(w_i.size):
            if w_i[k] != 0.0:
                local[wi[i, k]] = 0
                local[li[i, k]] = 0
        na = 0
        for a in range(N):
            if local[a] == 0 or (a == N - 1 and na == 0):  # at least one item
                local[a] = na
                na += 1
        keep = np.empty(na, dtype=np.int64)
        for a in range(N):
            if local[a] >= 0:
                keep[local[a]] = a
        for k in range(w_i.size):  # unweighted comparisons keep any item: skipped below
            wia[k] = max(local[wi[i, k]], 0)
            lia[k] = max(local[li[i, k]], 0)
        Fi = F[i][keep]
        wii, lii = wia, lia
        M, y, piv = M_all[: na * na].reshape((na, na)), y_all[:na], piv_all[:na]
        K = (Fi / pi) @ Fi.T
        xi = x0[i].copy()
        it = 0
        conv = True
        while True:
            obj, step, dec = _items_step(Fi, wii, lii, w_i, pi, mi, K, xi, M, y, c, piv)
            go = not (dec <= tol * tol)
            if it >= max_iter:
                conv = not go
                break
            if not go:
                break
            it += 1
            t = 1.0
            new = xi - step
            while True:
                obj_new = _items_objective(Fi, wii, lii, w_i, pi, mi, new)
                if obj_new <= obj - armijo * t * dec or t < min_step:
                    break
                t *= 0.5
                new = xi - t * step
            if obj_new < obj:
                xi = new
            else:  # no representable decrease: converged unless something is not finite
                conv = np.isfinite(obj) and not np.isnan(dec)
                break
        x[i] = xi
        ok[i] = conv
        n_iter[i] = it


def newton_probit_items(
    F: np.ndarray,
    wi: np.ndarray,
    li: np.ndarray,
    w: np.ndarray,
    prec: np.ndarray,
    mean: np.ndarray,
    x0: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-9,
    armijo: float = 0.25,
    min_step: float = 2.0**-38,
    split: Callable[[Callable[[slice], None], int], None] | None = None,
    what: str = "penalised probit GLM",
    hint: str = RAISE_MAX_ITER,
    warn: bool = True,
    stacklevel: int = 2,
) -> BatchNewtonResult:
    """Compiled :func:`newton_minimize_batch` on ``B`` item-space probit GLMs (Eq. 6).

    The same steps, line search and flags as :func:`newton_minimize_batch` with the
    objective and Newton step of Eq. 6, one problem at a time in one numba kernel
    (without NumPy's per-call overhead on thousands of small matrices).

    Parameters
    ----------
    F
        ``(B, N, p)`` each problem's item rows (item utilities ``f = F x``).
    wi, li
        ``(B, n)`` local winner and loser item of each comparison.
    w
        ``(B, n)`` comparison weights (0 for padding).
    prec, mean
        ``(B, p)`` diagonal prior precision and prior mean.
    x0
        ``(B, p)`` starting points.
    max_iter, tol, armijo, min_step
        As in :func:`newton_minimize_batch`.
    split
        ``split(part, B)`` calls ``part(slice)`` on slices covering the ``B`` problems
        (e.g. on threads: the kernel releases the GIL); default one call on all.
    what, hint, warn, stacklevel
        As in :func:`newton_minimize`; one warning counts the unconverged problems.

    Returns
    -------
    BatchNewtonResult
    """
    i8, f8 = np.int64, np.float64
    B, _, p = F.shape
    F, w, prec, mean = (kernel_array(a, f8) for a in (F, w, prec, mean))
    wi, li = kernel_array(wi, i8), kernel_array(li, i8)
    start = kernel_array(x0, f8)
    x = np.empty((B, p))
    ok = np.ones(B, dtype=bool)
    n_iter = np.zeros(B, dtype=i8)

    def part(sl: slice) -> None:
        _newton_probit_items_kernel(
            F[sl], wi[sl], li[sl], w[sl], prec[sl], mean[sl], start[sl],
            int(max_iter), float(tol), float(armijo), float(min_step),
            x[sl], ok[sl], n_iter[sl],
        )  # fmt: skip

    if split is None:
        part(slice(0, B))
    else:
        split(part, B)
    if warn:
        n_bad = int((~ok).sum())
        warn_unconverged(n_bad, B, what, max_iter, tol, "decrement", hint, stacklevel + 1)
    return BatchNewtonResult(x, ok, n_iter)
