"""The PBO loop: initial designs, recommendation, ``run_pbo`` and ``RunResult``.

A run starts with ``n_init`` comparisons (a Latin hypercube design of ``2 n_init``
points paired in order for continuous problems; random distinct item pairs for finite
item sets), then asks ``n_iter`` queries chosen by a :class:`~pbo_core.strategies.Strategy`.
Problems and the simulated decision maker are in :mod:`pbo_core.problem`.
After every refit it records the recommendation (the asked item with the highest
predicted utility; ties go to the item that won most recently), its regret and the wall
time of the step (fit + recommendation + choosing the next query).

Randomness is split into independent streams derived from ``seed``: the initial design,
the oracle's noise and the strategy's own draws. So every method sees the same initial
comparisons for a given seed (common random numbers across methods).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import qmc

from pbo_core.data import PreferenceData
from pbo_core.models.glm import blas_single_thread
from pbo_core.problem import PreferenceOracle, Problem
from pbo_core.strategies.base import LoopState, Strategy

__all__ = ["INIT_DESIGNS", "RunResult", "initial_design", "parse_init", "recommend", "run_pbo"]


@dataclass
class RunResult:
    """Trace of one PBO run.

    Attributes
    ----------
    method, problem, seed
        Identification.
    regret
        ``(n_iter + 1,)`` regret of the recommendation after the initial design (index 0)
        and after each query.
    best_value
        ``(n_iter + 1,)`` best true utility among the items compared so far (the "final
        best utility" of KappaSharp's tables at the last step).
    recommendation
        ``(n_iter + 1,)`` index into ``X`` of the recommended item.
    time
        ``(n_iter + 1,)`` wall seconds of each step (fit, recommend, choose next query).
    n_leaves
        ``(n_iter + 1,)`` leaves of the surrogate's tree (0 for non-tree surrogates).
    X, pairs
        All items and comparisons (winner, loser) of the run.
    scores
        For finite problems, ``(n_iter + 1, n_items)`` predicted utilities of all items.
    """

    method: str
    problem: str
    seed: int
    regret: np.ndarray
    best_value: np.ndarray
    recommendation: np.ndarray
    time: np.ndarray
    n_leaves: np.ndarray
    X: np.ndarray
    pairs: np.ndarray
    scores: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def final_regret(self) -> float:
        """Regret after the last query."""
        return float(self.regret[-1])

    @property
    def total_time(self) -> float:
        """Total wall time of the run's steps."""
        return float(self.time.sum())

    def to_frame(self) -> pd.DataFrame:
        """One tidy row per step."""
        n = len(self.regret)
        return pd.DataFrame(
            {
                "method": self.method,
                "problem": self.problem,
                "seed": self.seed,
                "step": np.arange(n),
                "regret": self.regret,
                "best_value": self.best_value,
                "time_s": self.time,
                "cum_time_s": np.cumsum(self.time),
                "n_leaves": self.n_leaves,
            }
        )


INIT_DESIGNS = ("lhs", "pool_n6_k15", "pool_n8_k15", "pure_k3", "pure_k5", "pure_k15")


def parse_init(init: str, n_init: int) -> tuple[int, int | None]:
    """``(n_points, n_pairs)`` of an initial design name (``None`` pairs = pure matching)."""
    if init == "lhs":
        return 2 * n_init, None
    m = re.fullmatch(r"pool_n(\d+)_k(\d+)", init)
    if m:
        n, k = int(m.group(1)), int(m.group(2))
        if not 2 <= n or not 1 <= k <= n * (n - 1) // 2:
            raise ValueError(f"{init}: need 2 <= n and 1 <= k <= n(n-1)/2")
        return n, k
    m = re.fullmatch(r"pure_k(\d+)", init)
    if m:
        return 2 * int(m.group(1)), None
    raise ValueError(f"unknown initial design {init!r}; use lhs, pool_n<N>_k<K> or pure_k<K>")


def initial_design(
    problem: Problem, n_init: int, rng: np.random.Generator, init: str = "lhs"
) -> tuple[np.ndarray, np.ndarray]:
    """Items and unordered index pairs of the initial comparisons.

    ``init``:

    ``"lhs"``
        ``n_init`` pairs of a Latin hypercube of ``2 n_init`` points, paired in order
        (DT-PBO; random distinct item pairs for finite item sets).
    ``"pool_n<N>_k<K>"``
        ``N`` candidates and ``K`` of their ``N(N-1)/2`` pairs drawn without replacement
        (all of them when ``K`` is the maximum), in a random order, as KappaSharp's
        ``pool_n6_k15`` / ``pool_n8_k15``. The pools are **nested** as in the paper
        (App. G.2, ``n6 ⊂ n8``): the candidates are the first ``N`` points of one
        Latin hypercube of ``max(N, 8)`` points drawn from a stream that does not depend
        on ``N`` or ``K``, so with the same ``rng`` state the n6 pool is a subset of the
        n8 pool; the comparisons come from a second, independent stream.
    ``"pure_k<K>"``
        ``K`` disjoint pairs among ``2K`` Latin-hypercube candidates (pure matching).
    """
    if problem.finite:
        assert problem.items is not None
        n = len(problem.items)
        i, j = np.triu_indices(n, k=1)
        k = min(n_init, len(i))
        pick = rng.choice(len(i), size=k, replace=False)
        return problem.items.copy(), np.column_stack([i[pick], j[pick]])
    n_points, n_pairs = parse_init(init, n_init)
    if n_points == 0:
        return np.zeros((0, problem.dim)), np.zeros((0, 2), dtype=np.int64)
    b = problem.schema.bounds
    isint = problem.schema.is_integer
    if n_pairs is None:
        U = qmc.LatinHypercube(d=problem.dim, seed=rng).random(n_points)
    else:  # nested pools: points and comparisons from two N-independent streams
        rng_points, rng_pairs = (np.random.default_rng(s) for s in rng.integers(2**63, size=2))
        U = qmc.LatinHypercube(d=problem.dim, seed=rng_points).random(max(n_points, 8))
        U = U[:n_points]
    X = b[:, 0] + U * (b[:, 1] - b[:, 0])
    if isint.any():
        X[:, isint] = np.round(X[:, isint])
    if n_pairs is None:
        return X, np.arange(n_points).reshape(-1, 2)
    i, j = np.triu_indices(n_points, k=1)
    pick = rng_pairs.choice(len(i), size=n_pairs, replace=False)
    return X, np.column_stack([i[pick], j[pick]])


def recommend(
    pred: np.ndarray, candidates: np.ndarray, last_win: np.ndarray, ties: str = "latest-winner"
) -> int:
    """Candidate with the highest prediction.

    ``ties="latest-winner"`` gives ties to the item that won most recently (then the
    newest item); ``ties="first"`` to the first candidate, as a plain argmax does (the
    literal behaviour, which keeps recommending an old point inside the top leaf).
    """
    c = np.asarray(candidates)
    p = pred[c]
    tied = c[p >= p.max()]
    if len(tied) == 1 or ties == "first":
        return int(tied[0])
    key = last_win[tied].astype(float) * (len(last_win) + 1) + tied
    return int(tied[np.argmax(key)])


def run_pbo(
    problem: Problem,
    strategy: Strategy,
    *,
    n_init: int = 20,
    n_iter: int = 200,
    seed: int = 0,
    noise_r: float = 0.0,
    noise_sigma: float | None = None,
    init: str = "lhs",
    method: str | None = None,
    callback: Callable[[int, RunResult], None] | None = None,
) -> RunResult:
    """Run preferential BO on ``problem`` with ``strategy``.

    Parameters
    ----------
    problem
        Continuous box (:meth:`Problem.from_benchmark`) or finite item set.
    strategy
        Surrogate plus query rule (see :mod:`pbo_core.strategies`).
    n_init
        Initial comparisons (Latin hypercube pairs; random item pairs for finite sets).
    n_iter
        Queries after the initial design.
    seed
        Seeds the initial design, the oracle and the strategy (independent streams).
    noise_r
        Probit noise level relative to the median utility difference (App. F.6).
    noise_sigma
        Absolute noise on each option's utility (KappaSharp); overrides ``noise_r``.
    init
        Initial design: ``"lhs"`` (default), ``"pool_n<N>_k<K>"`` or ``"pure_k<K>"``.
    method
        Name stored in the result (defaults to ``strategy.name``).
    callback
        Called as ``callback(step, partial_result)`` after every step (progress bars).

    Returns
    -------
    RunResult
    """
    # the surrogates work on small matrices: BLAS threads only add overhead and contention
    with blas_single_thread():
        return _run_pbo(
            problem, strategy, n_init, n_iter, seed, noise_r, noise_sigma, init, method, callback
        )


def _run_pbo(
    problem: Problem,
    strategy: Strategy,
    n_init: int,
    n_iter: int,
    seed: int,
    noise_r: float,
    noise_sigma: float | None,
    init: str,
    method: str | None,
    callback: Callable[[int, RunResult], None] | None,
) -> RunResult:
    ss = np.random.SeedSequence(seed)
    rng_init, rng_oracle, rng_strategy = (np.random.default_rng(s) for s in ss.spawn(3))
    oracle = PreferenceOracle(problem, noise_r, rng_oracle, noise_sigma)

    X0, idx0 = initial_design(problem, n_init, rng_init, init)
    n_cap = len(X0) + (0 if problem.finite else 2 * n_iter)
    X = np.empty((n_cap, problem.dim))
    X[: len(X0)] = X0
    n_items = len(X0)
    u_items = np.empty(n_cap)
    u_items[:n_items] = problem.utility(X0) if n_items else []
    last_win = np.full(n_cap, -1, dtype=np.int64)
    asked = np.zeros(n_cap, dtype=bool)
    pairs = np.empty((len(idx0) + n_iter, 2), dtype=np.int64)
    asked_pairs: set[tuple[int, int]] = set()
    n_pairs = 0

    def add_pair(a: int, b: int, step: int) -> None:
        nonlocal n_pairs
        a_wins = bool(oracle.prefers_first(u_items[a], u_items[b]))
        w, lo = (a, b) if a_wins else (b, a)
        pairs[n_pairs] = (w, lo)
        n_pairs += 1
        last_win[w] = step
        asked[[a, b]] = True
        asked_pairs.add((min(a, b), max(a, b)))

    for a, b in idx0:
        add_pair(int(a), int(b), 0)

    regret = np.empty(n_iter + 1)
    best_value = np.empty(n_iter + 1)
    rec_idx = np.empty(n_iter + 1, dtype=np.int64)
    times = np.zeros(n_iter + 1)
    leaves = np.zeros(n_iter + 1, dtype=np.int64)
    scores = np.empty((n_iter + 1, n_items)) if problem.finite else None
    name = method or getattr(strategy, "name", type(strategy).__name__)

    def partial(t: int) -> RunResult:
        return RunResult(
            method=name,
            problem=problem.name,
            seed=seed,
            regret=regret[: t + 1],
            best_value=best_value[: t + 1],
            recommendation=rec_idx[: t + 1],
            time=times[: t + 1],
            n_leaves=leaves[: t + 1],
            X=X[:n_items],
            pairs=pairs[:n_pairs],
            scores=scores[: t + 1] if scores is not None else None,
        )

    for t in range(n_iter + 1):
        t0 = time.perf_counter()
        # the loop's own buffers: finite floats, in-range distinct pairs (add_pair), so the
        # validating constructor's checks are skipped after the first step
        if t == 0:
            data = PreferenceData(X[:n_items], pairs[:n_pairs], schema=problem.schema)
        else:
            data = PreferenceData.from_validated_arrays(
                X[:n_items], pairs[:n_pairs], schema=problem.schema
            )
        strategy.fit(data)
        pred = strategy.predict(data.X)
        cand = np.flatnonzero(asked[:n_items])
        if cand.size == 0:
            cand = np.arange(n_items)
        rec = recommend(pred, cand, last_win[:n_items], strategy.ties)
        state = LoopState(problem, data, t, last_win[:n_items], rec, asked_pairs)
        query = strategy.propose(state, rng_strategy) if t < n_iter else None
        times[t] = time.perf_counter() - t0
        regret[t] = problem.optimum_value - u_items[rec]
        best_value[t] = u_items[cand].max()
        rec_idx[t] = rec
        leaves[t] = strategy.n_leaves
        if scores is not None:
            scores[t] = pred
        if query is not None:
            sides = []
            for q in query:
                if isinstance(q, (int, np.integer)):
                    sides.append(int(q))
                else:
                    X[n_items] = np.asarray(q, dtype=float)
                    u_items[n_items] = problem.utility(X[n_items : n_items + 1])[0]
                    sides.append(n_items)
                    n_items += 1
            add_pair(sides[0], sides[1], t + 1)
        if callback is not None:
            callback(t, partial(t))
    return partial(n_iter)
