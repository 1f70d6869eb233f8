"""Split search of the preference tree (DT-PBO Sec. 3.1, Eq. 5-6; App. C).

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
column index, so trees are deterministic (``ties="gap"``, the default). The paper does not
say how it breaks them; :data:`SPLIT_TIES` names the alternatives tried in
docs/fidelity.md: ``"first"`` (the lowest column, then the lowest threshold: a plain scan),
``"random"`` (uniform over the tied splits, from a passed Generator) and ``"straddlers"``
(the fewest straddling pairs, which keeps the most comparisons in the children, then the
gap rule). A pair straddles threshold ``t`` when ``min(x_w, x_l) < t <= max(x_w, x_l)``,
i.e. when ``Z_i(t) != 0``; their number is a suffix sum like ``sum Z`` with weight +1 at
each pair's larger endpoint and -1 at its smaller one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

__all__ = [
    "MAX_CATEGORIES",
    "SPLIT_TIES",
    "Split",
    "SplitTies",
    "StraddlerMode",
    "best_split",
    "goes_right",
]

StraddlerMode = Literal["discard", "keep"]
SplitTies = Literal["gap", "first", "random", "straddlers"]
#: Rules for ties between equally consistent splits (module docstring).
SPLIT_TIES = ("gap", "first", "random", "straddlers")

#: Categorical columns are routed with 64-bit category masks.
MAX_CATEGORIES = 62


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
    ties: SplitTies = "gap",
    rng: np.random.Generator | None = None,
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
    ties
        How ties between equally consistent splits are broken (:data:`SPLIT_TIES`).
    rng
        The Generator of ``ties="random"``.

    Returns
    -------
    Split or None
        ``None`` when no candidate split has a non-zero score.
    """
    n, d = Xw.shape
    if n == 0:
        return None
    if ties != "gap":
        return _best_split_tied(Xw, Xl, is_categorical, n_categories, span, masked, ties, rng)
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


def _best_split_tied(
    Xw: np.ndarray,
    Xl: np.ndarray,
    is_categorical: np.ndarray,
    n_categories: np.ndarray,
    span: np.ndarray,
    masked: np.ndarray | None,
    ties: str,
    rng: np.random.Generator | None,
) -> Split | None:
    """:func:`best_split` with the tie rules ``first``, ``random`` and ``straddlers``.

    Lists every split of the largest ``|sum Z|`` (thresholds of every threshold column,
    the net-wins partition of every categorical column) with its straddler count and
    normalised gap, then picks one by ``ties``.
    """
    if ties not in SPLIT_TIES:
        raise ValueError(f"ties must be one of {SPLIT_TIES}, got {ties!r}")
    if ties == "random" and rng is None:
        raise ValueError("ties='random' needs a numpy Generator (rng)")
    n = Xw.shape[0]
    # candidates: (|sum_z|, column, position, threshold, mask, sum_z, straddlers, gap)
    cands: list[tuple[float, int, int, float, int, float, float, float]] = []
    num = _threshold_columns(is_categorical.tobytes())
    k = num.size
    if k:
        two_n = 2 * n
        VT = np.concatenate((Xw[:, num].T, Xl[:, num].T), axis=1)
        keep = np.ones((n, k)) if masked is None else (~masked[:, num]).astype(float)
        w = np.concatenate((keep, -keep)).T.ravel()
        upper = np.where(Xw[:, num] >= Xl[:, num], 1.0, -1.0) * keep  # winner is the max
        sw = np.concatenate((upper, -upper)).T.ravel()
        order = (VT.argsort(axis=1, kind="stable") + _block_offsets(two_n, k)).ravel()
        vs = VT.ravel()[order]
        cs = w[order].cumsum()
        cst = sw[order].cumsum()
        gaps = vs[1:] - vs[:-1]
        absz = np.abs(cs[:-1])
        absz[gaps <= 0] = -1.0
        absz[two_n - 1 :: two_n] = -1.0
        smax = float(absz.max(initial=-1.0))
        if smax > 0:
            for j in np.flatnonzero(absz == smax):
                col = int(num[j // two_n])
                thr = 0.5 * (vs[j] + vs[j + 1])
                if not vs[j] < thr <= vs[j + 1]:
                    thr = float(vs[j + 1])
                g = float(gaps[j] / span[col])
                cands.append((smax, col, int(j), float(thr), 0, float(-cs[j]), -cst[j], g))
    for col in _categorical_columns(is_categorical.tobytes()):
        ncat = int(n_categories[col])
        cw = Xw[:, col].astype(np.int64)
        cl = Xl[:, col].astype(np.int64)
        wt = np.ones(n) if masked is None else (~masked[:, col]).astype(float)
        net = np.bincount(cw, weights=wt, minlength=ncat) - np.bincount(
            cl, weights=wt, minlength=ncat
        )
        pos_net = net > 0
        sz = float(net[pos_net].sum())
        if sz <= 0:
            continue
        strad = float(((pos_net[cw] != pos_net[cl]) * wt).sum())
        mask = int(np.sum(np.left_shift(1, np.flatnonzero(pos_net).astype(np.int64))))
        g = 1.0 / max(ncat - 1, 1)
        cands.append((sz, int(col), 0, float("nan"), mask, sz, strad, g))
    if not cands:
        return None
    top = max(c[0] for c in cands)
    cands = [c for c in cands if c[0] == top]
    if ties == "first":
        pick = min(cands, key=lambda c: (c[1], c[2]))
    elif ties == "random":
        pick = cands[int(rng.integers(len(cands)))]  # type: ignore[union-attr]
    else:  # fewest straddlers, then the gap rule (wider gap, lower column and threshold)
        pick = min(cands, key=lambda c: (c[6], -c[7], c[1], c[2]))
    return Split(pick[1], pick[3], pick[4], pick[5], pick[0] / n)


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


def goes_right(
    values: np.ndarray, threshold: float, right_mask: int, categorical: bool
) -> np.ndarray:
    """Which rows go right of a split: ``value >= threshold``, or category in the mask."""
    if categorical:
        return ((np.int64(right_mask) >> values.astype(np.int64)) & 1).astype(bool)
    return values >= threshold
