"""Units of attributes: which name a currency, which a duration (hours per unit).

The one home of unit words: :func:`is_money` (a numeric attribute measured in money),
:func:`hours_per_unit` (hours in one unit of a time attribute; only where the analysis
plan names the attribute as a travel time does a value of time follow from it) and
:func:`singular_unit`. :mod:`pbo_core.explain.labels` re-exports them.
"""

from __future__ import annotations

import re

from pbo_core.data import Feature

__all__ = ["MONEY_UNITS", "hours_per_unit", "is_money", "is_money_unit", "singular_unit"]

#: Units (lower case) that name a currency.
MONEY_UNITS = frozenset(
    {
        "guilder", "guilders", "chf", "eur", "euro", "euros", "€", "$", "usd", "dollar",
        "dollars", "gbp", "£", "brb", "bds$", "dkk", "sek", "nok", "yen", "¥", "cents",
        "cent", "¢", "pence",
    }
)  # fmt: skip
_MONEY_NAME = re.compile(r"(^|[^a-z])(price|cost|fare|fee|toll)([^a-z]|$)")
#: Hours per unit of the time units a travel-time attribute uses.
_HOURS = {
    "s": 1 / 3600, "sec": 1 / 3600, "secs": 1 / 3600, "second": 1 / 3600, "seconds": 1 / 3600,
    "min": 1 / 60, "mins": 1 / 60, "minute": 1 / 60, "minutes": 1 / 60,
    "h": 1.0, "hr": 1.0, "hrs": 1.0, "hour": 1.0, "hours": 1.0,
}  # fmt: skip


def singular_unit(unit: str) -> str:
    """``"guilders"`` -> ``"guilder"``, ``"years"`` -> ``"year"``; others unchanged."""
    u = unit.strip()
    if len(u) > 3 and u.isalpha() and u.endswith("s") and not u.endswith("ss"):
        return u[:-1]
    return u


def is_money(feature: Feature) -> bool:
    """A numeric attribute measured in money (by its unit, or by its name)."""
    if feature.kind != "numeric":
        return False
    unit = feature.unit.strip().lower()
    if unit in MONEY_UNITS or unit.split("/")[0] in MONEY_UNITS:
        return True
    return not unit and bool(_MONEY_NAME.search(feature.name.lower()))


def hours_per_unit(feature: Feature) -> float | None:
    """Hours in one unit of a numeric time attribute (``"min"`` -> 1/60), else ``None``."""
    if feature.kind != "numeric":
        return None
    return _HOURS.get(feature.unit.strip().lower())


def is_money_unit(feature: Feature) -> bool:
    """A numeric attribute whose *unit* names a currency (its name alone does not count)."""
    unit = feature.unit.strip().lower()
    return (
        feature.kind == "numeric"
        and bool(unit)
        and (unit in MONEY_UNITS or unit.split("/")[0] in MONEY_UNITS)
    )
