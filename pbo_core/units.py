"""Units of attributes, and the one rule and the one conversion that read them.

The one home of unit words:

* :func:`unit_in_name`: the unit a column's *name* states (``time_min`` -> min), used by
  the importer to fill the attribute table's unit (shown, editable; never a role);
* :func:`money_candidate`: **the one money rule**. A study's money attribute is decided
  once, by its loader or at import, and written in its analysis plan
  (:class:`pbo_core.plan.AnalysisPlan`); this rule only *proposes* it there (a numeric
  attribute whose unit is a currency, else one whose name says price, cost, fare, fee or
  toll), and the proposal is shown with how it was made. Nothing downstream guesses a
  money attribute again: pages, commands, the report and the hierarchy read the plan;
* :func:`tradeoff_unit`: **the one unit conversion** of a ratio of two slopes (value of
  time, willingness to pay): a time in a stated duration unit is converted to "per
  hour"; any other stated unit is kept; no unit is said as such ("units of Cost per unit
  of Travel time"), never assumed;
* :func:`hours_per_unit`, :func:`singular_unit`: the words behind them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pbo_core.data import Feature

__all__ = [
    "MONEY_UNITS",
    "hours_per_unit",
    "is_currency",
    "money_candidate",
    "singular_unit",
    "tradeoff_unit",
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
#: Hours per unit of the duration units a time attribute may be stated in.
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

    Only the unit: whether a duration is a travel time is the analysis plan's question.
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


def is_currency(unit: str) -> bool:
    """Does ``unit`` name a currency (``"CHF"``, ``"cents"``, ``"¢/kWh"``)?"""
    u = unit.strip().lower()
    return bool(u) and (u in MONEY_UNITS or u.split("/")[0] in MONEY_UNITS)


def money_candidate(features: Sequence[Any]) -> tuple[str, str]:
    """The one money rule: the attribute proposed as money, and how, or ``("", "")``.

    The first numeric attribute whose unit is a currency (``"by its unit (CHF)"``), else
    the first whose name says price, cost, fare, fee or toll (``"by its name"``).
    ``features``: :class:`~pbo_core.data.Feature` or anything with ``name``, ``kind`` and
    ``unit`` (an importer's attribute table). A
    loader or the importer writes the answer in the study's analysis plan, where the
    analyst sees and may change it; nothing else calls this rule.
    """
    numeric = [f for f in features if f.kind == "numeric"]
    for f in numeric:
        if is_currency(f.unit):
            return f.name, f"by its unit ({f.unit})"
    for f in numeric:
        if not f.unit.strip() and _MONEY_NAME.search(f.name.lower()):
            return f.name, "by its name"
    return "", ""


def hours_per_unit(feature: Feature) -> float | None:
    """Hours in one unit of a numeric attribute stated in a duration (``"min"`` ->
    1/60), else ``None`` (no unit, or not a duration: nothing is assumed)."""
    if feature.kind != "numeric":
        return None
    return _HOURS.get(feature.unit.strip().lower())


def tradeoff_unit(money: Feature, other: Feature, *, time: bool = False) -> tuple[float, str]:
    """``(scale, unit)`` of the ratio ``b_other / b_money`` as it is shown: multiply the
    ratio by ``scale`` and write ``unit`` after it.

    * ``time`` (the plan's travel-time attribute) stated in a duration: per hour
      (``(60.0, "CHF per hour")`` for minutes);
    * any other stated unit is kept: ``(1.0, "CHF per km")``; an ordinal attribute is
      per level;
    * no unit is said, never assumed: ``(1.0, "units of Cost per unit of Travel time")``.
    """
    cash = money.unit.strip() or f"units of {money.display}"
    h = hours_per_unit(other) if time else None
    if h is not None:
        return 1.0 / h, f"{cash} per hour"
    if other.kind == "ordinal":
        return 1.0, f"{cash} per level"
    per = singular_unit(other.unit) if other.unit.strip() else f"unit of {other.display}"
    return 1.0, f"{cash} per {per}"
