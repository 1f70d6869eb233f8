"""Segment logits: user trees with linear item models, and the covariate logits beside them.

Every model here predicts a respondent's choices from a **linear item model** on the
item design ``z(x)`` of :class:`~pbo_core.models.linear.LinearDesign` (SwissMetro: mode
constants for Swissmetro and Car against Train, travel time in minutes, cost in CHF,
headway in minutes, airline seats), with the binary logit of a comparison

.. math::  P(w \\succ l \\mid \\beta) = \\sigma\\big((z_w - z_l)^\\top \\beta\\big).   (1)

The models differ in where the respondent's ``beta`` comes from before any of their own
answers (the *cold start*, a "centre" ``c(u)`` computed from their features ``u``):

* **pooled logit** (Eq. 2): one ``beta`` for everybody, prior ``N(0, (alpha S^2)^-1)``
  with ``S`` the RMS of each difference column;
* **covariate-interaction logit** (Eq. 3): ``beta(u) = B x_u`` with ``x_u = (1,
  covariate dummies)`` (trip purpose, age, gender, income, first class, GA, luggage, who
  pays, ticket, surveyed group, car availability): every mode constant and slope is
  interacted with every covariate. The comparison row is ``kron(d, x_u)``; main effects
  get a weak prior (``alpha_main``), the interactions ``alpha`` on the standardised scale,
  chosen by K-fold CV over *respondents* (held-out log loss; the folds hold whole
  respondents because the target is new respondents);
* **segment logit** (Eq. 4): a user tree puts the respondent in segment ``g(u)`` and
  ``beta_g ~ N(beta_pooled, (lam S^2)^-1)`` is the segment's logit shrunk toward the
  pooled fit, ``lam`` by respondent-fold CV. The item model of a segment is the linear
  leaf model of the ``dt-linear`` family with the mode as its item split: a level per
  mode and shared time, cost and headway slopes, so a segment reads "commuters with a GA
  card: value of time X CHF/h" (Eq. 7).

User tree by parameter instability (Eq. 5; model-based recursive partitioning, Zeileis,
Hothorn & Hornik 2008, and Bradley-Terry trees, Strobl, Wickelmaier & Zeileis 2011).
At a node the segment logit is fitted to the node's comparisons; ``s_u`` is respondent
``u``'s score (sum over their comparisons of ``(1 - sigma(z)) d``) at the node's fit and
``J = sum_u (s_u - s-bar)(s_u - s-bar)^T`` (clustered by respondent). For a categorical
feature with categories ``k`` the statistic ``sum_k S_k^T J^-1 S_k n / n_k`` (``S_k`` the
category's score sum) is ``chi^2((K - 1) p)`` when the parameters are stable; for an
ordinal feature the largest ``W_t^T J^-1 W_t / (pi_t (1 - pi_t))`` over its cuts is
referred to ``chi^2(p)``, Bonferroni-corrected over the cuts. The feature with the
smallest p-value is split when that p-value, Bonferroni-corrected over the features, is
below ``alpha`` (default 0.05; this is the stopping rule) and both children keep
``min_users_leaf`` respondents; the split point maximises the summed log-likelihood of the
two children's logits. The paper's Eq. 15 user tree (:func:`pbo_core.hierarchy.grow_user_tree`)
can hold the same segment logits (``split="consistency"``).

Own answers (Eq. 6): after ``k`` of their own tasks a respondent's coefficients are the
MAP of ``beta_r ~ N(c(u), (rho S^2)^-1)`` on those answers. ``rho`` is chosen for each
model by respondent-fold CV on the training respondents only: the centre model is
refitted without the fold (its strengths fixed at their full-data values), each held-out
respondent holds out ``test_tasks`` tasks, and the held-out log loss after 1, 2, ... of
their other tasks is summed.

Value of time (Eq. 7): ``VOT = beta_time / beta_cost`` in the units the study states
(per hour for a time stated in minutes: :func:`pbo_core.units.tradeoff_unit`; the money
and time attributes are the analysis plan's), with Fieller's
95 % interval from the Laplace covariance of the two slopes; when the cost slope's own
interval includes 0 the ratio is *not identified* and no number is given
(:meth:`SegmentLogitHierarchy.segment_table`). :func:`value_of_time` keeps the
delta-method standard error for callers that want it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit
from threadpoolctl import ThreadpoolController

from pbo_core import units
from pbo_core.data import Schema, Study
from pbo_core.explain import labels
from pbo_core.hierarchy import UserSplit, UserTree, grow_user_tree, split_counts
from pbo_core.models.glm import link_nll, newton_batch, newton_chunked, spd_inv_batch
from pbo_core.models.linear import LinearDesign, fit_pooled, rms_scale
from pbo_core.models.solver import NewtonStep, newton_minimize
from pbo_core.rules import describe_path, describe_side
from pbo_core.splits import holdout_tasks, pair_tasks

__all__ = [
    "DEFAULT_COVARIATES",
    "CohortArrays",
    "CovariateLogit",
    "PersonalLogit",
    "PooledLogit",
    "SegmentLogitHierarchy",
    "cohort_arrays",
    "grow_instability_tree",
    "value_of_time",
]

#: Respondent features of the interaction logit (SwissMetro names; absent ones are skipped,
#: and a study with none of them uses every respondent feature it has).
DEFAULT_COVARIATES: tuple[str, ...] = (
    "purpose",
    "age",
    "gender",
    "income",
    "first_class",
    "ga",
    "luggage",
    "who_pays",
    "ticket",
    "surveyed_group",
    "car_available",
)
#: Prior strengths (standardised scale) searched by CV, strongest first.
ALPHAS: np.ndarray = np.logspace(2, -3, 11)
#: Interaction strengths of Eq. 3 searched by CV, strongest first.
ALPHAS_INTERACTION: np.ndarray = np.logspace(4, 0, 9)
#: Personal strengths ``rho`` of Eq. 6 searched by CV, strongest first.
RHOS: np.ndarray = np.logspace(3, -2, 11)


@lru_cache(maxsize=1)
def _threadpools() -> ThreadpoolController:
    """BLAS controller: the fits solve small systems, where threads only contend."""
    return ThreadpoolController()


# ----------------------------------------------------------------------------- arrays
@dataclass
class CohortArrays:
    """Comparisons of a study as item-design differences with their respondents.

    ``d`` ``(n, p)`` winner-minus-loser design rows (Eq. 1); ``user`` ``(n,)`` position of
    the comparison's respondent in ``respondents``; ``task`` ``(n,)`` task id within the
    respondent; ``U`` ``(R, c)`` encoded respondent features; ``Xu`` ``(R, q)`` their
    covariate dummies (Eq. 3, without the intercept).
    """

    d: np.ndarray
    user: np.ndarray
    task: np.ndarray
    U: np.ndarray
    Xu: np.ndarray
    respondents: np.ndarray
    design: LinearDesign
    user_design: LinearDesign
    user_schema: Schema
    covariates: tuple[str, ...]

    @property
    def n_users(self) -> int:
        """Number of respondents."""
        return len(self.respondents)

    def rows_of(self, user: int) -> np.ndarray:
        """Comparison rows of the respondent at position ``user``, in order (an index
        built once: a scan of every comparison per respondent made cohort fits grow with
        the square of the study)."""
        index = self.__dict__.get("_rows")
        if index is None:
            order = np.argsort(self.user, kind="stable")
            index = np.split(order, np.cumsum(np.bincount(self.user, minlength=self.n_users))[:-1])
            self.__dict__["_rows"] = index
        return index[int(user)]

    def pair_mask(self, users: np.ndarray) -> np.ndarray:
        """Comparisons of the respondents at positions ``users``."""
        keep = np.zeros(self.n_users, dtype=bool)
        keep[np.asarray(users, dtype=np.int64)] = True
        return keep[self.user]


def user_covariates(
    schema: Schema, U: np.ndarray, covariates: Sequence[str]
) -> tuple[LinearDesign, np.ndarray]:
    """Covariate dummies (Eq. 3) of encoded respondent rows ``U``."""
    design = LinearDesign(schema)
    names = [schema.features[schema.columns[c.source].feature].name for c in design.columns]
    cols = [i for i, n in enumerate(names) if n in set(covariates)]
    return design, design.transform(U)[:, cols]


def cohort_arrays(study: Study, covariates: Sequence[str] | None = None) -> CohortArrays:
    """:class:`CohortArrays` of every comparison of ``study`` (needs respondent features)."""
    if study.users is None or study.user_schema is None or study.data.respondent is None:
        raise ValueError(f"study {study.key!r} has no respondent features")
    resp = study.respondents()
    pos = {r: k for k, r in enumerate(resp)}
    user = np.array([pos[r] for r in study.data.respondent], dtype=np.int64)
    design = LinearDesign(study.schema)
    Z = design.transform(study.data.X)
    d = Z[study.data.pairs[:, 0]] - Z[study.data.pairs[:, 1]]
    task = pair_tasks(study.data)
    U = study.user_schema.encode(study.users.loc[resp], source=f"{study.key} users")
    present = {f.name for f in study.user_schema.features}
    cov = tuple(c for c in (covariates or DEFAULT_COVARIATES) if c in present)
    if covariates is None and not cov:  # not SwissMetro's names: every respondent feature
        cov = tuple(f.name for f in study.user_schema.features)
    udesign, Xu = user_covariates(study.user_schema, U, cov)
    return CohortArrays(d, user, task, U, Xu, resp, design, udesign, study.user_schema, cov)


# ----------------------------------------------------------------------------- fitting
def _fit_many(
    d: np.ndarray, W: np.ndarray, prec: np.ndarray, mean: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """MAPs and Hessians of ``B`` logits on the shared rows ``d`` with weights ``W`` (B, n)."""
    D = np.broadcast_to(d, (len(W), *d.shape))
    return newton_chunked(D, W, prec, mean, "logit", max_iter=50)


def _resp_folds(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(n) % max(2, min(k, n))


def _log_loss(z: np.ndarray) -> float:
    return float(link_nll(z, "logit").sum())


def value_of_time(
    beta: np.ndarray, cov: np.ndarray, i_time: int, i_cost: int
) -> tuple[float, float]:
    """``60 beta_time / beta_cost`` (CHF/h when time is in minutes) and its delta-method s.e."""
    bt, bc = float(beta[i_time]), float(beta[i_cost])
    if abs(bc) < 1e-12:
        return float("nan"), float("nan")
    g = np.zeros(len(beta))
    g[i_time], g[i_cost] = 60.0 / bc, -60.0 * bt / bc**2
    return 60.0 * bt / bc, float(np.sqrt(max(g @ cov @ g, 0.0)))


def _kron_newton(
    Dp: np.ndarray,
    Wp: np.ndarray,
    X1: np.ndarray,
    prec: np.ndarray,
    init: np.ndarray | None = None,
    *,
    max_iter: int = 50,
    tol: float = 1e-8,
) -> tuple[np.ndarray, np.ndarray]:
    """MAP and Hessian of the Eq. 3 logit ``z_i = d_i^T B x_u(i)``, prior ``N(0, diag(prec)^-1)``.

    ``Dp`` ``(R, m, p)``: every respondent's difference rows, padded (weight 0 in ``Wp``);
    ``X1`` ``(R, 1 + q)``. The comparison row is ``kron(d_i, x_u)``, so the Hessian is
    ``sum_u kron(M_u, x_u x_u^T)`` with ``M_u = sum_{i in u} h_i d_i d_i^T``: built per
    respondent (one ``(p^2, R) x (R, q^2)`` product) instead of per comparison. Newton
    by the one solver (:func:`~pbo_core.models.solver.newton_minimize`: decrement rule,
    Armijo, 30 trial steps); the Hessian is the one at the returned MAP, and a fit that
    reaches ``max_iter`` above ``tol`` raises a
    :class:`~pbo_core.models.solver.ConvergenceWarning`.
    """
    R, _, p = Dp.shape
    q1 = X1.shape[1]
    beta = np.zeros(p * q1) if init is None else init.astype(float, copy=True)
    XX = (X1[:, :, None] * X1[:, None, :]).reshape(R, q1 * q1)

    def obj(b: np.ndarray) -> tuple[float, np.ndarray]:
        z = np.einsum("uip,up->ui", Dp, X1 @ b.reshape(p, q1).T)
        return float((Wp * link_nll(z, "logit")).sum() + 0.5 * (prec * b * b).sum()), z

    def newton(b: np.ndarray, z: np.ndarray) -> NewtonStep:
        e = expit(-z)  # 1 - sigma(z): minus the derivative of -log sigma(z)
        Gu = np.einsum("ui,uip->up", -Wp * e, Dp)
        Mu = np.einsum("uip,ui,uir->upr", Dp, Wp * e * (1.0 - e), Dp).reshape(R, p * p)
        grad = (Gu.T @ X1).ravel() + prec * b
        H = (Mu.T @ XX).reshape(p, p, q1, q1).transpose(0, 2, 1, 3).reshape(p * q1, p * q1)
        H = H + np.diag(prec)
        step = np.linalg.solve(H, grad)
        return NewtonStep(step, float(grad @ step), info=H)

    res = newton_minimize(
        obj,
        newton,
        beta,
        max_iter=max_iter,
        tol=tol,
        min_step=2.0**-28,  # 30 trial steps, t = 1 ... 2^-29
        what="covariate-interaction logit",
        hint="Raise max_iter, or strengthen the prior (alpha).",
    )
    assert res.step is not None  # rule "decrement" computes a step at the returned point
    return res.x, res.step.info


def _padded(arr: CohortArrays, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Difference rows of every respondent at positions ``users``, padded: ``(R, m, p)``."""
    rows = [arr.rows_of(u) for u in users]
    m = max(1, max(len(r) for r in rows))
    D = np.zeros((len(users), m, arr.d.shape[1]))
    W = np.zeros((len(users), m))
    for i, r in enumerate(rows):
        D[i, : len(r)], W[i, : len(r)] = arr.d[r], 1.0
    return D, W


