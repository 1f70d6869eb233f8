"""The array-based preference tree (like ``sklearn.tree._tree.Tree``).

Parallel node arrays (children, split column, threshold or category mask, pair counts,
score), each leaf's box and category constraints so a query point can be sampled inside
a leaf, and routing of items to leaves (compiled, :mod:`pbo_core.models.tree.kernels`;
:meth:`Tree.apply_nodes_numpy` is the numpy reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pbo_core.models.compiled import kernel_array
from pbo_core.models.tree import kernels
from pbo_core.models.tree.splits import goes_right

__all__ = ["Tree"]


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
        parent, right = self.parent, self.children_right
        path = []
        while node > 0:
            par = int(parent[node])
            path.append((par, node == right[par]))
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
        if X.shape[0]:
            return kernels.apply(
                kernel_array(X, np.float64),
                kernel_array(self.children_left, np.int64),
                kernel_array(self.children_right, np.int64),
                kernel_array(self.feature, np.int64),
                kernel_array(self.threshold, np.float64),
                kernel_array(self.right_mask, np.int64),
                kernel_array(self.is_categorical, np.bool_),
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
            right = goes_right(
                x[col : col + 1],
                float(self.threshold[node]),
                int(self.right_mask[node]),
                bool(self.is_categorical[col]),
            )[0]
            node = int(self.children_right[node] if right else self.children_left[node])
            path.append(node)
        return path

    @cached_property
    def _categorical_columns(self) -> np.ndarray:
        return np.flatnonzero(self.is_categorical)

    def _integer_columns(self, is_integer: np.ndarray | None) -> np.ndarray:
        """Integer-coded threshold columns (memoised per ``is_integer`` array)."""
        if is_integer is None:
            return np.zeros(0, dtype=np.int64)
        memo = self.__dict__.get("_int_cols_memo")
        if memo is not None and memo[0] is is_integer:
            return memo[1]
        cols = np.flatnonzero(is_integer & ~self.is_categorical)
        self.__dict__["_int_cols_memo"] = (is_integer, cols)
        return cols

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
        int_cols = self._integer_columns(is_integer)
        if int_cols.size:
            # thresholds of integer-coded columns are midpoints (k + 0.5), so the codes
            # inside [lower, upper) or [lower, bound] are ceil(lower) .. floor(upper)
            for c in int_cols:
                a, b = int(np.ceil(lo[c])), int(np.floor(hi[c]))
                out[:, c] = rng.integers(a, max(a, b) + 1, size=n)
        for c in self._categorical_columns:
            cats = np.flatnonzero((int(allowed[c]) >> np.arange(self.n_categories[c])) & 1)
            out[:, c] = rng.choice(cats, size=n) if cats.size else 0
        return out


#: Row layout of one node while a tree is assembled: child offsets relative to the node
#: (0 for leaves), split column, threshold, category mask, sum of Z, score, pair count.
