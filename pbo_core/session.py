"""Interactive sessions: a person answers "A or B?" and the surrogate updates live.

:class:`ElicitationSession` is the PBO loop of :func:`pbo_core.loop.run_pbo` turned inside
out: instead of an oracle answering every query in a tight loop, the caller asks for the
next query (:meth:`~ElicitationSession.next_query`), shows it to a decision maker, and
passes their answer back (:meth:`~ElicitationSession.answer`). The queries come from the
same strategies (:mod:`pbo_core.strategies`, e.g. ``"dt"`` = DT-PBO with qEUBO, ``"gp"`` =
GP-Laplace with EUBO) through their ``propose(state, rng)`` with a
:class:`~pbo_core.strategies.LoopState`, so a session with a simulated decision maker asks the
same questions as ``run_pbo`` would. Answers can be undone, and a session can be saved as
a comparison table (:meth:`~ElicitationSession.to_frame`, one row per answer with the ids
and features of winner and loser) and replayed from it
(:meth:`~ElicitationSession.from_frame`).

Answers a person can give
-------------------------
``"A"`` / ``"B"``
    One comparison, winner then loser.
``"tie"`` ("no preference")
    **Enters the model as one comparison each way** (A over B and B over A). Under the
    probit likelihood the pair's term ``Phi(d) Phi(-d)`` is largest at equal utilities, so a
    tie pulls the two options together (it is worth half a comparison in each direction);
    in the tree's consistency score the two directions cancel in the numerator and count
    twice in the denominator, so a tie makes a split that separates the two options less
    consistent. Neither option counts as having won (the favourite's tie-break by most
    recent win ignores ties). A tie counts as an answer (``n_answers``).
``skip`` (:meth:`~ElicitationSession.skip`)
    Nothing enters the model; the pair is marked as asked (so finite item sets prefer
    another pair) and a new question is drawn. Skips are not answers.

:meth:`~ElicitationSession.undo` takes back the last action of any of these kinds, and
:attr:`~ElicitationSession.actions` lists them (``"A"``, ``"B"``, ``"tie"``, ``"skip"``):
with the constructor arguments they replay a session exactly (:meth:`~ElicitationSession.apply`).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.benchmarks import get_benchmark
from pbo_core.data import TRUE_UTILITY, PreferenceData, Schema, Study
from pbo_core.errors import ReplayTimeout
from pbo_core.explain.export import leaf_summaries
from pbo_core.loop import initial_design, recommend
from pbo_core.problem import Problem
from pbo_core.registry import MODELS, make_strategy
from pbo_core.strategies.base import LoopState, Strategy

__all__ = [
    "TIE",
    "Answer",
    "ElicitationSession",
    "FavouritePoint",
    "Query",
    "ReplayTimeout",
    "study_item_set",
]

#: Sides of a query as shown to people.
SIDES = ("A", "B")
#: ``winner_side`` of a tie ("no preference") and its name in tables and action logs.
TIE = -1
TIE_NAME = "tie"
#: Action of a skipped question in :attr:`ElicitationSession.actions`.
SKIP_NAME = "skip"
_TIE_WORDS = {"tie", "none", "no preference", "=", "equal"}


# ----------------------------------------------------------------------------- records
@dataclass(frozen=True, eq=False)
class Query:
    """One question "A or B?".

    Attributes
    ----------
    a, b
        Encoded rows of the two options.
    index_a, index_b
        Row of each option in the session's item matrix, or ``None`` for a new point that
        is added when the question is answered (continuous problems).
    source
        ``"initial"`` (initial design) or the strategy name.
    """

    a: np.ndarray
    b: np.ndarray
    index_a: int | None
    index_b: int | None
    source: str = ""

    def side(self, k: int) -> np.ndarray:
        """Encoded row of side ``k`` (0 = A, 1 = B)."""
        return self.a if k == 0 else self.b


@dataclass(frozen=True, eq=False)
class Answer:
    """An answered query: the question, the side that won, and the item rows compared.

    For a tie (``winner_side == TIE``) ``winner`` is side A's row and ``loser`` side B's.
    """

    query: Query
    winner_side: int
    winner: int
    loser: int

    @property
    def is_tie(self) -> bool:
        """True for a "no preference" answer."""
        return self.winner_side == TIE

    @property
    def action(self) -> str:
        """``"A"``, ``"B"`` or ``"tie"``."""
        return TIE_NAME if self.is_tie else SIDES[self.winner_side]


@dataclass(frozen=True)
class FavouritePoint:
    """The favourite after an answer: its row, its posterior mean and sd."""

    n_answers: int
    row: int
    mean: float
    sd: float


@dataclass
class _State:
    """Everything an answer changes (deep-copied before each answer, for undo)."""

    strategy: Strategy
    rng: np.random.Generator
    X: np.ndarray
    pairs: np.ndarray
    last_win: np.ndarray
    asked_pairs: set[tuple[int, int]]
    init_queue: list[tuple[int, int]]
    n_strategy_queries: int = 0
    recommendation: int = 0
    pending: Query | None = None
    history: list[Answer] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    skipped: list[Query] = field(default_factory=list)
    trace: list[FavouritePoint] = field(default_factory=list)


def _parse_side(winner_side: int | str) -> int:
    if isinstance(winner_side, str):
        s = winner_side.strip().upper()
        if s in SIDES:
            return SIDES.index(s)
        if s.lower() in _TIE_WORDS:
            return TIE
        raise ValueError(
            f"winner side must be 'A' or 'B' (or 0 / 1), or 'tie', got {winner_side!r}"
        )
    if isinstance(winner_side, (bool, np.bool_)):
        raise ValueError("winner side must be 'A' or 'B' (or 0 / 1), not a boolean")
    k = int(winner_side)
    if k not in (0, 1):
        raise ValueError(f"winner side must be 0 (A) or 1 (B), got {winner_side!r}")
    return k


def _py(v: Any) -> Any:
    """A NumPy scalar as the Python value (for messages)."""
    return v.item() if isinstance(v, np.generic) else v


def _unknown_utility(X: np.ndarray) -> np.ndarray:
    return np.full(np.atleast_2d(X).shape[0], np.nan)


# ----------------------------------------------------------------------------- session
class ElicitationSession:
    """Preference elicitation with a person in the loop.

    Parameters
    ----------
    problem
        A finite item set (``problem.items``) or a continuous box
        (:meth:`Problem.from_benchmark`). The true utility is only used by
        :meth:`oracle_winner` (simulated answers) and may be unknown.
    strategy
        PBO method of :data:`pbo_core.registry.MODELS` (``"dt"``, ``"gp"``, ...).
    seed
        Seeds the initial design and the strategy's draws: the same seed and the same
        answers give the same questions.
    n_init
        Questions of the initial design before the strategy takes over: random distinct
        item pairs for finite sets, pairs of a Latin hypercube for continuous problems.
        Default 1 for finite sets, 2 for continuous problems.
    item_ids
        Labels of the items of a finite problem (default ``0..n-1``).
    items
        Display table of the items of a finite problem (same row order).
    has_truth
        Whether ``problem.utility`` is the true utility (enables :meth:`oracle_winner`).
        Default: true for continuous problems and for finite problems whose utility
        returns finite values.
    strategy_options
        Keyword options of the method's factory (:func:`~pbo_core.strategies.make_strategy`),
        e.g. ``slope_prior`` for ``dt-linear`` / ``linear-eubo`` on a study with earlier
        respondents.

    Examples
    --------
    >>> from pbo_core.benchmarks import get_benchmark
    >>> s = ElicitationSession(Problem.from_benchmark(get_benchmark("branin")), "dt")
    >>> q = s.next_query()
    >>> s.answer(s.oracle_winner(q))       # or "A" / "B" from a person
    >>> len(s.history)
    1
    """

    def __init__(
        self,
        problem: Problem,
        strategy: str = "dt",
        *,
        seed: int = 0,
        n_init: int | None = None,
        item_ids: Sequence[Any] | np.ndarray | None = None,
        items: pd.DataFrame | None = None,
        has_truth: bool | None = None,
        item_utilities: np.ndarray | None = None,
        strategy_options: dict[str, Any] | None = None,
    ) -> None:
        if strategy not in MODELS or MODELS[strategy].strategy is None:
            pbo = sorted(n for n, s in MODELS.items() if s.strategy is not None)
            raise KeyError(f"unknown method {strategy!r}; known methods: {pbo}")
        self.problem = problem
        self.strategy_name = strategy
        self.strategy_options = dict(strategy_options or {})
        self.seed = int(seed)
        self.n_init = int(n_init if n_init is not None else (1 if problem.finite else 2))
        if self.n_init < (0 if problem.finite else 1):
            raise ValueError("a continuous problem needs n_init >= 1 (points to compare)")
        n = len(problem.items) if problem.items is not None else 0
        if problem.finite and n < 2:
            raise ValueError("a finite problem needs at least two items")
        if item_ids is not None and len(item_ids) != n:
            raise ValueError(f"{len(item_ids)} item ids for {n} items")
        if items is not None and len(items) != n:
            raise ValueError(f"items table has {len(items)} rows for {n} items")
        self.item_ids = np.asarray(item_ids) if item_ids is not None else None
        self.items = items.reset_index(drop=True) if items is not None else None
        if item_utilities is not None:
            item_utilities = np.asarray(item_utilities, dtype=float).ravel()
            if not problem.finite or len(item_utilities) != n:
                raise ValueError(f"{len(item_utilities)} item utilities for {n} items")
        if has_truth is None:
            has_truth = True
            if problem.finite and item_utilities is None:
                assert problem.items is not None
                has_truth = bool(np.all(np.isfinite(problem.utility(problem.items[:1]))))
        self.has_truth = bool(has_truth)
        if self.has_truth and problem.finite and item_utilities is None:
            assert problem.items is not None
            item_utilities = np.asarray(problem.utility(problem.items), dtype=float)
        # true utility per item row (finite problems): items with equal features may differ
        self.item_utilities = item_utilities
        # the streams of run_pbo (initial design, oracle, strategy): with truthful answers
        # a session asks exactly the questions run_pbo asks for the same seed
        ss = np.random.SeedSequence(self.seed)
        rng_init, _, rng_strategy = (np.random.default_rng(s) for s in ss.spawn(3))
        X0, idx0 = initial_design(problem, self.n_init, rng_init, "lhs")
        self._st = _State(
            strategy=make_strategy(strategy, **self.strategy_options),
            rng=rng_strategy,
            X=np.asarray(X0, dtype=float),
            pairs=np.zeros((0, 2), dtype=np.int64),
            last_win=np.full(len(X0), -1, dtype=np.int64),
            asked_pairs=set(),
            init_queue=[(int(a), int(b)) for a, b in idx0],
        )
        self._undo: list[_State] = []
        self._refit()

    # ------------------------------------------------------------------ construction
    @classmethod
    def for_benchmark(
        cls, function: Any, strategy: str = "dt", *, seed: int = 0, n_init: int | None = None
    ) -> ElicitationSession:
        """Session on a benchmark function (name or :class:`BenchmarkFunction`)."""
        f = get_benchmark(function) if isinstance(function, str) else function
        return cls(Problem.from_benchmark(f), strategy, seed=seed, n_init=n_init)

    @classmethod
    def for_items(
        cls,
        X: np.ndarray,
        schema: Schema,
        strategy: str = "dt",
        *,
        utilities: np.ndarray | None = None,
        item_ids: Sequence[Any] | np.ndarray | None = None,
        items: pd.DataFrame | None = None,
        name: str = "items",
        seed: int = 0,
        n_init: int | None = None,
        strategy_options: dict[str, Any] | None = None,
    ) -> ElicitationSession:
        """Session on a finite item set; ``utilities`` (if known) enable simulated answers."""
        X = np.asarray(X, dtype=float)
        if utilities is not None:
            problem = Problem.from_items(name, X, utilities, schema)
        else:
            problem = Problem(name, schema, _unknown_utility, float("nan"), items=X)
        return cls(
            problem,
            strategy,
            seed=seed,
            n_init=n_init,
            item_ids=item_ids,
            items=items,
            has_truth=utilities is not None,
            item_utilities=utilities,
            strategy_options=strategy_options,
        )

    @classmethod
    def from_frame(
        cls, df: pd.DataFrame, problem: Problem, strategy: str = "dt", **kwargs: Any
    ) -> ElicitationSession:
        """A new session (same arguments as the constructor) replaying a comparison table.

        ``df`` is a table written by :meth:`to_frame` (or any table with ``winner_<f>`` /
        ``loser_<f>`` feature columns, or ``winner_id`` / ``loser_id`` for item sets).
        Every row becomes an answered question (undo works through them); the next
        question is then chosen by the strategy as usual.
        """
        s = cls(problem, strategy, **kwargs)
        s.replay(df)
        return s

    def config(self) -> dict[str, Any]:
        """Constructor arguments of this session (to start over or to load a table)."""
        return {
            "problem": self.problem,
            "strategy": self.strategy_name,
            "seed": self.seed,
            "n_init": self.n_init,
            "item_ids": self.item_ids,
            "items": self.items,
            "has_truth": self.has_truth,
            "item_utilities": self.item_utilities,
            "strategy_options": self.strategy_options,
        }

    # ------------------------------------------------------------------ views
    @property
    def schema(self) -> Schema:
        """Schema of the encoded items."""
        return self.problem.schema

    @property
    def X(self) -> np.ndarray:
        """Items (finite problems) or points asked so far (continuous problems)."""
        return self._st.X

    @property
    def pairs(self) -> np.ndarray:
        """``(n_answers, 2)`` winner and loser rows of ``X``."""
        return self._st.pairs

    @property
    def data(self) -> PreferenceData:
        """The comparisons so far as preference data."""
        return PreferenceData(self._st.X, self._st.pairs, schema=self.schema)

    @property
    def strategy(self) -> Strategy:
        """The strategy object (surrogate + query rule)."""
        return self._st.strategy

    @property
    def model(self) -> Any:
        """The fitted surrogate (``DTSurrogate`` or ``GPSurrogate``)."""
        return self._st.strategy.model  # type: ignore[attr-defined]

    @property
    def is_tree(self) -> bool:
        """True when the surrogate is a decision tree."""
        return hasattr(self.model, "tree_")

    @property
    def history(self) -> list[Answer]:
        """The answered questions, oldest first."""
        return list(self._st.history)

    @property
    def n_answers(self) -> int:
        """Number of answered questions."""
        return len(self._st.history)

    @property
    def can_undo(self) -> bool:
        """True when there is an answer to take back."""
        return bool(self._undo)

    @property
    def actions(self) -> list[str]:
        """Every action so far, oldest first: ``"A"``, ``"B"``, ``"tie"`` or ``"skip"``."""
        return list(self._st.actions)

    @property
    def n_skipped(self) -> int:
        """Number of skipped questions."""
        return len(self._st.skipped)

    @property
    def favourite(self) -> int | None:
        """Row of ``X`` of the favourite, or ``None`` before the first answer (then no
        option has been compared and there is no favourite to show)."""
        return self._st.recommendation if self._st.history else None

    @property
    def favourite_trace(self) -> list[FavouritePoint]:
        """The favourite after each answer (row, posterior mean and sd then): drift of
        the favourite shows as a change of row."""
        return list(self._st.trace)

    @property
    def recommendation(self) -> int:
        """Row of ``X`` of the current favourite (highest predicted utility among the
        items compared so far; ties go to the most recent winner)."""
        return self._st.recommendation

    def ids(self) -> np.ndarray:
        """Labels of the rows of ``X`` (item ids, or point numbers for continuous problems)."""
        if self.item_ids is not None:
            return self.item_ids
        return np.arange(len(self._st.X))

    def label(self, index: int | None) -> str:
        """Display label of a row (``"new point"`` for ``None``)."""
        if index is None:
            return "new point"
        return str(self.ids()[int(index)])

    def describe(self, rows: np.ndarray) -> pd.DataFrame:
        """Readable table (labels, units as values) of encoded rows."""
        return self.schema.decode(np.atleast_2d(rows))

    def predict(self, X: np.ndarray | None = None) -> np.ndarray:
        """Predicted utilities of ``X`` (default: the session's rows)."""
        return np.asarray(self._st.strategy.predict(self._st.X if X is None else X))

    def leaf_of(self, x: np.ndarray) -> int | None:
        """Leaf index of one encoded row (``None`` for non-tree surrogates)."""
        if not self.is_tree:
            return None
        return int(self.model.tree_.apply(np.atleast_2d(x))[0])

    def explanation(self, index: int | None = None) -> tuple[str, ...]:
        """Conditions of the leaf holding row ``index`` (default: the favourite).

        Empty for the root leaf and for non-tree surrogates.
        """
        if not self.is_tree:
            return ()
        idx = self.recommendation if index is None else int(index)
        leaf = self.leaf_of(self._st.X[idx])
        assert leaf is not None
        return leaf_summaries(self.model, self.schema)[leaf].conditions

    # ------------------------------------------------------------------ the loop
    def _refit(self) -> None:
        st = self._st
        data = PreferenceData(st.X, st.pairs, schema=self.schema)
        st.strategy.fit(data)
        if len(st.X) == 0:
            st.recommendation = 0
            return
        pred = np.asarray(st.strategy.predict(st.X))
        cand = np.unique(st.pairs) if len(st.pairs) else np.arange(len(st.X))
        ties = getattr(st.strategy, "ties", "latest-winner")
        st.recommendation = recommend(pred, cand, st.last_win, ties)
        if st.history:
            r = st.recommendation
            mean, cov = st.strategy.model.posterior(st.X[r : r + 1])  # type: ignore[attr-defined]
            sd = math.sqrt(max(float(np.asarray(cov).reshape(-1)[0]), 0.0))
            st.trace.append(FavouritePoint(len(st.history), r, float(np.ravel(mean)[0]), sd))

    def next_query(self) -> Query:
        """The pending question (chosen now if none is pending)."""
        st = self._st
        if st.pending is not None:
            return st.pending
        if st.init_queue:
            a, b = st.init_queue.pop(0)
            st.pending = Query(st.X[a].copy(), st.X[b].copy(), a, b, "initial")
            return st.pending
        data = PreferenceData(st.X, st.pairs, schema=self.schema)
        state = LoopState(
            self.problem,
            data,
            st.n_strategy_queries,
            st.last_win,
            st.recommendation,
            st.asked_pairs,
        )
        qa, qb = st.strategy.propose(state, st.rng)
        sides: list[tuple[np.ndarray, int | None]] = []
        for q in (qa, qb):
            if isinstance(q, (int, np.integer)):
                sides.append((st.X[int(q)].copy(), int(q)))
            else:
                sides.append((np.asarray(q, dtype=float).copy(), None))
        st.pending = Query(sides[0][0], sides[1][0], sides[0][1], sides[1][1], self.strategy_name)
        return st.pending

    def answer(self, winner_side: int | str) -> Answer:
        """Record the answer to the pending question and refit.

        Parameters
        ----------
        winner_side
            ``"A"`` / ``0`` when the first option is preferred, ``"B"`` / ``1`` when the
            second is, ``"tie"`` (or ``"no preference"``) when neither is: a tie enters
            the model as one comparison each way (see the module docstring).
        """
        k = _parse_side(winner_side)
        query = self.next_query()
        self._undo.append(copy.deepcopy(self._st))
        st = self._st
        rows = []
        for idx, x in ((query.index_a, query.a), (query.index_b, query.b)):
            if idx is None:
                st.X = np.vstack([st.X, x[None, :]])
                st.last_win = np.append(st.last_win, -1)
                idx = len(st.X) - 1
            rows.append(int(idx))
        if k == TIE:
            w, lo = rows
            if w == lo:
                raise ValueError("a tie needs two different options")
            new = [[w, lo], [lo, w]]
        else:
            w, lo = rows[k], rows[1 - k]
            new = [[w, lo]]
        st.pairs = np.vstack([st.pairs, new]).astype(np.int64)
        if query.source != "initial":
            st.n_strategy_queries += 1
        if k != TIE:
            # as in run_pbo: initial-design winners won at step 0, later ones at their query
            st.last_win[w] = st.n_strategy_queries
        st.asked_pairs.add((min(w, lo), max(w, lo)))
        ans = Answer(query, k, w, lo)
        st.history.append(ans)
        st.actions.append(ans.action)
        st.pending = None
        self._refit()
        return ans

    def skip(self) -> Query:
        """Skip the pending question: nothing enters the model, another question is drawn.

        The skipped pair counts as asked (item sets then prefer other pairs); the next
        call of :meth:`next_query` chooses a new question. Undo brings it back.
        """
        query = self.next_query()
        self._undo.append(copy.deepcopy(self._st))
        st = self._st
        if query.index_a is not None and query.index_b is not None:
            a, b = query.index_a, query.index_b
            st.asked_pairs.add((min(a, b), max(a, b)))
        st.skipped.append(query)
        st.actions.append(SKIP_NAME)
        st.pending = None
        return query

    def apply(self, action: str) -> Answer | Query:
        """Perform one logged action (``"A"``, ``"B"``, ``"tie"`` or ``"skip"``)."""
        if str(action).strip().lower() == SKIP_NAME:
            return self.skip()
        return self.answer(action)

    def undo(self) -> Answer | Query:
        """Take back the last action (an answer, a tie or a skip); its question becomes
        the pending one again. Returns the answer taken back (the query for a skip).

        Raises
        ------
        IndexError
            When nothing has been answered or skipped.
        """
        if not self._undo:
            raise IndexError("nothing to undo: no question has been answered")
        st = self._st
        last: Answer | Query = st.skipped[-1] if st.actions[-1] == SKIP_NAME else st.history[-1]
        self._st = self._undo.pop()
        return last

    def oracle_winner(self, query: Query | None = None) -> int:
        """Side (0 = A, 1 = B) preferred by the problem's true utility (ties: A).

        Raises
        ------
        RuntimeError
            When the true utility is unknown (real item sets).
        """
        if not self.has_truth:
            raise RuntimeError(f"{self.problem.name}: the true utility is unknown")
        q = query if query is not None else self.next_query()
        u = self._true_utility([(q.index_a, q.a), (q.index_b, q.b)])
        return 0 if u[0] >= u[1] else 1

    def _true_utility(self, sides: list[tuple[int | None, np.ndarray]]) -> np.ndarray:
        if self.item_utilities is not None and all(i is not None for i, _ in sides):
            return self.item_utilities[[int(i) for i, _ in sides]]  # type: ignore[arg-type]
        return np.asarray(self.problem.utility(np.vstack([x for _, x in sides])), dtype=float)

    def regret(self) -> float:
        """Optimum minus the true utility of the favourite (NaN when unknown)."""
        if not self.has_truth or len(self._st.X) == 0:
            return float("nan")
        r = self.recommendation
        u = self._true_utility([(r if self.problem.finite else None, self._st.X[r])])[0]
        return float(self.problem.optimum_value - u)

    # ------------------------------------------------------------------ tables
    def _feature_columns(self, prefix: str, rows: np.ndarray) -> dict[str, list[Any]]:
        table = self.describe(rows)
        out: dict[str, list[Any]] = {}
        for f in self.schema.features:
            vals = table[f.name].tolist()
            if f.kind == "multi_hot":
                vals = [";".join(v) for v in vals]
            out[f"{prefix}_{f.name}"] = vals
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per answer: step, winning side, ids and features of winner and loser.

        ``winner_side`` is ``"A"``, ``"B"`` or ``"tie"`` (then ``winner_*`` is side A and
        ``loser_*`` side B). Skips are not rows. Multi-hot values are joined with ``;``.
        The table can be saved as CSV and loaded with :meth:`from_frame`.
        """
        hist = self._st.history
        ids = self.ids()
        w = np.array([a.winner for a in hist], dtype=np.int64)
        lo = np.array([a.loser for a in hist], dtype=np.int64)
        d = self.schema.n_columns
        df = pd.DataFrame(
            {
                "step": np.arange(1, len(hist) + 1),
                "winner_side": [a.action for a in hist],
                "winner_id": [ids[i] for i in w],
                "loser_id": [ids[i] for i in lo],
            }
        )
        wx = self._st.X[w] if len(w) else np.zeros((0, d))
        lx = self._st.X[lo] if len(lo) else np.zeros((0, d))
        for k, v in {
            **self._feature_columns("winner", wx),
            **self._feature_columns("loser", lx),
        }.items():
            df[k] = v
        return df

    def _encode_side(self, df: pd.DataFrame, prefix: str) -> np.ndarray | None:
        cols = {f"{prefix}_{f.name}": f.name for f in self.schema.features}
        if not set(cols) <= set(df.columns):
            return None
        table = df[list(cols)].rename(columns=cols)
        self._check_domain(table, prefix)
        return self.schema.encode(table, source=f"comparison table ({prefix} columns)")

    def _check_domain(self, table: pd.DataFrame, prefix: str) -> None:
        """Numeric cells of a continuous problem must be finite and inside its box.

        Rows are counted from 1 (the first data line of a CSV, line 2); the message names
        the row, the column and the bounds.
        """
        if self.problem.finite:
            return  # items are matched to the session's own items instead
        for f in self.schema.features:
            if f.kind != "numeric" or f.bounds is None:
                continue
            lo, hi = (float(b) for b in f.bounds)
            x = pd.to_numeric(table[f.name], errors="coerce").to_numpy(dtype=float)
            given = table[f.name].notna().to_numpy() & ~np.isnan(x)
            tol = 1e-9 * max(1.0, abs(lo), abs(hi))
            bad = given & ~((x >= lo - tol) & (x <= hi + tol))  # also +-inf
            bad |= table[f.name].isna().to_numpy()
            if bad.any():
                r = int(np.argmax(bad))
                what = "is missing (nan), but must lie in" if np.isnan(x[r]) else "is outside"
                raise ValueError(
                    f"comparison table, row {r + 1} (CSV line {r + 2}), column "
                    f"{prefix + '_' + f.name!r}: {_py(x[r])!r} {what} the problem's "
                    f"bounds [{lo:g}, {hi:g}]"
                )

    def _match(self, x: np.ndarray | None, label: Any, where: str) -> tuple[np.ndarray, int | None]:
        st = self._st
        if self.problem.finite:
            ids = [str(v) for v in self.ids()]
            if label is not None and not (isinstance(label, float) and math.isnan(label)):
                key = str(label)
                if key in ids:
                    i = ids.index(key)
                    return st.X[i].copy(), i
                try:  # ids written as numbers may come back as floats ("3.0")
                    key2 = str(int(float(key)))
                except ValueError:
                    key2 = None
                if key2 is not None and key2 in ids:
                    i = ids.index(key2)
                    return st.X[i].copy(), i
            if x is not None:
                hit = np.flatnonzero(np.all(np.isclose(st.X, x[None, :]), axis=1))
                if hit.size:
                    return st.X[int(hit[0])].copy(), int(hit[0])
            raise ValueError(f"{where}: item {_py(label)!r} is not one of this session's items")
        if x is None:
            raise ValueError(f"{where}: the table has no feature columns for this problem")
        if len(st.X):
            hit = np.flatnonzero(np.all(np.isclose(st.X, x[None, :], rtol=0, atol=1e-12), axis=1))
            if hit.size:
                return st.X[int(hit[-1])].copy(), int(hit[-1])
        return x.copy(), None

    def replay(self, df: pd.DataFrame, deadline: float | None = None) -> None:
        """Answer questions from a comparison table (see :meth:`from_frame`).

        ``deadline``: a :func:`time.monotonic` time; a row not begun by then raises
        :class:`ReplayTimeout` (every row refits the model, so a long table on a slow model
        costs seconds per row; the session is then half-replayed and should be dropped).
        """
        if len(df) == 0:
            return
        has_ids = {"winner_id", "loser_id"} <= set(df.columns)
        wx = self._encode_side(df, "winner")
        lx = self._encode_side(df, "loser")
        if not has_ids and (wx is None or lx is None):
            need = [f"winner_{n}" for n in self.schema.names]
            raise ValueError(
                f"comparison table: needs winner_id/loser_id or the feature columns {need} "
                f"(and loser_...); columns present: {list(df.columns)}"
            )
        st = self._st
        st.init_queue.clear()
        st.pending = None
        rows: dict[str, int] = {}
        if not self.problem.finite and has_ids and wx is not None and lx is not None:
            # points keep their numbering: row k of X is the k-th smallest point id
            if not st.history:
                st.X, st.last_win = st.X[:0], st.last_win[:0]
            labels = [str(v) for v in df["winner_id"]] + [str(v) for v in df["loser_id"]]
            feats = np.vstack([wx, lx])
            first: dict[str, np.ndarray] = {}
            for lab, x in zip(labels, feats, strict=True):
                first.setdefault(lab, x)

            def order(lab: str) -> tuple[int, float, str]:
                try:
                    return (0, float(lab), lab)
                except ValueError:
                    return (1, 0.0, lab)

            for lab in sorted(first, key=order):
                rows[lab] = len(st.X)
                st.X = np.vstack([st.X, first[lab][None, :]])
                st.last_win = np.append(st.last_win, -1)
        elif not self.problem.finite and not st.history:
            # drop the unasked initial-design points: the table brings its own
            st.X, st.last_win = st.X[:0], st.last_win[:0]
        for r in range(len(df)):
            if deadline is not None and time.monotonic() > deadline:
                raise ReplayTimeout(r, len(df))
            where = f"comparison table, row {r + 1}"
            w_id = df["winner_id"].iloc[r] if has_ids else None
            l_id = df["loser_id"].iloc[r] if has_ids else None
            if rows:
                iw, il = rows[str(w_id)], rows[str(l_id)]
                xw, xl = st.X[iw].copy(), st.X[il].copy()
            else:
                xw, iw = self._match(None if wx is None else wx[r], w_id, where)
                xl, il = self._match(None if lx is None else lx[r], l_id, where)
            if iw is not None and iw == il:
                raise ValueError(f"{where}: winner and loser are the same item")
            side = str(df["winner_side"].iloc[r]) if "winner_side" in df.columns else ""
            tie = side.strip().lower() in _TIE_WORDS
            st.pending = Query(xw, xl, iw, il, "loaded")
            self.answer(TIE_NAME if tie else 0)
            st = self._st


# ----------------------------------------------------------------------------- item sets
def study_item_set(study: Study, *, max_items: int | None = None, seed: int = 0) -> dict[str, Any]:
    """Distinct items of a study for a session: ``X``, ``schema``, ``item_ids``, ``items``
    and ``utilities``.

    ``utilities`` is the ground truth when the study supplies one for every kept item in
    ``study.extras["true_utility"]`` (item id as text -> true utility, e.g. the PMR
    demo's urgency), else ``None``. Items with equal ids are merged; with ``max_items`` a
    seeded random sample is kept (in the original order).
    """
    data = study.data
    ids = data.ids()
    _, first = np.unique(np.asarray(ids).astype(str), return_index=True)
    keep = np.sort(first)
    if max_items is not None and len(keep) > max_items:
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(keep, size=max_items, replace=False))
    items = data.items.iloc[keep].reset_index(drop=True) if data.items is not None else None
    utilities = None
    truth = study.extras.get(TRUE_UTILITY)
    if truth is not None:
        sel = [str(i) for i in np.asarray(ids)[keep]]
        if all(s in truth for s in sel):
            utilities = np.array([truth[s] for s in sel], dtype=float)
    return {
        "X": data.X[keep],
        "schema": study.schema,
        "item_ids": np.asarray(ids)[keep],
        "items": items,
        "utilities": utilities,
        "name": study.key,
    }