# ----------------------------------------------------------------------------- centre models
class PooledLogit:
    """Eq. 2: one logit for all respondents; ``alpha`` by respondent-fold CV (log loss).

    The fit is the one pooled linear utility of the product
    (:func:`~pbo_core.models.linear.fit_pooled`, as in
    :class:`~pbo_core.models.linear.LogitSurrogate`) on the cohort's difference rows, with
    folds of whole respondents (the target is new respondents) and the grid :data:`ALPHAS`.
    """

    def __init__(self, alpha: float | Literal["cv"] = "cv", *, n_folds: int = 5, seed: int = 0):
        self.alpha = alpha
        self.n_folds = n_folds
        self.seed = seed

    def fit(self, arr: CohortArrays, users: np.ndarray) -> PooledLogit:
        """Fit on the respondents at positions ``users``.

        The fit is a function of ``arr``, the respondents, the strength, the folds and the
        seed only, so it is kept on ``arr`` and reused: the segment models fit the same
        pooled logit as the ``logit-pooled-update`` arm of the same cohort."""
        users = np.asarray(users, dtype=np.int64)
        memo = arr.__dict__.setdefault("_pooled_fits", {})
        key = (self.alpha, self.n_folds, self.seed, users.tobytes())
        if key not in memo:
            m = arr.pair_mask(users)
            d = arr.d[m]
            scale = rms_scale(d)
            rng = np.random.default_rng([self.seed, 2])
            folds = _resp_folds(len(users), self.n_folds, rng)
            fold_of = np.full(arr.n_users, -1)
            fold_of[users] = folds
            fit = fit_pooled(d, fold_of[arr.user[m]], scale, alpha=self.alpha, grid=ALPHAS)
            if len(memo) >= 64:  # a grid's cohorts come in order: keep the recent ones
                memo.pop(next(iter(memo)))
            for a in (fit.coef, fit.coef_cov, scale):
                a.setflags(write=False)  # shared by every fit of the key
            memo[key] = (fit.alpha, fit.cv_loss, fit.coef, fit.coef_cov, scale)
        self.alpha_, self.cv_loss_, self.coef_, self.coef_cov_, self.scale_ = memo[key]
        return self

    def fixed(self) -> PooledLogit:
        """Unfitted copy with the chosen strength fixed (for the Eq. 6 CV)."""
        return PooledLogit(self.alpha_, n_folds=self.n_folds, seed=self.seed)

    def centres(self, arr: CohortArrays, users: np.ndarray) -> np.ndarray:
        """Cold-start coefficients ``(len(users), p)``."""
        return np.tile(self.coef_, (len(users), 1))


