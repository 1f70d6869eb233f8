"""Item-utility baselines for finite item sets (Sushi-like): Bradley-Terry / Thurstone.

Items are identified by their index in ``data.X`` (features are optional and unused):
every item ``i`` has a utility ``u_i`` and "``w`` beats ``l``" has likelihood
``F(u_w - u_l)``, ``F`` logistic (``link="logit"``, Bradley-Terry) or standard normal
(``link="probit"``, Thurstone case V), with a Gaussian prior ``u ~ N(0, I / alpha)``.

:class:`ItemUtilitySurrogate` (aliases :class:`BradleyTerrySurrogate`,
:class:`ThurstoneSurrogate`)
    One utility vector fitted on all comparisons: the global popularity model.
:class:`ItemOffsetSurrogate`
    Global utilities plus a per-user offset: user ``r`` has ``u + delta_r`` with
    ``delta_r ~ N(0, I / tau)`` (two-stage empirical Bayes: the global MAP first, then every
    user's utilities with the prior centred on it). ``tau`` is one value for all users,
    chosen by cross-validation pooled across users (folds over each user's comparisons;
    each fold refits the global model without that fold).
:class:`CopelandSurrogate`
    Per user, wins minus losses of every item (unseen items 0): a sanity floor.

The MAPs are found by Newton's method (the global model with the item-Laplacian
Hessian, :func:`pbo_core.models.glm.item_map`; the users as one batch,
:func:`pbo_core.models.glm.newton_batch`);
``prior strength="cv"`` picks from a log grid by the held-out log loss (``cv_score``).
All models follow the shared surrogate interface. Prediction methods take item rows
``X``: the training item matrix itself (any array equal to it), 1-D integer item indices,
or rows of it (matched to the first identical training row; rows matching no training
item get the prior). ``respondent=None`` means the global model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData
from pbo_core.metrics import competition_rank, margin_scores
from pbo_core.models.base import POSITIVE, Estimator, Options
from pbo_core.models.glm import (
    CV_CONSTRAINTS,
    PaddedBatch,
    alpha_grid,
    cv_respondents,
    heldout_loss,
    item_map,
    newton_batch,
    predictive_prob,
    resolve_strength,
    spd_inv_batch,
)
from pbo_core.splits import pair_tasks, task_folds

__all__ = [
    "BradleyTerrySurrogate",
    "CopelandSurrogate",
    "ItemOffsetSurrogate",
    "ItemUtilitySurrogate",
    "ThurstoneSurrogate",
    "item_map",
]

Link = Literal["logit", "probit"]


# ----------------------------------------------------------------------------- counts
def _aggregate(pairs: np.ndarray, m: int, groups: np.ndarray, n_groups: int):
    """Distinct (winner, loser) rows and their counts per group ``(n_groups, n_distinct)``."""
    code = pairs[:, 0].astype(np.int64) * m + pairs[:, 1]
    uniq, inv = np.unique(code, return_inverse=True)
    counts = np.zeros((n_groups, len(uniq)))
    np.add.at(counts, (groups, inv), 1.0)
    return uniq // m, uniq % m, counts


# ----------------------------------------------------------------------------- base
class _ItemPredictor(Estimator):
    """Item lookup and prediction methods shared by the item models."""

    link: str
    n_items_: int
    _X_fit: np.ndarray

    def item_index(self, X: np.ndarray) -> np.ndarray:
        """Training item index of every row of ``X`` (-1: no training item matches)."""
        if not hasattr(self, "_X_fit"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(data) first")
        arr = np.asarray(X)
        if arr.ndim == 1 and np.issubdtype(arr.dtype, np.integer):
            if np.any((arr < 0) | (arr >= self.n_items_)):
                raise ValueError(f"item indices must lie in [0, {self.n_items_})")
            return arr.astype(np.int64)
        if X is self._X_fit or (
            arr.shape == self._X_fit.shape and np.array_equal(arr, self._X_fit)
        ):
            return np.arange(self.n_items_)
        arr = np.asarray(arr, dtype=float)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.shape[1] != self._X_fit.shape[1]:
            raise ValueError(
                f"X has {arr.shape[1]} columns, the model was fitted on {self._X_fit.shape[1]}"
            )
        if arr.shape[1] == 0:
            raise ValueError("items without features: pass the training items or indices")
        lookup: dict[bytes, int] = {}
        for i in range(self.n_items_ - 1, -1, -1):
            lookup[np.ascontiguousarray(self._X_fit[i]).tobytes()] = i
        return np.array(
            [lookup.get(np.ascontiguousarray(r).tobytes(), -1) for r in arr], dtype=np.int64
        )

    def _item_posterior(
        self, idx: np.ndarray, respondent: Any
    ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def predict(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Posterior mean utility of the items ``X``."""
        return self.posterior(X, respondent)[0]

    def posterior(self, X: np.ndarray, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean ``(n,)`` and covariance ``(n, n)`` of the utilities of ``X``."""
        mean, cov = self._item_posterior(self.item_index(X), respondent)
        return mean, 0.5 * (cov + cov.T)

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray, respondent: Any = None) -> np.ndarray:
        """``P(a > b)`` integrated over the Gaussian posterior of the two utilities."""
        ia, ib = self.item_index(Xa), self.item_index(Xb)
        both = np.concatenate([ia, ib])
        mean, cov = self._item_posterior(both, respondent)
        n = len(ia)
        k = np.arange(n)
        md = mean[:n] - mean[n:]
        vd = cov[k, k] + cov[n + k, n + k] - 2.0 * cov[k, n + k]
        return np.where(ia == ib, 0.5, predictive_prob(md, vd, self.link))

    def rank(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Competition ranks (1 = best) by posterior mean utility."""
        return competition_rank(self.predict(X, respondent))

    def _setup(self, data: PreferenceData) -> None:
        self._X_fit = data.X
        self.n_items_ = data.n_items
        self.n_features_in_ = data.X.shape[1]
        self.item_ids_ = data.ids()


def _respondents(data: PreferenceData) -> tuple[np.ndarray, np.ndarray]:
    """Respondent ids (order of first appearance) and the code of every pair."""
    resp = data.respondent if data.respondent is not None else np.zeros(data.n_pairs, np.int64)
    ids, first, inv = np.unique(resp, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return ids[order], rank[inv]


def _key(r: Any) -> Any:
    return r.item() if isinstance(r, np.generic) else r


# ----------------------------------------------------------------------------- global
class ItemUtilitySurrogate(_ItemPredictor):
    """Pooled item utilities (Bradley-Terry / Thurstone) with an L2 prior.

    Parameters
    ----------
    link
        ``"logit"`` (Bradley-Terry) or ``"probit"`` (Thurstone).
    alpha
        Prior precision of the utilities, or ``"cv"`` (default): chosen from ``alphas``
        by ``n_folds``-fold CV (folds of whole tasks within respondents).
    alphas, n_folds, cv_score, random_state, max_iter, tol
        As in :class:`pbo_core.models.linear.LinearUtilitySurrogate`.

    Attributes
    ----------
    utility_ : ndarray, shape (n_items,)
        MAP utilities (latent-difference units of the link).
    utility_cov_ : ndarray, shape (n_items, n_items)
        Laplace covariance.
    utility_se_ : ndarray
    alpha_ : float
    cv_loss_ : ndarray or None
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **CV_CONSTRAINTS,
        "alpha": [POSITIVE, Options("cv")],
    }

    def __init__(
        self,
        link: Link = "logit",
        *,
        alpha: float | Literal["cv"] = "cv",
        alphas: Sequence[float] | np.ndarray | None = None,
        n_folds: int = 5,
        cv_score: Literal["log_loss", "error"] = "log_loss",
        random_state: int = 0,
        max_iter: int = 100,
        tol: float = 1e-9,
    ) -> None:
        self.link = link
        self.alpha = alpha
        self.alphas = alphas
        self.n_folds = n_folds
        self.cv_score = cv_score
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol

    def _fold_fits(
        self, data: PreferenceData
    ) -> tuple[float, np.ndarray, int, np.ndarray | None, np.ndarray]:
        """Chosen alpha, pair folds, K, CV losses, and the fold fits at the chosen alpha."""
        m = data.n_items
        _, rcode = _respondents(data)
        grid = alpha_grid(self.alphas)
        folds = task_folds(
            self.n_folds, np.random.default_rng(self.random_state), pair_tasks(data), rcode
        )
        K = int(folds.max(initial=0)) + 1
        w, lo, counts = _aggregate(data.pairs, m, folds, K)
        total = counts.sum(axis=0)
        kw = {"max_iter": self.max_iter, "tol": self.tol}

        def cv_loss() -> np.ndarray:
            loss = np.zeros(len(grid))
            for k in range(K):
                u = None
                for a_i, a in enumerate(grid):  # strong -> weak, warm starts
                    u, _ = item_map(w, lo, total - counts[k], m, a, self.link, init=u, **kw)
                    z = u[w] - u[lo]
                    loss[a_i] += counts[k] @ heldout_loss(z, self.cv_score, self.link)
            return loss

        alpha, loss = resolve_strength(
            self.alpha, grid, K, cv_loss, positive=True, what=" for item utilities"
        )
        fold_u = np.zeros((K, m))
        if K >= 2:
            for k in range(K):
                fold_u[k] = item_map(w, lo, total - counts[k], m, alpha, self.link, **kw)[0]
        self._agg = (w, lo, total)
        self.alphas_ = grid
        return alpha, folds, K, loss, fold_u

    def fit(self, data: PreferenceData) -> ItemUtilitySurrogate:
        """Fit the pooled utilities to all comparisons of ``data``."""
        self._validate_params()
        alpha, _, _, loss, _ = self._fold_fits(data)
        w, lo, total = self._agg
        u, H = item_map(
            w, lo, total, data.n_items, alpha, self.link, max_iter=self.max_iter, tol=self.tol
        )
        self._setup(data)
        self.alpha_ = alpha
        self.cv_loss_ = loss
        self.utility_ = u
        self.utility_cov_ = spd_inv_batch(H[None])[0]
        return self

    @property
    def utility_se_(self) -> np.ndarray:
        """Posterior standard deviation of every item utility."""
        return np.sqrt(np.maximum(np.diag(self.utility_cov_), 0.0))

    def _item_posterior(self, idx: np.ndarray, respondent: Any) -> tuple[np.ndarray, np.ndarray]:
        known = idx >= 0
        j = np.where(known, idx, 0)
        mean = np.where(known, self.utility_[j], 0.0)
        cov = self.utility_cov_[np.ix_(j, j)] * np.outer(known, known)
        cov[np.diag_indices(len(idx))] += np.where(known, 0.0, 1.0 / self.alpha_)
        return mean, cov

    def explain(self) -> pd.DataFrame:
        """Items by utility: item, utility, se, rank."""
        return (
            pd.DataFrame(
                {
                    "item": self.item_ids_,
                    "utility": self.utility_,
                    "se": self.utility_se_,
                    "rank": competition_rank(self.utility_),
                }
            )
            .sort_values("rank", kind="stable")
            .reset_index(drop=True)
        )


class BradleyTerrySurrogate(ItemUtilitySurrogate, link="logit"):
    """:class:`ItemUtilitySurrogate` with the logit link."""


class ThurstoneSurrogate(ItemUtilitySurrogate, link="probit"):
    """:class:`ItemUtilitySurrogate` with the probit link."""


# ----------------------------------------------------------------------------- offsets
class ItemOffsetSurrogate(_ItemPredictor):
    """Global item utilities plus per-user offsets shrunk toward zero.

    Parameters
    ----------
    link
        ``"logit"`` or ``"probit"``.
    alpha
        Prior precision of the global utilities, or ``"cv"``.
    tau
        Prior precision of every user's offsets, or ``"cv"`` (one value for all users,
        chosen by the held-out loss summed over users).
    alphas
        Log grid for both (default :data:`~pbo_core.models.linear.DEFAULT_ALPHAS`).
    n_folds, cv_score, random_state, max_iter, tol
        As in :class:`ItemUtilitySurrogate`.

    Attributes
    ----------
    global_ : ItemUtilitySurrogate
        The global (popularity) model; ``respondent=None`` predicts with it.
    respondents_ : ndarray
    offset_ : ndarray, shape (R, n_items)
        MAP offsets (0 for items a user never compared).
    tau_ : float
    user_items_ : list of ndarray
        Items each user compared.
    user_cov_ : list of ndarray
        Laplace covariance of each user's utilities of ``user_items_`` (given the global
        MAP). Items a user never compared have the global covariance plus ``I / tau_``.
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **CV_CONSTRAINTS,
        "alpha": [POSITIVE, Options("cv")],
        "tau": [POSITIVE, Options("cv")],
    }

    def __init__(
        self,
        link: Link = "logit",
        *,
        alpha: float | Literal["cv"] = "cv",
        tau: float | Literal["cv"] = "cv",
        alphas: Sequence[float] | np.ndarray | None = None,
        n_folds: int = 5,
        cv_score: Literal["log_loss", "error"] = "log_loss",
        random_state: int = 0,
        max_iter: int = 100,
        tol: float = 1e-9,
    ) -> None:
        self.link = link
        self.alpha = alpha
        self.tau = tau
        self.alphas = alphas
        self.n_folds = n_folds
        self.cv_score = cv_score
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, data: PreferenceData) -> ItemOffsetSurrogate:
        """Fit the global utilities, then every user's offsets."""
        self._validate_params()
        glob = ItemUtilitySurrogate(
            self.link,
            alpha=self.alpha,
            alphas=self.alphas,
            n_folds=self.n_folds,
            cv_score=self.cv_score,
            random_state=self.random_state,
            max_iter=self.max_iter,
            tol=self.tol,
        )
        alpha, folds, K, loss, fold_u = glob._fold_fits(data)
        w, lo, total = glob._agg
        u, H = item_map(
            w, lo, total, data.n_items, alpha, self.link, max_iter=self.max_iter, tol=self.tol
        )
        glob._setup(data)
        glob.alpha_, glob.cv_loss_, glob.utility_ = alpha, loss, u
        glob.utility_cov_ = spd_inv_batch(H[None])[0]

        ids, rcode = _respondents(data)
        R = len(ids)
        rows = [np.flatnonzero(rcode == r) for r in range(R)]
        items = [np.unique(data.pairs[r]) for r in rows]
        n_max = max(len(r) for r in rows)
        m_max = max(len(i) for i in items)
        D = np.zeros((R, n_max, m_max))
        mask = np.zeros((R, n_max), dtype=bool)
        fo = np.full((R, n_max), -1, dtype=np.int64)
        loc = np.zeros((R, m_max), dtype=np.int64)
        real = np.zeros((R, m_max), dtype=bool)
        for r in range(R):
            it, pr = items[r], data.pairs[rows[r]]
            n_r = len(rows[r])
            D[r, np.arange(n_r), np.searchsorted(it, pr[:, 0])] = 1.0
            D[r, np.arange(n_r), np.searchsorted(it, pr[:, 1])] = -1.0
            mask[r, :n_r] = True
            fo[r, :n_r] = folds[rows[r]]
            loc[r, : len(it)] = it
            real[r, : len(it)] = True
        P = PaddedBatch(ids, D, mask, fo, rows)
        grid = glob.alphas_
        tau, lossr = resolve_strength(
            self.tau,
            grid,
            K,
            lambda: cv_respondents(
                P,
                K,
                np.ones(m_max),
                grid,
                fold_u[:, loc] * real,  # (K, R, m_max) fold centres
                self.link,
                self.max_iter,
                self.tol,
                self.cv_score,
            ),
            name="tau",
            positive=True,
        )
        self.cv_loss_ = None if lossr is None else lossr.sum(axis=0)
        mean = u[loc] * real
        v, Hr = newton_batch(
            D,
            mask.astype(float),
            np.full((R, m_max), tau),
            mean,
            self.link,
            max_iter=self.max_iter,
            tol=self.tol,
        )
        cov = spd_inv_batch(Hr)
        offset = np.zeros((R, data.n_items))
        user_cov = []
        for r in range(R):
            k = len(items[r])
            offset[r, items[r]] = v[r, :k] - u[items[r]]
            user_cov.append(cov[r, :k, :k])
        self._setup(data)
        self.global_ = glob
        self.alpha_ = alpha
        self.tau_ = tau
        self.respondents_ = ids
        self.offset_ = offset
        self.user_items_ = items
        self.user_cov_ = user_cov
        self._index = {_key(r): i for i, r in enumerate(ids)}
        return self

    def _user(self, respondent: Any) -> int:
        try:
            return self._index[_key(respondent)]
        except KeyError:
            raise KeyError(f"respondent {respondent!r} was not in the training data") from None

    def _item_posterior(self, idx: np.ndarray, respondent: Any) -> tuple[np.ndarray, np.ndarray]:
        mean, cov = self.global_._item_posterior(idx, None)
        if respondent is None:
            return mean, cov
        r = self._user(respondent)
        items = self.user_items_[r]
        known = idx >= 0
        j = np.where(known, idx, 0)
        mean = mean + np.where(known, self.offset_[r, j], 0.0)
        pos = np.searchsorted(items, j)
        seen = known & (pos < len(items)) & (items[np.minimum(pos, len(items) - 1)] == j)
        out = cov.copy()
        out[np.diag_indices(len(idx))] += 1.0 / self.tau_  # unseen: global + offset prior
        cross = np.outer(seen, seen)
        out[cross | np.outer(seen, ~seen) | np.outer(~seen, seen)] = 0.0
        ps = np.flatnonzero(seen)
        out[np.ix_(ps, ps)] = self.user_cov_[r][np.ix_(pos[ps], pos[ps])]
        return mean, out

    def utilities(self, respondent: Any) -> np.ndarray:
        """MAP utilities of all items for one user (global + offset)."""
        return self.global_.utility_ + self.offset_[self._user(respondent)]


