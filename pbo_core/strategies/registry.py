"""The one method registry: method name -> a fresh strategy.

Benchmarks (``python -m pbo_core.bench``), case-study experiments, live elicitation and
the dashboard all build strategies through :func:`make_strategy`. The BoTorch reference
(``botorch-gp``) needs the optional ``bench`` extra and is imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable

from pbo_core.models.gp.kappasharp import EQ1_NOISE_VAR
from pbo_core.strategies.base import Strategy
from pbo_core.strategies.dt import DTStrategy, RandomStrategy
from pbo_core.strategies.gp import GPStrategy
from pbo_core.strategies.linear_leaves import LinearLeafStrategy

__all__ = ["METHODS", "SUSHI_METHODS", "make_strategy"]


def _botorch(name: str, kappasharp: str = "off") -> Callable[..., Strategy]:
    def factory(**kw: object) -> Strategy:
        # delayed import: BotorchStrategy pulls in torch and botorch (optional bench extra)
        from pbo_core.strategies.botorch import BotorchStrategy

        return BotorchStrategy(name=name, kappasharp=kappasharp, **kw)  # type: ignore[arg-type]

    return factory


#: Named methods: name -> factory. Factories take keyword options: the DT methods
#: ``DTSurrogate`` options (``ratio``, ``max_depth``), the GP methods ``eubo``, ``tau``,
#: ``alpha`` (see :class:`~pbo_core.strategies.gp.GPStrategy`), the ``botorch-gp*``
#: methods ``priors``, ``tau``, ``alpha`` (:class:`~pbo_core.strategies.botorch.BotorchStrategy`),
#: the linear-leaf methods ``slope_prior`` and ``LinearLeafDTSurrogate`` options
#: (:class:`~pbo_core.strategies.linear_leaves.LinearLeafStrategy`).
METHODS: dict[str, Callable[..., Strategy]] = {
    "dt": lambda **kw: DTStrategy(within="auto", name="dt", **kw),
    "dt-literal": lambda **kw: DTStrategy(within="none", name="dt-literal", ties="first", **kw),
    "dt-incumbent": lambda **kw: DTStrategy(
        within="incumbent", within_every=2, name="dt-incumbent", **kw
    ),
    "dt-local": lambda **kw: DTStrategy(within="incumbent", within_every=1, name="dt-local", **kw),
    "dt-topleaf": lambda **kw: DTStrategy(
        within="top-leaf", within_every=2, name="dt-topleaf", **kw
    ),
    # the paper's top-leaf rule on every query (finite sets, Sushi "dt-toponly")
    "dt-toponly": lambda **kw: DTStrategy(
        within="top-leaf", within_every=1, name="dt-toponly", **kw
    ),
    # qEUBO only with latest-winner ties (Sushi "no top-leaf prioritisation")
    "dt-notop": lambda **kw: DTStrategy(within="none", name="dt-notop", **kw),
    # App. C.3 I_struct with the leaf's split s*_A held fixed (the paper's definition)
    "dt-lambda": lambda **kw: DTStrategy(within="lambda", lam=1.0, name="dt-lambda", **kw),
    # the earlier variant: the best split re-optimised after appending the pair
    "dt-lambda-reopt": lambda **kw: DTStrategy(
        within="lambda", lam=1.0, lambda_split="reopt", name="dt-lambda-reopt", **kw
    ),
    "dt-keep": lambda **kw: DTStrategy(
        within="none", straddlers="keep", **{"max_depth": 6, **kw}, name="dt-keep"
    ),
    "dt-random": lambda **kw: RandomStrategy(**kw),
    # linear leaves: qEUBO over the joint Gaussian posterior (options: slope_prior, n_raw,
    # LinearLeafDTSurrogate options such as max_depth)
    "dt-linear": lambda **kw: LinearLeafStrategy(name="dt-linear", **kw),
    # the textbook baseline: one leaf, the Bayesian linear probit with the same EUBO
    "linear-eubo": lambda **kw: LinearLeafStrategy(
        name="linear-eubo", **{"max_depth": 0, "slopes": "shared", **kw}
    ),
    "gp": lambda **kw: GPStrategy(name="gp", **kw),
    "gp-ks-static": lambda **kw: GPStrategy(kappasharp="static", name="gp-ks-static", **kw),
    "gp-ks-adaptive": lambda **kw: GPStrategy(kappasharp="adaptive", name="gp-ks-adaptive", **kw),
    # Eq. 12's 2 sigma^2 read as the simulated noise (sigma = 0.1), not the model's own 2
    "gp-ks-adaptive-eq1": lambda **kw: GPStrategy(
        kappasharp="adaptive",
        kappasharp_score_noise_var=EQ1_NOISE_VAR,
        name="gp-ks-adaptive-eq1",
        **kw,
    ),
    "gp-fixed20": lambda **kw: GPStrategy(kappasharp="fixed20", name="gp-fixed20", **kw),
    # connected querying (Xu et al. 2024; KappaSharp Table 5): one side is x_{t-1}
    "gp-connected": lambda **kw: GPStrategy(connected=True, name="gp-connected", **kw),
    "gp-ks-jitter": lambda **kw: GPStrategy(kappasharp="jitter", name="gp-ks-jitter", **kw),
    "gp-ks-diagonal": lambda **kw: GPStrategy(kappasharp="diagonal", name="gp-ks-diagonal", **kw),
    "gp-ks-metriconly": lambda **kw: GPStrategy(
        kappasharp="metriconly", name="gp-ks-metriconly", **kw
    ),
    "gp-ks-covonly": lambda **kw: GPStrategy(kappasharp="covonly", name="gp-ks-covonly", **kw),
    # BoTorch's PairwiseGP (bench extra); option ``priors`` = "current" | "0.6"
    "botorch-gp": _botorch("botorch-gp"),
    "botorch-gp-ks-static": _botorch("botorch-gp-ks-static", "static"),
    "botorch-gp-ks-adaptive": _botorch("botorch-gp-ks-adaptive", "adaptive"),
    "botorch-gp-fixed20": _botorch("botorch-gp-fixed20", "fixed20"),
}

#: The methods of the Sushi PBO experiment (Fig. 3/7).
SUSHI_METHODS = ("dt", "dt-toponly", "dt-random", "dt-notop", "gp")


def make_strategy(name: str, **options: object) -> Strategy:
    """A fresh strategy for a named method (see :data:`METHODS`).

    Parameters
    ----------
    name
        Method name.
    **options
        Keyword options of the method's factory (e.g. ``ratio`` for DT methods, ``tau``
        for GP methods); an option the method does not take raises ``TypeError``.
    """
    try:
        factory = METHODS[name]
    except KeyError:
        raise KeyError(f"unknown method {name!r}; known methods: {sorted(METHODS)}") from None
    return factory(**options)