class CovariateLogit:
    """Eq. 3: mode constants and slopes interacted with respondent covariates.

    Parameters
    ----------
    alpha
        Prior strength of the interactions (standardised scale) or ``"cv"``: K-fold CV over
        respondents, held-out log loss, grid :data:`ALPHAS`.
    alpha_main
        Prior strength of the main effects (weak: an econometrician leaves them free).
    """

    def __init__(
        self,
        alpha: float | Literal["cv"] = "cv",
        *,
        alpha_main: float = 1e-3,
        n_folds: int = 5,
        seed: int = 0,
    ) -> None:
        self.alpha = alpha
        self.alpha_main = alpha_main
        self.n_folds = n_folds
        self.seed = seed

    def _prec(self, scale: np.ndarray, alpha: float, p: int) -> np.ndarray:
        q1 = len(scale) // p
        main = np.zeros((p, q1), dtype=bool)
        main[:, 0] = True
        return np.where(main.ravel(), self.alpha_main, alpha) * scale**2

    def fit(self, arr: CohortArrays, users: np.ndarray) -> CovariateLogit:
        """Fit on the respondents at positions ``users``."""
        with _threadpools().limit(limits=1, user_api="blas"):  # small solves: no threads
            return self._fit(arr, np.asarray(users, dtype=np.int64))

    def _fit(self, arr: CohortArrays, users: np.ndarray) -> CovariateLogit:
        Dp, Wp = _padded(arr, users)
        X1 = np.hstack([np.ones((len(users), 1)), arr.Xu[users]])
        p = Dp.shape[2]
        kron_sq = np.einsum("uip,ui,ua->pa", Dp**2, Wp, X1**2).ravel() / Wp.sum()
        scale = np.where(kron_sq > 1e-24, np.sqrt(kron_sq), 1.0)
        alpha = self.alpha
        self.cv_loss_: np.ndarray | None = None
        if alpha == "cv":
            folds = _resp_folds(len(users), self.n_folds, np.random.default_rng([self.seed, 3]))
            loss = np.zeros(len(ALPHAS_INTERACTION))
            for k in range(int(folds.max()) + 1):
                tr, held = folds != k, folds == k
                b = None
                for a, al in enumerate(ALPHAS_INTERACTION):  # strongest first, warm-started
                    b, _ = _kron_newton(Dp[tr], Wp[tr], X1[tr], self._prec(scale, al, p), b)
                    zh = np.einsum("uip,up->ui", Dp[held], X1[held] @ b.reshape(p, -1).T)
                    loss[a] += float((Wp[held] * link_nll(zh, "logit")).sum())
            alpha = float(ALPHAS_INTERACTION[int(np.argmin(loss))])
            self.cv_loss_ = loss
        self.alpha_ = float(alpha)
        b, H = _kron_newton(Dp, Wp, X1, self._prec(scale, self.alpha_, p))
        self.coef_ = b.reshape(p, -1)  # (p, 1 + q): row j = slope j's intercept, effects
        self.coef_cov_ = spd_inv_batch(H[None])[0]
        return self

    def fixed(self) -> CovariateLogit:
        """Unfitted copy with the chosen strength fixed (for the Eq. 6 CV)."""
        return CovariateLogit(
            self.alpha_, alpha_main=self.alpha_main, n_folds=self.n_folds, seed=self.seed
        )

    def centres(self, arr: CohortArrays, users: np.ndarray) -> np.ndarray:
        """``B x_u`` of every respondent at positions ``users``."""
        X1 = np.hstack([np.ones((len(users), 1)), arr.Xu[np.asarray(users)]])
        return X1 @ self.coef_.T


