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
def _best_split(Xw, Xl, idx, srt, XT, s0, is_cat, n_cat, span):  # pragma: no cover - compiled
    """Best split of the pairs ``idx``: (column, threshold, mask, sum_z, |sum_z|, found).

    ``srt[c, s0 : s0 + 2 n]`` lists the node's endpoints (``e < N``: winner of pair ``e``,
    else loser of pair ``e - N``) sorted by column ``c`` (``XT[c, e]`` its value), so each
    column is one linear scan.
    """
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
    big_n = Xw.shape[0]
    for c in range(d):
        if is_cat[c]:
            continue
        cs = 0.0
        e = srt[c, s0]
        v1 = XT[c, e]
        for p in range(two_n - 1):
            # ties may come in any order: the score is read only between distinct values
            cs += 1.0 if e < big_n else -1.0
            v0 = v1
            e = srt[c, s0 + p + 1]
            v1 = XT[c, e]
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
    # per numeric column, all 2N endpoints sorted once at the root; a node's endpoints are
    # the slice [2 start, 2 (start + len)), kept sorted by stable partitions below, so the
    # split search costs O(d n) per node instead of O(d n log n)
    d = Xw.shape[1]
    srt = np.empty((d, 2 * n_pairs), np.int32)
    XT = np.empty((d, 2 * n_pairs))  # endpoint values by column (contiguous scans)
    for c in range(d):
        if is_cat[c]:
            continue
        XT[c, :n_pairs] = Xw[:, c]
        XT[c, n_pairs:] = Xl[:, c]
        srt[c] = np.argsort(XT[c])
    side = np.empty(n_pairs, np.int8)
    tmp2 = np.empty(2 * n_pairs, np.int32)
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
            col, thr, mask, sz, absz, found = _best_split(
                Xw, Xl, idx, srt, XT, 2 * start, is_cat, n_cat, span
            )
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
                side[p] = 0
            elif wr and lr:
                nr += 1
                tmp[ln - nr] = p  # filled from the back: reversed
                side[p] = 1
            else:
                side[p] = 2
        for i in range(nl):
            buf[start + i] = tmp[i]
        for i in range(nr):
            buf[start + nl + i] = tmp[ln - 1 - i]
        # the children's sorted endpoint lists: stable partition of this node's
        s0 = 2 * start
        for c in range(d):
            if is_cat[c]:
                continue
            a = 0
            b = 2 * nl
            for i in range(2 * ln):
                e = srt[c, s0 + i]
                sd = side[e if e < n_pairs else e - n_pairs]
                if sd == 0:
                    tmp2[a] = e
                    a += 1
                elif sd == 1:
                    tmp2[b] = e
                    b += 1
            for i in range(b):
                srt[c, s0 + i] = tmp2[i]
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
