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

import sys
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from pbo_core import _fast
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
    best: tuple[float, float, int] | None = None  # (|sum_z|, normalised gap, -column)
    result: Split | None = None

    num = _threshold_columns(is_categorical.tobytes())
    k = num.size
    if k:
        # All threshold columns in one sort: row c of the (k, 2N) matrix holds column c's
        # winner then loser endpoint values; flattened, row c is the block [2Nc, 2N(c+1)).
        two_n = 2 * n
        if k == d:
            VT = np.concatenate((Xw.T, Xl.T), axis=1)
        else:
            VT = np.concatenate((Xw[:, num].T, Xl[:, num].T), axis=1)
        if masked is None:
            w = _endpoint_weights(n, k)
        else:
            keep = (~masked[:, num]).astype(float)
            w = np.concatenate((keep, -keep)).T.ravel()
        order = (VT.argsort(axis=1) + _block_offsets(two_n, k)).ravel()
        vs = VT.ravel()[order]
        # every block's weights sum to zero, so the running sum restarts at 0 per block
        # and the weight strictly above sorted position j is -cs[j]
        cs = w[order].cumsum()
        gaps = vs[1:] - vs[:-1]
        absz = np.abs(cs[:-1])
        absz[gaps <= 0] = -1.0
        absz[two_n - 1 :: two_n] = -1.0  # block boundaries are not thresholds
        # |sum Z| is an integer; adding half the normalised gap (<= 1/2) breaks ties by
        # the wider gap, and argmax then takes the lowest column and threshold
        key = absz + 0.5 * gaps / _block_span(span[num].tobytes(), two_n)
        j = int(key.argmax())
        smax = float(absz[j])
        if smax > 0:
            col = int(num[j // two_n])
            best = (smax, float(gaps[j] / span[col]), -col)
            thr = 0.5 * (vs[j] + vs[j + 1])
            if not vs[j] < thr <= vs[j + 1]:  # adjacent floats: the midpoint rounds down
                thr = float(vs[j + 1])
            result = Split(col, float(thr), 0, float(-cs[j]), smax / n)

    for col in _categorical_columns(is_categorical.tobytes()):
        ncat = int(n_categories[col])
        cw = Xw[:, col].astype(np.int64)
        cl = Xl[:, col].astype(np.int64)
        wt = None if masked is None else (~masked[:, col]).astype(float)
        net = np.bincount(cw, weights=wt, minlength=ncat) - np.bincount(
            cl, weights=wt, minlength=ncat
        )
        pos_net = net > 0
        sz = float(net[pos_net].sum())
        if sz <= 0:
            continue
        key = (sz, 1.0 / max(ncat - 1, 1), -int(col))
        if best is None or key > best:
            best = key
            mask = int(np.sum(np.left_shift(1, np.flatnonzero(pos_net).astype(np.int64))))
            result = Split(int(col), float("nan"), mask, sz, sz / n)
    return result


@lru_cache(maxsize=64)
def _threshold_columns(is_categorical: bytes) -> np.ndarray:
    return np.flatnonzero(~np.frombuffer(is_categorical, dtype=bool))


@lru_cache(maxsize=64)
def _categorical_columns(is_categorical: bytes) -> tuple[int, ...]:
    return tuple(int(c) for c in np.flatnonzero(np.frombuffer(is_categorical, dtype=bool)))


@lru_cache(maxsize=256)
def _endpoint_weights(n: int, k: int) -> np.ndarray:
    """+1 for the n winner endpoints then -1 for the n loser endpoints, for k columns."""
    w = np.tile(np.concatenate([np.ones(n), -np.ones(n)]), k)
    w.setflags(write=False)
    return w


@lru_cache(maxsize=256)
def _block_span(span: bytes, block: int) -> np.ndarray:
    """Column ranges repeated per sorted position (length ``k * block - 1``)."""
    rep = np.repeat(np.frombuffer(span, dtype=float), block)[:-1]
    rep.setflags(write=False)
    return rep


@lru_cache(maxsize=256)
def _block_offsets(block: int, k: int) -> np.ndarray:
    """Column vector ``[0, block, 2 block, ...]`` that turns row positions into flat ones."""
    off = (np.arange(k) * block)[:, None]
    off.setflags(write=False)
    return off


def _goes_right(
    values: np.ndarray, threshold: float, right_mask: int, categorical: bool
) -> np.ndarray:
    if categorical:
        return ((np.int64(right_mask) >> values.astype(np.int64)) & 1).astype(bool)
    return values >= threshold


@dataclass
class Tree:
    """Array-based binary preference tree (after ``sklearn.tree._tree.Tree``).

    Node ``i`` is a leaf when ``children_left[i] == -1``. Internal nodes send an item
    right when ``x[feature] >= threshold`` (threshold columns) or when its category is in
    ``right_mask`` (categorical columns). Nodes are stored in pre-order (a node, then its
    left subtree, then its right subtree); leaves are numbered in that order.

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
    root_lower, root_upper
        ``(d,)`` box of the root for threshold columns.
    root_allowed
        ``(d,)`` category bit masks of the root (categorical columns; 0 otherwise).
    is_categorical, n_categories
        Column metadata the tree was grown with.
    leaf_pairs
        For every leaf, the indices of the comparisons left in its split-search set
        ``D_A`` (used by the structural-refinement term of App. C.3).
    """

    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    right_mask: np.ndarray
    n_pairs: np.ndarray
    sum_z: np.ndarray
    score: np.ndarray
    root_lower: np.ndarray
    root_upper: np.ndarray
    root_allowed: np.ndarray
    is_categorical: np.ndarray
    n_categories: np.ndarray
    leaf_pairs: list[np.ndarray]

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.children_left.shape[0])

    @cached_property
    def leaf_nodes(self) -> np.ndarray:
        """Node id of every leaf, in leaf-index order."""
        return np.flatnonzero(self.children_left == -1)

    @cached_property
    def leaf_id(self) -> np.ndarray:
        """``(n_nodes,)`` leaf index of leaf nodes (-1 for internal nodes)."""
        out = np.full(self.n_nodes, -1, dtype=np.int64)
        out[self.leaf_nodes] = np.arange(self.leaf_nodes.size)
        return out

    @cached_property
    def parent(self) -> np.ndarray:
        """``(n_nodes,)`` parent node id (-1 for the root)."""
        out = np.full(self.n_nodes, -1, dtype=np.int64)
        internal = np.flatnonzero(self.children_left != -1)
        out[self.children_left[internal]] = internal
        out[self.children_right[internal]] = internal
        return out

    @cached_property
    def depth(self) -> np.ndarray:
        """``(n_nodes,)`` depth of every node (root = 0)."""
        out = np.zeros(self.n_nodes, dtype=np.int64)
        for node in np.flatnonzero(self.children_left != -1):  # pre-order: parents first
            out[self.children_left[node]] = out[self.children_right[node]] = out[node] + 1
        return out

    @property
    def n_leaves(self) -> int:
        """Number of leaves."""
        return int(self.leaf_nodes.size)

    @property
    def max_depth(self) -> int:
        """Depth of the deepest leaf."""
        return int(self.depth.max()) if self.n_nodes else 0

    def node_box(self, node: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lower, upper, allowed)`` of one node, by walking up to the root.

        ``lower <= x < upper`` below a split (``x <= upper`` at the domain bound) for
        threshold columns; ``allowed`` holds category bit masks for categorical columns.
        """
        lo, hi, al = self.root_lower.copy(), self.root_upper.copy(), self.root_allowed.copy()
        path = []
        while node > 0:
            par = int(self.parent[node])
            path.append((par, node == self.children_right[par]))
            node = par
        for par, is_right in reversed(path):
            c = int(self.feature[par])
            if self.is_categorical[c]:
                m = np.int64(self.right_mask[par])
                al[c] = al[c] & (m if is_right else ~m)
            elif is_right:
                lo[c] = max(lo[c], self.threshold[par])
            else:
                hi[c] = min(hi[c], self.threshold[par])
        return lo, hi, al

    @cached_property
    def boxes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lower, upper, allowed)`` arrays of shape ``(n_nodes, d)`` for every node."""
        n, d = self.n_nodes, self.root_lower.shape[0]
        lower, upper = np.empty((n, d)), np.empty((n, d))
        allowed = np.empty((n, d), dtype=np.int64)
        lower[0], upper[0], allowed[0] = self.root_lower, self.root_upper, self.root_allowed
        for node in range(n):  # pre-order: parents come before children
            nl, nr = int(self.children_left[node]), int(self.children_right[node])
            if nl == -1:
                continue
            c = int(self.feature[node])
            for child in (nl, nr):
                lower[child], upper[child], allowed[child] = lower[node], upper[node], allowed[node]
            if self.is_categorical[c]:
                m = np.int64(self.right_mask[node])
                allowed[nr, c] &= m
                allowed[nl, c] &= ~m
            else:
                upper[nl, c] = self.threshold[node]
                lower[nr, c] = self.threshold[node]
        return lower, upper, allowed

    def apply_nodes(self, X: np.ndarray) -> np.ndarray:
        """Leaf node id of every row of ``X`` (vectorised, one pass per tree level)."""
        X = np.asarray(X, dtype=float)
        if _fast.AVAILABLE and X.shape[0]:
            return _fast.apply(
                np.ascontiguousarray(X),
                self.children_left,
                self.children_right,
                self.feature,
                self.threshold,
                self.right_mask,
                self.is_categorical,
            )
        return self.apply_nodes_numpy(X)

    def apply_nodes_numpy(self, X: np.ndarray) -> np.ndarray:
        """:meth:`apply_nodes` in numpy (the reference for the compiled kernel)."""
        X = np.asarray(X, dtype=float)
        node = np.zeros(X.shape[0], dtype=np.int64)
        if self.children_left[0] == -1:
            return node
        idx = np.arange(X.shape[0])
        while idx.size:
            nd = node[idx]
            col = self.feature[nd]
            vals = X[idx, col]
            cat = self.is_categorical[col]
            if cat.any():
                bit = (self.right_mask[nd] >> np.where(cat, vals, 0).astype(np.int64)) & 1
                right = np.where(cat, bit.astype(bool), vals >= self.threshold[nd])
            else:
                right = vals >= self.threshold[nd]
            nxt = np.where(right, self.children_right[nd], self.children_left[nd])
            node[idx] = nxt
            idx = idx[self.children_left[nxt] != -1]
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
        lo, hi, allowed = self.node_box(int(self.leaf_nodes[leaf]))
        d = lo.shape[0]
        out = lo + (hi - lo) * rng.random((n, d))
        if is_integer is not None and np.any(is_integer & ~self.is_categorical):
            # thresholds of integer-coded columns are midpoints (k + 0.5), so the codes
            # inside [lower, upper) or [lower, bound] are ceil(lower) .. floor(upper)
            for c in np.flatnonzero(is_integer & ~self.is_categorical):
                a, b = int(np.ceil(lo[c])), int(np.floor(hi[c]))
                out[:, c] = rng.integers(a, max(a, b) + 1, size=n)
        for c in np.flatnonzero(self.is_categorical):
            cats = np.flatnonzero((int(allowed[c]) >> np.arange(self.n_categories[c])) & 1)
            out[:, c] = rng.choice(cats, size=n) if cats.size else 0
        return out


#: Row layout of one node while a tree is assembled: child offsets relative to the node
#: (0 for leaves), split column, threshold, category mask, sum of Z, score, pair count.
_NODE_DTYPE = np.dtype(
    [
        ("left", "i8"),
        ("right", "i8"),
        ("feature", "i8"),
        ("threshold", "f8"),
        ("right_mask", "i8"),
        ("sum_z", "f8"),
        ("score", "f8"),
        ("n_pairs", "i8"),
    ]
)


@dataclass
class _Subtree:
    """A grown subtree in pre-order (for caching across refits).

    Nodes are tuples in :data:`_NODE_DTYPE` order with children stored as offsets relative
    to their parent, so joining two cached subtrees under a new root is one list
    concatenation and the final arrays come from one ``np.array`` call.
    """

    nodes: list[tuple]
    leaf_pairs: list[np.ndarray]

    @classmethod
    def leaf(cls, idx: np.ndarray) -> _Subtree:
        return cls([(0, 0, -1, np.nan, 0, 0.0, 0.0, idx.size)], [idx])

    @classmethod
    def join(cls, split: Split, n: int, a: _Subtree, b: _Subtree) -> _Subtree:
        root = (
            1,
            1 + len(a.nodes),
            split.column,
            split.threshold,
            split.right_mask,
            split.sum_z,
            split.score,
            n,
        )
        return cls([root, *a.nodes, *b.nodes], [*a.leaf_pairs, *b.leaf_pairs])


class SplitCache:
    """Memo of grown subtrees across refits of the same growing data set.

    A subtree is determined by its node's split-search set: the same comparisons (and
    masks) give the same splits below. When the PBO loop adds one comparison between
    refits, only the nodes on its path see a different set, so a refit re-grows a handful
    of nodes and reuses every other subtree. Entries are keyed by pair indices and stay
    valid only while earlier items and pairs are unchanged; :meth:`validate` checks that
    (and the growth settings) at the start of every fit and clears the memo otherwise.
    """

    def __init__(self) -> None:
        self._old: dict[bytes, _Subtree] = {}
        self._new: dict[bytes, _Subtree] = {}
        self._X: np.ndarray | None = None
        self._pairs: np.ndarray | None = None
        self._config: tuple[object, ...] | None = None

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def validate(self, X: np.ndarray, pairs: np.ndarray, config: tuple[object, ...]) -> None:
        """Clear the memo unless ``X``/``pairs`` extend the previous ones with the same config."""
        ok = (
            self._X is not None
            and self._pairs is not None
            and self._config == config
            and X.shape[1] == self._X.shape[1]
            and len(X) >= len(self._X)
            and len(pairs) >= len(self._pairs)
            and np.array_equal(X[: len(self._X)], self._X)
            and np.array_equal(pairs[: len(self._pairs)], self._pairs)
        )
        if not ok:
            self._old, self._new = {}, {}
        self._X, self._pairs, self._config = X.copy(), pairs.copy(), config

    def get(self, key: bytes) -> _Subtree | None:
        """The cached subtree for ``key`` (or ``None``)."""
        hit = self._new.get(key)
        if hit is None:
            hit = self._old.get(key)
            if hit is not None:
                self._new[key] = hit
        return hit

    def put(self, key: bytes, value: _Subtree) -> None:
        """Store a subtree."""
        self._new[key] = value

    def rotate(self) -> None:
        """Forget entries that the latest fit did not use."""
        self._old, self._new = self._new, {}


def _build_compiled(
    X: np.ndarray,
    pairs: np.ndarray,
    bounds: np.ndarray,
    span: np.ndarray,
    is_cat: np.ndarray,
    n_cat: np.ndarray,
    max_depth: int | None,
    min_samples_split: int,
    min_split_score: float,
) -> Tree:
    """The whole tree in one compiled call (discard-straddlers mode)."""
    Xw = np.ascontiguousarray(X[pairs[:, 0]])
    Xl = np.ascontiguousarray(X[pairs[:, 1]])
    (left, right, feat, thr, rmask, sumz, score, npairs, leaf_idx, leaf_ptr) = _fast.grow(
        Xw,
        Xl,
        np.ascontiguousarray(is_cat),
        n_cat.astype(np.int64),
        span.astype(float),
        -1 if max_depth is None else int(max_depth),
        int(min_samples_split),
        float(min_split_score),
    )
    return Tree(
        children_left=left,
        children_right=right,
        feature=feat,
        threshold=thr,
        right_mask=rmask,
        n_pairs=npairs,
        sum_z=sumz,
        score=score,
        root_lower=bounds[:, 0].copy(),
        root_upper=bounds[:, 1].copy(),
        root_allowed=np.where(is_cat, (np.int64(1) << n_cat.astype(np.int64)) - 1, 0),
        is_categorical=is_cat,
        n_categories=n_cat,
        leaf_pairs=np.split(leaf_idx, leaf_ptr[1:-1]),
    )


def build_tree(
    X: np.ndarray,
    pairs: np.ndarray,
    schema: Schema,
    *,
    max_depth: int | None = None,
    min_samples_split: int = 1,
    min_split_score: float = 0.0,
    straddlers: StraddlerMode = "discard",
    cache: SplitCache | None = None,
    use_compiled: bool = True,
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
    cache
        Optional :class:`SplitCache` reused across refits (speed only; same result).
    use_compiled
        Use the compiled kernel of :mod:`pbo_core._fast` when numba is available (discard
        mode; same result as the numpy path, which is used otherwise).

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
    keep = straddlers == "keep"
    if not keep and _fast.AVAILABLE and use_compiled:
        return _build_compiled(
            X, pairs, bounds, span, is_cat, n_cat, max_depth, min_samples_split, min_split_score
        )
    if cache is not None:
        config = (
            max_depth,
            min_samples_split,
            min_split_score,
            straddlers,
            span.tobytes(),
            is_cat.tobytes(),
            n_cat.tobytes(),
        )
        cache.validate(X, pairs, config)

    Xw_all = X[pairs[:, 0]]
    Xl_all = X[pairs[:, 1]]

    def grow(idx: np.ndarray, msk: np.ndarray | None, dep: int) -> _Subtree:
        key = b""
        if cache is not None:
            key = idx.tobytes() + (msk.tobytes() if keep else b"")
            if max_depth is not None:
                key += dep.to_bytes(4, "little")
            hit = cache.get(key)
            if hit is not None:
                return hit
        n = idx.size
        split = None
        if n > 0 and n >= min_samples_split and (max_depth is None or dep < max_depth):
            Xw, Xl = Xw_all[idx], Xl_all[idx]
            split = best_split(Xw, Xl, is_cat, n_cat, span, msk)
        if split is None or split.score <= min_split_score:
            sub = _Subtree.leaf(idx)
        else:
            # best_split guarantees that the threshold separates at least one pair, so
            # every child holds fewer comparisons (or, keeping straddlers, fewer
            # unmasked columns) and the recursion ends
            c = split.column
            if is_cat[c]:
                w_right = _goes_right(Xw[:, c], split.threshold, split.right_mask, True)
                l_right = _goes_right(Xl[:, c], split.threshold, split.right_mask, True)
            else:
                w_right = Xw[:, c] >= split.threshold
                l_right = Xl[:, c] >= split.threshold
            if keep:
                assert msk is not None
                to_left = ~w_right  # both left, or a straddler whose winner is left
                m_l = msk[to_left].copy()
                m_l[l_right[to_left], c] = True  # straddlers retained across this split
                m_r = msk[w_right].copy()
                m_r[~l_right[w_right], c] = True
                a = grow(idx[to_left], m_l, dep + 1)
                b = grow(idx[w_right], m_r, dep + 1)
            else:
                a = grow(idx[~w_right & ~l_right], None, dep + 1)
                b = grow(idx[w_right & l_right], None, dep + 1)
            sub = _Subtree.join(split, n, a, b)
        if cache is not None:
            cache.put(key, sub)
        return sub

    root_mask = np.zeros((len(pairs), d), dtype=bool) if keep else None
    # every split separates at least one pair, so the depth is at most the number of
    # pairs (keep mode: pairs times columns); leave room for the caller's frames
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, len(pairs) * (d if keep else 1) + 2000))
    try:
        sub = grow(np.arange(len(pairs)), root_mask, 0)
    finally:
        sys.setrecursionlimit(limit)
    if cache is not None:
        cache.rotate()

    arr = np.array(sub.nodes, dtype=_NODE_DTYPE)
    ids = np.arange(len(arr))
    internal = arr["left"] > 0
    return Tree(
        children_left=np.where(internal, ids + arr["left"], -1),
        children_right=np.where(internal, ids + arr["right"], -1),
        feature=arr["feature"].copy(),
        threshold=arr["threshold"].copy(),
        right_mask=arr["right_mask"].copy(),
        n_pairs=arr["n_pairs"].copy(),
        sum_z=arr["sum_z"].copy(),
        score=arr["score"].copy(),
        root_lower=bounds[:, 0].copy(),
        root_upper=bounds[:, 1].copy(),
        root_allowed=np.where(is_cat, (np.int64(1) << n_cat.astype(np.int64)) - 1, 0),
        is_categorical=is_cat,
        n_categories=n_cat,
        leaf_pairs=sub.leaf_pairs,
    )
