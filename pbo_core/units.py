"""Units of attributes: which name a currency, which a duration (hours per unit).

The one home of unit words: :func:`is_money` (a numeric attribute measured in money),
:func:`hours_per_unit` (hours in one unit of a time attribute; only where the analysis
plan names the attribute as a travel time does a value of time follow from it) and
:func:`singular_unit`. :mod:`pbo_core.explain.labels` re-exports them.
"""

from __future__ import annotations

import re

from pbo_core.data import Feature

__all__ = [
    "MONEY_UNITS",
    "hours_per_unit",
    "is_money",
    "is_money_unit",
    "singular_unit",
    "unit_in_name",
]

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


#: Unit words a column name may end with (lower case) -> the unit written in the
#: attribute table: durations, currencies (ISO codes upper case), shares and distances.
_NAME_UNITS = {
    **{w: "s" for w in ("s", "sec", "secs", "second", "seconds")},
    **{w: "min" for w in ("min", "mins", "minute", "minutes")},
    **{w: "h" for w in ("h", "hr", "hrs", "hour", "hours")},
    **{w: w.upper() for w in ("chf", "eur", "usd", "gbp", "dkk", "sek", "nok")},
    "euro": "EUR", "euros": "EUR", "dollar": "USD", "dollars": "USD",
    "guilder": "guilders", "guilders": "guilders", "cent": "cents", "cents": "cents",
    "pence": "pence", "yen": "yen", "€": "EUR", "$": "USD", "£": "GBP", "¥": "yen",
    "pct": "%", "percent": "%", "%": "%", "km": "km",
}  # fmt: skip
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _bracketed(text: str) -> str | None:
    """What the last brackets at the end of ``text`` hold (``time (min)`` -> ``min``;
    ``None`` without them, or when they hold nothing or another bracket). In one pass: a
    regular expression for it took 9 s on a 2,000-character column name."""
    if not text.endswith((")", "]")):
        return None
    start = max(text.rfind("(", 0, len(text) - 1), text.rfind("[", 0, len(text) - 1))
    inside = text[start + 1 : -1]
    if start < 0 or not inside or any(c in "()[]" for c in inside):
        return None
    return inside


def unit_in_name(name: str) -> str:
    """The unit a column's name states, or ``""``: a last word after the name's stem
    (``time_min``, ``TT_minutes``, ``cost_chf``, ``priceEUR``, ``duration_h``) or a unit in
    brackets at its end (``time (min)``, ``price [€]``).

    Only the unit: whether a duration is a travel time is the analysis plan's question
    (:mod:`pbo_core.plan` never takes a time role from a unit).
    """
    text = str(name).strip()
    inside = _bracketed(text)
    if inside is not None:
        return _NAME_UNITS.get(inside.strip().lower(), "")
    words = [w for w in re.split(r"[^0-9A-Za-z€$£¥%]+", _CAMEL.sub("_", text)) if w]
    if len(words) < 2:  # a column named "min" or "hours" states no stem's unit
        return ""
    return _NAME_UNITS.get(words[-1].lower(), "")


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
