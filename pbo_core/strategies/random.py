"""Random search: uniformly random comparisons, the floor every PBO method must beat.

The queries are :func:`~pbo_core.strategies.base.random_query` draws (two new uniform
points in a box, an unasked item pair in a finite set) from the strategy's Generator.
The recommendation needs no model: the Copeland score (wins minus losses,
:class:`~pbo_core.models.bradley_terry.CopelandSurrogate`) of the compared items, ties to
the latest winner. The "final best utility" of KappaSharp's tables (the best true
utility among the compared points) does not depend on the recommendation at all.
"""

from __future__ import annotations

import numpy as np

from pbo_core.data import PreferenceData
from pbo_core.models.bradley_terry import CopelandSurrogate
from pbo_core.strategies.base import LoopState, QuerySide, random_query

__all__ = ["RandomSearchStrategy"]


class RandomSearchStrategy:
    """Uniformly random comparisons; Copeland scores make the recommendation.

    Parameters
    ----------
    name
        Method name stored in results.
    """

    ties = "latest-winner"

    def __init__(self, name: str = "random") -> None:
        self.name = name
        self.n_leaves = 0
        self.model = CopelandSurrogate()

    def fit(self, data: PreferenceData) -> None:
        """Count every item's wins and losses."""
        self.model.fit(data)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Copeland scores (wins minus losses) of the training items ``X``."""
        return self.model.predict(X)

    def propose(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        """A uniformly random comparison."""
        return random_query(state, rng)
