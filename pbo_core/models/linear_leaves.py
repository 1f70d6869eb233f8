"""Preference trees with linear leaves, pooled across respondents.

Model
-----
One tree is grown on all comparisons of ``data`` with the consistency score, exactly as
:class:`~pbo_core.models.dt.DTSurrogate` grows it (pooled when ``data`` holds several
respondents; :func:`~pbo_core.models.tree.build_tree`). Inside leaf ``l`` the utility of an
item ``x`` for respondent ``r`` is

.. math::

    u_r(x) = a_{r,l} + (z(x) - \\bar z_l)^\\top d_{r,l} + (z(x) - \\bar z)^\\top
    \\beta_r, \\qquad l = \\text{leaf}(x),

with ``z(x)`` a few numeric design columns (:class:`~pbo_core.models.linear.LinearDesign`,
attributes in their own units), ``\\bar z_l`` the mean of ``z`` over the training items
of leaf ``l`` and ``\\bar z`` over all training items. ``beta_r`` is the respondent's
slope shared by all leaves and ``d_{r,l}`` the leaf's deviation from it, so the slope in
leaf ``l`` is ``beta_r + d_{r,l}`` (``slopes="both"``, default; ``"shared"`` drops ``d``,
``"leaf"`` drops ``beta``). The display shows the utility at every leaf's centroid.
``linear_features=()`` (no slopes) is the paper's piecewise-constant DT; a
single leaf is the Bayesian linear probit model. Comparisons have the probit likelihood of
DT-PBO Eq. 2, ``P(w > l) = Phi((u(w) - u(l)) / sqrt(2))``, utilities in ``sigma_noise``
units. Stacking ``theta_r = (a_r, b_r)`` every comparison is linear in ``theta_r`` with
design row ``(phi(w) - phi(l)) / sqrt(2)``, so the fit is a penalised probit GLM
(:func:`pbo_core.models.glm.newton_batch`, all respondents and CV cells batched).

Prior and pooling
-----------------
The base prior is DT-PBO's: ``a ~ N(0, ratio^-1 I)`` and, per slope column ``j``,
``b_j ~ N(0, (slope_ratio s_j^2)^-1)`` with ``s_j`` the RMS of the column's difference in
the training pairs (a unit-RMS difference gets prior variance ``1 / slope_ratio``).
``pooling="shrink"`` multiplies it by a second Gaussian centred on the pooled posterior
mean ``mu`` (the same model fitted to all respondents' comparisons with the base prior)
with precision ``lam * U``, ``U = diag(1, .., 1, s^2, .., s^2)``:

.. math::

    p(\\theta_r) \\propto N(\\theta_r; 0, P_0^{-1})\\, N(\\theta_r; \\mu, (\\lambda U)^{-1})
    = N\\big((P_0 + \\lambda U)^{-1} \\lambda U \\mu,\\; (P_0 + \\lambda U)^{-1}\\big).

``lam = 0`` is no pooling (each respondent's own DT prior: with one respondent and no
slopes the model *is* :class:`~pbo_core.models.dt.DTSurrogate`, bit for bit); ``lam ->
inf`` gives everybody the pooled utilities. The Laplace posterior ``N(theta_map, H^-1)``
is conditioned on ``1^T a = 0`` (Prop. 2; only utility differences are identified), so
the utility of any set of points is jointly Gaussian with mean ``Phi theta`` and
covariance ``Phi S Phi^T`` (symmetric PSD): qEUBO stays analytic, and two points of one
leaf no longer tie once slopes are on.

Choosing the strengths and the tree size
----------------------------------------
``shrinkage="cv"`` (and ``max_depth="cv"``, ``slope_ratio="cv"``) are chosen together by
K-fold cross-validation on the *training* comparisons only: folds hold whole tasks of a
respondent (``data.task``; default one task per comparison, dealt within each
respondent by :func:`pbo_core.splits.task_folds`). For every fold the tree, the
leaf centring and the pooled centre are refitted without the fold, so no held-out
comparison informs any part of the prediction it is scored on. The criterion is the
held-out error with ties counting 1/2 (the accuracy the experiments report); ties go to
the smaller tree and then the stronger prior. Depths whose tree on all training data has
more than ``max_leaves`` leaves are not considered (the readability goal: 12 leaves with
slopes, 24 constant), and depth 0 (a single leaf, the linear model itself) never is.

Tree structure: the tree is grown on the comparisons alone (residual-free), not
refitted on residuals of the linear part. That keeps the tree the paper's tree (the same
readable consistency-score splits, straddler handling and back-ends), costs one tree per
CV cell instead of an alternating fit, and the leaf slopes then show how the trade-offs
differ between the regions the comparisons separate.

Measured (``python tests/benchmarks/tree_accuracy.py``; the ``conjoint-accuracy`` split,
seed 0, 2 held-out tasks per respondent, ties 1/2, mean over respondents [95 % bootstrap
CI]; GP from the ``conjoint-accuracy`` table in docs/case-studies.md)::

    method                                       train                  electricity
    per-respondent logit (RespondentLinear)      0.796 [0.757, 0.834]   0.858 [0.838, 0.877]
    GP (docs)                                    0.657                  0.838
    dt (per respondent)                          0.578 (5.3 leaves)     0.831 (4.7 leaves)
    dt-pooled (PooledDTSurrogate)                0.653 (16 leaves)      0.794 (10 leaves)
    dt-linear-pooled, numeric slopes, CV depth   0.713 (8 leaves)       0.818 (9 leaves)
    dt-linear-pooled, all slopes, CV depth       0.802 (2 leaves)       timed out (30 min)
    dt-linear-pooled, all slopes, depth 3        0.806 (8 leaves)       0.863 (6 leaves)
    dt-linear (own data, numeric slopes, CV)     0.709 (2.4 leaves)     not run
    Train pivoted (load_train(pivot=True)): logit 0.802, dt 0.594, dt-pooled 0.693
    (16 leaves), dt-linear-pooled all slopes depth 3 0.800 (7 leaves)

The trees reach the logit only when every attribute has a personal (shared) slope; the
tree then adds +0.011 [+0.002, +0.019] (train) and +0.006 [-0.006, +0.016]
(electricity) over the logit. Constant leaves, pooled or not, stay 0.14 (train) and 0.06
(electricity) below it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Schema
from pbo_core.metrics import margin_scores
from pbo_core.models.base import (
    COUNT,
    NAMES,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    ArrayOf,
    Options,
    check_input,
    probit_preference,
)
from pbo_core.models.glm import (
    BATCH_CELLS,
    CV_CONSTRAINTS,
    GaussianLinearUtility,
    blas_single_thread,
    link_nll,
    link_terms,
    newton_batch,
    pad_rows,
    respondent_rows,
    run_split,
    spd_inv_batch,
)
from pbo_core.models.leaves import laplace_fit
from pbo_core.models.linear import LinearDesign
from pbo_core.models.solver import newton_minimize_batch, newton_probit_items
from pbo_core.models.tree import GROWTH_CONSTRAINTS, StraddlerMode, Tree, build_tree
from pbo_core.splits import pair_tasks, task_folds

__all__ = ["DEFAULT_SHRINKAGES", "LinearLeafDTSurrogate", "SlopePrior", "condition_on_sum"]

#: Default grid of pooling strengths ``lam`` (0 = no pooling), weakest first.
DEFAULT_SHRINKAGES: tuple[float, ...] = (0.0, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
#: Default grid of slope prior strengths for ``slope_ratio="cv"`` (strongest first).
DEFAULT_SLOPE_RATIOS: tuple[float, ...] = (10.0, 1.0, 0.1, 0.01, 0.001)
#: Default depths tried by ``max_depth="cv"``.
DEFAULT_DEPTHS: tuple[int, ...] = (1, 2, 3, 4, 5, 6)

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
#: The one problem of a pooled solve (:meth:`LinearLeafDTSurrogate._solve_rows`).
_ONE = np.zeros(1, dtype=np.int64)

Pooling = Literal["none", "shrink"]
SlopeMode = Literal["leaf", "shared", "both"]


@dataclass(frozen=True)
class SlopePrior:
    """A Gaussian prior on the shared slopes ``beta`` (diagonal), by design column.

    ``mean[j]`` and ``precision[j]`` belong to the design column named ``columns[j]``
    (:attr:`LinearLeafDTSurrogate.slope_columns_`), in the attribute's own units (utility
    in ``sigma_noise`` per unit), so a prior taken from one fit applies to another fit
    whatever its tree and its pair-difference scale.
    :meth:`LinearLeafDTSurrogate.population_prior` gives the one a pooled fit implies for a new
    respondent.
    """

    columns: tuple[str, ...]
    mean: np.ndarray
    precision: np.ndarray

    def __post_init__(self) -> None:
        mean = np.asarray(self.mean, dtype=float).ravel()
        prec = np.asarray(self.precision, dtype=float).ravel()
        if not len(self.columns) == len(mean) == len(prec):
            raise ValueError(
                f"SlopePrior: {len(self.columns)} columns, {len(mean)} means and "
                f"{len(prec)} precisions"
            )
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(prec)) and np.all(prec > 0)):
            raise ValueError("SlopePrior: means must be finite and precisions positive")
        object.__setattr__(self, "columns", tuple(str(c) for c in self.columns))
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "precision", prec)

    def aligned(self, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, precision)`` in the order of ``columns`` (every one must be present)."""
        pos = {c: i for i, c in enumerate(self.columns)}
        missing = [c for c in columns if c not in pos]
        if missing:
            raise ValueError(f"SlopePrior has no slope for design columns {missing}")
        idx = np.array([pos[c] for c in columns], dtype=np.int64)
        return self.mean[idx], self.precision[idx]