# ----------------------------------------------------------------------------- Eq. 5
def _node_fit(d: np.ndarray, prec: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, float]:
    b, _ = _fit_many(d, np.ones((1, len(d))), prec[None], mean[None])
    return b[0], _log_loss(d @ b[0])


def _candidates(
    codes: np.ndarray, categorical: bool, mean_score: dict[int, np.ndarray], max_exhaustive: int
) -> list[frozenset[int] | float]:
    """Right category sets (categorical) or thresholds ``x >= t`` (ordinal) to try."""
    cats = np.unique(codes)
    if len(cats) < 2:
        return []
    if not categorical:
        return [float(t) for t in (cats[1:] + cats[:-1]) / 2.0]
    if len(cats) <= max_exhaustive:
        rest = [int(c) for c in cats[1:]]
        out: list[frozenset[int] | float] = []
        for r in range(1, len(rest) + 1):
            out += [frozenset(c) for c in combinations(rest, r)]
        return out
    # many categories: order by the leading direction of their mean scores, then scan
    M = np.stack([mean_score[int(c)] for c in cats])
    u, _, _ = np.linalg.svd(M - M.mean(axis=0), full_matrices=False)
    order = cats[np.argsort(u[:, 0], kind="stable")]
    return [frozenset(int(c) for c in order[i:]) for i in range(1, len(order))]


def _instability(
    s: np.ndarray, codes: np.ndarray, categorical: bool, min_leaf: int
) -> tuple[float, float]:
    """Eq. 5 statistic and p-value of one feature from respondent scores ``s`` (R, p)."""
    R, p = s.shape
    sc = s - s.mean(axis=0)
    Jinv = np.linalg.pinv(sc.T @ sc, hermitian=True)
    cats, inv = np.unique(codes, return_inverse=True)
    if len(cats) < 2:
        return 0.0, 1.0
    S = np.zeros((len(cats), p))
    np.add.at(S, inv, sc)
    n = np.bincount(inv).astype(float)
    if categorical:
        stat = float(np.einsum("kp,pq,kq,k->", S, Jinv, S, R / n))
        return stat, float(stats.chi2.sf(stat, (len(cats) - 1) * p))
    W, nl = np.cumsum(S, axis=0)[:-1], np.cumsum(n)[:-1]
    ok = (nl >= min_leaf) & (R - nl >= min_leaf)
    if not ok.any():
        return 0.0, 1.0
    pi = nl / R
    lm = np.einsum("kp,pq,kq->k", W, Jinv, W) / (pi * (1 - pi))
    stat = float(lm[ok].max())
    return stat, float(min(1.0, stats.chi2.sf(stat, p) * ok.sum()))


