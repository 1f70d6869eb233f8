"""The conditional (multinomial) logit: the econometrician's baseline, with its exact likelihood.

Choice situations
-----------------
The comparisons of one choice task (``data.task``) record one choice: the chosen
alternative beats each other *available* alternative. :func:`choice_sets` turns them back
into the choice situation they came from, ``C_s = {w} U {l : (w, l) in task s}``. A task
that holds a ranking (every item beats the ones below it) is exploded into its
successive choices (the rank-ordered logit of Beggs, Cardell & Hausman 1981); whatever a
task holds beyond a single choice or a ranking counts as one binary choice per comparison,
and so does every comparison of data without task ids.

Model
-----
Alternative ``j`` of situation ``s`` (respondent ``r``) has utility

.. math::

    V_{sj} = z_j^\\top \\beta + \\delta_{a(j)} + x_r^\\top \\gamma_{a(j)},          \\qquad (1)

with ``z_j`` the item's attributes (:class:`~pbo_core.models.linear.LinearDesign`),
``delta_a`` the constant of alternative ``a`` (alternative-specific constants: one per
level of the ``alternative`` attribute except the ``reference`` level, whose constant is
0) and ``gamma_a`` the coefficients of the respondent's features ``x_r`` in alternative
``a``'s utility (case-specific variables; 0 for the reference). The choice probability
and log-likelihood are McFadden's (1974)

.. math::

    P_s(j) = \\frac{e^{V_{sj}}}{\\sum_{k \\in C_s} e^{V_{sk}}}, \\qquad
    \\ell(\\theta) = \\sum_s \\log P_s(c_s),                                     \\qquad (2)

computed with a per-situation log-sum-exp, so no value overflows. The estimate maximises
``l(theta) - alpha/2 sum_j (s_j theta_j)^2`` (``s_j``: the root mean square of column
``j``'s deviations from the chosen alternative, the same standardised ridge as
:mod:`pbo_core.models.linear`). The default, ``alpha = 0``, is the maximum-likelihood
estimate Biogeme, mlogit and larch report. A penalty is used only when asked (``alpha >
0``; ``alpha="cv"`` picks the strength among :data:`MNL_ALPHAS`, 0 included, by the
held-out log-likelihood of whole tasks of the *training* data, folds within respondents)
or when the maximum-likelihood estimate is not identified (:func:`mle_problem`: Newton's
method does not converge, a standardised coefficient runs off beyond
:data:`RUNOFF` -- the choices are separated by a combination of attributes -- or the
Hessian is singular -- coefficients that cannot be told apart); the strength is then
chosen by the same inner CV among the positive strengths, and the fit says so
(``penalty_reason_``, :meth:`ConditionalLogit.fit_statistics`). The Newton iterations run
in the one solver (:func:`pbo_core.models.solver.newton_minimize`), with the gradient and
Hessian

.. math::

    g = \\sum_s (z_{s c_s} - \\bar z_s), \\quad
    H = \\sum_s \\sum_{j \\in C_s} P_s(j) (z_{sj} - \\bar z_s)(z_{sj} - \\bar z_s)^\\top,
    \\quad \\bar z_s = \\sum_{j} P_s(j) z_{sj}.                                  \\qquad (3)

Standard errors
---------------
``se_`` (classical): ``sqrt(diag(H^-1))``. ``robust_se_``: the sandwich
``H^-1 (sum_s g_s g_s^T) H^-1`` with the per-situation scores ``g_s`` (Biogeme's "robust"
errors). ``cluster_se_``: the same with the scores summed per respondent (every choice of a
respondent is one cluster), scaled by ``G/(G-1) (N-1)/(N-K)`` as statsmodels and Stata do
(``G`` clusters, ``N`` situations, ``K`` coefficients). With ``alpha > 0`` the Hessian
includes the penalty (a Laplace posterior), and the errors are approximate.

Fit statistics: ``loglik_`` (Eq. 2 at the estimate), ``loglik_null_`` (equal shares,
``-sum_s log |C_s|``), ``rho2_ = 1 - loglik_/loglik_null_``, ``rho2_bar_ = 1 -
(loglik_ - K)/loglik_null_``, ``aic_ = 2K - 2 loglik_`` and ``bic_ = K log N - 2 loglik_``.

Prediction
----------
``predict(X, respondent=r)`` is the systematic utility (1) of items ``X`` for respondent
``r`` (any respondent of the users table the model was fitted with, seen in training or
not: the features are observed, the choices are not needed); ``respondent=None`` uses the
training respondents' mean features. ``prob_prefer`` integrates the coefficients'
uncertainty (the probit approximation of the logistic, as the pairwise logit does).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import ndtr

from pbo_core.data import DataValidationError, Feature, PreferenceData, Schema
from pbo_core.models.base import NAMES, NON_NEGATIVE, ArrayOf, Interval, Options, check_input
from pbo_core.models.glm import (
    CV_CONSTRAINTS,
    GaussianLinearUtility,
    blas_single_thread,
    predictive_prob,
    spd_inv_batch,
)
from pbo_core.models.linear import DesignColumn, LinearDesign
from pbo_core.models.solver import NewtonStep, newton_minimize
from pbo_core.splits import pair_tasks, task_folds

__all__ = [
    "DESIGN_CONSTRAINTS",
    "MNL_ALPHAS",
    "RUNOFF",
    "ChoiceSets",
    "ConditionalLogit",
    "choice_sets",
    "mle_problem",
]

#: What the design parameters of a conditional logit may be (the alternative attribute,
#: its reference level, the case-specific variables, their schema, attributes left out),
#: as every model built on it declares them.
DESIGN_CONSTRAINTS: dict[str, list] = {
    "alternative": [str, None],
    "reference": [str, None],
    "case_specific": [NAMES],
    "user_schema": [Schema, None],
    "exclude": [NAMES],
}

#: The strengths ``alpha="cv"`` chooses from, strongest first (ties go to the stronger).
MNL_ALPHAS: tuple[float, ...] = (100.0, 10.0, 1.0, 0.1, 0.01, 0.0)
#: Newton tolerance (on the decrement) of the CV fits: a held-out log-likelihood does not
#: change in the digits that decide the strength once the decrement is below it.
CV_TOL = 1e-3
#: A maximum-likelihood coefficient "runs off" when its standardised size ``|theta_j s_j|``
#: exceeds this: one typical deviation of its column would change the odds of a choice by
#: ``e^20`` (about 5e8), what separated choices drive the likelihood toward, not a finding.
RUNOFF = 20.0
#: The Hessian of the standardised coefficients is singular when its condition number
#: exceeds this (its smallest eigenvalue against its largest).
SINGULAR = 1e10


# ----------------------------------------------------------------------------- situations
@dataclass(frozen=True)
class ChoiceSets:
    """Choice situations rebuilt from comparisons (rows grouped by situation).

    Attributes
    ----------
    item : ndarray, shape (m,)
        Item index of every alternative row.
    start : ndarray, shape (S + 1,)
        Rows ``start[s] .. start[s+1]-1`` are situation ``s``.
    chosen : ndarray, shape (S,)
        Row of the chosen alternative of every situation.
    task : ndarray, shape (S,)
        Task key (:meth:`~pbo_core.data.PreferenceData.task_keys`) of every situation.
    pair : ndarray, shape (S,)
        One comparison of every situation (its respondent and fold are the situation's).
    """

    item: np.ndarray
    start: np.ndarray
    chosen: np.ndarray
    task: np.ndarray
    pair: np.ndarray

    @property
    def n_situations(self) -> int:
        """Number of choice situations ``S``."""
        return len(self.chosen)

    @property
    def situation(self) -> np.ndarray:
        """``(m,)`` situation of every row."""
        return np.repeat(np.arange(self.n_situations), np.diff(self.start))

    @property
    def sizes(self) -> np.ndarray:
        """``(S,)`` number of alternatives of every situation."""
        return np.diff(self.start)


def _stages(winners: np.ndarray, losers: np.ndarray) -> list[tuple[int, list[int]]] | None:
    """Successive choices of one task's comparisons (a choice or a ranking), or ``None``."""
    beats: dict[int, set[int]] = {}
    for w, loser in zip(winners.tolist(), losers.tolist(), strict=True):
        beats.setdefault(w, set()).add(loser)
        beats.setdefault(loser, set())
    remaining = set(beats)
    n_pairs = len(set(zip(winners.tolist(), losers.tolist(), strict=True)))
    used = 0
    out: list[tuple[int, list[int]]] = []
    while len(remaining) >= 2:
        top = [w for w in remaining if remaining - {w} <= beats[w]]
        if len(top) != 1:
            return None
        w = top[0]
        rest = sorted(remaining - {w})
        out.append((w, rest))
        used += len(rest)
        remaining.discard(w)
        if used == n_pairs and all(not (beats[x] & remaining) for x in remaining):
            break
    return out if used == n_pairs else None


def choice_sets(data: PreferenceData) -> ChoiceSets:
    """The choice situations of ``data``: its recorded ones
    (:attr:`~pbo_core.data.PreferenceData.situations`, exactly as observed, two
    alternatives with identical attributes included) when it has them, else rebuilt from
    its comparisons (see the module doc)."""
    n = data.n_pairs
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return ChoiceSets(z, np.zeros(1, dtype=np.int64), z, z, z)
    if data.situations is not None:
        return _recorded(data)
    key = data.task_keys() if data.task is not None else np.arange(n, dtype=np.int64)
    w, lo = data.pairs[:, 0], data.pairs[:, 1]
    frame = pd.DataFrame({"k": key, "w": w, "i": np.arange(n)})
    n_win = frame.groupby("k", sort=False)["w"].nunique()
    single = frame["k"].map(n_win).to_numpy() == 1
    items: list[np.ndarray] = []
    chosen: list[int] = []
    task: list[int] = []
    pair: list[int] = []
    sizes: list[int] = []
    # one choice per task (the common case): the winner and its distinct losers
    if single.any():
        f = pd.DataFrame({"k": key[single], "w": w[single], "l": lo[single]})
        f["i"] = np.flatnonzero(single)
        f = f.drop_duplicates(["k", "l"]).sort_values(["k", "i"], kind="stable")
        grp = f.groupby("k", sort=False)
        first = grp.head(1)
        counts = grp.size().loc[first["k"]].to_numpy()
        ks = first["k"].to_numpy()
        # rows: the winner, then its losers
        lose_by_k = f["l"].to_numpy()
        pos = 0
        for k_, c, ww, ii in zip(
            ks.tolist(), counts.tolist(), first["w"].tolist(), first["i"].tolist(), strict=True
        ):
            items.append(np.concatenate([[ww], lose_by_k[pos : pos + c]]))
            pos += c
            chosen.append(0)
            task.append(k_)
            pair.append(ii)
            sizes.append(c + 1)
    # rankings exploded; anything else: one binary choice per comparison
    if (~single).any():
        for k_ in pd.unique(key[~single]):
            idx = np.flatnonzero(key == k_)
            stages = _stages(w[idx], lo[idx])
            if stages is None:
                stages = [(int(w[i]), [int(lo[i])]) for i in idx]
            for win, rest in stages:
                items.append(np.array([win, *rest], dtype=np.int64))
                chosen.append(0)
                task.append(int(k_))
                pair.append(int(idx[0]))
                sizes.append(len(rest) + 1)
    size = np.asarray(sizes, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(size)]).astype(np.int64)
    return ChoiceSets(
        item=np.concatenate(items).astype(np.int64),
        start=start,
        chosen=start[:-1] + np.asarray(chosen, dtype=np.int64),
        task=np.asarray(task, dtype=np.int64),
        pair=np.asarray(pair, dtype=np.int64),
    )


