"""What the decision maker optimises, and the simulated decision maker.

:class:`Problem` is a continuous box (from a benchmark function) or a finite item set with
known true utilities; :class:`PreferenceOracle` answers "a or b?" from the true utility
with the probit noise of DT-PBO App. F.6 (relative to the problem's median utility
difference) or KappaSharp's absolute noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtr

from pbo_core.benchmarks import BenchmarkFunction, box_utility_scale
from pbo_core.data import Schema

__all__ = ["PreferenceOracle", "Problem"]


@dataclass
class Problem:
    """What the decision maker optimises.

    Attributes
    ----------
    name
        Identifier used in results.
    schema
        Schema of the encoded items (for continuous problems: numeric, bounded by the domain).
    utility
        True (noiseless) utility of encoded rows, ``(n, d) -> (n,)``.
    optimum_value
        Maximum utility (of the domain, or of the item set).
    items
        ``(n_items, d)`` finite item set, or ``None`` for a continuous box.
    """

    name: str
    schema: Schema
    utility: Callable[[np.ndarray], np.ndarray]
    optimum_value: float
    items: np.ndarray | None = None
    _scale: float | None = field(default=None, repr=False)

    @property
    def finite(self) -> bool:
        """True for a finite item set."""
        return self.items is not None

    @property
    def dim(self) -> int:
        """Number of encoded columns."""
        return self.schema.n_columns

    @classmethod
    def from_benchmark(cls, f: BenchmarkFunction) -> Problem:
        """Continuous problem over a benchmark function's box domain."""
        names = [f"x{i + 1}" for i in range(f.dim)]
        return cls(
            name=f.name,
            schema=Schema.numeric(f.bounds, names),
            utility=lambda X: np.asarray(f.fn(np.atleast_2d(X)), dtype=float),
            optimum_value=float(f.optimum_value),
        )

    @classmethod
    def from_items(cls, name: str, X: np.ndarray, utilities: np.ndarray, schema: Schema) -> Problem:
        """Finite problem: items ``X`` with known true utilities."""
        X = np.asarray(X, dtype=float)
        u = np.asarray(utilities, dtype=float).ravel()
        if len(u) != len(X):
            raise ValueError(f"{len(u)} utilities for {len(X)} items")
        index = {row.tobytes(): i for i, row in enumerate(X)}

        def utility(Q: np.ndarray) -> np.ndarray:
            Q = np.atleast_2d(np.asarray(Q, dtype=float))
            return u[[index[row.tobytes()] for row in Q]]

        return cls(name=name, schema=schema, utility=utility, optimum_value=float(u.max()), items=X)

    def noise_scale(self, n_pairs: int = 10_000, seed: int = 0) -> float:
        """Median ``|u(x) - u(x')|`` over random pairs (DT-PBO App. F.6)."""
        if self._scale is None:
            if self.finite:
                assert self.items is not None
                u = self.utility(self.items)
                i, j = np.triu_indices(len(u), k=1)
                self._scale = float(np.median(np.abs(u[i] - u[j])))
            else:
                self._scale = box_utility_scale(self.utility, self.schema.bounds, n_pairs, seed)
        return self._scale


class PreferenceOracle:
    """Answers "a or b?" from a utility function, optionally with probit noise.

    With ``noise_r > 0``: ``P(a > b) = Phi((u(a) - u(b)) / (noise_r * scale))`` where
    ``scale`` is the problem's :meth:`Problem.noise_scale` (DT-PBO App. F.6). With an
    absolute ``noise_sigma`` (KappaSharp Eq. 1, each option's utility perturbed by
    ``N(0, sigma^2)``): ``P(a > b) = Phi((u(a) - u(b)) / (sqrt(2) sigma))``. Noiseless
    exact ties are broken by a fair coin.
    """

    def __init__(
        self,
        problem: Problem,
        noise_r: float,
        rng: np.random.Generator,
        noise_sigma: float | None = None,
    ) -> None:
        if noise_r < 0:
            raise ValueError(f"noise_r must be >= 0, got {noise_r}")
        if noise_sigma is not None and noise_sigma < 0:
            raise ValueError(f"noise_sigma must be >= 0, got {noise_sigma}")
        self.problem = problem
        self.noise_r = float(noise_r)
        self.rng = rng
        if noise_sigma is not None:
            # KappaSharp convention: y = f + eps, eps ~ N(0, sigma^2) per option
            self.sigma = float(np.sqrt(2.0) * noise_sigma)
        else:
            self.sigma = noise_r * problem.noise_scale() if noise_r > 0 else 0.0

    def prefers_first(self, ua: np.ndarray, ub: np.ndarray) -> np.ndarray:
        """Boolean array: is ``a`` preferred for each (ua, ub)?"""
        ua = np.asarray(ua, dtype=float)
        ub = np.asarray(ub, dtype=float)
        u = self.rng.random(ua.shape)
        if self.sigma > 0:
            return u < ndtr((ua - ub) / self.sigma)
        return np.where(ua == ub, u < 0.5, ua > ub)
