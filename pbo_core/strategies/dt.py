"""DT strategies: the DT surrogate plus the rule that picks the next comparison.

``DTStrategy(within=...)`` always uses qEUBO over ordered leaf pairs for between-leaf
questions (one point sampled uniformly inside each chosen leaf, or one item of each
chosen leaf for finite item sets). The ``within`` option decides when a question is asked
*inside* a leaf instead, which the tree needs to keep growing (qEUBO alone never asks
within-leaf pairs, so the tree stalls; see docs/method-and-benchmarks.md):

``"none"``
    Literal Algorithm 1 of the paper: qEUBO only (method ``dt-literal``).
``"incumbent"``
    Every ``within_every``-th query compares the incumbent (the recommendation: the
    top-leaf item that won most recently) with a new point drawn uniformly in the top
    leaf (a new item of the top leaf for finite sets).
``"top-leaf"``
    The top-leaf prioritisation rule of Sec. 3.3 / App. C.3: every ``within_every``-th
    query compares two points drawn uniformly in the top leaf (two items of the top leaf).
``"lambda"``
    App. C.3 with finite ``lam``: ``alpha = qEUBO + lam * I_struct`` over between-leaf
    pairs and one within-leaf candidate pair per leaf. ``I_struct`` is the paper's: the
    expected change of the consistency score of the leaf's best split ``s*_A`` *held
    fixed* when the pair is appended to ``D_A``
    (:func:`~pbo_core.acquisition.leaves.fixed_split_gain`, method ``dt-lambda``).
    ``lambda_split="reopt"`` re-optimises the split after appending instead (method
    ``dt-lambda-reopt``, the earlier implementation, kept so the two can be compared: it
    also credits pairs that would make a *different* split best).
``"auto"``
    ``"incumbent"`` every 2nd query with ``persist=True, persist_max=2`` on continuous
    problems; on finite item sets the paper's top-leaf rule on every query with
    ``cascade=True``. This is the ``dt`` method.

With ``cascade=True`` (finite sets), once the top leaf holds no unasked pair of distinct
items the within-leaf question moves to the best-ranked leaf that still does, so the
ranking is refined from the top down (the top three matter for rho-regret); qEUBO takes
over when every leaf is resolved.

With ``persist=True`` a challenger that beats the incumbent earns another challenge on the
next query (at most ``persist_max`` in a row): a success rule in the spirit of the
(1+1)-evolution strategy, which keeps refining while local moves pay off and returns to
qEUBO exploration as soon as they stop. See docs/method-and-benchmarks.md for the
measured comparison of all rules.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from pbo_core.acquisition.eubo import eubo_matrix
from pbo_core.acquisition.leaves import best_leaf_pair, fixed_split_gain, structural_gain
from pbo_core.data import PreferenceData
from pbo_core.models.dt import DTSurrogate
from pbo_core.strategies.base import LoopState, QuerySide, pick_item_pair, random_query

__all__ = ["DTStrategy", "RandomStrategy", "WithinRule", "fixed_split_gain"]

WithinRule = Literal["auto", "none", "incumbent", "top-leaf", "lambda"]


class DTStrategy:
    """DT-PBO: DT surrogate + qEUBO over leaf pairs + a within-leaf rule.

    Parameters
    ----------
    within
        Within-leaf rule (see module docstring).
    within_every
        Period of the within-leaf question for ``"incumbent"`` and ``"top-leaf"``
        (``None``: 2 on continuous problems, 1 on finite item sets).
    lam
        Weight of ``I_struct`` for ``within="lambda"`` (utility units of ``sigma_noise``).
    lambda_split
        ``"fixed"`` (default, the paper's ``I_struct`` with ``s*_A`` fixed) or ``"reopt"``
        (best split re-optimised after appending the pair).
    name
        Method name stored in results.
    ties
        How the loop breaks ties in the recommendation: ``"latest-winner"`` (default) or
        ``"first"`` (plain argmax, the literal behaviour).
    persist, persist_max
        ``within="incumbent"`` only: after a challenger wins, challenge again on the next
        query, at most ``persist_max`` times in a row.
    cascade
        ``within="top-leaf"`` on finite item sets: when the top leaf is resolved, refine
        the best-ranked unresolved leaf instead.
    model
        A ready surrogate to use instead of a new ``DTSurrogate(**surrogate_kwargs)``
        (e.g. a warm-started one from :mod:`pbo_core.hierarchy`).
    **surrogate_kwargs
        Passed to :class:`~pbo_core.models.dt.DTSurrogate` (``ratio``, ``max_depth``,
        ``straddlers``...).
    """

    def __init__(
        self,
        within: WithinRule = "auto",
        within_every: int | None = None,
        lam: float = 1.0,
        lambda_split: Literal["fixed", "reopt"] = "fixed",
        name: str = "dt",
        ties: str = "latest-winner",
        persist: bool = False,
        persist_max: int = 2,
        cascade: bool = False,
        model: DTSurrogate | None = None,
        **surrogate_kwargs: object,
    ) -> None:
        if within not in ("auto", "none", "incumbent", "top-leaf", "lambda"):
            raise ValueError(f"unknown within-leaf rule {within!r}")
        self.within = within
        self.within_every = within_every
        if lambda_split not in ("fixed", "reopt"):
            raise ValueError(f"lambda_split must be 'fixed' or 'reopt', got {lambda_split!r}")
        self.lam = lam
        self.lambda_split = lambda_split
        self.name = name
        self.ties = ties
        self.persist = persist
        self.persist_max = persist_max
        self.cascade = cascade
        self._auto_persist = within == "auto" and not persist
        self.model = model if model is not None else DTSurrogate(**surrogate_kwargs)  # type: ignore[arg-type]

    @property
    def n_leaves(self) -> int:
        """Leaves of the current tree."""
        return int(getattr(self.model, "n_leaves_", 0))

    def fit(self, data: PreferenceData) -> None:
        """Refit the DT surrogate."""
        self.model.fit(data)
        self._data = data

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Leaf means of the rows of ``X``."""
        return self.model.predict(X)

    # ------------------------------------------------------------------ helpers
    def _rule(self, finite: bool) -> tuple[str, int]:
        rule = self.within
        if rule == "auto":
            rule = "top-leaf" if finite else "incumbent"
            if not finite and self._auto_persist:
                self.persist, self.persist_max = True, 2
            if finite:
                self.cascade = True
        every = self.within_every if self.within_every is not None else (1 if finite else 2)
        return rule, max(1, int(every))

    def _sample(self, leaf: int, n: int, state: LoopState, rng: np.random.Generator) -> np.ndarray:
        return self.model.tree_.sample_in_leaf(leaf, n, rng, state.problem.schema.is_integer)

    def _items_in(self, leaf: int) -> np.ndarray:
        return np.flatnonzero(self.model.item_leaf_ == leaf)

    def _between(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        m = self.model
        if m.n_leaves_ < 2:
            return self._within_pair(0, state, rng) or self._random(state, rng)
        a, b, _ = best_leaf_pair(m.leaf_mean_, m.leaf_cov_, rng)
        if not state.problem.finite:
            return self._sample(a, 1, state, rng)[0], self._sample(b, 1, state, rng)[0]
        pick = pick_item_pair(self._items_in(a), self._items_in(b), state.asked_pairs, rng)
        return pick if pick is not None else self._random(state, rng)

    def _random(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        return random_query(state, rng)

    def _within_pair(
        self, leaf: int, state: LoopState, rng: np.random.Generator, incumbent: int | None = None
    ) -> tuple[QuerySide, QuerySide] | None:
        """A comparison inside ``leaf`` (``None`` if the leaf has no usable pair)."""
        if not state.problem.finite:
            if incumbent is not None:
                return incumbent, self._sample(leaf, 1, state, rng)[0]
            pts = self._sample(leaf, 2, state, rng)
            return pts[0], pts[1]
        items = self._items_in(leaf)
        X = state.data.X
        if incumbent is not None:
            others = items[np.any(X[items] != X[incumbent], axis=1)]
            pick = pick_item_pair(np.array([incumbent]), others, state.asked_pairs, rng)
        else:
            pick = pick_item_pair(items, items, state.asked_pairs, rng)
            if pick is not None and np.array_equal(X[pick[0]], X[pick[1]]):
                pick = None
        if pick is None:
            return None
        a, b = pick
        if (min(a, b), max(a, b)) in state.asked_pairs:
            return None  # every within-leaf pair was asked already: let qEUBO choose
        return pick

    def _lambda(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        m = self.model
        tree = m.tree_
        schema = state.problem.schema
        is_cat, n_cat = schema.is_categorical, schema.n_categories
        b = schema.bounds
        span = np.where(is_cat, np.maximum(n_cat - 1, 1), b[:, 1] - b[:, 0])
        span = np.where(span > 0, span, 1.0)
        best_val, best_q = -np.inf, None
        if m.n_leaves_ >= 2:
            E = eubo_matrix(m.leaf_mean_, m.leaf_cov_)
            np.fill_diagonal(E, -np.inf)
            best_val = float(E.max())
        pairs = state.data.pairs
        X = state.data.X
        for leaf in range(m.n_leaves_):
            cand = self._within_pair(leaf, state, rng)
            if cand is None:
                continue
            xa = cand[0] if not isinstance(cand[0], (int, np.integer)) else X[cand[0]]
            xb = cand[1] if not isinstance(cand[1], (int, np.integer)) else X[cand[1]]
            idx = tree.leaf_pairs[leaf]
            gain_fn = fixed_split_gain if self.lambda_split == "fixed" else structural_gain
            gain = gain_fn(X[pairs[idx, 0]], X[pairs[idx, 1]], xa, xb, is_cat, n_cat, span)
            val = float(m.leaf_mean_[leaf]) + self.lam * gain
            if val > best_val:
                best_val, best_q = val, cand
        return best_q if best_q is not None else self._between(state, rng)

    # ------------------------------------------------------------------ propose
    def propose(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        """Next comparison according to the configured rule."""
        rule, every = self._rule(state.problem.finite)
        if rule == "lambda":
            return self._lambda(state, rng)
        pending, self._challenge = getattr(self, "_challenge", None), None
        due = (state.step + 1) % every == 0
        if rule == "incumbent" and self.persist and pending is not None:
            # the last query challenged the incumbent: keep refining while challengers win
            w = state.data.pairs[-1, 0] if state.data.n_pairs else -1
            streak = getattr(self, "_streak", 0)
            if w == pending and streak < self.persist_max:
                due, self._streak = True, streak + 1
            elif not due:
                self._streak = 0
        else:
            self._streak = 0
        if rule in ("incumbent", "top-leaf") and due:
            top = int(self.model.item_leaf_[state.recommendation])
            inc = state.recommendation if rule == "incumbent" else None
            q = self._within_pair(top, state, rng, incumbent=inc)
            if q is None and rule == "top-leaf" and self.cascade and state.problem.finite:
                # the top leaf is resolved: refine the best-ranked leaf that is not
                for leaf in np.argsort(-self.model.leaf_mean_, kind="stable"):
                    if leaf != top:
                        q = self._within_pair(int(leaf), state, rng)
                        if q is not None:
                            break
            if q is not None:
                if inc is not None:
                    other = q[1]
                    self._challenge = (
                        int(other) if isinstance(other, (int, np.integer)) else (state.data.n_items)
                    )
                return q
        return self._between(state, rng)


class RandomStrategy(DTStrategy):
    """Uniformly random comparisons; the DT surrogate only makes the recommendation."""

    def __init__(self, name: str = "dt-random", **surrogate_kwargs: object) -> None:
        super().__init__(within="none", name=name, **surrogate_kwargs)

    def propose(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        """A random comparison."""
        return random_query(state, rng)
