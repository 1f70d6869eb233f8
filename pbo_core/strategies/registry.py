"""The one method registry: method name -> a fresh strategy.

Benchmarks (``python -m pbo_core.bench``), case-study experiments, live elicitation and
the dashboard all build strategies through :func:`make_strategy`. The BoTorch reference
(``botorch-gp``) needs the optional ``bench`` extra and is imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable

from pbo_core.strategies.base import Strategy
from pbo_core.strategies.dt import DTStrategy, RandomStrategy
from pbo_core.strategies.gp import GPStrategy

__all__ = ["METHODS", "SUSHI_METHODS", "make_strategy"]


def _botorch_strategy() -> Strategy:
    # delayed import: BotorchStrategy pulls in torch and botorch (optional bench extra)
    from pbo_core.strategies.botorch import BotorchStrategy

    return BotorchStrategy()


#: Named methods: name -> factory.
METHODS: dict[str, Callable[[], Strategy]] = {
    "dt": lambda: DTStrategy(within="auto", name="dt"),
    "dt-literal": lambda: DTStrategy(within="none", name="dt-literal", ties="first"),
    "dt-incumbent": lambda: DTStrategy(within="incumbent", within_every=2, name="dt-incumbent"),
    "dt-local": lambda: DTStrategy(within="incumbent", within_every=1, name="dt-local"),
    "dt-topleaf": lambda: DTStrategy(within="top-leaf", within_every=2, name="dt-topleaf"),
    # the paper's top-leaf rule on every query (finite sets, Sushi "dt-toponly")
    "dt-toponly": lambda: DTStrategy(within="top-leaf", within_every=1, name="dt-toponly"),
    # qEUBO only with latest-winner ties (Sushi "no top-leaf prioritisation")
    "dt-notop": lambda: DTStrategy(within="none", name="dt-notop"),
    "dt-lambda": lambda: DTStrategy(within="lambda", lam=1.0, name="dt-lambda"),
    "dt-keep": lambda: DTStrategy(within="none", straddlers="keep", max_depth=6, name="dt-keep"),
    "dt-random": lambda: RandomStrategy(),
    "gp": lambda: GPStrategy(name="gp"),
    "gp-ks-static": lambda: GPStrategy(kappasharp="static", name="gp-ks-static"),
    "gp-ks-adaptive": lambda: GPStrategy(kappasharp="adaptive", name="gp-ks-adaptive"),
    "botorch-gp": _botorch_strategy,
}

#: The methods of the Sushi PBO experiment (Fig. 3/7).
SUSHI_METHODS = ("dt", "dt-toponly", "dt-random", "dt-notop", "gp")


def make_strategy(name: str) -> Strategy:
    """A fresh strategy for a named method (see :data:`METHODS`)."""
    try:
        return METHODS[name]()
    except KeyError:
        raise KeyError(f"unknown method {name!r}; known methods: {sorted(METHODS)}") from None
