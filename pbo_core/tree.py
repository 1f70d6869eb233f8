"""Preference trees grown directly from pairwise comparisons (DT-PBO, Sec. 3.1, App. C).

Consistency score
-----------------
For a split ``s`` (column ``k``, threshold ``t``) and a comparison ``i`` with winner
``x_i`` and loser ``x'_i`` (Eq. 5)::

    Z_i(s) = 1{x_i[k] >= t, x'_i[k] < t} - 1{x_i[k] < t, x'_i[k] >= t}
           = 1{x_i[k] >= t} - 1{x'_i[k] >= t}

and the empirical consistency score of node ``A`` is ``|mean_i Z_i(s)|`` (Eq. 6).

The second form of ``Z`` gives the whole threshold scan in one sorted pass: give every
winner endpoint weight +1 and every loser endpoint weight -1; then ``sum_i Z_i(t)`` is the
total weight of the endpoints at or above ``t``, a suffix sum over the sorted values.
:func:`best_split` does this for every column of a node at once (one ``argsort`` and one
``cumsum`` over a ``(2N, d)`` array); no Python loop runs over thresholds.

Categorical splits
------------------
A categorical split sends the categories in a set ``R`` right. Writing ``net(c)`` for
(wins - losses) of items of category ``c`` in the node's pairs,
``sum_i Z_i(R) = sum_{c in R} net(c)``: pairs inside ``R`` or inside its complement add
+1 and -1 to the same sum and cancel. Hence the best partition sends exactly the
categories with positive net wins right, and ``|S| = sum(max(net, 0))``. The paper
(Sec. 3.1) enumerates all binary partitions for features with at most 3 categories; the
net-wins rule gives the same optimum there and extends it soundly to any number of
categories (the Sushi "minor group" has 12) in ``O(N + C)``: ordering categories by net
wins and scanning finds the exact maximum over all ``2^(C-1) - 1`` partitions. Categories
with zero net wins, or absent from the node's pairs, go left.

Ties between candidate splits (equal score) are broken by the wider normalised gap
between the values the threshold separates (a max-margin choice), then by the lower
column index, so trees are deterministic.

Straddlers
----------
After a split, pairs with one item on each side ("straddlers") are excluded from the
descendants' split search (Eq. 8); they are still used when fitting the leaf utilities
(see :mod:`pbo_core.laplace`). With ``straddlers="keep"`` they are instead given to the
child holding their winner, with the split column masked for that pair (App. C.2,
Eq. 11-13): a masked pair contributes ``Z = 0`` on that column below the split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from pbo_core.data import Schema

StraddlerMode = Literal["discard", "keep"]

#: Categorical columns are routed with 64-bit category masks.
MAX_CATEGORIES = 62


def mean_z(x_winner: ArrayLike, x_loser: ArrayLike, threshold: float) -> float:
    """Signed mean of ``Z_i`` (Eq. 5) for one numeric feature.

    Parameters
    ----------
    x_winner, x_loser
        1-D arrays with the feature value of the winner and the loser of each pair.
    threshold
        Split threshold ``t`` (right side is ``x >= t``).

    Returns
    -------
    float
        ``mean_i Z_i`` in ``[-1, 1]``; positive when winners tend to lie right of ``t``.
        0.0 for no pairs.
    """
    w = np.asarray(x_winner, dtype=float).ravel()
    lo = np.asarray(x_loser, dtype=float).ravel()
    if w.shape != lo.shape:
        raise ValueError(f"x_winner and x_loser differ in length ({w.size} vs {lo.size})")
    if w.size == 0:
        return 0.0
    return float(np.mean((w >= threshold).astype(float) - (lo >= threshold)))


def consistency_score(x_winner: ArrayLike, x_loser: ArrayLike, threshold: float) -> float:
    """Empirical consistency score ``|mean_i Z_i(s)|`` (Eq. 6) of a numeric split.

    ``Z_i`` is +1 when the winner is at or above ``threshold`` and the loser below it,
    -1 for the reverse and 0 when both lie on the same side.

    Examples
    --------
    >>> consistency_score([3.0, 2.0, 0.0], [1.0, 1.0, 4.0], 1.5)
    0.3333333333333333
    """
    return abs(mean_z(x_winner, x_loser, threshold))


@dataclass
class Split:
    """The best split of a node.

    Attributes
    ----------
    column
        Encoded column index.
    threshold
        Threshold for threshold columns (``NaN`` for categorical splits).
    right_mask
        Bit mask of the categories sent right (categorical splits; 0 otherwise).
    sum_z
        ``sum_i Z_i`` of the split over the node's pairs (integer valued).
    score
        Consistency score ``|sum_z| / n_pairs``.
    """

    column: int
    threshold: float
    right_mask: int
    sum_z: float
    score: float


def best_split(
    Xw: np.ndarray,
    Xl: np.ndarray,
    is_categorical: np.ndarray,
    n_categories: np.ndarray,
    span: np.ndarray,
    masked: np.ndarray | None = None,
) -> Split | None:
    """Best consistency-score split for one node.

    Parameters
    ----------
    Xw, Xl
        ``(N, d)`` feature values of the winners and losers of the node's pairs.
    is_categorical
        ``(d,)`` True for columns split by category subsets.
    n_categories
        ``(d,)`` number of categories of categorical columns.
    span
        ``(d,)`` positive column ranges, used to normalise the tie-breaking gap.
    masked
        Optional ``(N, d)`` boolean; a masked (pair, column) contributes ``Z = 0``
        (keep-straddlers variant, Eq. 12).

    Returns
    -------
    Split or None
        ``None`` when no candidate split has a non-zero score.
    """
    n, d = Xw.shape
    if n == 0:
        return None
    weights = np.ones((n, d))
    if masked is not None:
        weights[masked] = 0.0
    best: tuple[float, float, int] | None = None  # (|sum_z|, gap, -column)
    result: Split | None = None

    num = np.flatnonzero(~is_categorical)
    if num.size:
        V = np.concatenate([Xw[:, num], Xl[:, num]], axis=0)
        W = np.concatenate([weights[:, num], -weights[:, num]], axis=0)
        order = np.argsort(V, axis=0, kind="stable")
        Vs = np.take_along_axis(V, order, axis=0)
        Ws = np.take_along_axis(W, order, axis=0)
        # sum of Z at the threshold between sorted positions j and j+1 = weight above j
        above = Ws.sum(axis=0)[None, :] - np.cumsum(Ws, axis=0)[:-1]
        gaps = np.diff(Vs, axis=0)
        valid = gaps > 0
        absz = np.where(valid, np.abs(above), -1.0)
        top = absz.max(axis=0)  # per column
        j_best = int(np.argmax(top))
        if top[j_best] > 0:
            # among positions with the maximal |sum Z| (over all columns), widest gap wins
            smax = top.max()
            cand = absz == smax
            ngap = np.where(cand, gaps / span[num][None, :], -1.0)
            col_gap = ngap.max(axis=0)
            c_local = int(np.argmax(col_gap))  # lowest column among ties of the gap
            pos = int(np.argmax(ngap[:, c_local]))
            col = int(num[c_local])
            thr = 0.5 * (Vs[pos, c_local] + Vs[pos + 1, c_local])
            sz = float(above[pos, c_local])
            best = (float(smax), float(col_gap[c_local]), -col)
            result = Split(col, thr, 0, sz, float(smax) / n)

    for col in np.flatnonzero(is_categorical):
        ncat = int(n_categories[col])
        cw = Xw[:, col].astype(np.int64)
        cl = Xl[:, col].astype(np.int64)
        wt = weights[:, col]
        net = np.bincount(cw, weights=wt, minlength=ncat) - np.bincount(
            cl, weights=wt, minlength=ncat
        )
        pos_net = net > 0
        s = float(net[pos_net].sum())
        if s <= 0:
            continue
        key = (s, 1.0 / max(ncat - 1, 1), -int(col))
        if best is None or key > best:
            best = key
            mask = int(np.sum(np.left_shift(1, np.flatnonzero(pos_net).astype(np.int64))))
            result = Split(int(col), float("nan"), mask, s, s / n)
    return result


def _goes_right(values: np.ndarray, threshold: float, right_mask: int, categorical: bool) -> np.ndarray:
    if categorical:
        return ((np.int64(right_mask) >> values.astype(np.int64)) & 1).astype(bool)
    return values >= threshold


@dataclass
class Tree:
    """Array-based binary preference tree (after ``sklearn.tree._tree.Tree``).

    Node ``i`` is a leaf when ``children_left[i] == -1``. Internal nodes send an item
    right when ``x[feature] >= threshold`` (threshold columns) or when its category is in
    ``right_mask`` (categorical columns).

    Attributes
    ----------
    children_left, children_right
        ``(n_nodes,)`` child node ids (-1 for leaves).
    feature
        ``(n_nodes,)`` encoded column of the split (-1 for leaves).
    threshold
        ``(n_nodes,)`` split threshold (NaN for categorical splits and leaves).
    right_mask
        ``(n_nodes,)`` category bit mask sent right (categorical splits).
    n_pairs
        ``(n_nodes,)`` number of comparisons in the node's split-search set ``D_A``.
    sum_z
        ``(n_nodes,)`` signed ``sum_i Z_i`` of the chosen split (0 for leaves).
    score
        ``(n_nodes,)`` consistency score of the chosen split (0 for leaves).
    depth
        ``(n_nodes,)`` depth (root = 0).
    parent
        ``(n_nodes,)`` parent node (-1 for the root).
    leaf_id
        ``(n_nodes,)`` leaf index of leaf nodes (-1 for internal nodes).
    lower, upper
        ``(n_nodes, d)`` box of each node for threshold columns (``lower <= x``;
        ``x < upper`` below a split, ``x <= upper`` at the domain bound).
    allowed
        ``(n_nodes, d)`` bit masks of the categories allowed in each node (categorical
        columns; 0 for threshold columns).
    is_categorical, n_categories
        Column metadata the tree was grown with.
    leaf_pairs
        For every leaf (in leaf-index order), the indices of the comparisons left in its
        split-search set ``D_A`` (used by the structural-refinement term of App. C.3).
    """

    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    right_mask: np.ndarray
    n_pairs: np.ndarray
    sum_z: np.ndarray
    score: np.ndarray
    depth: np.ndarray
    parent: np.ndarray
    leaf_id: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    allowed: np.ndarray
    is_categorical: np.ndarray
    n_categories: np.ndarray
    leaf_pairs: list[np.ndarray]

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.children_left.shape[0])

    @property
    def leaf_nodes(self) -> np.ndarray:
        """Node id of every leaf, in leaf-index order."""
        nodes = np.flatnonzero(self.children_left == -1)
        return nodes[np.argsort(self.leaf_id[nodes])]

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return int(np.sum(self.children_left == -1))

    @property
    def max_depth(self) -> int:
        """Depth of the deepest leaf."""
        return int(self.depth.max()) if self.n_nodes else 0

    def apply_nodes(self, X: np.ndarray) -> np.ndarray:
        """Leaf node id of every row of ``X`` (vectorised, one pass per tree level)."""
        X = np.asarray(X, dtype=float)
        node = np.zeros(X.shape[0], dtype=np.int64)
        active = self.children_left[node] != -1
        while active.any():
            idx = np.flatnonzero(active)
            nd = node[idx]
            col = self.feature[nd]
            vals = X[idx, col]
            cat = self.is_categorical[col]
            right = np.where(
                cat,
                (self.right_mask[nd] >> np.where(cat, vals, 0).astype(np.int64)) & 1,
                vals >= self.threshold[nd],
            ).astype(bool)
            node[idx] = np.where(right, self.children_right[nd], self.children_left[nd])
            active = self.children_left[node] != -1
        return node

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index (``0 .. n_leaves-1``) of every row of ``X``."""
        return self.leaf_id[self.apply_nodes(X)]

    def decision_path(self, x: np.ndarray) -> list[int]:
        """Node ids from the root to the leaf of one item."""
        x = np.asarray(x, dtype=float).ravel()
        path = [0]
        node = 0
        while self.children_left[node] != -1:
            col = int(self.feature[node])
            right = _goes_right(
                x[col : col + 1],
                float(self.threshold[node]),
                int(self.right_mask[node]),
                bool(self.is_categorical[col]),
            )[0]
            node = int(self.children_right[node] if right else self.children_left[node])
            path.append(node)
        return path

    def sample_in_leaf(
        self,
        leaf: int,
        n: int,
        rng: np.random.Generator,
        is_integer: np.ndarray | None = None,
    ) -> np.ndarray:
        """Draw ``n`` points uniformly from the region of one leaf.

        Threshold columns are uniform on the leaf's interval (integer-coded columns,
        given by ``is_integer``, uniform over the allowed integer codes); categorical
        columns are uniform over the allowed categories.
        """
        node = int(self.leaf_nodes[leaf])
        d = self.lower.shape[1]
        lo, hi = self.lower[node], self.upper[node]
        out = lo + (hi - lo) * rng.random((n, d))
        if is_integer is not None and np.any(is_integer & ~self.is_categorical):
            # thresholds of integer-coded columns are midpoints (k + 0.5), so the codes
            # inside [lower, upper) or [lower, bound] are ceil(lower) .. floor(upper)
            for c in np.flatnonzero(is_integer & ~self.is_categorical):
                a, b = int(np.ceil(lo[c])), int(np.floor(hi[c]))
                out[:, c] = rng.integers(a, max(a, b) + 1, size=n)
        for c in np.flatnonzero(self.is_categorical):
            cats = np.flatnonzero((int(self.allowed[node, c]) >> np.arange(self.n_categories[c])) & 1)
            out[:, c] = rng.choice(cats, size=n) if cats.size else 0
        return out