def grow_instability_tree(
    arr: CohortArrays,
    users: np.ndarray,
    prec: np.ndarray,
    mean: np.ndarray,
    *,
    max_depth: int = 4,
    min_users_leaf: int = 30,
    alpha: float = 0.05,
    columns: Sequence[int] | None = None,
    max_exhaustive: int = 8,
) -> UserTree:
    """User tree of Eq. 5 on the respondents at positions ``users`` (sorted positions).

    ``prec``/``mean``: the diagonal prior of every node's logit. ``columns``: encoded user
    columns that may be split on (default all). Split ``gain`` is the instability statistic;
    node ``score`` the node's log-likelihood.
    """
    users = np.asarray(users, dtype=np.int64)
    is_cat = arr.user_schema.is_categorical
    cols = list(range(arr.U.shape[1])) if columns is None else list(columns)
    tree = UserTree([], [], [], [], [], [], {})

    def new(n: int, depth: int) -> int:
        tree.left.append(-1)
        tree.right.append(-1)
        tree.split.append(None)
        tree.n_users.append(n)
        tree.score.append(0.0)
        tree.depth.append(depth)
        return len(tree.left) - 1

    stack = [(new(len(users), 0), users)]
    while stack:
        node, idx = stack.pop()
        m = arr.pair_mask(idx)
        d, pu = arr.d[m], arr.user[m]
        beta, ll = _node_fit(d, prec, mean)
        tree.score[node] = -ll
        best: UserSplit | None = None
        if tree.depth[node] < max_depth and len(idx) >= 2 * min_users_leaf and len(d) and cols:
            local = np.searchsorted(idx, pu)
            e = expit(-(d @ beta))  # 1 - sigma(z)
            s = np.zeros((len(idx), d.shape[1]))
            np.add.at(s, local, e[:, None] * d)
            tests = []
            for c in cols:
                stat, pv = _instability(s, arr.U[idx, c], bool(is_cat[c]), min_users_leaf)
                tests.append((pv, -stat, c))
            pv, neg_stat, c = min(tests)
            if pv * len(cols) < alpha:
                M = np.zeros((len(idx), d.shape[1], d.shape[1]))
                np.add.at(M, local, (e * (1 - e))[:, None, None] * d[:, :, None] * d[:, None, :])
                best = _best_split(
                    arr.U[idx, c],
                    s,
                    M,
                    bool(is_cat[c]),
                    c,
                    min_users_leaf,
                    max_exhaustive,
                    -neg_stat,
                )
        if best is None:
            tree.leaf_of_node[node] = len(tree.leaf_of_node)
            continue
        col = arr.U[idx, best.column]
        right = (
            np.isin(col.astype(int), list(best.right))
            if is_cat[best.column]
            else (col >= best.threshold)
        )
        tree.split[node] = best
        a = new(int((~right).sum()), tree.depth[node] + 1)
        b = new(int(right.sum()), tree.depth[node] + 1)
        tree.left[node], tree.right[node] = a, b
        stack += [(b, idx[right]), (a, idx[~right])]
    tree.leaf_of_node = {n: k for k, n in enumerate(sorted(tree.leaf_of_node))}
    return tree


def _best_split(
    codes: np.ndarray,
    s: np.ndarray,
    M: np.ndarray,
    categorical: bool,
    c: int,
    min_leaf: int,
    max_exhaustive: int,
    stat: float,
) -> UserSplit | None:
    """Split point of feature ``c`` with the largest one-step log-likelihood gain.

    ``s`` ``(R, p)`` and ``M`` ``(R, p, p)``: every respondent's score and information at
    the node's fit. A child ``C`` moves the log-likelihood by about ``S_C^T M_C^-1 S_C / 2``
    (one Newton step from the parent's coefficients), so every candidate is scored from
    per-category sums without refitting.
    """
    cats, inv = np.unique(codes, return_inverse=True)
    Sk = np.zeros((len(cats), s.shape[1]))
    Mk = np.zeros((len(cats), *M.shape[1:]))
    np.add.at(Sk, inv, s)
    np.add.at(Mk, inv, M)
    nk = np.bincount(inv)
    ms = {int(k): Sk[i] / nk[i] for i, k in enumerate(cats)}
    best: tuple[float, frozenset[int] | float] | None = None
    eye = 1e-8 * np.eye(s.shape[1])
    for cand in _candidates(codes, categorical, ms, max_exhaustive):
        right = np.isin(cats.astype(int), list(cand)) if categorical else cats >= float(cand)
        nr = int(nk[right].sum())
        if not min_leaf <= nr <= len(codes) - min_leaf:
            continue
        gain = 0.0
        for side in (right, ~right):
            S, H = Sk[side].sum(axis=0), Mk[side].sum(axis=0) + eye
            gain += 0.5 * float(S @ np.linalg.solve(H, S))
        if best is None or gain > best[0]:
            best = (gain, cand)
    if best is None:
        return None
    cand = best[1]
    if categorical:
        assert isinstance(cand, frozenset)
        return UserSplit(c, np.nan, cand, stat)
    return UserSplit(c, float(cand), frozenset(), stat)