def condition_on_sum(mean: np.ndarray, cov: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Condition ``N(mean, cov)`` (batched ``(..., p)``) on ``sum(theta[:m]) = 0``.

    Eaton's formula with ``c = (1_m, 0)``: ``mean - S c (c^T mean) / (c^T S c)`` and
    ``S - S c c^T S / (c^T S c)``; the result is symmetrised (PSD, ``c`` in the null space).
    With ``p == m`` this is :func:`pbo_core.models.leaves.condition_sum_to_zero`.
    """
    sc = cov[..., :, :m].sum(axis=-1)  # S c
    tot = sc[..., :m].sum(axis=-1)  # c^T S c
    safe = np.where(tot > 0, tot, 1.0)
    mean_c = mean - (mean[..., :m].sum(axis=-1) / safe)[..., None] * sc
    cov_c = cov - sc[..., :, None] * (sc / safe[..., None])[..., None, :]
    cov_c = 0.5 * (cov_c + np.swapaxes(cov_c, -1, -2))
    return mean_c, cov_c


@dataclass(frozen=True)
class _FitInputs:
    """What the CV cells and the final fit read (one study, fixed during a fit).

    ``X`` ``(n_items, d)`` item features, ``pairs`` ``(n, 2)`` winner and loser rows,
    ``z`` ``(n_items, k)`` the slope columns, ``scale`` ``(k,)`` the RMS of their
    differences, ``rows`` the comparisons of each respondent.
    """

    X: np.ndarray
    pairs: np.ndarray
    schema: Schema
    z: np.ndarray
    scale: np.ndarray
    rows: list[np.ndarray]


def _error_sum(z: np.ndarray, held: np.ndarray) -> np.ndarray:
    """Held-out errors (ties 1/2) summed over the last axis, counting ``held`` rows."""
    return ((1.0 - margin_scores(z)) * held).sum(axis=-1)


class _Rows:
    """The comparison rows of ``R`` problems (respondents), as the solver reads them.

    Row ``j`` of problem ``i`` is ``(phi(w) - phi(l)) / sqrt 2`` for the ``j``-th
    comparison ``(w, l)`` of ``rows[i]``. A Newton step of such a problem can be solved in
    the space of its parameters (``p``), of its rows (``n``, Woodbury) or of the items its
    rows compare (``N``, :func:`_item_map`): the PMR demo's 60 messages in 870
    comparisons with 548 parameters, Electricity's 35 offers. When the smaller of the
    last two is below ``p``, the rows are kept **item-wise**: design rows ``F`` ``(R, N',
    p)`` and each row's local winner and loser index, where the "items" are the compared
    items (``N' = N``) or, when there are fewer rows than items, each row itself against a
    zero item (``F`` = ``phi(w) - phi(l)``, ``N' = n + 1``), solved by the compiled loop
    (:func:`_item_map_compiled`). Otherwise they are padded design rows ``D`` ``(R,
    n, p)`` for :func:`pbo_core.models.glm.newton_batch` (the parameter space, or its
    own row-space dual), exactly as :func:`pbo_core.models.glm.pad_rows` pads them.
    ``COMPILED = False`` keeps the earlier rule: items when ``N < min(n, p)``, solved by
    the NumPy batch :func:`_item_map`.
    """

    def __init__(
        self, phi: np.ndarray, pairs: np.ndarray, rows: Sequence[np.ndarray], items: bool = True
    ) -> None:
        self.n = max(1, max((len(r) for r in rows), default=0))
        self.p = phi.shape[1]
        R = len(rows)
        used = [np.unique(pairs[r]) for r in rows]
        self.N = max(1, max((len(u) for u in used), default=0))
        self.mask = np.zeros((R, self.n), dtype=bool)
        for i, r in enumerate(rows):
            self.mask[i, : len(r)] = True
        self.D = None
        if COMPILED:
            self.items = items and min(self.N, self.n + 1) < self.p
            by_rows = self.items and self.n + 1 < self.N
        else:
            self.items = items and self.N < min(self.n, self.p)
            by_rows = False
        if by_rows:  # each row its own item, compared with a zero item
            self.N = self.n + 1
            self.F = np.zeros((R, self.N, self.p))
            self.wi = np.zeros((R, self.n), dtype=np.int64)
            self.li = np.zeros((R, self.n), dtype=np.int64)
            for i, r in enumerate(rows):
                self.F[i, : len(r)] = phi[pairs[r, 0]] - phi[pairs[r, 1]]
                self.wi[i, : len(r)] = np.arange(len(r))
                self.li[i, : len(r)] = self.n
        elif self.items:
            self.F = np.zeros((R, self.N, self.p))
            self.wi = np.zeros((R, self.n), dtype=np.int64)
            self.li = np.zeros((R, self.n), dtype=np.int64)
            for i, (r, u) in enumerate(zip(rows, used, strict=True)):
                self.F[i, : len(u)] = phi[u]
                local = np.searchsorted(u, pairs[r])
                self.wi[i, : len(r)], self.li[i, : len(r)] = local[:, 0], local[:, 1]
        else:
            d = (phi[pairs[:, 0]] - phi[pairs[:, 1]]) * _INV_SQRT2
            self.D, _, _ = pad_rows(d, rows)

    def margins(self, group: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """``(B, n)`` latent differences ``D theta`` of problems ``group`` at ``beta``."""
        if self.D is not None:
            return np.einsum("bnp,bp->bn", self.D[group], beta)
        f = np.einsum("bnp,bp->bn", self.F[group], beta)
        return _item_margins(f, self.wi[group], self.li[group])


def _item_margins(f: np.ndarray, wi: np.ndarray, li: np.ndarray) -> np.ndarray:
    """``(f[w] - f[l]) / sqrt 2`` per problem: ``f`` ``(B, N)``, indices ``(B, n)``."""
    return (np.take_along_axis(f, wi, axis=1) - np.take_along_axis(f, li, axis=1)) * _INV_SQRT2


def _item_laplacian(wi: np.ndarray, li: np.ndarray, c: np.ndarray, N: int) -> np.ndarray:
    """``(B, N, N)`` weighted comparison-graph Laplacians ``sum_j c_j (e_w - e_l)(e_w - e_l)^T``."""
    B = wi.shape[0]
    base = (np.arange(B) * N * N)[:, None]
    idx = np.concatenate(
        [base + wi * N + wi, base + li * N + li, base + wi * N + li, base + li * N + wi], axis=1
    )
    val = np.concatenate([c, c, -c, -c], axis=1)
    return np.bincount(idx.ravel(), val.ravel(), minlength=B * N * N).reshape(B, N, N)


def _item_hessian(
    F: np.ndarray, wi: np.ndarray, li: np.ndarray, w: np.ndarray, prec: np.ndarray, x: np.ndarray
) -> np.ndarray:
    """``(B, p, p)`` Hessians ``H = P + F^T L F`` of the item-space problems at ``x``."""
    N, p = F.shape[1], F.shape[2]
    f = (F @ x[:, :, None])[:, :, 0]
    _, _, h1 = link_terms(_item_margins(f, wi, li), "probit")
    L = _item_laplacian(wi, li, w * h1 * 0.5, N)
    H = np.swapaxes(F, 1, 2) @ L @ F
    H[:, np.arange(p), np.arange(p)] += prec
    return H


def _item_map_compiled(
    F: np.ndarray,
    wi: np.ndarray,
    li: np.ndarray,
    w: np.ndarray,
    prec: np.ndarray,
    mean: np.ndarray,
    init: np.ndarray | None,
    max_iter: int,
    tol: float,
    hessian: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`_item_map` by the solver's compiled batch loop
    (:func:`pbo_core.models.solver.newton_probit_items`, the problems split over the cores
    by :func:`pbo_core.models.glm.run_split`): the same steps without NumPy's per-call
    overhead on thousands of small matrices; one
    :class:`~pbo_core.models.solver.ConvergenceWarning` counts the problems that stopped
    at ``max_iter``."""
    res = newton_probit_items(
        F, wi, li, w, prec, mean, mean if init is None else init,
        max_iter=max_iter, tol=tol, split=run_split,
        what="penalised probit GLM", hint=_HINT, stacklevel=2,
    )  # fmt: skip
    return res.x, _item_hessian(F, wi, li, w, prec, res.x) if hessian else None


#: The advice of the solver's warning (as :mod:`pbo_core.models.glm` words it).
_HINT = "Raise max_iter, or strengthen the prior (separable comparisons have no finite MLE)."
#: Item-space problems go through the compiled loop (``False``: the NumPy batch, the
#: reference the tests compare it with).
COMPILED = True


def _item_map(
    F: np.ndarray,
    wi: np.ndarray,
    li: np.ndarray,
    w: np.ndarray,
    prec: np.ndarray,
    mean: np.ndarray,
    init: np.ndarray | None,
    max_iter: int,
    tol: float,
    hessian: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """MAP of ``B`` penalised probit GLMs whose rows live in item space (see :class:`_Rows`).

    The same objective and the same Newton loop as :func:`pbo_core.models.glm.newton_batch`
    (:func:`pbo_core.models.solver.newton_minimize_batch`, tolerance on the decrement):
    with ``f = F theta`` the item utilities, the rows' curvatures ``c = w h / 2`` give the
    Laplacian ``L`` of the comparison graph, ``H = P + F^T L F`` and, by the push-through
    identity with ``K = F P^{-1} F^T`` (fixed, ``P`` is),

    .. math::

        H^{-1} g = P^{-1} g - P^{-1} F^\\top (I + L K)^{-1} L F P^{-1} g,

    an ``N x N`` solve per step instead of ``p x p`` (``I + L K`` is similar to
    ``I + L^{1/2} K L^{1/2}``, so it is invertible). The same Newton steps, so the same
    MAP (the objective is strictly convex; they agree to rounding). ``hessian=True`` also
    returns ``H`` at the MAP.
    """
    N = F.shape[1]
    start = (mean if init is None else init).astype(float, copy=True)
    K = (F / prec[:, None, :]) @ np.swapaxes(F, 1, 2)
    eye = np.eye(N)

    def newton(active: np.ndarray, ba: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        Fa, wa, pa, ma = F[active], w[active], prec[active], mean[active]
        wia, lia = wi[active], li[active]
        f = (Fa @ ba[:, :, None])[:, :, 0]
        z = _item_margins(f, wia, lia)
        nll, g1, h1 = link_terms(z, "probit")
        dev = ba - ma
        obj = (wa * nll).sum(axis=1) + 0.5 * (pa * dev * dev).sum(axis=1)
        v = wa * g1 * _INV_SQRT2
        k = len(active)
        base = (np.arange(k) * N)[:, None]
        s = np.bincount(
            np.concatenate([base + wia, base + lia], axis=1).ravel(),
            np.concatenate([v, -v], axis=1).ravel(),
            minlength=k * N,
        ).reshape(k, N)
        Ft = np.swapaxes(Fa, 1, 2)
        grad = (Ft @ s[:, :, None])[:, :, 0] + pa * dev
        L = _item_laplacian(wia, lia, wa * h1 * 0.5, N)
        gp = grad / pa
        u = (Fa @ gp[:, :, None])[:, :, 0]
        M = eye + L @ K[active]
        y = np.linalg.solve(M, (L @ u[:, :, None]))[:, :, 0]
        step = gp - (Ft @ y[:, :, None])[:, :, 0] / pa
        return obj, step, (grad * step).sum(axis=1)

    def objective(idx: np.ndarray, b: np.ndarray) -> np.ndarray:
        f = (F[idx] @ b[:, :, None])[:, :, 0]
        z = _item_margins(f, wi[idx], li[idx])
        dev = b - mean[idx]
        return (w[idx] * link_nll(z, "probit")).sum(axis=1) + 0.5 * (prec[idx] * dev * dev).sum(
            axis=1
        )

    res = newton_minimize_batch(
        newton,
        objective,
        start,
        max_iter=max_iter,
        tol=tol,
        min_step=2.0**-38,  # as newton_batch: 40 trial steps
        what="penalised probit GLM",
        hint=_HINT,
    )
    return res.x, _item_hessian(F, wi, li, w, prec, res.x) if hessian else None


class LinearLeafDTSurrogate(GaussianLinearUtility):
    """Preference tree whose leaves hold a level plus linear slopes, optionally pooled.

    Parameters
    ----------
    ratio
        Base prior precision of the leaf levels, ``sigma_noise^2 / sigma_prior^2``
        (default 1/4, as :class:`~pbo_core.models.dt.DTSurrogate`).
    linear_features
        Names of the features with a slope inside every leaf; ``None`` (default): every
        numeric feature of the schema; ``"all"``: every feature; ``()``: none (constant
        leaves, the paper's DT).
        Categorical features get one slope per non-reference level (as in
        :class:`~pbo_core.models.linear.LinearDesign`).
    slope_ratio
        Base prior strength of a slope on the unit-RMS scale of its difference, or
        ``"cv"`` (grid ``slope_ratios``).
    slopes
        Where the slopes live: ``"leaf"`` (one slope vector per leaf), ``"shared"`` (one
        per respondent, the same in every leaf: the tree then only moves levels) or
        ``"both"`` (default: a respondent's slope in leaf ``l`` is their shared slope plus
        a leaf deviation). Leaf slopes and levels are pulled toward the pooled ones with
        ``shrinkage``; shared slopes have prior strength ``slope_ratio`` about the pooled
        shared slopes (``pooling="shrink"``) or about 0.
    slope_prior
        A :class:`SlopePrior` that replaces the base prior of the shared slopes (mean and
        precision per design column), e.g. the population prior of a pooled fit of earlier
        respondents (:meth:`population_prior`) when one new respondent is fitted alone. With
        ``pooling="shrink"`` respondents stay centred on the pooled shared slopes, with
        this precision. Needs ``slopes`` "shared" or "both".
    leaf_slope_ratio
        With ``slopes="both"``: base prior strength of the leaf deviations from the
        shared slope (on the unit-RMS scale; the pull ``shrinkage`` is added).
    pooling
        ``"none"``: every respondent has the base prior; ``"shrink"``: the prior is
        also centred on the pooled posterior mean with strength ``shrinkage``.
    shrinkage
        Pooling strength ``lam >= 0`` (``pooling="shrink"``) or ``"cv"`` (grid
        ``shrinkages``, default :data:`DEFAULT_SHRINKAGES`, which includes 0).
    max_depth
        Tree depth, ``None`` (grow until the consistency score stops it) or ``"cv"``
        (grid ``depths``, limited to trees with at most ``max_leaves`` leaves).
    min_samples_split, min_split_score, straddlers, backend
        Growth controls, passed to :func:`~pbo_core.models.tree.build_tree`.
    max_leaves
        Readability goal used by ``max_depth="cv"`` (default 12).
    depth_patience
        ``max_depth="cv"``: stop the depth path after this many depths in a row that do
        not lower the best CV error (default 1; ``None``: score every depth). Deeper
        trees are then not scored; the choice is the first minimum among those scored.
    n_folds, random_state
        CV folds (whole tasks within each respondent) and the seed of their assignment.
    cv_respondents
        Cost bound of the CV: with more respondents than this, the held-out errors of a
        random sample of this many (seeded by ``random_state``) score the grid; the
        trees and pooled fits of the folds, and the final fit, use every comparison
        (default ``None``: every respondent).
    max_iter, tol
        Newton cap and tolerance on the Newton decrement.

    Attributes
    ----------
    tree_ : Tree
        The (pooled) tree. ``schema_``, ``n_leaves_``, ``item_leaf_`` as in DTSurrogate.
    leaf_mean_, leaf_cov_ : ndarray
        Pooled (population) utility at every leaf's centroid ``z-bar_l`` and its
        covariance (what :mod:`pbo_core.explain.export` draws); constant leaves: the
        sum-to-zero leaf posterior, as in DTSurrogate.
    leaf_slopes_ : DataFrame
        Pooled slope of every linear column in every leaf (attribute units, per unit).
    slope_columns_ : list of str
        Design names of the slope columns.
    leaf_center_ : ndarray, shape (n_leaves, k)
        Centring ``z-bar`` of every leaf.
    respondents_ : ndarray
        Respondent ids (order of first appearance); ``respondent_theta_`` ``(R, p)`` and
        ``respondent_cov_`` ``(R, p, p)`` their conditioned posteriors; ``theta_`` and
        ``theta_cov_`` the pooled one (used for ``respondent=None``).
    shrinkage_, slope_ratio_, max_depth_ : chosen values; ``cv_error_`` ``DataFrame`` of
        the CV grid (held-out error rate per cell) when anything was chosen by CV;
        ``cv_respondents_`` how many respondents scored it (``None``: no CV).
    """

    _default_linear: Sequence[str] | None = None

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "ratio": [POSITIVE],
        "linear_features": [NAMES, Options("all"), None],
        "slope_ratio": [POSITIVE, Options("cv")],
        "slope_ratios": [ArrayOf(POSITIVE), None],
        "slopes": [Options("leaf", "shared", "both")],
        "slope_prior": [SlopePrior, None],
        "leaf_slope_ratio": [POSITIVE],
        "pooling": [Options("none", "shrink")],
        "shrinkage": [NON_NEGATIVE, Options("cv")],
        "shrinkages": [ArrayOf(NON_NEGATIVE), None],
        **GROWTH_CONSTRAINTS,
        "max_depth": [*GROWTH_CONSTRAINTS["max_depth"], Options("cv")],
        "depths": [ArrayOf(NON_NEGATIVE_INT), None],
        "max_leaves": [COUNT],
        "depth_patience": [COUNT, None],
        "n_folds": [COUNT],
        "cv_respondents": [COUNT, None],
        "random_state": CV_CONSTRAINTS["random_state"],
        "max_iter": [COUNT],
        "tol": [POSITIVE],
    }

    def __init__(
        self,
        ratio: float = 0.25,
        *,
        linear_features: Sequence[str] | Literal["all"] | None = None,
        slope_ratio: float | Literal["cv"] = 1.0,
        slope_ratios: Sequence[float] | None = None,
        slopes: SlopeMode = "both",
        slope_prior: SlopePrior | None = None,
        leaf_slope_ratio: float = 1.0,
        pooling: Pooling = "none",
        shrinkage: float | Literal["cv"] = "cv",
        shrinkages: Sequence[float] | None = None,
        max_depth: int | Literal["cv"] | None = "cv",
        depths: Sequence[int] | None = None,
        min_samples_split: int = 1,
        min_split_score: float = 0.0,
        straddlers: StraddlerMode = "discard",
        max_leaves: int = 12,
        depth_patience: int | None = 1,
        n_folds: int = 5,
        cv_respondents: int | None = None,
        random_state: int = 0,
        backend: str = "auto",
        max_iter: int = 100,
        tol: float = 1e-9,
    ) -> None:
        self.ratio = ratio
        self.linear_features = linear_features
        self.slope_ratio = slope_ratio
        self.slope_ratios = slope_ratios
        self.slopes = slopes
        self.slope_prior = slope_prior
        self.leaf_slope_ratio = leaf_slope_ratio
        self.pooling = pooling
        self.shrinkage = shrinkage
        self.shrinkages = shrinkages
        self.max_depth = max_depth
        self.depths = depths
        self.min_samples_split = min_samples_split
        self.min_split_score = min_split_score
        self.straddlers = straddlers
        self.max_leaves = max_leaves
        self.depth_patience = depth_patience
        self.n_folds = n_folds
        self.cv_respondents = cv_respondents
        self.random_state = random_state
        self.backend = backend
        self.max_iter = max_iter
        self.tol = tol

    # ------------------------------------------------------------------ design
    def _slope_design(self, schema: Schema) -> tuple[LinearDesign, np.ndarray]:
        design = LinearDesign(schema)
        names = self.linear_features
        if names is None:
            names = [f.name for f in schema.features if f.kind == "numeric"]
        elif isinstance(names, str):  # "all"
            names = [f.name for f in schema.features]
        names = list(names)
        unknown = set(names) - {f.name for f in schema.features}
        if unknown:
            raise ValueError(f"linear_features {sorted(unknown)} are not in the schema")
        col_feature = [schema.columns[c.source].feature for c in design.columns]
        feat_names = [schema.features[i].name for i in col_feature]
        cols = np.array([i for i, n in enumerate(feat_names) if n in names], dtype=np.int64)
        return design, cols

    def _z(self, X: np.ndarray) -> np.ndarray:
        return self.design_.transform(X)[:, self._cols]

    def _n_params(self, m: int, k: int) -> int:
        leaf = m * k if self.slopes in ("leaf", "both") else 0
        return m + leaf + (k if self.slopes in ("shared", "both") else 0)

    def _phi(
        self, leaf: np.ndarray, z: np.ndarray, cen: np.ndarray, zmean: np.ndarray, m: int
    ) -> np.ndarray:
        """Feature rows: leaf one-hot, ``z - z-bar_l`` in its leaf block, then ``z - z-bar``.

        Layout of ``theta``: ``m`` levels, ``m k`` leaf slopes (``slopes`` "leaf" or
        "both"), ``k`` shared slopes (``slopes`` "shared" or "both"). Leaf slopes act
        about the leaf centroid ``z-bar_l``; the shared slopes about the overall mean
        ``z-bar``, so a respondent's own shared slope also scales the differences between
        leaves (a person twice as price-sensitive sees the cheap leaf twice as far ahead).
        """
        n, k = z.shape
        out = np.zeros((n, self._n_params(m, k)))
        rows = np.arange(n)
        out[rows, leaf] = 1.0
        if k and self.slopes in ("leaf", "both"):
            idx = m + leaf[:, None] * k + np.arange(k)[None, :]
            out[rows[:, None], idx] = z - cen[leaf]
        if k and self.slopes in ("shared", "both"):
            out[:, out.shape[1] - k :] = z - zmean
        return out

    def _grow(self, X: np.ndarray, pairs: np.ndarray, schema: Schema, depth: int | None) -> Tree:
        return build_tree(
            X,
            pairs,
            schema,
            max_depth=depth,
            min_samples_split=self.min_samples_split,
            min_split_score=self.min_split_score,
            straddlers=self.straddlers,
            backend=self.backend,  # type: ignore[arg-type]
        )

    @staticmethod
    def _centers(leaf: np.ndarray, z: np.ndarray, pairs: np.ndarray, m: int) -> np.ndarray:
        """Mean ``z`` of the training items (those in ``pairs``) of every leaf."""
        k = z.shape[1]
        used = np.unique(pairs)
        if k == 0 or used.size == 0:
            return np.zeros((m, k))
        lu = leaf[used]
        cnt = np.bincount(lu, minlength=m).astype(float)
        tot = np.stack([np.bincount(lu, z[used, j], minlength=m) for j in range(k)], axis=1)
        overall = z[used].mean(axis=0)
        return np.where(cnt[:, None] > 0, tot / np.maximum(cnt, 1.0)[:, None], overall[None, :])

    # ------------------------------------------------------------------ fitting helpers
    def _blocks(self, m: int, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-parameter ``s_j^2`` (1 for levels) and block code (0 level, 1 leaf, 2 shared)."""
        k = len(scale)
        s2, code = [np.ones(m)], [np.zeros(m)]
        if self.slopes in ("leaf", "both"):
            s2.append(np.tile(scale**2, m))
            code.append(np.ones(m * k))
        if self.slopes in ("shared", "both"):
            s2.append(scale**2)
            code.append(np.full(k, 2.0))
        return np.concatenate(s2), np.concatenate(code)

    def _prior(
        self, m: int, scale: np.ndarray, rho: float, lam: float, mu: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Respondent prior precision and mean (diagonal).

        Levels: ``ratio + lam``, mean ``lam mu / (ratio + lam)``; leaf slopes: ``(r_l +
        lam) s^2`` with ``r_l = rho`` (``slopes="leaf"``) or ``leaf_slope_ratio``
        (``"both"``: the leaf deviations from the shared slope), mean ``lam mu / (r_l +
        lam)``; shared slopes: ``rho s^2``, centred on the pooled shared slopes with
        ``pooling="shrink"`` (else on 0, or on the mean of ``slope_prior``, whose
        precision then replaces ``rho s^2``).
        """
        s2, code = self._blocks(m, scale)
        base = self._base_prec(m, scale, rho)
        base_mean = self._base_mean(m, len(scale))
        pull = np.where(code == 2, 0.0, lam * s2)  # the lam pull (levels, leaf slopes)
        if self.pooling == "shrink":
            pull = np.where(code == 2, base, pull)
            base = np.where(code == 2, 0.0, base)
        prec = base + pull
        mean = base * base_mean
        if mu is not None:
            mean = mean + pull * mu
        return prec, mean / prec

    def _base_prec(self, m: int, scale: np.ndarray, rho: float) -> np.ndarray:
        """The base prior precision (the pooled model's prior)."""
        s2, code = self._blocks(m, scale)
        leaf_r = float(self.leaf_slope_ratio) if self.slopes == "both" else rho
        prec = np.select([code == 0, code == 1], [float(self.ratio), leaf_r * s2], rho * s2)
        if self._prior_shared is not None:
            prec[code == 2] = self._prior_shared[1]
        return prec

    def _base_mean(self, m: int, k: int) -> np.ndarray:
        """The base prior mean: 0, except the shared slopes' under ``slope_prior``."""
        mean = np.zeros(self._n_params(m, k))
        if self._prior_shared is not None:
            mean[len(mean) - k :] = self._prior_shared[0]
        return mean

    def _solve(
        self,
        D: np.ndarray,
        W: np.ndarray,
        prec: np.ndarray,
        mean: np.ndarray,
        init: np.ndarray | None = None,
        hessian: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Batched MAP and Hessian; ``D`` ``(B, n, p)`` rows already scaled by 1/sqrt(2).

        ``init`` (optional ``(B, p)``) warm-starts Newton (default: the prior mean); the
        objective is strictly convex, so the MAP does not depend on it. ``hessian=False``
        (the CV) returns an empty Hessian and lets Newton step in the dual when ``n < p``.
        """
        B, n, p = D.shape
        beta = np.empty((B, p))
        H = np.empty((B, p, p) if hessian else (0, p, p))
        step = max(1, BATCH_CELLS // max(1, n * p))
        with blas_single_thread():
            for i in range(0, B, step):
                sl = slice(i, min(i + step, B))
                b, h = newton_batch(
                    D[sl],
                    W[sl],
                    prec[sl],
                    mean[sl],
                    "probit",
                    init=None if init is None else init[sl],
                    max_iter=self.max_iter,
                    tol=self.tol,
                    hessian=hessian,
                )
                beta[sl] = b
                if h is not None:
                    H[sl] = h
        return beta, H

    def _solve_rows(
        self,
        rows: _Rows,
        group: np.ndarray,
        W: np.ndarray,
        prec: np.ndarray,
        mean: np.ndarray,
        init: np.ndarray | None = None,
        hessian: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_solve` of the problems ``rows`` (problem ``b`` is ``rows``'s
        ``group[b]``): padded design rows go to :meth:`_solve` unchanged; rows in item
        space to :func:`_item_map`, in chunks of at most :data:`BATCH_CELLS` cells."""
        if rows.D is not None:
            return self._solve(rows.D[group], W, prec, mean, init=init, hessian=hessian)
        B, p, N = len(group), rows.p, rows.N
        beta = np.empty((B, p))
        H = np.empty((B, p, p) if hessian else (0, p, p))
        step = max(1, BATCH_CELLS // max(1, N * max(N, p, rows.n)))
        with blas_single_thread():
            for i in range(0, B, step):
                sl = slice(i, min(i + step, B))
                g = group[sl]
                b, h = (_item_map_compiled if COMPILED else _item_map)(
                    rows.F[g],
                    rows.wi[g],
                    rows.li[g],
                    W[sl],
                    prec[sl],
                    mean[sl],
                    None if init is None else init[sl],
                    self.max_iter,
                    self.tol,
                    hessian,
                )
                beta[sl] = b
                if h is not None:
                    H[sl] = h
        return beta, H

    def _pooled_theta(
        self,
        rows: _Rows,
        w: np.ndarray,
        base: np.ndarray,
        base_mean: np.ndarray,
        init: np.ndarray | None = None,
    ) -> np.ndarray:
        """Pooled MAP (base prior) on the one problem ``rows`` with row weights ``w``."""
        start = None if init is None else init[None]
        beta, _ = self._solve_rows(
            rows, _ONE, w[None], base[None], base_mean[None], init=start, hessian=False
        )
        return beta[0]

    # ------------------------------------------------------------------ fit
    def fit(self, data: PreferenceData) -> LinearLeafDTSurrogate:
        """Grow the tree, choose strengths by CV on ``data`` and fit every respondent.

        Parameters
        ----------
        data
            Comparisons; ``data.respondent`` (optional) says whose each one is. With no
            comparisons the fit is the prior alone (one leaf). CV folds keep each task
            (``data.task``) whole.

        Returns
        -------
        self
        """
        self._validate_params()
        schema = data.get_schema()
        X, pairs = data.X, data.pairs
        n = len(pairs)
        design, cols = self._slope_design(schema)
        self.design_, self._cols = design, cols
        z = self._z(X)
        k = z.shape[1]
        self._prior_shared: tuple[np.ndarray, np.ndarray] | None = None
        if self.slope_prior is not None:
            if self.slopes == "leaf":
                raise ValueError('slope_prior needs slopes="shared" or "both" (shared slopes)')
            self._prior_shared = self.slope_prior.aligned(self._col_names())
        resp = data.respondent if data.respondent is not None else np.zeros(n, dtype=np.int64)
        ids, rows = respondent_rows(resp)
        if n == 0:  # no comparisons yet: the prior alone, one leaf, one respondent
            ids, rows = np.array([0]), [np.zeros(0, dtype=np.int64)]
        dz = z[pairs[:, 0]] - z[pairs[:, 1]]
        scale = np.sqrt((dz * dz).mean(axis=0)) if k and n else np.ones(k)
        scale = np.where(scale > 1e-12, scale, 1.0)
        task = pair_tasks(data)

        inputs = _FitInputs(X, pairs, schema, z, scale, rows)
        lams = self._grid_lams()
        if len(ids) <= 1:  # one respondent is the population: pooling toward it is moot
            lams = lams[:1]
        rhos = self._grid_rhos(k)
        depths = self._grid_depths(X, pairs, schema)
        choice = (depths[0], lams[0], rhos[0])
        self.cv_error_: pd.DataFrame | None = None
        self.cv_respondents_: int | None = None
        if len(depths) * len(lams) * len(rhos) > 1:
            rng = np.random.default_rng(self.random_state)
            folds = task_folds(self.n_folds, rng, task, resp)
            K = int(folds.max(initial=0)) + 1
            if K >= 2:
                scored = self._cv_sample(len(rows), rng)
                self.cv_respondents_ = len(scored)
                cv_inputs = replace(inputs, rows=[rows[i] for i in scored])
                n_scored = sum(len(rows[i]) for i in scored)
                err = self._cv(cv_inputs, folds, K, depths, lams, rhos)
                grid = pd.DataFrame(
                    [(dd, la, rh) for dd in depths for la in lams for rh in rhos],
                    columns=["max_depth", "shrinkage", "slope_ratio"],
                )
                rate = err.ravel() / max(1, n_scored)
                grid["error"] = np.where(np.isfinite(err.ravel()), rate, np.nan)
                self.cv_error_ = grid  # NaN: a depth the early-stopped path did not reach
                best = int(np.argmin(err.ravel()))  # first minimum: small tree, order of grid
                i, j, h = np.unravel_index(best, err.shape)
                choice = (depths[i], lams[j], rhos[h])
        depth, lam, rho = choice
        self._fit_final(inputs, ids, depth, lam, rho)
        self.max_depth_, self.shrinkage_, self.slope_ratio_ = depth, float(lam), float(rho)
        self.n_features_in_ = X.shape[1]
        self._X_fit = X
        return self

    def _cv_sample(self, n_resp: int, rng: np.random.Generator) -> np.ndarray:
        """Indices of the respondents whose held-out errors score the CV grid: all, or
        ``cv_respondents`` of them drawn without replacement (in their order) when there
        are more (the held-out error summed over a random sample of respondents: an
        unbiased estimate of the full sum up to its scale, at a bounded cost; trees and
        the pooled fits of the folds still use every training comparison)."""
        cap = self.cv_respondents
        if cap is None or n_resp <= cap:
            return np.arange(n_resp)
        return np.sort(rng.choice(n_resp, size=int(cap), replace=False))

    def _grid_lams(self) -> list[float]:
        if self.pooling == "none":
            return [0.0]
        if isinstance(self.shrinkage, str):  # "cv"
            g = DEFAULT_SHRINKAGES if self.shrinkages is None else self.shrinkages
            return sorted(float(x) for x in g)[::-1]  # strongest first: ties -> pooling
        return [float(self.shrinkage)]

    def _grid_rhos(self, k: int) -> list[float]:
        if k == 0:
            return [1.0]
        if isinstance(self.slope_ratio, str):  # "cv"
            g = DEFAULT_SLOPE_RATIOS if self.slope_ratios is None else self.slope_ratios
            return sorted((float(x) for x in g), reverse=True)
        return [float(self.slope_ratio)]

    def _grid_depths(self, X: np.ndarray, pairs: np.ndarray, schema: Schema) -> list[int | None]:
        if self.max_depth != "cv":
            return [self.max_depth]
        out: list[int | None] = []
        for dd in sorted(DEFAULT_DEPTHS if self.depths is None else self.depths):
            t = self._grow(X, pairs, schema, dd)
            if out and t.n_leaves > self.max_leaves:
                break
            out.append(dd)
            if t.max_depth < dd:  # the tree stopped on its own: deeper is the same tree
                break
        return out

    def _cv(
        self,
        inputs: _FitInputs,
        folds: np.ndarray,
        K: int,
        depths: list[int | None],
        lams: list[float],
        rhos: list[float],
    ) -> np.ndarray:
        """Held-out errors summed over all comparisons, ``(depths, lams, rhos)``.

        Depths are scored in increasing order; with ``depth_patience`` the path stops
        after that many depths in a row without a lower best error (their rows, and the
        rows of the depths not reached, are ``inf``). Within a fold and a depth the
        Newton solves of the slope-ratio grid are warm-started from the previous one.
        """
        err = np.full((len(depths), len(lams), len(rhos)), np.inf)
        fold_ids = [f for f in range(K) if (folds == f).any() and (folds != f).any()]
        best, stale = np.inf, 0
        for a, dd in enumerate(depths):
            err[a] = 0.0
            for f in fold_ids:
                held = folds == f
                err[a] += self._cv_cell(inputs, held, dd, lams, rhos)
            e = float(err[a].min())
            if e < best:
                best, stale = e, 0
            else:
                stale += 1
                if self.depth_patience is not None and stale >= self.depth_patience:
                    break
        return err

    def _cv_cell(
        self,
        inputs: _FitInputs,
        held_rows: np.ndarray,
        dd: int | None,
        lams: list[float],
        rhos: list[float],
    ) -> np.ndarray:
        """Held-out errors of one fold and one depth, ``(lams, rhos)``."""
        train = ~held_rows
        z, scale, rows = inputs.z, inputs.scale, inputs.rows
        tree, _, _, _, phi = self._leaf_design(inputs, train, dd)
        m = tree.n_leaves
        P = _Rows(phi, inputs.pairs, rows)
        pooled = _Rows(phi, inputs.pairs, [np.arange(len(inputs.pairs))])
        trw = np.zeros(P.mask.shape)
        held = np.zeros(P.mask.shape)
        for i, r in enumerate(rows):
            trw[i, : len(r)] = train[r]
            held[i, : len(r)] = held_rows[r]
        R, L = len(rows), len(lams)
        group = np.repeat(np.arange(R), L)
        Wb = np.repeat(trw, L, axis=0)
        out = np.zeros((L, len(rhos)))
        beta = mu = None
        base_mean = self._base_mean(m, z.shape[1])
        for h, rho in enumerate(rhos):
            base = self._base_prec(m, scale, rho)
            if self.pooling == "shrink":  # warm start: the previous slope ratio's fit
                mu = self._pooled_theta(pooled, train.astype(float), base, base_mean, init=mu)
            pm = [self._prior(m, scale, rho, la, mu) for la in lams]
            prec = np.tile(np.stack([a_[0] for a_ in pm]), (R, 1))
            mean = np.tile(np.stack([a_[1] for a_ in pm]), (R, 1))
            beta, _ = self._solve_rows(P, group, Wb, prec, mean, init=beta, hessian=False)
            zz = P.margins(group, beta).reshape(R, L, -1)
            out[:, h] = _error_sum(zz, held[:, None, :]).sum(axis=0)
        return out

    def _leaf_design(
        self, inputs: _FitInputs, fit_rows: np.ndarray | None, depth: int | None
    ) -> tuple[Tree, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The tree grown on the comparisons ``fit_rows`` (``None``: all) and its design.

        Returns the tree, the leaf of every item ``(n_items,)``, the leaf centres
        ``(m, k)`` and overall centre ``(k,)`` of the slope columns (from the fitted
        comparisons' items), and the design row ``phi`` of every item ``(n_items, p)``
        (a comparison's row is ``(phi(w) - phi(l)) / sqrt 2``, :class:`_Rows`).
        """
        X, z, pairs = inputs.X, inputs.z, inputs.pairs
        fit = pairs if fit_rows is None else pairs[fit_rows]
        tree = self._grow(X, fit, inputs.schema, depth)
        m = tree.n_leaves
        leaf = tree.apply(X)
        cen = self._centers(leaf, z, fit, m)
        zmean = self._centers(np.zeros(len(z), dtype=np.int64), z, fit, 1)[0]
        phi = self._phi(leaf, z, cen, zmean, m)
        return tree, leaf, cen, zmean, phi

    def _fit_final(
        self, inputs: _FitInputs, ids: np.ndarray, depth: int | None, lam: float, rho: float
    ) -> None:
        pairs, scale, rows = inputs.pairs, inputs.scale, inputs.rows
        tree, leaf, cen, zmean, phi = self._leaf_design(inputs, None, depth)
        m = tree.n_leaves
        k = inputs.z.shape[1]
        base = self._base_prec(m, scale, rho)
        # pooled (population) posterior with the base prior
        if k == 0:
            res = laplace_fit(leaf[pairs[:, 0]], leaf[pairs[:, 1]], m, self.ratio)
            mu, mu_cov = res.map, res.cov
        else:
            mean_b = self._base_mean(m, k)[None]
            pooled = _Rows(phi, pairs, [np.arange(len(pairs))])
            b, H = self._solve_rows(pooled, _ONE, pooled.mask.astype(float), base[None], mean_b)
            mu, mu_cov = b[0], spd_inv_batch(H)[0]
        prec, mean0 = self._prior(m, scale, rho, lam, mu if self.pooling == "shrink" else None)
        # every respondent's posterior is computed when first asked for (:meth:`_posterior`)
        self._post_inputs = (
            (leaf, pairs, rows) if k == 0 else _Rows(phi, pairs, rows),
            prec,
            mean0,
            m,
        )
        self._post_one: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._post_all: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        mu_c, mu_cov_c = condition_on_sum(mu, mu_cov, m)

        self.schema_: Schema = inputs.schema
        self.tree_: Tree = tree
        self.item_leaf_ = leaf
        self.n_leaves_ = m
        self.leaf_center_ = cen
        self.z_mean_ = zmean
        self.scale_ = scale
        self.respondents_ = ids
        self.theta_, self.theta_cov_ = mu_c, mu_cov_c
        self.slope_columns_ = [design_name for design_name in self._col_names()]
        self._index = {self._key(r): i for i, r in enumerate(ids)}
        self._set_display(self.theta_, self.theta_cov_)

    def _posteriors(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Respondents ``idx``'s posteriors: conditioned mean ``(r, p)`` and covariance
        ``(r, p, p)``, and the MAP before conditioning ``(r, p)``.

        Each respondent's fit depends only on their own comparisons and the prior fixed by
        the pooled fit, and the batched solver treats every problem on its own, so any
        subset gives the same numbers as all respondents at once.
        """
        rows, prec, mean0, m = self._post_inputs
        r = len(idx)
        if isinstance(rows, _Rows):
            theta, H = self._solve_rows(
                rows,
                idx,
                rows.mask[idx].astype(float),
                np.tile(prec, (r, 1)),
                np.tile(mean0, (r, 1)),
            )
            theta_c, cov_c = condition_on_sum(theta, spd_inv_batch(H), m)
            return theta_c, cov_c, theta
        leaf, pairs, own = rows
        p = len(prec)
        theta, theta_c, cov_c = np.empty((r, p)), np.empty((r, p)), np.empty((r, p, p))
        for j, i in enumerate(idx):
            res = laplace_fit(
                leaf[pairs[own[i], 0]],
                leaf[pairs[own[i], 1]],
                m,
                self.ratio,
                prior_mean=mean0,
                prior_precision=prec,
            )
            theta[j], theta_c[j], cov_c[j] = res.map, res.mean_c, res.cov_c  # the DT's own
        return theta_c, cov_c, theta

    def _all_posteriors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not hasattr(self, "tree_"):
            raise AttributeError(f"{type(self).__name__} is not fitted; call fit(data) first")
        if self._post_all is None:
            self._post_all = self._posteriors(np.arange(len(self.respondents_)))
        return self._post_all

    @property
    def respondent_theta_(self) -> np.ndarray:
        """``(R, p)`` every respondent's conditioned posterior mean (computed on first use)."""
        return self._all_posteriors()[0]

    @property
    def respondent_cov_(self) -> np.ndarray:
        """``(R, p, p)`` every respondent's conditioned posterior covariance."""
        return self._all_posteriors()[1]

    def prepare_respondents(self, respondents: Sequence[Any]) -> None:
        """Solve the posteriors of ``respondents`` in one batch for the
        ``predict(X, respondent=r)`` calls that follow (respondents not in the training
        data are skipped): the same numbers as one at a time (:meth:`_posteriors`: every
        problem of a batch is solved on its own), without a solver call per respondent."""
        if not hasattr(self, "tree_") or self._post_all is not None:
            return
        keys = (self._key(r) for r in respondents)
        idx = sorted({self._index[k] for k in keys if k in self._index} - set(self._post_one))
        if not idx:
            return
        t, c, mp = self._posteriors(np.array(idx, dtype=np.int64))
        for j, i in enumerate(idx):
            self._post_one[i] = (t[j], c[j], mp[j])

    def _posterior(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Respondent ``i``'s conditioned posterior (computed once, alone)."""
        if self._post_all is not None:
            return self._post_all[0][i], self._post_all[1][i]
        if i not in self._post_one:
            t, c, mp = self._posteriors(np.array([i]))
            self._post_one[i] = (t[0], c[0], mp[0])
        return self._post_one[i][0], self._post_one[i][1]

    def _set_display(self, theta: np.ndarray, cov: np.ndarray) -> None:
        """Leaf display values: the utility at every leaf's centroid (mean, covariance)."""
        m = self.n_leaves_
        leaves = np.arange(m)
        Phi = self._phi(leaves, self.leaf_center_, self.leaf_center_, self.z_mean_, m)
        c = Phi @ cov @ Phi.T
        self.leaf_mean_ = Phi @ theta
        self.leaf_cov_ = 0.5 * (c + c.T)
        self.leaf_map_ = self.leaf_mean_
        self.leaf_slopes_ = self._slope_table(theta)

    def _slope_table(self, theta: np.ndarray) -> pd.DataFrame:
        m, k = self.n_leaves_, len(self._cols)
        b = np.zeros((m, k))
        if k and self.slopes in ("leaf", "both"):
            b += theta[m : m + m * k].reshape(m, k)
        if k and self.slopes in ("shared", "both"):
            b += theta[len(theta) - k :][None, :]
        return pd.DataFrame(b, columns=self.slope_columns_).rename_axis("leaf")

    def population_prior(self) -> SlopePrior:
        """The prior this pooled fit implies for the shared slopes of a *new* respondent.

        Mean: the pooled shared slopes (``theta_``); precision: the respondents' prior
        precision of the shared slopes in this fit (``slope_ratio_ s_j^2``, or the
        ``slope_prior``'s own), which is what a new respondent joining the pooled model
        would get. Pass it as ``slope_prior`` to a model fitted on that respondent alone.
        """
        if not hasattr(self, "tree_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(data) first")
        if self.slopes == "leaf" or not len(self._cols):
            raise ValueError('slope_prior needs shared slopes (slopes "shared" or "both")')
        k = len(self._cols)
        prec = self._base_prec(self.n_leaves_, self.scale_, self.slope_ratio_)[-k:]
        return SlopePrior(tuple(self.slope_columns_), self.theta_[-k:].copy(), prec.copy())

    def _col_names(self) -> list[str]:
        return [self.design_.columns[c].name for c in self._cols]

    # ------------------------------------------------------------------ prediction
    @staticmethod
    def _key(r: Any) -> Any:
        return r.item() if isinstance(r, np.generic) else r

    def _params(self, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        if not hasattr(self, "tree_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(data) first")
        if respondent is None:
            return self.theta_, self.theta_cov_
        try:
            i = self._index[self._key(respondent)]
        except KeyError:
            raise KeyError(f"respondent {respondent!r} was not in the training data") from None
        return self._posterior(i)

    def _rows(self, X: np.ndarray) -> np.ndarray:
        if X is getattr(self, "_X_fit", None):
            leaf = self.item_leaf_
        else:
            X = check_input(X, getattr(self, "n_features_in_", None), type(self).__name__)
            leaf = self.tree_.apply(X)
        z = self._z(X)
        return self._phi(leaf, z, self.leaf_center_, self.z_mean_, self.n_leaves_)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index of every row of ``X``."""
        if X is getattr(self, "_X_fit", None):
            return self.item_leaf_
        X = check_input(X, getattr(self, "n_features_in_", None), type(self).__name__)
        return self.tree_.apply(X)

    # GaussianLinearUtility: phi(x) the leaf design row (Eq. above), DT-PBO's probit
    # likelihood in sigma_noise units, P(a > b) = Phi(mu_d / sqrt(2 + s_d^2))
    def _design_rows(self, X: np.ndarray) -> np.ndarray:
        return self._rows(X)

    def _gaussian(self, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        return self._params(respondent)

    def _preference(self, mean_diff: np.ndarray, var_diff: np.ndarray) -> np.ndarray:
        return probit_preference(mean_diff, var_diff)

    # ------------------------------------------------------------------ display
    def for_respondent(self, respondent: Any, X: np.ndarray | None = None) -> LinearLeafDTSurrogate:
        """A shallow copy whose ``leaf_mean_``/``leaf_cov_``/``leaf_slopes_`` are one person's.

        With ``X`` (that person's items) the copy's ``item_leaf_`` (leaf item counts of
        the display) is the leaf of each row of ``X`` instead of the training items.
        """
        theta, S = self._params(respondent)
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.theta_, out.theta_cov_ = theta, S
        if X is not None:
            X = check_input(X, getattr(self, "n_features_in_", None), type(self).__name__)
            out.item_leaf_, out._X_fit = self.tree_.apply(X), X
        out._set_display(theta, S)
        return out

    def leaf_slopes(self, respondent: Any = None) -> pd.DataFrame:
        """Slope of every linear column in every leaf (``sigma_noise`` per attribute unit).

        With ``slopes="both"`` a leaf's slope is the shared slope plus its leaf deviation.
        """
        theta, _ = self._params(respondent)
        return self._slope_table(theta)

    def slope_posterior(
        self, respondent: Any = None, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gaussian posterior of the leaf slopes (``sigma_noise`` per attribute unit).

        The slope in leaf ``l`` is the linear map ``A_l theta`` (its leaf block plus the
        shared block, as :meth:`leaf_slopes`), so under ``N(theta, S)`` it has mean
        ``A_l theta`` and covariance ``A_l S A_l^T``. Returns ``(m, k)`` means and
        ``(m, k, k)`` covariances (columns :attr:`slope_columns_`); with ``weights``
        ``(m,)`` the posterior of the weighted average slope ``sum_l w_l A_l theta /
        sum_l w_l``: ``(k,)`` and ``(k, k)``. Covariances are symmetrised (PSD).
        """
        theta, S = self._params(respondent)
        m, k, p = self.n_leaves_, len(self._cols), len(theta)
        if weights is None:  # A_l selects (and adds) entries: index theta and S directly
            blocks = []
            if k and self.slopes in ("leaf", "both"):
                blocks.append(m + np.arange(m)[:, None] * k + np.arange(k)[None, :])
            if k and self.slopes in ("shared", "both"):
                blocks.append(np.broadcast_to(p - k + np.arange(k), (m, k)))
            mean = np.zeros((m, k))
            cov = np.zeros((m, k, k))
            for b1 in blocks:
                mean += theta[b1]
                for b2 in blocks:
                    cov += S[b1[:, :, None], b2[:, None, :]]
            return mean, 0.5 * (cov + np.swapaxes(cov, -1, -2))
        A = np.zeros((m, k, p))
        if k and self.slopes in ("leaf", "both"):
            for j in range(k):
                A[np.arange(m), j, m + np.arange(m) * k + j] = 1.0
        if k and self.slopes in ("shared", "both"):
            A[:, np.arange(k), p - k + np.arange(k)] = 1.0
        w = np.asarray(weights, dtype=float)
        if w.shape != (m,) or not np.all(w >= 0) or w.sum() <= 0:
            raise ValueError(f"weights must be {m} non-negative numbers, not all 0")
        A = np.tensordot(w / w.sum(), A, axes=1)
        mean = A @ theta
        cov = A @ S @ np.swapaxes(A, -1, -2)
        return mean, 0.5 * (cov + np.swapaxes(cov, -1, -2))

    def slope_text(self, leaf: int, respondent: Any = None, digits: int = 2) -> list[str]:
        """Readable slopes of one leaf, e.g. ``["Travel time: -0.028 per min"]``."""
        row = self.leaf_slopes(respondent).iloc[int(leaf)]
        out = []
        for c, v in zip(self._cols, row.to_numpy(), strict=True):
            col = self.design_.columns[c]
            f = self.schema_[col.name.split("=")[0]] if "=" in col.name else self.schema_[col.name]
            unit = col.unit or ("level" if f.kind == "ordinal" else "unit")
            name = f.display if col.code is None else col.label
            out.append(f"{name}: {v:+.{digits}g} per {unit}")
        return out