def build_tree(
    X: np.ndarray,
    pairs: np.ndarray,
    schema: Schema,
    *,
    max_depth: int | None = None,
    min_samples_split: int = 1,
    min_split_score: float = 0.0,
    straddlers: StraddlerMode = "discard",
) -> Tree:
    """Grow a preference tree on comparisons between the rows of ``X``.

    Parameters
    ----------
    X
        ``(n_items, d)`` encoded items.
    pairs
        ``(n_pairs, 2)`` winner and loser indices into ``X``.
    schema
        Schema of the columns (categorical flags, category counts, bounds).
    max_depth
        Nodes at this depth become leaves (``None``: no limit).
    min_samples_split
        A node splits only if its split-search set holds at least this many pairs.
    min_split_score
        A node splits only if its best consistency score exceeds this value.
    straddlers
        ``"discard"`` (Eq. 8, default) or ``"keep"`` with masked columns (App. C.2).

    Returns
    -------
    Tree
    """
    if straddlers not in ("discard", "keep"):
        raise ValueError(f"straddlers must be 'discard' or 'keep', got {straddlers!r}")
    X = np.asarray(X, dtype=float)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    d = X.shape[1]
    is_cat = schema.is_categorical
    n_cat = schema.n_categories
    if np.any(n_cat > MAX_CATEGORIES):
        bad = schema.column_names[int(np.argmax(n_cat))]
        raise ValueError(f"column {bad!r} has more than {MAX_CATEGORIES} categories")
    bounds = schema.bounds
    if len(X):
        # extend bounds to cover the data, so every item falls inside the root box
        bounds = np.column_stack(
            [np.minimum(bounds[:, 0], X.min(axis=0)), np.maximum(bounds[:, 1], X.max(axis=0))]
        )
    span = np.where(is_cat, np.maximum(n_cat - 1, 1), bounds[:, 1] - bounds[:, 0])
    span = np.where(span > 0, span, 1.0)
    full_mask = np.where(is_cat, (np.int64(1) << n_cat.astype(np.int64)) - 1, 0)

    Xw_all = X[pairs[:, 0]]
    Xl_all = X[pairs[:, 1]]

    # node storage (lists, converted to arrays at the end)
    left: list[int] = []
    right: list[int] = []
    feat: list[int] = []
    thr: list[float] = []
    rmask: list[int] = []
    npairs: list[int] = []
    sumz: list[float] = []
    score: list[float] = []
    depth: list[int] = []
    parent: list[int] = []
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    allowed: list[np.ndarray] = []

    def new_node(dep: int, par: int, lo: np.ndarray, hi: np.ndarray, al: np.ndarray, n: int) -> int:
        left.append(-1)
        right.append(-1)
        feat.append(-1)
        thr.append(float("nan"))
        rmask.append(0)
        npairs.append(n)
        sumz.append(0.0)
        score.append(0.0)
        depth.append(dep)
        parent.append(par)
        lower.append(lo)
        upper.append(hi)
        allowed.append(al)
        return len(left) - 1

    root_idx = np.arange(len(pairs))
    root_mask = np.zeros((len(pairs), d), dtype=bool) if straddlers == "keep" else None
    root = new_node(0, -1, bounds[:, 0].copy(), bounds[:, 1].copy(), full_mask.copy(), len(pairs))
    stack: list[tuple[int, np.ndarray, np.ndarray | None]] = [(root, root_idx, root_mask)]
    node_pairs: dict[int, np.ndarray] = {}
    while stack:
        node, idx, msk = stack.pop()
        node_pairs[node] = idx
        n = idx.size
        if n == 0 or n < min_samples_split or (max_depth is not None and depth[node] >= max_depth):
            continue
        Xw = Xw_all[idx]
        Xl = Xl_all[idx]
        split = best_split(Xw, Xl, is_cat, n_cat, span, msk)
        if split is None or split.score <= min_split_score:
            continue
        c = split.column
        cat = bool(is_cat[c])
        w_right = _goes_right(Xw[:, c], split.threshold, split.right_mask, cat)
        l_right = _goes_right(Xl[:, c], split.threshold, split.right_mask, cat)
        both_left = ~w_right & ~l_right
        both_right = w_right & l_right
        lo_l, hi_l, al_l = lower[node].copy(), upper[node].copy(), allowed[node].copy()
        lo_r, hi_r, al_r = lower[node].copy(), upper[node].copy(), allowed[node].copy()
        if cat:
            al_r[c] = allowed[node][c] & split.right_mask
            al_l[c] = allowed[node][c] & ~np.int64(split.right_mask)
        else:
            hi_l[c] = split.threshold
            lo_r[c] = split.threshold
        if straddlers == "keep":
            assert msk is not None
            strad_to_left = ~w_right & l_right  # winner left
            strad_to_right = w_right & ~l_right
            sel_l = both_left | strad_to_left
            sel_r = both_right | strad_to_right
            m_l = msk[sel_l].copy()
            m_l[strad_to_left[sel_l], c] = True
            m_r = msk[sel_r].copy()
            m_r[strad_to_right[sel_r], c] = True
            idx_l, idx_r = idx[sel_l], idx[sel_r]
        else:
            idx_l, idx_r = idx[both_left], idx[both_right]
            m_l = m_r = None
        nl = new_node(depth[node] + 1, node, lo_l, hi_l, al_l, idx_l.size)
        nr = new_node(depth[node] + 1, node, lo_r, hi_r, al_r, idx_r.size)
        left[node], right[node] = nl, nr
        feat[node] = c
        thr[node] = split.threshold
        rmask[node] = split.right_mask
        sumz[node] = split.sum_z
        score[node] = split.score
        # right pushed last so it is expanded first; order does not affect the result
        stack.append((nl, idx_l, m_l))
        stack.append((nr, idx_r, m_r))
        del node_pairs[node]

    children_left = np.array(left, dtype=np.int64)
    is_leaf = children_left == -1
    leaf_id = np.full(len(left), -1, dtype=np.int64)
    leaf_nodes = np.flatnonzero(is_leaf)
    leaf_id[leaf_nodes] = np.arange(leaf_nodes.size)
    return Tree(
        children_left=children_left,
        children_right=np.array(right, dtype=np.int64),
        feature=np.array(feat, dtype=np.int64),
        threshold=np.array(thr, dtype=float),
        right_mask=np.array(rmask, dtype=np.int64),
        n_pairs=np.array(npairs, dtype=np.int64),
        sum_z=np.array(sumz, dtype=float),
        score=np.array(score, dtype=float),
        depth=np.array(depth, dtype=np.int64),
        parent=np.array(parent, dtype=np.int64),
        leaf_id=leaf_id,
        lower=np.array(lower, dtype=float).reshape(-1, d),
        upper=np.array(upper, dtype=float).reshape(-1, d),
        allowed=np.array(allowed, dtype=np.int64).reshape(-1, d),
        is_categorical=is_cat,
        n_categories=n_cat,
        leaf_pairs=[node_pairs[int(nd)] for nd in leaf_nodes],
    )