# ----------------------------------------------------------------------------- Eq. 4
class SegmentLogitHierarchy:
    """A user tree whose segments hold linear item models shrunk toward the pooled logit.

    Parameters
    ----------
    split
        ``"instability"`` (Eq. 5, default) or ``"consistency"`` (the paper's Eq. 15 user
        tree, on the study's ``hierarchy_split_items`` when it has them).
    max_depth, min_users_leaf, alpha
        User-tree depth, respondents per segment, and the Bonferroni level of Eq. 5.
    shrinkage
        ``lam`` of Eq. 4, or ``"cv"`` (respondent folds, held-out log loss, grid :data:`ALPHAS`).
    pooled_alpha
        Prior strength of the pooled logit at the centre of the shrinkage (Eq. 2), or
        ``"cv"`` (:class:`PooledLogit`); it is also the prior of every user-tree node's fit.
    split_columns
        Respondent features the tree may split on (default: the covariates of the
        arrays, those of the interaction logit, so both models see the same information).

    Attributes
    ----------
    user_tree_ : UserTree
    user_leaf_ : ndarray, segment of every training respondent (positions ``users_``)
    segment_coef_ : ndarray (n_segments, p); segment_cov_ : (n_segments, p, p)
    pooled_ : PooledLogit, the centre of the shrinkage
    shrinkage_ : float
    """

    def __init__(
        self,
        *,
        split: Literal["instability", "consistency"] = "instability",
        max_depth: int = 4,
        min_users_leaf: int = 30,
        alpha: float = 0.05,
        shrinkage: float | Literal["cv"] = "cv",
        pooled_alpha: float | Literal["cv"] = "cv",
        split_columns: Sequence[str] | None = None,
        n_folds: int = 5,
        seed: int = 0,
    ) -> None:
        self.split = split
        self.max_depth = max_depth
        self.min_users_leaf = min_users_leaf
        self.alpha = alpha
        self.shrinkage = shrinkage
        self.pooled_alpha = pooled_alpha
        self.split_columns = split_columns
        self.n_folds = n_folds
        self.seed = seed
        self.study_: Study | None = None

    def fixed(self) -> SegmentLogitHierarchy:
        """Unfitted copy with ``shrinkage`` and the pooled strength fixed at the chosen
        values (Eq. 6 CV: the centre is refitted without the fold, its strengths fixed)."""
        out = SegmentLogitHierarchy(
            split=self.split,
            max_depth=self.max_depth,
            min_users_leaf=self.min_users_leaf,
            alpha=self.alpha,
            shrinkage=self.shrinkage_,
            pooled_alpha=self.pooled_.alpha_,
            split_columns=self.split_columns,
            n_folds=self.n_folds,
            seed=self.seed,
        )
        out.study_ = self.study_
        return out

    def _columns(self, arr: CohortArrays) -> list[int]:
        names = [f.name for f in arr.user_schema.features]
        allowed = set(arr.covariates if self.split_columns is None else self.split_columns)
        return [j for j, c in enumerate(arr.user_schema.columns) if names[c.feature] in allowed]

    def _tree(self, arr: CohortArrays, users: np.ndarray, prec: np.ndarray) -> UserTree:
        if self.split == "instability":
            return grow_instability_tree(
                arr,
                users,
                prec,
                np.zeros_like(prec),
                max_depth=self.max_depth,
                min_users_leaf=self.min_users_leaf,
                alpha=self.alpha,
                columns=self._columns(arr),
            )
        if self.split != "consistency":
            raise ValueError(f"split must be 'instability' or 'consistency', got {self.split!r}")
        if self.study_ is None:
            raise ValueError("split='consistency' needs the study (fit(study=...))")
        D = split_counts(self.study_, users, None)
        cols = self._columns(arr)
        tree = grow_user_tree(
            arr.U[np.ix_(users, cols)],
            D,
            arr.user_schema.is_categorical[cols],
            max_depth=self.max_depth,
            min_users_leaf=self.min_users_leaf,
        )
        for sp in tree.split:  # back to columns of the full encoded user matrix
            if sp is not None:
                sp.column = cols[sp.column]
        return tree

    def fit(
        self, arr: CohortArrays, users: np.ndarray, study: Study | None = None
    ) -> SegmentLogitHierarchy:
        """Grow the user tree and fit the segment logits on respondents ``users``."""
        with _threadpools().limit(limits=1, user_api="blas"):  # small solves: no threads
            return self._fit(arr, users, study)

    def _fit(
        self, arr: CohortArrays, users: np.ndarray, study: Study | None
    ) -> SegmentLogitHierarchy:
        if study is not None:
            self.study_ = study
        users = np.sort(np.asarray(users, dtype=np.int64))
        self.pooled_ = PooledLogit(self.pooled_alpha, n_folds=self.n_folds, seed=self.seed)
        self.pooled_.fit(arr, users)
        prec0 = self.pooled_.alpha_ * self.pooled_.scale_**2
        self.user_tree_ = self._tree(arr, users, prec0)
        self.users_ = users
        self.user_leaf_ = self.user_tree_.apply(arr.U[users], arr.user_schema.is_categorical)
        m = arr.pair_mask(users)
        d = arr.d[m]
        leaf_of = np.full(arr.n_users, -1)
        leaf_of[users] = self.user_leaf_
        pl = leaf_of[arr.user[m]]
        L, scale, mu = self.user_tree_.n_leaves, self.pooled_.scale_, self.pooled_.coef_
        lam = self.shrinkage
        if lam == "cv":
            folds = _resp_folds(len(users), self.n_folds, np.random.default_rng([self.seed, 4]))
            fold_of = np.full(arr.n_users, -1)
            fold_of[users] = folds
            f = fold_of[arr.user[m]]
            K, A = int(folds.max()) + 1, len(ALPHAS)
            mus = [
                PooledLogit(self.pooled_.alpha_).fit(arr, users[folds != k]).coef_ for k in range(K)
            ]
            P = np.tile(ALPHAS[:, None] * scale**2, (K, 1))
            Mu = np.repeat(np.stack(mus), A, axis=0)
            loss = np.zeros(A)
            for g in range(L):  # each segment on its own comparisons, all folds and strengths
                dg, fg = d[pl == g], f[pl == g]
                W = np.repeat((fg[None, :] != np.arange(K)[:, None]).astype(float), A, axis=0)
                b, _ = _fit_many(dg, W, P + prec0, (P * Mu) / (P + prec0))
                for k in range(K):
                    z = dg[fg == k] @ b[k * A : (k + 1) * A].T
                    loss += link_nll(z, "logit").sum(axis=0)
            lam = float(ALPHAS[int(np.argmin(loss))])
        self.shrinkage_ = float(lam)
        P = self.shrinkage_ * scale**2
        b, H = np.empty((L, len(scale))), np.empty((L, len(scale), len(scale)))
        for g in range(L):
            dg = d[pl == g]
            b[g : g + 1], H[g : g + 1] = _fit_many(
                dg, np.ones((1, len(dg))), (P + prec0)[None], ((P * mu) / (P + prec0))[None]
            )
        self.segment_coef_, self.segment_cov_ = b, spd_inv_batch(H)
        self.segment_users_ = np.bincount(self.user_leaf_, minlength=L)
        self.arr_ = arr
        return self

    def centres(self, arr: CohortArrays, users: np.ndarray) -> np.ndarray:
        """Segment coefficients of the respondents at positions ``users``."""
        leaf = self.user_tree_.apply(arr.U[np.asarray(users)], arr.user_schema.is_categorical)
        return self.segment_coef_[leaf]

    def assign(self, user_features: pd.DataFrame) -> np.ndarray:
        """Segment of respondents given by their feature table (labels or codes)."""
        U = self.arr_.user_schema.encode(user_features, source="user features")
        return self.user_tree_.apply(U, self.arr_.user_schema.is_categorical)

    def rule(self, node: int, right: bool) -> str:
        """Readable condition of user-tree ``node`` on its right (``True``) or left side."""
        sp = self.user_tree_.split[node]
        assert sp is not None
        return describe_side(self.arr_.user_schema, sp.column, sp.threshold, sp.right, right)

    def segment_paths(self) -> dict[int, str]:
        """Segment -> its rule path ("GA travel card = yes AND ..."), repeated conditions
        on one feature merged (:func:`pbo_core.rules.describe_path`)."""
        t = self.user_tree_
        steps: dict[int, list[tuple[int, float, frozenset[int], bool]]] = {0: []}
        out: dict[int, str] = {}
        for node in range(len(t.left)):
            sp = t.split[node]
            if t.left[node] != -1 and sp is not None:
                steps[t.right[node]] = [*steps[node], (sp.column, sp.threshold, sp.right, True)]
                steps[t.left[node]] = [*steps[node], (sp.column, sp.threshold, sp.right, False)]
            else:
                rules = describe_path(self.arr_.user_schema, steps[node])
                out[t.leaf_of_node[node]] = " AND ".join(rules) or "(all respondents)"
        return out

    def money_column(self, money: str | None = None) -> int | None:
        """Design column of the money attribute: ``money`` (a feature name) when given,
        else the analysis plan's (:func:`pbo_core.explain.labels.money_attribute`);
        ``None`` without either (no money attribute is guessed)."""
        names = self.arr_.design.names
        if money is None and self.study_ is not None:
            money = labels.money_attribute(self.study_)[0]
        return names.index(money) if money is not None and money in names else None

    def time_column(self, time: str | None = None) -> int:
        """Design column of the travel-time attribute (``-1``: none): ``time`` when given,
        else the analysis plan's (none without a study: no time attribute is guessed)."""
        names = self.arr_.design.names
        if time is None and self.study_ is not None:
            time = labels.time_attribute(self.study_)[0]
        return names.index(time) if time is not None and time in names else -1

    def segment_table(self, money: str | None = None, time: str | None = None) -> pd.DataFrame:
        """One row per segment: who, size, every coefficient in units, value of time [95 % CI].

        The value of time divides the slope of the travel-time attribute (``time``, default
        the analysis plan's: none named, no value of time) by the slope of the money
        attribute (``money``, default :meth:`money_column`) with Fieller's 95 % interval
        (:func:`pbo_core.explain.labels.fieller_ratio`); when the money slope's own 95 %
        interval includes 0 the ratio is not identified: ``value of time`` is NaN and the
        text says why. Numbers are rounded to the precision of their interval.
        """
        design = self.arr_.design
        names = design.names
        schema = design.schema
        it = self.time_column(time)
        ic = self.money_column(money)
        ic = -1 if ic is None else ic
        money_col = design.columns[ic] if ic >= 0 else None
        money_name = schema[money_col.name].display if money_col is not None else ""
        scale, unit = 1.0, ""
        if money_col is not None and it >= 0 and names[it] in schema.names:
            scale, unit = units.tradeoff_unit(schema[money_col.name], schema[names[it]], time=True)
        rows = []
        for g, who in sorted(self.segment_paths().items()):
            row: dict[str, Any] = {"segment": g, "respondents": int(self.segment_users_[g])}
            b, V = self.segment_coef_[g], self.segment_cov_[g]
            if it >= 0 and ic >= 0 and it != ic:
                r = labels.fieller_ratio(b[it], b[ic], V[np.ix_([it, ic], [it, ic])])
                r = r.scaled(scale)
                why = labels.money_sign_reason(float(b[ic]), float(V[ic, ic]), money_name)
                r = r.refused(why) if why else r
                d = labels.ci_decimals(r.low, r.high)
                short = unit.replace(" per ", "/")
                row[f"value of time ({short})"] = round(r.estimate, d) if r.identified else np.nan
                row["value of time [95% CI]"] = labels.ratio_text(r, unit, money=money_name)
                row["money attribute"] = money_name
            for j in sorted(range(len(design.columns)), key=lambda j: j not in (it, ic)):
                col = design.columns[j]
                name = col.label
                if col.unit and "(per " not in name:  # "Travel time (min)" -> "(per min)"
                    tail = f" ({col.unit})"
                    base = name[: -len(tail)] if name.endswith(tail) else name
                    name = f"{base} (per {col.unit})"
                half = 1.959963984540054 * float(np.sqrt(max(V[j, j], 0.0)))
                d = labels.ci_decimals(-half, half)
                row[name] = round(float(b[j]), d)
            row["who"] = who
            rows.append(row)
        return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- Eq. 6
