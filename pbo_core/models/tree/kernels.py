"""Compiled kernels (numba) for the hot loops of a DT refit.

The PBO loop refits the tree after every comparison; in numpy each node costs a few dozen
array calls, so call overhead dominates. These kernels grow the whole tree in one call
and route items through it in another. They implement exactly the rules of
:mod:`pbo_core.models.tree.splits` (same candidate thresholds, same tie-breaking: largest
``|sum Z|``, then the wider normalised gap, then the lower column and threshold;
categorical splits by net wins) for the default discard-straddlers mode;
``tests/pbo_core/models/tree/test_kernels.py`` checks them against the numpy back-end
(:mod:`pbo_core.models.tree.build`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _best_split(Xw, Xl, idx, is_cat, n_cat, span):  # pragma: no cover - compiled
    """Best split of the pairs ``idx``: (column, threshold, mask, sum_z, |sum_z|, found)."""
    n = idx.size
    d = Xw.shape[1]
    best_key = -1.0
    best_abs = 0.0
    best_gapn = -1.0
    best_col = -1
    best_thr = np.nan
    best_mask = 0
    best_sz = 0.0
    two_n = 2 * n
    vals = np.empty(two_n)
    wts = np.empty(two_n)
    for c in range(d):
        if is_cat[c]:
            continue
        for i in range(n):
            vals[i] = Xw[idx[i], c]
            vals[n + i] = Xl[idx[i], c]
            wts[i] = 1.0
            wts[n + i] = -1.0
        order = np.argsort(vals)
        cs = 0.0
        for p in range(two_n - 1):
            cs += wts[order[p]]
            v0 = vals[order[p]]
            v1 = vals[order[p + 1]]
            gap = v1 - v0
            if gap <= 0.0:
                continue
            a = abs(cs)
            if a <= 0.0:
                continue
            key = a + 0.5 * gap / span[c]
            if key > best_key:
                best_key = key
                best_abs = a
                best_gapn = gap / span[c]
                best_col = c
                thr = 0.5 * (v0 + v1)
                if not (v0 < thr <= v1):
                    thr = v1
                best_thr = thr
                best_mask = 0
                best_sz = -cs
    # categorical columns: the net-wins rule
    for c in range(d):
        if not is_cat[c]:
            continue
        k = n_cat[c]
        net = np.zeros(k)
        for i in range(n):
            net[int(Xw[idx[i], c])] += 1.0
            net[int(Xl[idx[i], c])] -= 1.0
        s = 0.0
        mask = 0
        for j in range(k):
            if net[j] > 0:
                s += net[j]
                mask |= 1 << j
        if s <= 0:
            continue
        gapn = 1.0 / max(k - 1, 1)
        better = (
            (s > best_abs)
            or (s == best_abs and gapn > best_gapn)
            or (s == best_abs and gapn == best_gapn and c < best_col)
        )
        if best_col < 0 or better:
            best_abs = s
            best_gapn = gapn
            best_col = c
            best_thr = np.nan
            best_mask = mask
            best_sz = s
    return best_col, best_thr, best_mask, best_sz, best_abs, best_col >= 0


@njit(cache=True)
def grow(
    Xw, Xl, is_cat, n_cat, span, max_depth, min_samples_split, min_split_score
):  # pragma: no cover
    """Grow a tree (discard straddlers) on pairs with winner rows ``Xw``, loser rows ``Xl``.

    ``max_depth < 0`` means no limit. Returns node arrays in pre-order (children as
    absolute ids, -1 for leaves) and, for the leaves in order, their pair indices
    (``leaf_idx`` sliced by ``leaf_ptr``).
    """
    n_pairs = Xw.shape[0]
    cap = 2 * n_pairs + 1
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    feature = np.full(cap, -1, np.int64)
    threshold = np.full(cap, np.nan)
    rmask = np.zeros(cap, np.int64)
    sumz = np.zeros(cap)
    score = np.zeros(cap)
    npairs = np.zeros(cap, np.int64)
    # work stack of (start, length, depth, parent, is_right) over a pair-index buffer
    buf = np.arange(n_pairs)
    tmp = np.empty(n_pairs, np.int64)
    st_start = np.empty(cap, np.int64)
    st_len = np.empty(cap, np.int64)
    st_dep = np.empty(cap, np.int64)
    st_par = np.empty(cap, np.int64)
    st_right = np.empty(cap, np.bool_)
    leaf_idx = np.empty(n_pairs, np.int64)
    leaf_ptr = np.zeros(cap + 1, np.int64)
    n_leaves = 0
    n_leaf_pairs = 0
    top = 0
    st_start[0] = 0
    st_len[0] = n_pairs
    st_dep[0] = 0
    st_par[0] = -1
    st_right[0] = False
    top = 1
    n_nodes = 0
    while top > 0:
        top -= 1
        start = st_start[top]
        ln = st_len[top]
        dep = st_dep[top]
        par = st_par[top]
        is_right = st_right[top]
        node = n_nodes
        n_nodes += 1
        npairs[node] = ln
        if par >= 0:
            if is_right:
                right[par] = node
            else:
                left[par] = node
        idx = buf[start : start + ln]
        found = False
        if ln > 0 and ln >= min_samples_split and (max_depth < 0 or dep < max_depth):
            col, thr, mask, sz, absz, found = _best_split(Xw, Xl, idx, is_cat, n_cat, span)
            if found and absz / ln <= min_split_score:
                found = False
        if not found:
            for i in range(ln):
                leaf_idx[n_leaf_pairs + i] = idx[i]
            n_leaf_pairs += ln
            n_leaves += 1
            leaf_ptr[n_leaves] = n_leaf_pairs
            continue
        feature[node] = col
        threshold[node] = thr
        rmask[node] = mask
        sumz[node] = sz
        score[node] = absz / ln
        # partition idx in place, keeping order: both-left first, then both-right;
        # straddlers are dropped (one routing pass; right-goers wait in tmp's tail)
        nl = 0
        nr = 0
        for i in range(ln):
            p = idx[i]
            if is_cat[col]:
                wr = (mask >> int(Xw[p, col])) & 1 == 1
                lr = (mask >> int(Xl[p, col])) & 1 == 1
            else:
                wr = Xw[p, col] >= thr
                lr = Xl[p, col] >= thr
            if not wr and not lr:
                tmp[nl] = p
                nl += 1
            elif wr and lr:
                nr += 1
                tmp[ln - nr] = p  # filled from the back: reversed
        for i in range(nl):
            buf[start + i] = tmp[i]
        for i in range(nr):
            buf[start + nl + i] = tmp[ln - 1 - i]
        # push right first so the left subtree is numbered first (pre-order)
        st_start[top] = start + nl
        st_len[top] = nr
        st_dep[top] = dep + 1
        st_par[top] = node
        st_right[top] = True
        top += 1
        st_start[top] = start
        st_len[top] = nl
        st_dep[top] = dep + 1
        st_par[top] = node
        st_right[top] = False
        top += 1
    return (
        left[:n_nodes],
        right[:n_nodes],
        feature[:n_nodes],
        threshold[:n_nodes],
        rmask[:n_nodes],
        sumz[:n_nodes],
        score[:n_nodes],
        npairs[:n_nodes],
        leaf_idx[:n_leaf_pairs],
        leaf_ptr[: n_leaves + 1],
    )


@njit(cache=True)
def apply(X, left, right, feature, threshold, rmask, is_cat):  # pragma: no cover
    """Leaf node id of every row of ``X``."""
    out = np.empty(X.shape[0], np.int64)
    for r in range(X.shape[0]):
        node = 0
        while left[node] != -1:
            c = feature[node]
            if is_cat[c]:
                go = (rmask[node] >> int(X[r, c])) & 1 == 1
            else:
                go = X[r, c] >= threshold[node]
            node = right[node] if go else left[node]
        out[r] = node
    return out
