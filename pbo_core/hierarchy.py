"""User/item tree hierarchies: learning from earlier users (DT-PBO App. G.1, Eq. 15).

A **user tree** partitions users by their features (gender, age, region, ...) into groups
whose preferences agree; every user-tree leaf holds an ordinary **item tree** (a
:class:`~pbo_core.models.dt.DTSurrogate`) trained on that group's comparisons.

User consistency (Eq. 15)
-------------------------
For a set of users ``U`` and items ``i < j`` let ``C_U(i > j)`` count the comparisons in
which users of ``U`` preferred ``i`` to ``j``. A group is consistent when its users agree
on the direction of each pair::

    S(U) = sum_{i<j} | C_U(i > j) - C_U(j > i) |

and a split of ``U`` into ``L`` and ``R`` has gain ``G = S(L) + S(R)``. Each user is a row
``d_u`` of net counts over item pairs, so ``S`` of any group is the L1 norm of a sum of rows
and every threshold of a feature is scored from prefix sums over users sorted by it
(numeric features with more than 64 distinct values are binned at quantiles). A split is
made when it beats the parent's own ``S`` (by the triangle inequality ``G >= S(parent)``;
equality means the split separates nothing). Categorical user features with at most
``max_exhaustive`` categories try every binary partition; larger ones (Sushi's 48
prefectures) order the categories by their agreement with the parent's majority direction
and scan that order like an ordinal feature (a Breiman-style heuristic, exact for two
categories).

Warm start
----------
A new user is assigned to a user-tree leaf. Their item tree is grown on the group's
comparisons plus their own (so it starts as the group's tree and sharpens where they
disagree), while its leaf utilities are fitted on *their* comparisons only, with the prior
mean set to the group's posterior mean (the group item tree's prediction, averaged over
the items in each leaf) and the prior variance inflated by ``prior_inflation``
(default 4: prior sd twice the plain DT's), so the user's own answers dominate quickly.
The user tree is refitted every ``refit_every`` users (default 50).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Schema, Study
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.leaves import laplace_fit
from pbo_core.models.tree import Tree, build_tree
from pbo_core.rules import describe_side

MAX_BINS = 64


# ----------------------------------------------------------------------------- counts
def net_counts(pairs: np.ndarray, users: np.ndarray, n_users: int, n_items: int) -> np.ndarray:
    """``(n_users, n_compared)`` rows ``C_u(i > j) - C_u(j > i)`` for compared pairs ``i < j``.

    ``users[k]`` is the (0-based) user of comparison ``k``; ``pairs[k]`` its winner/loser.
    Columns are the distinct unordered item pairs that occur in ``pairs``, ordered by
    ``(i, j)``; pairs nobody compared would be all-zero columns, which change no
    consistency (Eq. 15), so they are left out (memory grows with the comparisons, not
    with ``n_items^2``).
    """
    w, lo = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    key = np.minimum(w, lo) * np.int64(max(n_items, 1)) + np.maximum(w, lo)
    _, col = np.unique(key, return_inverse=True)
    sign = np.where(w < lo, 1.0, -1.0)
    out = np.zeros((n_users, int(col.max()) + 1 if len(col) else 0), dtype=float)
    np.add.at(out, (users, col), sign)
    return out


def consistency(D: np.ndarray) -> float:
    """``S`` of the group whose net-count rows are ``D``: ``|sum of rows|_1``."""
    return float(np.abs(D.sum(axis=0)).sum())


# ----------------------------------------------------------------------------- user tree
@dataclass
class UserSplit:
    """A split of users: column, threshold (threshold columns) or right category set."""

    column: int
    threshold: float
    right: frozenset[int]
    gain: float


def _best_threshold(values: np.ndarray, D: np.ndarray, min_leaf: int) -> tuple[float, float]:
    """Best ``x >= t`` split of users by one threshold column: ``(gain, t)``."""
    uniq = np.unique(values)
    if len(uniq) < 2:
        return -np.inf, np.nan
    if len(uniq) > MAX_BINS:
        qs = np.unique(np.quantile(values, np.linspace(0, 1, MAX_BINS + 1)[1:-1]))
        cuts = qs[(qs > uniq[0]) & (qs <= uniq[-1])]
    else:
        cuts = (uniq[1:] + uniq[:-1]) / 2.0
    if len(cuts) == 0:
        return -np.inf, np.nan
    # group users by cut interval, then prefix sums over intervals
    bins = np.searchsorted(cuts, values, side="right")  # 0 .. len(cuts)
    G = np.zeros((len(cuts) + 1, D.shape[1]))
    np.add.at(G, bins, D)
    counts = np.bincount(bins, minlength=len(cuts) + 1)
    left = np.cumsum(G, axis=0)[:-1]
    n_left = np.cumsum(counts)[:-1]
    total = G.sum(axis=0)
    gain = np.abs(left).sum(1) + np.abs(total - left).sum(1)
    ok = (n_left >= min_leaf) & (len(values) - n_left >= min_leaf)
    if not ok.any():
        return -np.inf, np.nan
    gain = np.where(ok, gain, -np.inf)
    k = int(np.argmax(gain))
    return float(gain[k]), float(cuts[k])


def _best_categories(
    codes: np.ndarray, D: np.ndarray, min_leaf: int, max_exhaustive: int
) -> tuple[float, frozenset[int]]:
    """Best binary partition of the categories present: ``(gain, right set)``."""
    cats = np.unique(codes)
    if len(cats) < 2:
        return -np.inf, frozenset()
    G = np.stack([D[codes == c].sum(axis=0) for c in cats])
    n = np.array([(codes == c).sum() for c in cats])
    total = G.sum(axis=0)
    best = (-np.inf, frozenset())
    if len(cats) <= max_exhaustive:
        first, rest = cats[0], list(range(1, len(cats)))
        for r in range(0, len(rest) + 1):
            for combo in combinations(rest, r):
                left_idx = [0, *combo]
                if len(left_idx) == len(cats):
                    continue
                nl = n[left_idx].sum()
                if nl < min_leaf or n.sum() - nl < min_leaf:
                    continue
                L = G[left_idx].sum(axis=0)
                g = float(np.abs(L).sum() + np.abs(total - L).sum())
                if g > best[0]:
                    right = frozenset(int(c) for k, c in enumerate(cats) if k not in left_idx)
                    best = (g, right)
        del first
        return best
    # order categories by agreement with the majority direction, then scan
    direction = np.sign(total)
    agree = (G @ direction) / np.maximum(n, 1)
    order = np.argsort(agree, kind="stable")
    Gs, ns = G[order], n[order]
    left = np.cumsum(Gs, axis=0)[:-1]
    nl = np.cumsum(ns)[:-1]
    gain = np.abs(left).sum(1) + np.abs(total - left).sum(1)
    ok = (nl >= min_leaf) & (n.sum() - nl >= min_leaf)
    if not ok.any():
        return best
    gain = np.where(ok, gain, -np.inf)
    k = int(np.argmax(gain))
    return float(gain[k]), frozenset(int(c) for c in cats[order[k + 1 :]])


@dataclass
class UserTree:
    """Binary tree over user features (node arrays; ``left[i] == -1`` for leaves)."""

    left: list[int]
    right: list[int]
    split: list[UserSplit | None]
    n_users: list[int]
    score: list[float]
    depth: list[int]
    leaf_of_node: dict[int, int]

    @property
    def n_leaves(self) -> int:
        """Number of user groups."""
        return len(self.leaf_of_node)

    def apply(self, U: np.ndarray, is_categorical: np.ndarray) -> np.ndarray:
        """User-leaf index of every row of the encoded user matrix ``U``."""
        U = np.atleast_2d(U)
        out = np.empty(len(U), dtype=np.int64)
        for r, row in enumerate(U):
            node = 0
            while self.left[node] != -1:
                sp = self.split[node]
                assert sp is not None
                v = row[sp.column]
                go_right = int(v) in sp.right if is_categorical[sp.column] else v >= sp.threshold
                node = self.right[node] if go_right else self.left[node]
            out[r] = self.leaf_of_node[node]
        return out


def grow_user_tree(
    U: np.ndarray,
    D: np.ndarray,
    is_categorical: np.ndarray,
    *,
    max_depth: int = 5,
    min_users_leaf: int = 20,
    max_exhaustive: int = 8,
) -> UserTree:
    """Greedy user tree on encoded user features ``U`` and net-count rows ``D`` (Eq. 15)."""
    tree = UserTree([], [], [], [], [], [], {})

    def new(n: int, s: float, dep: int) -> int:
        tree.left.append(-1)
        tree.right.append(-1)
        tree.split.append(None)
        tree.n_users.append(n)
        tree.score.append(s)
        tree.depth.append(dep)
        return len(tree.left) - 1

    root = new(len(U), consistency(D), 0)
    stack = [(root, np.arange(len(U)))]
    while stack:
        node, idx = stack.pop()
        best: UserSplit | None = None
        parent_s = tree.score[node]
        if tree.depth[node] < max_depth and len(idx) >= 2 * min_users_leaf:
            Dn = D[idx]
            for c in range(U.shape[1]):
                if is_categorical[c]:
                    g, right = _best_categories(
                        U[idx, c].astype(int), Dn, min_users_leaf, max_exhaustive
                    )
                    cand = UserSplit(c, np.nan, right, g)
                else:
                    g, t = _best_threshold(U[idx, c], Dn, min_users_leaf)
                    cand = UserSplit(c, t, frozenset(), g)
                if cand.gain > parent_s + 1e-9 and (best is None or cand.gain > best.gain):
                    best = cand
        if best is None:
            tree.leaf_of_node[node] = len(tree.leaf_of_node)
            continue
        col = U[idx, best.column]
        go_right = (
            np.isin(col.astype(int), list(best.right))
            if is_categorical[best.column]
            else col >= best.threshold
        )
        li, ri = idx[~go_right], idx[go_right]
        tree.split[node] = best
        a = new(len(li), consistency(D[li]), tree.depth[node] + 1)
        b = new(len(ri), consistency(D[ri]), tree.depth[node] + 1)
        tree.left[node], tree.right[node] = a, b
        stack += [(b, ri), (a, li)]
    # number leaves in node order
    leaves = sorted(tree.leaf_of_node)
    tree.leaf_of_node = {n: k for k, n in enumerate(leaves)}
    return tree


def split_counts(study: Study, sel: np.ndarray, split_items: np.ndarray | None) -> np.ndarray:
    """Net-count rows (Eq. 15) of the respondents at positions ``sel`` of ``study``.

    ``split_items``: optional coarse item of every item (default: the study's
    ``extras["hierarchy_split_items"]``); comparisons within one coarse item are left out.
    """
    resp = study.respondents()
    pos = {r: k for k, r in enumerate(resp)}
    pair_user = np.array([pos[r] for r in study.data.respondent])
    keep = np.isin(pair_user, sel)
    split_pairs, n_split = study.data.pairs, study.data.n_items
    if split_items is None:
        split_items = study.extras.get("hierarchy_split_items")
    if split_items is not None:
        codes = np.asarray(split_items, dtype=np.int64)
        if codes.shape != (study.data.n_items,) or (len(codes) and codes.min() < 0):
            raise ValueError("split_items needs one non-negative code per item")
        split_pairs, n_split = codes[study.data.pairs], int(codes.max()) + 1
        keep &= split_pairs[:, 0] != split_pairs[:, 1]
    local = {u: k for k, u in enumerate(sel)}
    users_local = np.array([local[u] for u in pair_user[keep]], dtype=np.int64)
    return net_counts(split_pairs[keep], users_local, len(sel), n_split)


# ----------------------------------------------------------------------------- hierarchy
class UserItemHierarchy:
    """A user tree whose leaves hold item trees.

    Parameters
    ----------
    max_depth, min_users_leaf
        Growth controls of the user tree (paper Fig. 17: depth 5).
    item_max_depth
        Max depth of each item tree (paper: 5).
    ratio
        Leaf prior ratio of the item trees.
    prior_inflation
        Warm start: the group posterior becomes a new user's prior mean with prior
        variance multiplied by this factor.

    Attributes
    ----------
    user_tree_ : UserTree
    item_trees_ : dict[int, DTSurrogate]
    user_leaf_ : ndarray, user-leaf of every training user
    """

    def __init__(
        self,
        *,
        max_depth: int = 5,
        min_users_leaf: int = 20,
        item_max_depth: int | None = 5,
        ratio: float = 0.25,
        prior_inflation: float = 4.0,
    ) -> None:
        self.max_depth = max_depth
        self.min_users_leaf = min_users_leaf
        self.item_max_depth = item_max_depth
        self.ratio = ratio
        self.prior_inflation = prior_inflation

    def fit(
        self,
        study: Study,
        users: np.ndarray | None = None,
        *,
        split_items: np.ndarray | None = None,
    ) -> UserItemHierarchy:
        """Grow the user tree on ``users`` (positions in ``study.respondents()``).

        ``split_items``: optional coarse item of every item (``n_items`` integer codes),
        used only for the user consistency (Eq. 15) of the user tree; comparisons within
        one coarse item are left out of it, and the item trees are still grown on the
        items themselves. SwissMetro's profiles are hardly ever shared between
        respondents, so Eq. 15 on profiles sees no agreement; on their mode (Train,
        Swissmetro, Car) it does, while each group's item tree is grown on the group's
        pooled profile comparisons (their attributes are shared). Default: the study's
        ``extras["hierarchy_split_items"]`` when its loader provides one (SwissMetro).
        """
        if study.users is None or study.user_schema is None:
            raise ValueError(f"study {study.key!r} has no user features")
        resp = study.respondents()
        sel = np.arange(len(resp)) if users is None else np.asarray(users)
        self.study_ = study
        self.user_schema_: Schema = study.user_schema
        U_all = self.user_schema_.encode(study.users.loc[resp], source=f"{study.key} users")
        pos = {r: k for k, r in enumerate(resp)}
        pair_user = np.array([pos[r] for r in study.data.respondent])
        D = split_counts(study, sel, split_items)
        self.U_ = U_all[sel]
        self.users_ = sel
        self.user_tree_ = grow_user_tree(
            self.U_,
            D,
            self.user_schema_.is_categorical,
            max_depth=self.max_depth,
            min_users_leaf=self.min_users_leaf,
        )
        self.user_leaf_ = self.user_tree_.apply(self.U_, self.user_schema_.is_categorical)
        self.item_trees_: dict[int, DTSurrogate] = {}
        self.group_pairs_: dict[int, np.ndarray] = {}
        for leaf in range(self.user_tree_.n_leaves):
            members = sel[self.user_leaf_ == leaf]
            mask = np.isin(pair_user, members)
            gp = study.data.pairs[mask]
            self.group_pairs_[leaf] = gp
            self.item_trees_[leaf] = DTSurrogate(self.ratio, max_depth=self.item_max_depth).fit(
                PreferenceData(study.data.X, gp, schema=study.schema)
            )
        return self

    def assign(self, user_features: pd.DataFrame | pd.Series) -> np.ndarray:
        """User-tree leaf of users given by their feature table (labels or codes)."""
        df = user_features.to_frame().T if isinstance(user_features, pd.Series) else user_features
        U = self.user_schema_.encode(df, source="user features")
        return self.user_tree_.apply(U, self.user_schema_.is_categorical)

    def item_tree(self, leaf: int) -> DTSurrogate:
        """The item tree of a user-tree leaf."""
        return self.item_trees_[int(leaf)]

    # ------------------------------------------------------------------ description
    def rule(self, node: int, right: bool) -> str:
        """Readable condition of user-tree ``node`` on its right (``True``) or left side."""
        sp = self.user_tree_.split[node]
        assert sp is not None
        return describe_side(self.user_schema_, sp.column, sp.threshold, sp.right, right)

    # ------------------------------------------------------------------ warm start
    def warm_start_surrogate(self, leaf: int, user_items: np.ndarray) -> WarmStartDT:
        """Surrogate for a new user of group ``leaf`` whose item set is ``user_items``."""
        leaf = int(leaf)
        cache = self.__dict__.setdefault("_warm_cache", {})
        if "rows" not in cache:  # item row -> index, shared by every warm start
            cache["rows"] = {r.tobytes(): k for k, r in enumerate(self.study_.data.X)}
        if leaf not in cache:  # the group posterior mean of every item, once per group
            cache[leaf] = self.item_trees_[leaf].predict(self.study_.data.X)
        ws = WarmStartDT(
            group=self.item_trees_[leaf],
            group_X=self.study_.data.X,
            group_pairs=self.group_pairs_[leaf],
            schema=self.study_.schema,
            ratio=self.ratio,
            max_depth=self.item_max_depth,
            prior_inflation=self.prior_inflation,
            row_index=cache["rows"],
            group_mean=cache[leaf],
        )
        # a new user's first fit (no answers yet) grows the group's own tree: grown once
        ws._shared = cache.setdefault(("empty", leaf), {})
        return ws


class WarmStartDT(DTSurrogate):
    """DT surrogate warm-started from a user group (see module docstring).

    ``fit(data)`` grows the tree on the group's comparisons plus the user's (user items
    are matched to the group's item rows) and fits the leaves on the user's comparisons
    only, with prior mean = group posterior mean per leaf and prior precision
    ``ratio / prior_inflation``.
    """

    def __init__(
        self,
        group: DTSurrogate,
        group_X: np.ndarray,
        group_pairs: np.ndarray,
        schema: Schema,
        ratio: float = 0.25,
        max_depth: int | None = 5,
        prior_inflation: float = 4.0,
        row_index: dict[bytes, int] | None = None,
        group_mean: np.ndarray | None = None,
    ) -> None:
        super().__init__(ratio, max_depth=max_depth)
        self.group = group
        self.group_X = np.asarray(group_X, dtype=float)
        self.group_pairs = np.asarray(group_pairs, dtype=np.int64).reshape(-1, 2)
        self.schema = schema
        self.prior_inflation = prior_inflation
        self.row_index = row_index
        self.group_mean = group_mean
        self._row = (
            row_index
            if row_index is not None
            else {r.tobytes(): k for k, r in enumerate(self.group_X)}
        )

    def fit(self, data: PreferenceData) -> WarmStartDT:
        """Grow on group + user comparisons; fit leaves on the user's with the group prior."""
        idx = np.array([self._row.get(r.tobytes(), -1) for r in data.X])
        if np.any(idx < 0):
            raise ValueError("every user item must be one of the group's items")
        user_pairs = idx[data.pairs] if data.n_pairs else np.zeros((0, 2), dtype=np.int64)
        all_pairs = np.vstack([self.group_pairs, user_pairs]) if len(user_pairs) else None
        group_mean = (  # group posterior, per item
            self.group.predict(self.group_X) if self.group_mean is None else self.group_mean
        )
        prec = self.ratio / self.prior_inflation
        memo: dict[str, Any] = {}

        def prior_mean(tree: Any, X: np.ndarray, pairs: np.ndarray) -> np.ndarray:
            if memo.get("tree") is not tree:
                memo["tree"], memo["leaf"] = tree, tree.apply(self.group_X)
            leaf = memo["leaf"]
            tot = np.bincount(leaf, group_mean, minlength=tree.n_leaves)
            cnt = np.bincount(leaf, minlength=tree.n_leaves)
            return tot / np.maximum(cnt, 1)

        self.prior_mean = prior_mean
        self.prior_precision = lambda tree, X, pairs: np.full(tree.n_leaves, prec)
        if len(user_pairs) and np.any(user_pairs[:, 0] == user_pairs[:, 1]):
            PreferenceData(self.group_X, user_pairs, schema=self.schema)  # raises, naming it
        # the tree on the union, on the group's item rows (both already checked: the
        # group's pairs by the hierarchy, the user's by their own data); without answers
        # of the user's it is the group's tree, grown once per group (``_shared``); with
        # a few it is that tree extended node by node (GroupTreeExtension), a subtree
        # regrown only where the user's answers change its split
        shared = getattr(self, "_shared", None)
        if shared is None or self.straddlers != "discard" or self.split_ties != "gap":
            # on its own (or a growth the extension does not follow): one tree on the union
            union = PreferenceData.from_validated_arrays(
                self.group_X, self.group_pairs if all_pairs is None else all_pairs, self.schema
            )
            tree, backend = self._grow(union, self.schema)
            pm = prior_mean(tree, None, None)
        else:
            if "extension" not in shared:
                union = PreferenceData.from_validated_arrays(
                    self.group_X, self.group_pairs, self.schema
                )
                tree, backend = self._grow(union, self.schema)
                shared["backend"] = backend
                shared["extension"] = GroupTreeExtension(
                    tree,
                    self.group_X,
                    self.group_pairs,
                    self.schema,
                    max_depth=self.max_depth,
                    min_samples_split=self.min_samples_split,
                    min_split_score=self.min_split_score,
                    item_values=group_mean,
                )
            ext: GroupTreeExtension = shared["extension"]
            backend = shared["backend"]
            if "empty" not in shared:  # no answers yet: the group's own tree
                shared["empty"] = ext.extend(np.zeros((0, 2), dtype=np.int64))
            tree, pm = ext.extend(user_pairs) if len(user_pairs) else shared["empty"]
        self.backend_ = backend
        self.schema_ = self.schema
        self.tree_ = tree
        self.n_leaves_ = tree.n_leaves
        # leaves: the user's comparisons only, with the group prior
        user_leaf = tree.apply(self.group_X[user_pairs.ravel()]).reshape(-1, 2)
        res = laplace_fit(
            user_leaf[:, 0],
            user_leaf[:, 1],
            self.n_leaves_,
            self.ratio,
            prior_mean=pm,
            prior_precision=np.full(self.n_leaves_, prec),
        )
        self.laplace_ = res
        self.leaf_map_ = res.map
        self.leaf_mean_ = res.mean_c
        self.leaf_cov_ = res.cov_c
        self.item_leaf_ = self.tree_.apply(data.X)  # leaves of the user's own items
        self._X_fit = data.X
        self.n_features_in_ = data.X.shape[1]
        return self


class GroupTreeExtension:
    """The tree of a group's comparisons plus a few more, from the group's tree.

    A warm start (:class:`WarmStartDT`) grows its item tree on the group's comparisons
    followed by the user's. Growing it afresh for every answer costs a pass over all the
    group's comparisons, which grows with the cohort. The tree of ``group + user`` differs
    from the group's tree only at the nodes the user's comparisons reach (every other
    node's split-search set is the same), so this class keeps, per node of the group's
    tree, the statistics its split search reads (discard-straddlers mode,
    :mod:`pbo_core.models.tree.splits`): for every threshold column the node's distinct
    endpoint values and the running sum of the endpoint weights (+1 winner, -1 loser) up
    to each, for every categorical column the net wins per category. Adding the user's
    endpoints to them gives the node's exact candidate scores, ties broken by the same
    rules (largest ``|sum Z|``, then the wider normalised gap, then the lower column and
    threshold; categories by net wins). Where a split stays the group's, the node keeps
    it with the user's comparisons counted in; where one changes, only that node's
    subtree is grown afresh on the node's comparisons and put in its place. The result is
    the tree :func:`~pbo_core.models.tree.build_tree` grows on ``group + user``
    (``tests/pbo_core/test_hierarchy.py`` checks every node array), at a cost that no
    longer grows with the group. Statistics are computed for a node the first time a
    user reaches it, and every item's node once, per group; :meth:`extend` also returns
    the mean of ``item_values`` (the group posterior) over the items of each leaf, the
    warm start's prior mean, from per-leaf sums kept for the group's leaves.
    """

    def __init__(
        self,
        tree: Tree,
        X: np.ndarray,
        pairs: np.ndarray,
        schema: Schema,
        *,
        max_depth: int | None,
        min_samples_split: int = 1,
        min_split_score: float = 0.0,
        item_values: np.ndarray | None = None,
    ) -> None:
        self.tree = tree
        self.X = np.asarray(X, dtype=float)
        self.schema = schema
        self.pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self.item_values = (
            np.zeros(len(self.X)) if item_values is None else np.asarray(item_values, float)
        )
        self.Xw, self.Xl = self.X[self.pairs[:, 0]], self.X[self.pairs[:, 1]]
        self.n_group = len(self.pairs)
        self.max_depth = -1 if max_depth is None else int(max_depth)
        self.min_samples_split = int(min_samples_split)
        self.min_split_score = float(min_split_score)
        self.is_cat = np.asarray(tree.is_categorical, dtype=bool)
        self.n_cat = np.asarray(tree.n_categories, dtype=np.int64)
        span = np.where(
            self.is_cat, np.maximum(self.n_cat - 1, 1), tree.root_upper - tree.root_lower
        )
        self.span = np.where(span > 0, span, 1.0)  # as build_tree normalises the gaps
        self._pairs: dict[int, np.ndarray] = {0: np.arange(self.n_group)}
        self._stats: dict[int, list[Any]] = {}
        self._items: dict[str, np.ndarray] = {}

    def _right(self, node: int, w: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether winners ``w`` and losers ``lo`` (rows) go right at ``node``."""
        t = self.tree
        c = int(t.feature[node])
        if self.is_cat[c]:
            m = int(t.right_mask[node])
            return ((m >> w[:, c].astype(np.int64)) & 1) == 1, (
                (m >> lo[:, c].astype(np.int64)) & 1
            ) == 1
        return w[:, c] >= t.threshold[node], lo[:, c] >= t.threshold[node]

    def node_pairs(self, node: int) -> np.ndarray:
        """Indices of the group's comparisons in ``node``'s split-search set."""
        if node not in self._pairs:
            parent = int(self.tree.parent[node])
            idx = self.node_pairs(parent)
            wr, lr = self._right(parent, self.Xw[idx], self.Xl[idx])
            self._pairs[int(self.tree.children_left[parent])] = idx[~wr & ~lr]
            self._pairs[int(self.tree.children_right[parent])] = idx[wr & lr]
        return self._pairs[node]

    def _node_stats(self, node: int) -> list[Any]:
        if node not in self._stats:
            idx = self.node_pairs(node)
            out: list[Any] = []
            for c in range(self.X.shape[1]):
                w, lo = self.Xw[idx, c], self.Xl[idx, c]
                if self.is_cat[c]:
                    k = int(self.n_cat[c])
                    out.append(
                        np.bincount(w.astype(np.int64), minlength=k).astype(float)
                        - np.bincount(lo.astype(np.int64), minlength=k)
                    )
                else:
                    vals, inv = np.unique(np.concatenate([w, lo]), return_inverse=True)
                    wt = np.concatenate([np.ones(len(w)), -np.ones(len(lo))])
                    out.append((vals, np.cumsum(np.bincount(inv, wt, minlength=len(vals)))))
            self._stats[node] = out
        return self._stats[node]

    def _search(
        self, node: int, uw: np.ndarray, ul: np.ndarray, n: int
    ) -> tuple[int, float, int, float, float] | None:
        """Best split of ``node``'s group set plus user rows ``uw``/``ul``: ``(column,
        threshold, mask, sum_z, |sum_z|)``, or ``None`` (the kernel's rules)."""
        best_key, best_abs, best_gapn, best = -1.0, 0.0, -1.0, None
        stats = self._node_stats(node)
        for c in np.flatnonzero(~self.is_cat):
            vals_g, cum_g = stats[c]
            v_u = np.concatenate([uw[:, c], ul[:, c]])
            order = np.argsort(v_u, kind="stable")
            v_u = v_u[order]
            cum_u = np.cumsum(np.concatenate([np.ones(len(uw)), -np.ones(len(ul))])[order])
            vals = np.union1d(vals_g, v_u)
            if len(vals) < 2:
                continue
            # running sums at every merged value (0 before a set's first value)
            cum = np.concatenate([[0.0], cum_g])[np.searchsorted(vals_g, vals, side="right")]
            cum = cum + np.concatenate([[0.0], cum_u])[np.searchsorted(v_u, vals, side="right")]
            gaps = vals[1:] - vals[:-1]
            a = np.abs(cum[:-1])
            key = np.where(a > 0, a + 0.5 * gaps / self.span[c], -np.inf)
            j = int(np.argmax(key))
            if key[j] > best_key:
                best_key, best_abs, best_gapn = float(key[j]), float(a[j]), gaps[j] / self.span[c]
                v0, v1 = vals[j], vals[j + 1]
                thr = 0.5 * (v0 + v1)
                if not v0 < thr <= v1:
                    thr = v1
                best = (int(c), float(thr), 0, float(-cum[j]), float(a[j]))
        for c in np.flatnonzero(self.is_cat):
            k = int(self.n_cat[c])
            net = (
                stats[c]
                + np.bincount(uw[:, c].astype(np.int64), minlength=k)
                - np.bincount(ul[:, c].astype(np.int64), minlength=k)
            )
            pos = net > 0
            sz = 0.0
            for v in net[pos]:  # the kernel's running sum
                sz += float(v)
            if sz <= 0:
                continue
            gapn = 1.0 / max(k - 1, 1)
            better = (
                sz > best_abs
                or (sz == best_abs and gapn > best_gapn)
                or (sz == best_abs and gapn == best_gapn and best is not None and c < best[0])
            )
            if best is None or better:
                best_abs, best_gapn = sz, gapn
                mask = int(np.sum(np.left_shift(1, np.flatnonzero(pos).astype(np.int64))))
                best = (int(c), float("nan"), mask, sz, sz)
        if best is not None and best[4] / n <= self.min_split_score:
            return None
        return best

    def _item_index(self) -> dict[str, np.ndarray]:
        """Every item's node in the group's tree (items sorted by it) and the sum and
        count of ``item_values`` per leaf, once per group."""
        if not self._items:
            t = self.tree
            node = t.apply_nodes(self.X)
            order = np.argsort(node, kind="stable")
            leaf = t.leaf_id[node]
            self._items.update(
                order=order,
                sorted_node=node[order],
                tot=np.bincount(leaf, self.item_values, minlength=t.n_leaves),
                cnt=np.bincount(leaf, minlength=t.n_leaves).astype(float),
            )
        return self._items

    def _subtree_end(self, node: int) -> int:
        """One past the last node of ``node``'s subtree (pre-order: its rightmost leaf)."""
        t = self.tree
        while t.children_left[node] != -1:
            node = int(t.children_right[node])
        return node + 1

    def extend(self, user_pairs: np.ndarray) -> tuple[Tree, np.ndarray]:
        """The tree of the group's comparisons followed by ``user_pairs`` (rows of ``X``),
        and the mean of ``item_values`` over the items of each of its leaves.

        Nodes whose split the user's comparisons leave alone keep the group's; the
        subtree of a node whose split they change is grown afresh on the node's
        comparisons (:func:`~pbo_core.models.tree.build_tree`, as the growth of the whole
        tree would reach it) and put in its place."""
        t = self.tree
        user_pairs = np.asarray(user_pairs, dtype=np.int64).reshape(-1, 2)
        uw_all, ul_all = self.X[user_pairs[:, 0]], self.X[user_pairs[:, 1]]
        n_pairs, sum_z, score = t.n_pairs.copy(), t.sum_z.copy(), t.score.copy()
        at_leaf: dict[int, np.ndarray] = {}
        regrow: list[tuple[int, np.ndarray]] = []
        depth = t.depth
        stack = [(0, np.arange(len(user_pairs)))]
        while stack:
            node, u = stack.pop()
            if not len(u):
                continue
            n = int(t.n_pairs[node]) + len(u)
            n_pairs[node] = n
            dep = int(depth[node])
            searched = n >= self.min_samples_split and (self.max_depth < 0 or dep < self.max_depth)
            split = self._search(node, uw_all[u], ul_all[u], n) if searched else None
            leaf = t.children_left[node] == -1
            same = split is None if leaf else split is not None
            if split is not None and not leaf:
                col, thr, mask = split[:3]
                same = col == int(t.feature[node]) and (
                    mask == int(t.right_mask[node])
                    if self.is_cat[col]
                    else thr == float(t.threshold[node])
                )
            if not same:
                regrow.append((node, u))
            elif leaf:
                at_leaf[node] = u
            else:
                sum_z[node], score[node] = split[3], split[4] / n
                wr, lr = self._right(node, uw_all[u], ul_all[u])
                stack.append((int(t.children_right[node]), u[wr & lr]))
                stack.append((int(t.children_left[node]), u[~wr & ~lr]))
        leaf_pairs = list(t.leaf_pairs)
        for node, u in at_leaf.items():
            k = int(t.leaf_id[node])
            leaf_pairs[k] = np.concatenate([leaf_pairs[k], self.n_group + u])
        items = self._item_index()
        tot, cnt = items["tot"], items["cnt"]
        grown = replace(t, n_pairs=n_pairs, sum_z=sum_z, score=score, leaf_pairs=leaf_pairs)
        if regrow:
            grown, tot, cnt = self._splice(grown, sorted(regrow, key=lambda r: r[0]), user_pairs)
        return grown, tot / np.maximum(cnt, 1)

    def _splice(
        self, t: Tree, regrow: list[tuple[int, np.ndarray]], user_pairs: np.ndarray
    ) -> tuple[Tree, np.ndarray, np.ndarray]:
        """``t`` with the subtree of every ``(node, user pairs there)`` grown afresh."""
        items = self._item_index()
        cols = ("children_left", "children_right", "feature", "threshold", "right_mask")
        cols += ("n_pairs", "sum_z", "score")
        parts: dict[str, list[np.ndarray]] = {c: [] for c in cols}
        ends, shift, prev = [], [0], 0
        leaf_parts: list[Any] = []
        tot, cnt, old_leaf = [], [], 0
        leaf_nodes = t.leaf_nodes
        for node, u in regrow:
            end = self._subtree_end(node)
            gi = self.node_pairs(node)
            union_index = np.concatenate([gi, self.n_group + u])
            sub = build_tree(
                self.X,
                np.vstack([self.pairs[gi], user_pairs[u]]),
                self.schema,
                max_depth=None if self.max_depth < 0 else self.max_depth - int(t.depth[node]),
                min_samples_split=self.min_samples_split,
                min_split_score=self.min_split_score,
            )
            for c in cols:
                parts[c].append(getattr(t, c)[prev:node])
                v = getattr(sub, c)
                if c.startswith("children"):  # subtree ids -> ids in the new tree
                    v = np.where(v >= 0, v + node + shift[-1], -1)
                parts[c].append(v)
            # the leaves before the subtree, then the subtree's (its items, in item order)
            first = int(np.searchsorted(leaf_nodes, node))
            last = int(np.searchsorted(leaf_nodes, end))
            leaf_parts += t.leaf_pairs[old_leaf:first]
            leaf_parts += [union_index[lp] for lp in sub.leaf_pairs]
            if node == 0:  # the whole tree: every item, in item order
                inside = np.arange(len(self.X))
            else:
                lo, hi = np.searchsorted(items["sorted_node"], [node, end])
                inside = np.sort(items["order"][lo:hi])
            sub_leaf = sub.apply(self.X[inside])
            tot.append(items["tot"][old_leaf:first])
            tot.append(np.bincount(sub_leaf, self.item_values[inside], minlength=sub.n_leaves))
            cnt.append(items["cnt"][old_leaf:first])
            cnt.append(np.bincount(sub_leaf, minlength=sub.n_leaves).astype(float))
            old_leaf = last
            ends.append(end)
            shift.append(shift[-1] + sub.n_nodes - (end - node))
            prev = end
        for c in cols:
            parts[c].append(getattr(t, c)[prev:])
        leaf_parts += t.leaf_pairs[old_leaf:]
        tot.append(items["tot"][old_leaf:])
        cnt.append(items["cnt"][old_leaf:])
        arrays = {c: np.concatenate(parts[c]) for c in cols}
        # the kept nodes' children: shifted by the nodes the subtrees before them added
        kept = np.ones(len(arrays["children_left"]), dtype=bool)
        for k, (node, end) in enumerate(zip([r[0] for r in regrow], ends, strict=True)):
            start = node + shift[k]
            kept[start : start + (end - node) + shift[k + 1] - shift[k]] = False
        for c in ("children_left", "children_right"):
            v = arrays[c]
            old = v[kept]
            moved = old + np.asarray(shift)[np.searchsorted(ends, old, side="right")]
            v[kept] = np.where(old >= 0, moved, -1)
        return (
            replace(t, **arrays, leaf_pairs=leaf_parts),
            np.concatenate(tot),
            np.concatenate(cnt),
        )