# ----------------------------------------------------------------------------- Copeland
class CopelandSurrogate(_ItemPredictor):
    """Per-user Copeland scores: wins minus losses of every item (unseen items 0).

    ``respondent=None`` uses the scores summed over users. The posterior is the score
    with zero covariance, and ``prob_prefer`` is 1, 1/2 or 0 by comparing scores.

    Attributes
    ----------
    respondents_ : ndarray
    scores_ : ndarray, shape (R, n_items)
    """

    link = "copeland"

    def fit(self, data: PreferenceData) -> CopelandSurrogate:
        """Count wins and losses per user."""
        self._validate_params()
        ids, rcode = _respondents(data)
        R, m = len(ids), data.n_items
        s = np.zeros((R, m))
        np.add.at(s, (rcode, data.pairs[:, 0]), 1.0)
        np.add.at(s, (rcode, data.pairs[:, 1]), -1.0)
        self._setup(data)
        self.respondents_ = ids
        self.scores_ = s
        self._index = {_key(r): i for i, r in enumerate(ids)}
        return self

    def _item_posterior(self, idx: np.ndarray, respondent: Any) -> tuple[np.ndarray, np.ndarray]:
        if respondent is None:
            s = self.scores_.sum(axis=0)
        else:
            try:
                s = self.scores_[self._index[_key(respondent)]]
            except KeyError:
                raise KeyError(f"respondent {respondent!r} was not in the training data") from None
        mean = np.where(idx >= 0, s[np.maximum(idx, 0)], 0.0)
        return mean, np.zeros((len(idx), len(idx)))

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray, respondent: Any = None) -> np.ndarray:
        """1, 1/2 or 0 as the score of ``a`` is above, equal to or below that of ``b``."""
        ma, mb = self.predict(Xa, respondent), self.predict(Xb, respondent)
        return margin_scores(ma - mb)
