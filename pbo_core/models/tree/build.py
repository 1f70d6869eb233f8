"""Growing a preference tree from comparisons, and the choice of back-end.

Straddlers
----------
After a split, pairs with one item on each side ("straddlers") are excluded from the
descendants' split search (Eq. 8); they are still used when fitting the leaf utilities
(see :mod:`pbo_core.models.leaves`). With ``straddlers="keep"`` they are instead given
to the child holding their winner, with the split column masked for that pair (App. C.2,
Eq. 11-13): a masked pair contributes ``Z = 0`` on that column below the split.

Back-ends
---------
``backend="numba"`` grows the whole tree in one compiled call
(:mod:`pbo_core.models.tree.kernels`, discard mode only); ``"numpy"`` is the reference
implementation (any mode), which after a new comparison re-searches only the nodes on its
path when given a :class:`SplitCache`. ``"auto"`` (default) picks numba for discard mode
and numpy for ``straddlers="keep"``. :func:`resolve_backend` is the one place where this
choice is made; both give identical trees (property-tested).
"""

from __future__ import annotations

import numbers
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

import numpy as np

from pbo_core.data import Schema
from pbo_core.models.base import COUNT, NON_NEGATIVE_INT, Interval, Options
from pbo_core.models.compiled import kernel_array
from pbo_core.models.tree import kernels
from pbo_core.models.tree.arrays import Tree
from pbo_core.models.tree.splits import (
    MAX_CATEGORIES,
    SPLIT_TIES,
    Split,
    SplitTies,
    StraddlerMode,
    best_split,
    goes_right,
)

__all__ = ["GROWTH_CONSTRAINTS", "Backend", "SplitCache", "build_tree", "resolve_backend"]

Backend = Literal["auto", "numba", "numpy"]

#: What the growth controls of :func:`build_tree` may be, as every tree model declares
#: them (:attr:`pbo_core.models.base.Estimator._parameter_constraints`).
GROWTH_CONSTRAINTS: dict[str, list] = {
    "max_depth": [NON_NEGATIVE_INT, None],
    "min_samples_split": [COUNT],
    "min_split_score": [Interval(numbers.Real)],
    "straddlers": [Options("discard", "keep")],
    "backend": [Options("auto", "numba", "numpy")],
}


def resolve_backend(
    backend: Backend, straddlers: StraddlerMode, split_ties: SplitTies = "gap"
) -> Literal["numba", "numpy"]:
    """The back-end that grows a tree: ``"numba"`` or ``"numpy"``.

    Raises
    ------
    ValueError
        For an unknown name, or ``"numba"`` with ``straddlers="keep"`` or a split tie
        rule other than ``"gap"`` (not compiled).
    """
    if backend not in ("auto", "numba", "numpy"):
        raise ValueError(f"backend must be 'auto', 'numba' or 'numpy', got {backend!r}")
    numpy_only = straddlers == "keep" or split_ties != "gap"
    if backend == "auto":
        return "numpy" if numpy_only else "numba"
    if backend == "numba" and numpy_only:
        raise ValueError(
            "the numba back-end grows discard-mode trees with the gap tie rule only; use 'numpy'"
        )
    return backend


_ROOM_LOCK = threading.Lock()
_room: dict[str, int] = {"builders": 0, "saved": 0}


@contextmanager
def _recursion_room(frames: int) -> Iterator[None]:
    """Let the interpreter's recursion limit admit ``frames`` for the duration.

    The limit is one per process: threads that build trees at once (a page and a
    background fit) share one raise, and the saved limit comes back only when the last
    of them leaves, so no builder's limit is lowered under it mid-recursion.
    """
    with _ROOM_LOCK:
        if _room["builders"] == 0:
            _room["saved"] = sys.getrecursionlimit()
        _room["builders"] += 1
        if sys.getrecursionlimit() < frames:
            sys.setrecursionlimit(frames)
    try:
        yield
    finally:
        with _ROOM_LOCK:
            _room["builders"] -= 1
            if _room["builders"] == 0:
                sys.setrecursionlimit(_room["saved"])


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
    Xw = kernel_array(X[pairs[:, 0]], np.float64)
    Xl = kernel_array(X[pairs[:, 1]], np.float64)
    (left, right, feat, thr, rmask, sumz, score, npairs, leaf_idx, leaf_ptr) = kernels.grow(
        Xw,
        Xl,
        kernel_array(is_cat, np.bool_),
        kernel_array(n_cat, np.int64),
        kernel_array(span, np.float64),
        -1 if max_depth is None else int(max_depth),
        int(min_samples_split),
        float(min_split_score),
    )
    ptr = leaf_ptr.tolist()  # views per leaf (np.split's overhead is per piece)
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
        leaf_pairs=[leaf_idx[a:b] for a, b in pairwise(ptr)],
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
    backend: Backend = "auto",
    split_ties: SplitTies = "gap",
    split_rng: np.random.Generator | None = None,
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
        Optional :class:`SplitCache` reused across refits by the numpy back-end (speed
        only; same result).
    backend
        ``"auto"``, ``"numba"`` or ``"numpy"`` (see :func:`resolve_backend`).
    split_ties, split_rng
        How ties between equally consistent splits are broken
        (:data:`~pbo_core.models.tree.splits.SPLIT_TIES`; default ``"gap"``) and the
        Generator of ``"random"`` (which also turns the ``cache`` off).

    Returns
    -------
    Tree
    """
    if straddlers not in ("discard", "keep"):
        raise ValueError(f"straddlers must be 'discard' or 'keep', got {straddlers!r}")
    if split_ties not in SPLIT_TIES:
        raise ValueError(f"split_ties must be one of {SPLIT_TIES}, got {split_ties!r}")
    resolve_backend(backend, straddlers, split_ties)
    if split_ties == "random":
        cache = None  # a memo would replay earlier draws
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
    if resolve_backend(backend, straddlers, split_ties) == "numba":
        return _build_compiled(
            X, pairs, bounds, span, is_cat, n_cat, max_depth, min_samples_split, min_split_score
        )
    if cache is not None:
        config = (
            max_depth,
            min_samples_split,
            min_split_score,
            straddlers,
            split_ties,
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
            split = best_split(Xw, Xl, is_cat, n_cat, span, msk, split_ties, split_rng)
        if split is None or split.score <= min_split_score:
            sub = _Subtree.leaf(idx)
        else:
            # best_split guarantees that the threshold separates at least one pair, so
            # every child holds fewer comparisons (or, keeping straddlers, fewer
            # unmasked columns) and the recursion ends
            c = split.column
            if is_cat[c]:
                w_right = goes_right(Xw[:, c], split.threshold, split.right_mask, True)
                l_right = goes_right(Xl[:, c], split.threshold, split.right_mask, True)
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
    with _recursion_room(len(pairs) * (d if keep else 1) + 2000):
        sub = grow(np.arange(len(pairs)), root_mask, 0)
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
