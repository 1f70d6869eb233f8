"""Query strategies: a surrogate plus the rule that picks the next comparison.

Modules: :mod:`~pbo_core.strategies.base` (the :class:`Strategy` protocol, ``LoopState``),
:mod:`~pbo_core.strategies.dt` (DT-PBO rules), :mod:`~pbo_core.strategies.gp` (GP + EUBO),
:mod:`~pbo_core.strategies.linear_leaves` (linear-leaf trees + EUBO),
:mod:`~pbo_core.strategies.random` (random search),
:mod:`~pbo_core.strategies.botorch` (BoTorch reference, optional). Named methods are
entries of the one model registry, :mod:`pbo_core.registry`.
"""

from pbo_core.strategies.base import LoopState, QuerySide, Strategy
from pbo_core.strategies.dt import DTStrategy, RandomStrategy, WithinRule
from pbo_core.strategies.gp import GPStrategy
from pbo_core.strategies.linear_leaves import LinearLeafStrategy
from pbo_core.strategies.random import RandomSearchStrategy

__all__ = [
    "DTStrategy",
    "GPStrategy",
    "LinearLeafStrategy",
    "LoopState",
    "QuerySide",
    "RandomSearchStrategy",
    "RandomStrategy",
    "Strategy",
    "WithinRule",
]
