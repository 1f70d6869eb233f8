"""``DTSurrogate``: the DT-PBO surrogate (preference tree + Laplace leaves).

The tree partitions the item space (:mod:`pbo_core.models.tree`); every leaf carries one latent
utility with a joint Gaussian posterior (:mod:`pbo_core.models.leaves`). The surrogate is
piecewise constant: two items in the same leaf have the same utility distribution.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from pbo_core.data import PreferenceData, Schema
from pbo_core.models.base import (
    CALLABLE,
    POSITIVE,
    Estimator,
    Options,
    check_input,
    competition_rank,
    probit_preference,
)
from pbo_core.models.leaves import laplace_fit
from pbo_core.models.tree import (
    GROWTH_CONSTRAINTS,
    SPLIT_TIES,
    Backend,
    SplitCache,
    SplitTies,
    StraddlerMode,
    Tree,
    build_tree,
    resolve_backend,
)

__all__ = ["DTSurrogate"]


class DTSurrogate(Estimator):
    """Decision-tree preference surrogate with Laplace-approximated leaves.

    Parameters
    ----------
    ratio
        ``sigma_noise^2 / sigma_prior^2`` (default 1/4, DT-PBO App. D).
    max_depth, min_samples_split, min_split_score
        Growth controls of the tree (off by default: straddler exclusion keeps trees
        small on its own).
    straddlers
        ``"discard"`` (default, Eq. 8) or ``"keep"`` (App. C.2, with masked columns).
    prior_mean, prior_precision
        Optional callables ``(tree, X, pairs) -> array (n_leaves,)`` giving a leaf prior
        mean / precision (used to warm-start from earlier users); default zero mean and
        precision ``ratio``.
    backend
        Tree growth back-end: ``"auto"`` (default: numba in discard mode, numpy when
        keeping straddlers), ``"numba"`` or ``"numpy"``; identical trees either way.
    split_ties, split_rng
        How ties between equally consistent splits are broken (default ``"gap"``; see
        :mod:`pbo_core.models.tree.splits`) and the Generator of ``"random"``; any rule
        but ``"gap"`` grows the tree with the numpy back-end.

    Attributes
    ----------
    tree_ : Tree
        The fitted tree.
    schema_ : Schema
        Schema the tree was grown with.
    leaf_mean_ : ndarray, shape (n_leaves,)
        Sum-to-zero conditioned posterior mean of the leaf utilities (``sigma_noise`` units).
    leaf_cov_ : ndarray, shape (n_leaves, n_leaves)
        Conditioned posterior covariance.
    leaf_map_ : ndarray
        Unconditioned MAP (equal to ``leaf_mean_`` with the default prior).
    item_leaf_ : ndarray, shape (n_items,)
        Leaf of every training item.
    n_leaves_ : int
    laplace_ : LaplaceResult
        Full Laplace fit (Hessians, iterations).
    backend_ : str
        The back-end that grew ``tree_`` (``"numba"`` or ``"numpy"``).
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "ratio": [POSITIVE],
        **GROWTH_CONSTRAINTS,
        "prior_mean": [CALLABLE, None],
        "prior_precision": [CALLABLE, None],
        "split_ties": [Options(*SPLIT_TIES)],
        "split_rng": [np.random.Generator, None],
    }

    def __init__(
        self,
        ratio: float = 0.25,
        *,
        max_depth: int | None = None,
        min_samples_split: int = 1,
        min_split_score: float = 0.0,
        straddlers: StraddlerMode = "discard",
        prior_mean=None,
        prior_precision=None,
        backend: Backend = "auto",
        split_ties: SplitTies = "gap",
        split_rng: np.random.Generator | None = None,
    ) -> None:
        self.ratio = ratio
        self.split_ties = split_ties
        self.split_rng = split_rng
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_split_score = min_split_score
        self.straddlers = straddlers
        self.prior_mean = prior_mean
        self.prior_precision = prior_precision
        self.backend = backend

    def fit(self, data: PreferenceData) -> DTSurrogate:
        """Grow the tree on ``data`` and fit the leaf posterior. Returns self."""
        self._validate_params()
        schema = data.get_schema()
        tree, backend = self._grow(data, schema)
        leaf = tree.apply(data.X)
        m = tree.n_leaves
        kwargs = {}
        if self.prior_mean is not None:
            kwargs["prior_mean"] = self.prior_mean(tree, data.X, data.pairs)
        if self.prior_precision is not None:
            kwargs["prior_precision"] = self.prior_precision(tree, data.X, data.pairs)
        if "init" not in kwargs and hasattr(self, "item_leaf_"):
            kwargs["init"] = self._warm_start(leaf, m)
        res = laplace_fit(leaf[data.pairs[:, 0]], leaf[data.pairs[:, 1]], m, self.ratio, **kwargs)
        self.backend_ = backend
        self.schema_: Schema = schema
        self.tree_: Tree = tree
        self.item_leaf_ = leaf
        self.n_leaves_ = m
        self.laplace_ = res
        self.leaf_map_ = res.map
        self.leaf_mean_ = res.mean_c
        self.leaf_cov_ = res.cov_c
        self.n_features_in_ = data.X.shape[1]
        self._X_fit = data.X
        return self

    def _grow(self, data: PreferenceData, schema: Schema) -> tuple[Tree, str]:
        """The tree of ``data`` with this model's growth settings, and the back-end used."""
        backend = resolve_backend(self.backend, self.straddlers, self.split_ties)
        if backend == "numpy" and not hasattr(self, "_split_cache"):
            self._split_cache = SplitCache()  # the numpy back-end's memo across refits
        tree = build_tree(
            data.X,
            data.pairs,
            schema,
            max_depth=self.max_depth,
            min_samples_split=self.min_samples_split,
            min_split_score=self.min_split_score,
            straddlers=self.straddlers,
            cache=getattr(self, "_split_cache", None) if backend == "numpy" else None,
            backend=backend,
            split_ties=self.split_ties,
            split_rng=self.split_rng,
        )
        return tree, backend

    def _warm_start(self, leaf: np.ndarray, m: int) -> np.ndarray:
        """Newton start for a refit: each new leaf starts at the mean previous MAP of its items.

        Only the starting point changes (the objective is strictly convex), so results are
        the same as from a cold start; refits in the PBO loop just converge in fewer steps.
        """
        k = min(len(leaf), len(self.item_leaf_))
        prev = self.leaf_map_[self.item_leaf_[:k]]
        tot = np.bincount(leaf[:k], prev, minlength=m)
        cnt = np.bincount(leaf[:k], minlength=m)
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), 0.0)

    # ------------------------------------------------------------------ prediction
    def _check(self, X: np.ndarray) -> np.ndarray:
        fitted = getattr(self, "n_features_in_", None) if hasattr(self, "tree_") else None
        return check_input(X, fitted, type(self).__name__)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index of every row of ``X``."""
        if X is getattr(self, "_X_fit", None):
            return self.item_leaf_
        X = self._check(X)
        return self.tree_.apply(X)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utility of every row of ``X`` (its leaf's mean)."""
        leaf = self.apply(X)
        return self.leaf_mean_[leaf]

    def posterior(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean ``(n,)`` and covariance ``(n, n)`` of the utilities of ``X``."""
        leaf = self.apply(X)
        return self.leaf_mean_[leaf], self.leaf_cov_[np.ix_(leaf, leaf)]

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray) -> np.ndarray:
        """Predictive ``P(a > b)``; exactly 0.5 for two items in the same leaf."""
        la, lb = self.apply(Xa), self.apply(Xb)
        md = self.leaf_mean_[la] - self.leaf_mean_[lb]
        c = self.leaf_cov_
        vd = c[la, la] + c[lb, lb] - 2.0 * c[la, lb]
        return np.where(la == lb, 0.5, probit_preference(md, vd))

    def rank(self, X: np.ndarray) -> np.ndarray:
        """Competition ranks (1 = best); items sharing a leaf share a rank."""
        return competition_rank(self.predict(X))
