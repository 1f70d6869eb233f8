"""The BoTorch reference (``botorch-gp*``): BoTorch's own PairwiseGP and EUBO, asked
through :class:`~pbo_core.strategies.botorch.BotorchStrategy`. Its optional dependencies
(the ``bench`` extra: torch, botorch) are imported here, at the top, and
:mod:`pbo_core.registry` imports this module only when they are installed; without them
the entries are not offered and asking for one names the extra.
"""

from __future__ import annotations

from collections.abc import Callable

from pbo_core.registry.base import ModelSpec, register
from pbo_core.strategies.base import Strategy
from pbo_core.strategies.botorch import BotorchStrategy

__all__: list[str] = []


def _botorch(name: str, kappasharp: str = "off") -> Callable[..., Strategy]:
    def factory(**kw: object) -> Strategy:
        return BotorchStrategy(name=name, kappasharp=kappasharp, **kw)  # type: ignore[arg-type]

    return factory


for _spec in [
    ModelSpec(
        "botorch-gp",
        "BoTorch PairwiseGP with EUBO",
        "BoTorch's PairwiseGP (bench extra); option priors = current | 0.6",
        "gp",
        strategy=_botorch("botorch-gp"),
    ),
    ModelSpec(
        "botorch-gp-ks-static",
        "BoTorch PairwiseGP, static KappaSharp",
        "BoTorch's PairwiseGP with the static KappaSharp hook (bench extra)",
        "gp",
        strategy=_botorch("botorch-gp-ks-static", "static"),
    ),
    ModelSpec(
        "botorch-gp-ks-adaptive",
        "BoTorch PairwiseGP, adaptive KappaSharp",
        "BoTorch's PairwiseGP with the adaptive KappaSharp hook (bench extra)",
        "gp",
        strategy=_botorch("botorch-gp-ks-adaptive", "adaptive"),
    ),
    ModelSpec(
        "botorch-gp-fixed20",
        "BoTorch PairwiseGP, KappaSharp fixed at 20",
        "BoTorch's PairwiseGP with the condition number fixed to 20 (bench extra)",
        "gp",
        strategy=_botorch("botorch-gp-fixed20", "fixed20"),
    ),
]:
    register(_spec)
