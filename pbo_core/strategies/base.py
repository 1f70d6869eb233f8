"""What a query strategy is: the protocol the loop calls and the state it may look at.

Every strategy has ``fit(data)``, ``predict(X)`` and ``propose(state, rng)``; the loop
(:func:`pbo_core.loop.run_pbo`) calls them in that order and reads ``name``, ``ties`` and
``n_leaves``. ``propose`` returns two query sides, each an existing item index or a new
point. :func:`random_query` and :func:`pick_item_pair` are the random draws several
strategies share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from pbo_core.data import PreferenceData
from pbo_core.problem import Problem

__all__ = ["LoopState", "QuerySide", "Strategy", "pick_item_pair", "random_query"]


@dataclass
class LoopState:
    """What a strategy may look at when choosing the next query.

    Attributes
    ----------
    problem
        The problem (schema, finite items or box).
    data
        Current items and comparisons.
    step
        Number of queries asked so far (the next query is number ``step + 1``).
    last_win
        ``(n_items,)`` step at which each item last won a comparison (-1 if never).
    recommendation
        Index of the current recommendation in ``data.X``.
    asked_pairs
        Unordered item pairs already compared (as ``(min, max)`` tuples).
    """

    problem: Problem
    data: PreferenceData
    step: int
    last_win: np.ndarray
    recommendation: int
    asked_pairs: set[tuple[int, int]]


#: A side of a query: an existing item index or a new point (encoded row).
QuerySide = int | np.ndarray


@runtime_checkable
class Strategy(Protocol):
    """What :func:`pbo_core.loop.run_pbo` needs from a method.

    Attributes
    ----------
    name
        Method name stored in results.
    ties
        How the loop breaks ties in the recommendation (``"latest-winner"`` or ``"first"``).
    n_leaves
        Leaves of the current surrogate (0 for surrogates without leaves), recorded per step.
    """

    name: str
    ties: str
    n_leaves: int

    def fit(self, data: PreferenceData) -> None:
        """Refit the surrogate."""
        ...

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted utilities of rows of ``X``."""
        ...

    def propose(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        """The next comparison."""
        ...


def pick_item_pair(
    left: np.ndarray,
    right: np.ndarray,
    asked: set[tuple[int, int]],
    rng: np.random.Generator,
) -> tuple[int, int] | None:
    """Uniform pair (i from ``left``, j from ``right``, i != j), preferring unasked pairs."""
    ii, jj = np.meshgrid(left, right, indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    ok = ii != jj
    ii, jj = ii[ok], jj[ok]
    if ii.size == 0:
        return None
    fresh = np.array(
        [(min(a, b), max(a, b)) not in asked for a, b in zip(ii, jj, strict=True)], dtype=bool
    )
    if fresh.any():
        ii, jj = ii[fresh], jj[fresh]
    k = int(rng.integers(ii.size))
    return int(ii[k]), int(jj[k])


def random_query(state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
    """Uniformly random comparison (new points, or an unasked item pair)."""
    if state.problem.finite:
        n = state.data.n_items
        pick = pick_item_pair(np.arange(n), np.arange(n), state.asked_pairs, rng)
        assert pick is not None, "a finite problem needs at least two items"
        return pick
    b = state.problem.schema.bounds
    pts = b[:, 0] + (b[:, 1] - b[:, 0]) * rng.random((2, len(b)))
    isint = state.problem.schema.is_integer
    pts[:, isint] = np.round(pts[:, isint])
    return pts[0], pts[1]