def _recorded(data: PreferenceData) -> ChoiceSets:
    """:class:`ChoiceSets` of the situations ``data`` records (those with a comparison:
    a situation's respondent and fold are its comparisons')."""
    sits = data.situations
    assert sits is not None
    first = np.full(sits.n_situations, -1, dtype=np.int64)  # each one's first comparison
    order = np.argsort(sits.pair, kind="stable")
    _, at = np.unique(sits.pair[order], return_index=True)
    first[sits.pair[order][at]] = order[at]
    keep = first >= 0
    if not keep.all():
        sits = sits.select(keep, sits.pair)
        first = first[keep]
    key = data.task_keys()
    return ChoiceSets(
        item=sits.item,
        start=sits.start,
        chosen=sits.chosen,
        task=key[first],
        pair=first,
    )


# ----------------------------------------------------------------------------- likelihood
def _lse(v: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``(S,)`` log-sum-exp of ``v`` within every situation."""
    m = np.maximum.reduceat(v, start[:-1])
    e = np.exp(v - np.repeat(m, np.diff(start)))
    return m + np.log(np.add.reduceat(e, start[:-1]))


@dataclass(frozen=True)
class _CaseSpecific:
    """Where the case-specific columns of a design ``Z`` come from (Eq. 1).

    Columns ``p1 + k q .. p1 + (k + 1) q - 1`` of row ``j`` (situation ``s``) are the
    respondent's features ``U[who[s]]`` when ``alt[j] == k`` and 0 otherwise (``alt[j] =
    -1``: the reference alternative); the first ``p1`` columns are the attributes and the
    constants. :meth:`_Problem.gradient_hessian` sums the Hessian's case-specific blocks
    per respondent instead of over the ``m x p`` design.
    """

    p1: int
    alt: np.ndarray  # (m,) non-reference alternative of every row, -1 = reference
    who: np.ndarray  # (S,) respondent (row of U) of every situation
    U: np.ndarray  # (G, q) the respondents' case-specific feature rows


@dataclass
class _Problem:
    """Rows ``Z`` ``(m, p)`` of the situations ``start``/``chosen``, weights per situation;
    ``case_specific`` (optional) the layout of ``Z``'s case-specific columns."""

    Z: np.ndarray
    start: np.ndarray
    chosen: np.ndarray
    weight: np.ndarray  # (S,) 1 = in the fit, 0 = held out
    case_specific: _CaseSpecific | None = None

    def __post_init__(self) -> None:
        sizes = np.diff(self.start)
        S, m = len(sizes), len(self.Z)
        self._member = sparse.csr_matrix(
            (np.ones(m), np.arange(m), self.start), shape=(S, m)
        )  # (S, m): row s sums the rows of situation s
        self._sizes = sizes
        c = self.case_specific
        if c is not None:
            L1 = (self.Z.shape[1] - c.p1) // max(1, c.U.shape[1])
            sit = np.repeat(np.arange(S), sizes)
            on = c.alt >= 0
            # (S L1, m): row s L1 + k sums the rows of situation s that are alternative k
            self._member_alt = sparse.csr_matrix(
                (np.ones(int(on.sum())), (sit[on] * L1 + c.alt[on], np.flatnonzero(on))),
                shape=(S * L1, m),
            )
            # (G, S): row g sums the situations of respondent g
            self._member_who = sparse.csr_matrix(
                (np.ones(S), (c.who, np.arange(S))), shape=(len(c.U), S)
            )
            self._chosen_alt = np.zeros((S, L1))
            ca = c.alt[self.chosen]
            self._chosen_alt[np.flatnonzero(ca >= 0), ca[ca >= 0]] = 1.0
            q = c.U.shape[1]
            self._UU = (c.U[:, :, None] * c.U[:, None, :]).reshape(len(c.U), q * q)
            self._L1 = L1
            self._Z1 = np.ascontiguousarray(self.Z[:, : c.p1])
            self._on = np.flatnonzero(on)  # rows with case-specific columns
            self._at = c.who[sit[on]] * L1 + c.alt[on]  # their (respondent, alternative)

    def utilities(self, theta: np.ndarray) -> np.ndarray:
        """``(m,)`` the rows' utilities ``Z theta`` (with :class:`_CaseSpecific`: the
        attribute columns' part plus each respondent's ``u_g^T theta_k``, computed once per
        respondent and alternative)."""
        c = self.case_specific
        if c is None:
            return self.Z @ theta
        v = self._Z1 @ theta[: c.p1]
        per = c.U @ theta[c.p1 :].reshape(self._L1, -1).T  # (G, L1)
        v[self._on] += per.ravel()[self._at]
        return v

    def loglik(self, theta: np.ndarray) -> np.ndarray:
        """``(S,)`` log-probability of every situation's choice."""
        v = self.utilities(theta)
        return v[self.chosen] - _lse(v, self.start)

    def terms(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Probabilities ``(m,)``, per-situation scores ``(S, p)`` and the Hessian (Eq. 3)."""
        v = self.Z @ theta
        lse = _lse(v, self.start)
        prob = np.exp(v - np.repeat(lse, self._sizes))
        wr = np.repeat(self.weight, self._sizes)
        pz = prob[:, None] * self.Z
        zbar = np.asarray(self._member @ pz)
        scores = self.Z[self.chosen] - zbar
        H = (pz * wr[:, None]).T @ self.Z - (zbar * self.weight[:, None]).T @ zbar
        return prob, scores, 0.5 * (H + H.T)

    def gradient_hessian(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The weighted score ``sum_s w_s g_s`` ``(p,)`` and the Hessian (Eq. 3) ``(p, p)``.

        Without :class:`_CaseSpecific` this is :meth:`terms`. With it, the attribute and
        constant block is Eq. 3 on those ``p1`` columns, and the blocks of the
        case-specific columns of alternatives ``k``, ``l`` are sums over respondents,

        .. math::

            H_{kl} = \\sum_g c_{g,kl}\\, u_g u_g^\\top, \\quad
            c_{g,kl} = \\sum_{s \\in g} w_s (\\delta_{kl} P_s(k) - P_s(k) P_s(l)),

        ``P_s(k)`` the probability of alternative ``k`` in situation ``s``: the same
        matrix (to rounding) at ``O(m p_1^2 + G q^2)`` instead of ``O(m p^2)``.
        """
        c = self.case_specific
        if c is None:
            _, scores, H = self.terms(theta)
            return (self.weight[:, None] * scores).sum(axis=0), H
        w, p1, L1, U = self.weight, c.p1, self._L1, c.U
        G, q = U.shape
        S = len(w)
        v = self.utilities(theta)
        lse = _lse(v, self.start)
        prob = np.exp(v - np.repeat(lse, self._sizes))
        wr = np.repeat(w, self._sizes)
        Z1 = self._Z1
        pz = prob[:, None] * Z1
        zbar = np.asarray(self._member @ pz)  # (S, p1)
        g1 = (w[:, None] * (Z1[self.chosen] - zbar)).sum(axis=0)
        H11 = (pz * wr[:, None]).T @ Z1 - (zbar * w[:, None]).T @ zbar
        P = (self._member_alt @ prob).reshape(S, L1)  # P_s(k)
        wP = w[:, None] * P
        # scores of the case-specific columns: (1[chosen is k] - P_s(k)) u_s
        gU = (self._member_who @ (w[:, None] * (self._chosen_alt - P))).T @ U  # (L1, q)
        # attribute x case-specific: sum_s (sum_{j in s, k} w p_j z_j - w P_s(k) zbar_s) u_s
        Q = np.asarray(self._member_alt @ (pz * wr[:, None])).reshape(S, L1, p1)
        C = Q - wP[:, :, None] * zbar[:, None, :]
        Cg = np.asarray(self._member_who @ C.reshape(S, L1 * p1)).reshape(G, L1, p1)
        H1U = np.einsum("gkp,gj->pkj", Cg, U).reshape(p1, L1 * q)
        # case-specific x case-specific
        coef = -wP[:, :, None] * P[:, None, :]
        coef[:, np.arange(L1), np.arange(L1)] += wP
        cg = np.asarray(self._member_who @ coef.reshape(S, L1 * L1))  # (G, L1 L1)
        HUU = (cg.T @ self._UU).reshape(L1, L1, q, q).transpose(0, 2, 1, 3)
        K = p1 + L1 * q
        H = np.empty((K, K))
        H[:p1, :p1] = H11
        H[:p1, p1:] = H1U
        H[p1:, :p1] = H1U.T
        H[p1:, p1:] = HUU.reshape(L1 * q, L1 * q)
        return np.concatenate([g1, gU.ravel()]), 0.5 * (H + H.T)


def _fit(
    prob: _Problem,
    prec: np.ndarray,
    theta0: np.ndarray,
    max_iter: int,
    tol: float,
    warn: bool,
    center: np.ndarray | None = None,
    hessian: bool = True,
) -> tuple[np.ndarray, np.ndarray | None, bool]:
    """Penalised MLE: ``argmin -sum_s w_s log P_s + 1/2 sum_j prec_j (theta_j - c_j)^2``
    (``center`` ``c``, default 0); the estimate, the penalised Hessian there (``None``
    without ``hessian``: a caller that only steps, such as an EM's M-step) and whether
    the solver converged."""
    c = np.zeros_like(theta0) if center is None else center

    def value(theta: np.ndarray) -> tuple[float, None]:
        ll = prob.loglik(theta)
        d = theta - c
        return float(-(prob.weight * ll).sum() + 0.5 * (prec * d * d).sum()), None

    def newton(theta: np.ndarray, _: None) -> NewtonStep:
        score, H = prob.gradient_hessian(theta)
        g = -score + prec * (theta - c)
        Hp = H + np.diag(prec)
        try:
            s = np.linalg.solve(Hp, g)
        except np.linalg.LinAlgError:
            s = np.linalg.pinv(Hp, hermitian=True) @ g
        return NewtonStep(s, decrement=float(g @ s), info=Hp)

    with blas_single_thread():  # (p x m) @ (m x p) products: threads only oversubscribe
        res = newton_minimize(
            value,
            newton,
            theta0,
            max_iter=max_iter,
            tol=tol,
            what="conditional logit",
            hint="Raise max_iter, or fit with alpha > 0 (a separable choice makes the MLE "
            "infinite).",
            warn=warn,
            stacklevel=3,
        )
        if not hessian:
            return res.x, None, bool(res.converged)
        _, H = prob.gradient_hessian(res.x)
    return res.x, H + np.diag(prec), bool(res.converged)


def mle_problem(
    theta: np.ndarray,
    hessian: np.ndarray,
    converged: bool,
    scale: np.ndarray,
    names: Sequence[str],
) -> str | None:
    """Why a maximum-likelihood fit ``theta`` (Hessian ``hessian`` of the negative
    log-likelihood, column scales ``scale``) is not identified, in words, or ``None``.

    Three signs, in this order: Newton's method did not converge; the Hessian of the
    standardised coefficients ``D^-1 H D^-1`` (``D = diag(s)``) has a condition number
    above :data:`SINGULAR` (a combination of coefficients the choices do not inform: a
    column constant within every choice, collinear columns, or choices separated along
    it); a standardised coefficient ``|theta_j s_j|`` exceeds :data:`RUNOFF` (the
    likelihood keeps rising as it grows: separated choices, or a direction the data do
    not bound).
    """
    if not converged:
        return "Newton's method did not converge"
    if hessian.size:
        Hs = hessian / np.outer(scale, scale)
        if not np.all(np.isfinite(Hs)):
            return "the Hessian is not finite"
        val, vec = np.linalg.eigh(0.5 * (Hs + Hs.T))
        top = float(val[-1])
        if top <= 0 or val[0] <= top / SINGULAR:
            v = np.abs(vec[:, 0])
            idx = [int(j) for j in np.argsort(-v)[:4] if v[j] >= 0.2]
            which = ", ".join(names[j] for j in idx)
            return (
                "the Hessian is singular: the choices do not tell apart some coefficients"
                + (f" ({which})" if which else "")
                + " (collinear columns, or choices separated by them)"
            )
    std = np.abs(theta * scale)
    off = np.flatnonzero(~np.isfinite(std) | (std > RUNOFF))
    if off.size:
        which = ", ".join(names[j] for j in off[:4]) + (" ..." if off.size > 4 else "")
        return (
            f"the coefficient of {which} runs off (the likelihood does not bound it: the "
            "choices are separated by it, or it is collinear with other columns)"
        )
    return None


# ----------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class _Column:
    name: str
    label: str
    unit: str
    kind: Literal["attribute", "constant", "case-specific"]


class ConditionalLogit(GaussianLinearUtility):
    """Conditional (multinomial) logit over each task's alternatives (Eqs. 1-3).

    Parameters
    ----------
    alternative
        Name of the categorical attribute that says which alternative an item is (the
        alternative-specific constants and case-specific variables attach to its levels);
        ``None``: unlabelled alternatives, no constants.
    reference
        The level whose constant is 0 (default: the attribute's first level).
    case_specific
        Respondent features entering every non-reference alternative's utility (names of
        ``user_schema``); they need ``alternative`` and ``user_schema``.
    user_schema
        Schema of the respondent feature table ``data.users``.
    exclude
        Attributes left out of the utility (e.g. an attribute the analysis plan drops).
    alpha
        Ridge strength: ``0`` (default) the maximum likelihood, with a penalty only when
        the maximum-likelihood estimate is not identified (:func:`mle_problem`; its
        strength by inner CV among the positive ``alphas``, the reason in
        ``penalty_reason_``); a positive number; or ``"cv"``, chosen among ``alphas`` (0
        included) by inner CV.
    alphas
        Strength grid for ``"cv"`` (default :data:`MNL_ALPHAS`).
    n_folds, random_state
        Inner CV: folds of whole tasks within respondents, and their seed.
    max_iter, tol
        Newton controls.
    center, scale
        The ridge's centre ``c`` and column scales ``s`` (the penalty is
        ``alpha/2 sum_j (s_j (theta_j - c_j))^2``); ``None``: ``c = 0`` and ``s`` from the
        data. A centre makes the ridge a Gaussian prior around other estimates (the
        choice-model tree's segments, shrunk toward their parent segment's logit).

    Attributes
    ----------
    coef_ : ndarray, shape (K,)
    coef_cov_ : ndarray, shape (K, K)
        Inverse Hessian (classical covariance; the Laplace posterior with ``alpha > 0``).
    se_, robust_se_, cluster_se_ : ndarray, shape (K,)
    robust_cov_, cluster_cov_ : ndarray, shape (K, K)
    n_situations_, n_respondents_ : int
    loglik_, loglik_null_, rho2_, rho2_bar_, aic_, bic_ : float
    alpha_ : float
        The ridge strength used (``0``: none, the maximum likelihood).
    penalty_reason_ : str
        Why a penalty was used (``""``: none): asked, or the maximum likelihood's problem.
    cv_loglik_ : ndarray or None
        Held-out log-likelihood per grid strength (when the strength was chosen by CV).
    converged_ : bool
    column_names_, feature_names_ : list of str
    """

    #: Its utilities are a logit's: choice probabilities are their softmax (scale 1;
    #: :mod:`pbo_core.evaluation` fits no scale).
    logit_utilities = True

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **DESIGN_CONSTRAINTS,
        "alpha": [NON_NEGATIVE, Options("cv")],
        "alphas": [ArrayOf(NON_NEGATIVE), None],
        "n_folds": CV_CONSTRAINTS["n_folds"],
        "random_state": CV_CONSTRAINTS["random_state"],
        "max_iter": CV_CONSTRAINTS["max_iter"],
        "tol": CV_CONSTRAINTS["tol"],
        "center": [ArrayOf(Interval(numbers.Real)), None],
        "scale": [ArrayOf(Interval(numbers.Real, 0, None, "neither")), None],
    }

    def __init__(
        self,
        *,
        alternative: str | None = None,
        reference: str | None = None,
        case_specific: Sequence[str] = (),
        user_schema: Schema | None = None,
        exclude: Sequence[str] = (),
        alpha: float | Literal["cv"] = 0.0,
        alphas: Sequence[float] | None = None,
        n_folds: int = 5,
        random_state: int = 0,
        max_iter: int = 100,
        tol: float = 1e-8,
        center: np.ndarray | None = None,
        scale: np.ndarray | None = None,
    ) -> None:
        self.alternative = alternative
        self.reference = reference
        self.case_specific = case_specific
        self.user_schema = user_schema
        self.exclude = exclude
        self.alpha = alpha
        self.alphas = alphas
        self.n_folds = n_folds
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol
        self.center = center
        self.scale = scale

    # ------------------------------------------------------------------ design
    def _setup(self, data: PreferenceData) -> None:
        schema = data.get_schema()
        alt = self.alternative
        if alt is not None:
            if alt not in schema.names or schema[alt].kind not in ("categorical", "binary"):
                raise DataValidationError(
                    f"{data.source}: the alternative attribute {alt!r} is not a categorical "
                    f"attribute of the items ({schema.names})"
                )
        drop = [n for n in [*self.exclude, *([alt] if alt else [])] if n in schema.names]
        self._attr_schema = schema.without(drop) if drop else schema
        self._attr_cols = np.array(
            [
                i
                for i, c in enumerate(schema.columns)
                if schema.features[c.feature].name not in drop
            ],
            dtype=np.int64,
        )
        self._attr_design = LinearDesign(self._attr_schema)
        cols = [
            _Column(c.name, c.label, f"per {c.unit}" if c.unit else "", "attribute")
            for c in self._attr_design.columns
        ]
        self._alt_col = None
        self._alt_levels: tuple[str, ...] = ()
        self._alt_ref = 0
        if alt is not None:
            f = schema[alt]
            levels = f.levels if f.kind == "categorical" else (f.levels or ("0", "1"))
            ref = self.reference if self.reference is not None else levels[0]
            if str(ref) not in levels:
                raise DataValidationError(
                    f"{data.source}: reference {ref!r} is not a level of {alt!r} ({list(levels)})"
                )
            self._alt_col = int(schema.column_indices([alt])[0])
            self._alt_levels = tuple(levels)
            self._alt_ref = levels.index(str(ref))
            for k, lev in enumerate(levels):
                if k != self._alt_ref:
                    label = f"Constant: {lev} (vs {ref})"
                    cols.append(_Column(f"ASC {lev}", label, "", "constant"))
        cs = list(self.case_specific)
        self._user_design: LinearDesign | None = None
        if cs:
            if alt is None or self.user_schema is None:
                raise DataValidationError(
                    f"{data.source}: case-specific variables need labelled alternatives and a "
                    "respondent feature schema"
                )
            unknown = [n for n in cs if n not in self.user_schema.names]
            if unknown:
                raise DataValidationError(
                    f"{data.source}: case-specific variables {unknown} are not respondent "
                    f"features ({self.user_schema.names})"
                )
            us = Schema(tuple(self.user_schema[n] for n in cs))
            self._user_schema = us
            self._user_design = LinearDesign(us)
            for k, lev in enumerate(self._alt_levels):
                if k == self._alt_ref:
                    continue
                for c in self._user_design.columns:
                    unit = f"per {c.unit}" if c.unit else ""
                    name, label = f"{c.name} [{lev}]", f"{c.label} in {lev}"
                    cols.append(_Column(name, label, unit, "case-specific"))
        self._columns = cols
        self._U: dict[Any, np.ndarray] = {}
        if self._user_design is not None:
            users = data.users
            if users is None or len(users) == 0:
                raise DataValidationError(
                    f"{data.source}: case-specific variables need the respondent feature table"
                )
            enc = self._user_schema.encode(
                users[list(self._user_schema.names)], source=f"{data.source} users"
            )
            Ud = self._user_design.transform(enc)
            self._U = {self._key(r): Ud[i] for i, r in enumerate(users.index)}

    @staticmethod
    def _key(r: Any) -> Any:
        return r.item() if isinstance(r, np.generic) else r

    def _alt_onehot(self, X: np.ndarray) -> np.ndarray:
        """``(n, L-1)`` indicators of the non-reference alternatives."""
        if self._alt_col is None:
            return np.zeros((len(X), 0))
        code = np.rint(X[:, self._alt_col]).astype(np.int64)
        keep = [k for k in range(len(self._alt_levels)) if k != self._alt_ref]
        return (code[:, None] == np.array(keep)[None, :]).astype(float)

    def _rows(self, X: np.ndarray, U: np.ndarray | None) -> np.ndarray:
        """Design rows of items ``X`` for respondents with feature rows ``U`` ``(n, q)``."""
        parts = [self._attr_design.transform(X[:, self._attr_cols])]
        A = self._alt_onehot(X)
        parts.append(A)
        if self._user_design is not None:
            if U is None:
                U = np.broadcast_to(self._user_mean, (len(X), len(self._user_mean)))
            parts.append((A[:, :, None] * U[:, None, :]).reshape(len(X), -1))
        return np.hstack(parts) if parts else np.zeros((len(X), 0))

    def _user_row(self, respondent: Any) -> np.ndarray:
        u = self._U.get(self._key(respondent))
        return self._user_mean if u is None else u

    def _respondents_of(self, data: PreferenceData, cs: ChoiceSets) -> tuple[list[Any], list[Any]]:
        """The respondent of every situation of ``cs`` and the distinct ones (first seen
        first); a respondent without a row in the feature table is an error."""
        r_ids = (
            [self._key(r) for r in data.respondent[cs.pair]]
            if data.respondent is not None
            else [0] * cs.n_situations
        )
        seen = list(dict.fromkeys(r_ids))
        missing = [r for r in seen if r not in self._U]
        if missing:
            raise DataValidationError(
                f"{data.source}: respondent {missing[0]} has no row in the respondent feature table"
            )
        return r_ids, seen

    def situation_rows(self, data: PreferenceData, cs: ChoiceSets) -> np.ndarray:
        """Design rows ``(m, K)`` of the alternatives of the situations ``cs`` of ``data``:
        Eq. 1's columns (attributes, constants, the respondent's case-specific variables),
        as this fitted model builds them. The models that share the logit's design (the
        mixed and the latent-class logit) start from a fitted logit and read it here."""
        U = None
        if self._user_design is not None:
            r_ids, _ = self._respondents_of(data, cs)
            U = np.array([self._U[r] for r in r_ids])[cs.situation]
        return self._rows(data.X[cs.item], U)

    # ------------------------------------------------------------------ fit
    def fit(self, data: PreferenceData) -> ConditionalLogit:
        """Estimate (1) on the choice situations of ``data`` (:func:`choice_sets`)."""
        self._validate_params()
        self._setup(data)
        cs = choice_sets(data)
        if cs.n_situations == 0:
            raise DataValidationError(f"{data.source}: no choices to fit a conditional logit on")
        resp = data.respondent[cs.pair] if data.respondent is not None else None
        if self._user_design is not None:
            r_ids, seen = self._respondents_of(data, cs)
            self._user_mean = np.mean([self._U[r] for r in seen], axis=0)
        Z = self.situation_rows(data, cs)
        K = Z.shape[1]
        layout = None
        if self._user_design is not None:
            A = self._alt_onehot(data.X[cs.item])
            index = {r: g for g, r in enumerate(seen)}
            layout = _CaseSpecific(
                p1=K - A.shape[1] * len(self._user_mean),
                alt=np.where(A.any(axis=1), A.argmax(axis=1), -1),
                who=np.array([index[r] for r in r_ids], dtype=np.int64),
                U=np.array([self._U[r] for r in seen], dtype=float),
            )
        if self.scale is not None:
            scale = np.asarray(self.scale, dtype=float)
        else:
            dev = Z - Z[np.repeat(cs.chosen, cs.sizes)]
            scale = np.sqrt((dev * dev).sum(axis=0) / max(1, len(Z) - cs.n_situations))
            scale = np.where(scale > 1e-12, scale, 1.0)
        center = None if self.center is None else np.asarray(self.center, dtype=float)
        if (center is not None and center.shape != (K,)) or scale.shape != (K,):
            raise ValueError(f"center and scale need {K} values (the design's columns)")
        full = _Problem(Z, cs.start, cs.chosen, np.ones(cs.n_situations), layout)
        grid = np.array(MNL_ALPHAS if self.alphas is None else self.alphas, dtype=float)
        self.cv_loglik_: np.ndarray | None = None
        start = np.zeros(K) if center is None else center.copy()
        if isinstance(self.alpha, str):
            if center is not None:
                raise ValueError("alpha='cv' takes no center; give the strength")
            alpha, start = self._cv(data, cs, full, scale, grid)
            reason = (
                f"asked: strength {alpha:g} chosen by inner cross-validation among "
                + ", ".join(f"{a:g}" for a in grid)
            )
        else:
            alpha = float(self.alpha)
            reason = f"asked: strength {alpha:g}"
        prec = alpha * scale**2
        theta, H, ok = _fit(full, prec, start, self.max_iter, self.tol, alpha > 0, center)
        if alpha == 0:  # the maximum likelihood: is it identified?
            names = [c.name for c in self._columns]
            problem = mle_problem(theta, H, ok, scale, names)
            reason = ""
            if problem is not None:
                positive = grid[grid > 0]
                if positive.size == 0:
                    positive = np.array([MNL_ALPHAS[-2]])
                if self.cv_loglik_ is not None:  # "cv" chose 0: its best positive strength
                    held = np.where(grid > 0, self.cv_loglik_, -np.inf)
                    alpha = float(grid[int(np.argmax(held))]) if np.isfinite(held).any() else 1.0
                    start = np.zeros(K)
                else:
                    alpha, start = self._cv(data, cs, full, scale, positive)
                reason = (
                    f"the maximum-likelihood estimate is not identified: {problem}; ridge "
                    f"strength {alpha:g} chosen by inner cross-validation"
                )
                prec = alpha * scale**2
                theta, H, ok = _fit(full, prec, start, self.max_iter, self.tol, True, center)
        cov = spd_inv_batch(H[None])[0]
        _, scores, _ = full.terms(theta)
        bread = cov
        meat = scores.T @ scores
        robust = bread @ meat @ bread
        if resp is not None:
            codes = pd.factorize(pd.Series(resp))[0]
            G = int(codes.max()) + 1
            gs = np.zeros((G, K))
            np.add.at(gs, codes, scores)
        else:
            G, gs = cs.n_situations, scores
        N = cs.n_situations
        corr = (G / max(G - 1, 1)) * ((N - 1) / max(N - K, 1))
        cluster = corr * (bread @ (gs.T @ gs) @ bread)
        self.alpha_ = alpha
        self.penalty_reason_ = reason if alpha > 0 else ""
        self.coef_ = theta
        self.coef_cov_ = cov
        self.robust_cov_ = 0.5 * (robust + robust.T)
        self.cluster_cov_ = 0.5 * (cluster + cluster.T)
        self.se_ = np.sqrt(np.maximum(np.diag(cov), 0.0))
        self.robust_se_ = np.sqrt(np.maximum(np.diag(self.robust_cov_), 0.0))
        self.cluster_se_ = np.sqrt(np.maximum(np.diag(self.cluster_cov_), 0.0))
        self.loglik_ = float(full.loglik(theta).sum())
        self.loglik_null_ = float(-np.log(cs.sizes).sum())
        null = self.loglik_null_
        self.rho2_ = 1.0 - self.loglik_ / null if null < 0 else float("nan")
        self.rho2_bar_ = 1.0 - (self.loglik_ - K) / null if null < 0 else float("nan")
        self.aic_ = 2.0 * K - 2.0 * self.loglik_
        self.bic_ = K * float(np.log(N)) - 2.0 * self.loglik_
        self.n_situations_ = N
        self.n_respondents_ = G if resp is not None else 0
        self.converged_ = ok
        self.scale_ = scale
        self.column_names_ = [c.name for c in self._columns]
        self.column_kinds_ = [c.kind for c in self._columns]
        self.n_features_in_ = data.X.shape[1]
        self.schema_ = data.get_schema()
        return self

    def _cv(
        self,
        data: PreferenceData,
        cs: ChoiceSets,
        full: _Problem,
        scale: np.ndarray,
        grid: np.ndarray,
    ) -> tuple[float, np.ndarray]:
        """The grid strength with the largest held-out log-likelihood (ties: stronger),
        and the fit on all training data at that strength (the final fit's start).

        The path over the grid on all the data (strongest first, each fit starting from
        the last) gives every fold's fit at the same strength its starting point."""
        rng = np.random.default_rng(self.random_state)
        fold_of_pair = task_folds(self.n_folds, rng, pair_tasks(data), data.respondent)
        folds = fold_of_pair[cs.pair]
        K = int(folds.max(initial=0)) + 1
        p = full.Z.shape[1]
        if K < 2 or len(grid) == 1:
            return float(grid[len(grid) // 2]), np.zeros(p)
        path = np.zeros((len(grid), p))
        theta = np.zeros(p)
        tol = max(self.tol, CV_TOL)
        for a, alpha in enumerate(grid):
            theta, _, _ = _fit(full, alpha * scale**2, theta, self.max_iter, tol, False)
            path[a] = theta
        held = np.zeros(len(grid))
        for k in range(K):
            weight = (folds != k).astype(float)
            prob = _Problem(full.Z, cs.start, cs.chosen, weight, full.case_specific)
            for a, alpha in enumerate(grid):
                theta, _, _ = _fit(prob, alpha * scale**2, path[a], self.max_iter, tol, False)
                ll = prob.loglik(theta)
                held[a] += float(np.where(folds == k, ll, 0.0).sum())
        self.cv_loglik_ = held
        best = int(np.argmax(np.where(np.isfinite(held), held, -np.inf)))
        return float(grid[best]), path[best]

    # ------------------------------------------------------------------ prediction
    def _require_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise RuntimeError("ConditionalLogit is not fitted; call fit(data) first")

    def _design_for(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        self._require_fitted()
        X = check_input(X, self.n_features_in_, type(self).__name__)
        U = None
        if self._user_design is not None and respondent is not None:
            u = self._user_row(respondent)
            U = np.broadcast_to(u, (len(X), len(u)))
        return self._rows(X, U)

    def _design_rows(self, X: np.ndarray) -> np.ndarray:
        return self._design_for(X)

    def _gaussian(self, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        self._require_fitted()
        return self.coef_, self.coef_cov_

    def _preference(self, mean_diff: np.ndarray, var_diff: np.ndarray) -> np.ndarray:
        return predictive_prob(mean_diff, var_diff, "logit")

    def predict(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Systematic utility (1) ``(n,)`` of items ``X`` for ``respondent`` (``None``: the
        training respondents' mean features)."""
        return self._design_for(X, respondent) @ self.coef_

    def posterior(self, X: np.ndarray, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance ``(n,), (n, n)`` of the utilities (classical covariance)."""
        Phi = self._design_for(X, respondent)
        cov = Phi @ self.coef_cov_ @ Phi.T
        return Phi @ self.coef_, 0.5 * (cov + cov.T)

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray, respondent: Any = None) -> np.ndarray:
        """``P(a > b)`` of paired rows: the binary logit, integrated over the coefficients."""
        d = self._design_for(Xa, respondent) - self._design_for(Xb, respondent)
        v = np.einsum("np,pq,nq->n", d, self.coef_cov_, d)
        return self._preference(d @ self.coef_, v)

    def choice_probabilities(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Choice probabilities (2) ``(n,)`` among the items ``X`` offered together."""
        v = self.predict(X, respondent)
        e = np.exp(v - v.max())
        return e / e.sum()

    # ------------------------------------------------------------------ explanation
    @property
    def feature_names_(self) -> list[str]:
        """Human labels of the coefficients."""
        return [c.label for c in self._columns]

    @property
    def attribute_columns_(self) -> list[tuple[Feature, DesignColumn]]:
        """``(feature, design column)`` of every attribute coefficient (the first
        ``len(...)`` entries of ``coef_``): the slopes pages read in the attribute's units."""
        self._require_fitted()
        s = self._attr_schema
        return [(s.features[s.columns[c.source].feature], c) for c in self._attr_design.columns]

    @property
    def coef_se_(self) -> np.ndarray:
        """Classical standard errors (as the other linear models name them)."""
        return self.se_

    def coef_table(self, respondent: Any = None, se: str = "cluster") -> pd.DataFrame:
        """One row per coefficient: ``name``, ``feature`` (label), ``kind`` (attribute,
        constant, case-specific), ``coef``, ``se`` (classical), ``robust_se``,
        ``cluster_se``, ``z`` and ``p_value`` (from ``se``: ``"cluster"`` by respondent,
        ``"robust"`` or ``"classical"``), ``unit``."""
        self._require_fitted()
        use = {"cluster": self.cluster_se_, "robust": self.robust_se_, "classical": self.se_}[se]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(use > 0, self.coef_ / use, np.nan)
        return pd.DataFrame(
            {
                "name": self.column_names_,
                "feature": self.feature_names_,
                "kind": self.column_kinds_,
                "coef": self.coef_,
                "se": self.se_,
                "robust_se": self.robust_se_,
                "cluster_se": self.cluster_se_,
                "z": z,
                "p_value": 2.0 * ndtr(-np.abs(z)),
                "unit": [c.unit for c in self._columns],
            }
        )

    def explain(self, respondent: Any = None) -> pd.DataFrame:
        """The model's explanation: its coefficient table (:meth:`coef_table`)."""
        return self.coef_table(respondent)

    def fit_statistics(self) -> dict[str, Any]:
        """The fit's statistics: ``loglik`` (LL(beta)), ``loglik_null`` (LL(0), equal
        shares), ``rho2``, ``rho2_bar``, ``aic``, ``bic``, ``n_parameters``, ``n_choices``,
        ``n_respondents``, ``penalty`` (the ridge strength, ``0``: none, the maximum
        likelihood; also as ``alpha``), ``penalty_reason`` (why one was used, ``""``:
        none) and ``converged``."""
        self._require_fitted()
        return {
            "loglik": self.loglik_,
            "loglik_null": self.loglik_null_,
            "rho2": self.rho2_,
            "rho2_bar": self.rho2_bar_,
            "aic": self.aic_,
            "bic": self.bic_,
            "n_parameters": len(self.coef_),
            "n_choices": self.n_situations_,
            "n_respondents": self.n_respondents_,
            "penalty": self.alpha_,
            "penalty_reason": self.penalty_reason_,
            "alpha": self.alpha_,
            "converged": self.converged_,
        }

    def slope(self, attribute: str) -> tuple[float, float] | None:
        """Coefficient and cluster-robust variance of a numeric attribute, if it enters."""
        self._require_fitted()
        try:
            j = self.column_names_.index(attribute)
        except ValueError:
            return None
        return float(self.coef_[j]), float(self.cluster_cov_[j, j])