class PersonalLogit:
    """A centre model (cold start) plus the Eq. 6 update from a respondent's own answers."""

    def __init__(
        self,
        centre: Any,
        *,
        rho: float | Literal["cv"] = "cv",
        n_folds: int = 3,
        test_tasks: int = 2,
        seed: int = 0,
    ):
        self.centre = centre
        self.rho = rho
        self.n_folds = n_folds
        self.test_tasks = test_tasks
        self.seed = seed

    def fit(
        self, arr: CohortArrays, users: np.ndarray, study: Study | None = None
    ) -> PersonalLogit:
        """Fit the centre on ``users`` and choose ``rho`` by respondent-fold CV (Eq. 6)."""
        with _threadpools().limit(limits=1, user_api="blas"):  # small solves: no threads
            return self._fit(arr, np.sort(np.asarray(users, dtype=np.int64)), study)

    def _fit(self, arr: CohortArrays, users: np.ndarray, study: Study | None) -> PersonalLogit:
        kw = {"study": study} if isinstance(self.centre, SegmentLogitHierarchy) else {}
        self.centre_ = self.centre.fit(arr, users, **kw)
        self.scale_ = rms_scale(arr.d[arr.pair_mask(users)])
        if self.rho != "cv":
            self.rho_, self.cv_loss_ = float(self.rho), None
            return self
        rng = np.random.default_rng([self.seed, 6])
        folds = _resp_folds(len(users), self.n_folds, rng)
        loss = np.zeros(len(RHOS))
        for k in range(int(folds.max()) + 1):
            sub = self.centre_.fixed()
            sub = sub.fit(arr, users[folds != k], **kw)
            held = users[folds == k]
            C = sub.centres(arr, held)
            loss += self._cv_loss(arr, held, C, rng)
        self.rho_ = float(RHOS[int(np.argmin(loss))])
        self.cv_loss_: np.ndarray | None = loss
        return self

    def fixed(self) -> PersonalLogit:
        """Unfitted copy with every chosen strength fixed: ``rho`` and the centre's
        (:meth:`PooledLogit.fixed`, :meth:`CovariateLogit.fixed`,
        :meth:`SegmentLogitHierarchy.fixed`); fitting it runs no cross-validation."""
        return PersonalLogit(
            self.centre_.fixed(),
            rho=self.rho_,
            n_folds=self.n_folds,
            test_tasks=self.test_tasks,
            seed=self.seed,
        )

    def _cv_loss(
        self, arr: CohortArrays, held: np.ndarray, C: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Held-out log loss per ``rho`` after 1, 2, ... own tasks of every held respondent."""
        loss = np.zeros(len(RHOS))
        probs_d, probs_w, centres, tests = [], [], [], []
        for r, c in zip(held, C, strict=True):
            m = arr.rows_of(r)
            d, t = arr.d[m], arr.task[m]
            test = holdout_tasks(t, rng, n_test=self.test_tasks)
            if test is None:
                continue
            own = list(dict.fromkeys(t[~test]))
            for k in range(1, len(own) + 1):
                probs_d.append(d)
                probs_w.append((np.isin(t, own[:k]) & ~test).astype(float))
                centres.append(c)
                tests.append(test)
        if not probs_d:
            return loss
        n = max(len(x) for x in probs_d)
        p = arr.d.shape[1]
        D = np.zeros((len(probs_d), n, p))
        Wt, T = np.zeros((len(probs_d), n)), np.zeros((len(probs_d), n))
        for i, (dd, ww, tt) in enumerate(zip(probs_d, probs_w, tests, strict=True)):
            D[i, : len(dd)], Wt[i, : len(dd)], T[i, : len(dd)] = dd, ww, tt
        Cs = np.stack(centres)
        b = Cs
        for a, rho in enumerate(RHOS):  # strongest prior first: each MAP starts the next
            P = np.tile(rho * self.scale_**2, (len(D), 1))
            b, _ = newton_batch(D, Wt, P, Cs, "logit", init=b, max_iter=50)
            z = np.einsum("bnp,bp->bn", D, b)
            loss[a] = float((T * link_nll(z, "logit")).sum())
        return loss

    def coefficients(self, arr: CohortArrays, user: int, own: Sequence[np.ndarray]) -> np.ndarray:
        """``(len(own), p)`` MAPs of Eq. 6 for respondent position ``user``; ``own[k]`` are
        difference rows of the answers seen so far (empty rows: the cold start)."""
        return self.coefficients_many(arr, np.array([user]), [own])[0]

    def coefficients_many(
        self, arr: CohortArrays, users: np.ndarray, owns: Sequence[Sequence[np.ndarray]]
    ) -> list[np.ndarray]:
        """:meth:`coefficients` of several respondents (positions ``users``, answers
        ``owns[i]``) in one Newton batch per padded length: the problems of every
        respondent whose longest answer set has the same length share one batch, padded as
        a single respondent's would be, so each MAP is the one :meth:`coefficients` gives."""
        p = arr.d.shape[1]
        centre = [self.centre_.centres(arr, np.array([u]))[0] for u in users]
        by_len: dict[int, list[int]] = {}
        for i, own in enumerate(owns):
            n = max(1, max((len(o) for o in own), default=1))
            by_len.setdefault(n, []).append(i)
        out: list[np.ndarray] = [np.zeros((0, p))] * len(owns)
        for n, members in by_len.items():
            probs = [(i, o) for i in members for o in owns[i]]
            D, W = np.zeros((len(probs), n, p)), np.zeros((len(probs), n))
            for j, (_, o) in enumerate(probs):
                D[j, : len(o)], W[j, : len(o)] = o, 1.0
            P = np.tile(self.rho_ * self.scale_**2, (len(probs), 1))
            Cs = np.stack([centre[i] for i, _ in probs]) if probs else np.zeros((0, p))
            b, _ = newton_batch(D, W, P, Cs, "logit", init=Cs, max_iter=50)
            start = 0
            for i in members:
                out[i] = b[start : start + len(owns[i])]
                start += len(owns[i])
        return out
