"""Readable text: split rules, attribute tables, slopes and trade-off ratios.

The one place analysts' words come from:

* split rules: :func:`describe_threshold` (``"Comfort class: 1 (middle) .. 2 (least
  comfortable)"``, ``"contract >= 1 year"``), :func:`describe_categories` (``"party in
  {Democrat, Independent}"``) and :func:`describe_side`, with snake_case codes in words
  (:func:`humanize`). They live in the low-level :mod:`pbo_core.rules` and
  :mod:`pbo_core.text` (user and segment trees below this layer word their splits with
  them) and are re-exported here;
* :func:`attribute_table`: one row per attribute of a schema, as the dashboard and the
  report show it;
* slopes and trade-off ratios in the attributes' own units (below).

A linear leaf (:class:`~pbo_core.models.linear_leaves.LinearLeafDTSurrogate`) changes the
utility (in units of the comparison noise ``sigma_noise``) by ``b_j`` per unit of
attribute ``j``. Analysts read two things from such slopes:

* the slope itself, in the attribute's unit with a direction word: ``"Price: -0.32 per
  guilder (more is worse)"``; travel times in minutes read per hour (``"-1.7 per hour"``);
* trade-off ratios against the price attribute ``p`` (the first numeric attribute whose
  unit is a currency, or whose name says price/cost/fare). The money one unit of ``x`` is
  worth at equal utility is

  .. math::

      \\mathrm{WTP}_x = -b_x / b_p, \\qquad
      \\mathrm{VOT} = b_t / b_p \\cdot h_t^{-1} \\quad (1)

  with the *value of time* (VOT) the money a person pays to save one hour of travel
  time ``t`` (``h_t`` hours per unit of ``t``: 1/60 for minutes).

Interval (Fieller 1954). Under the Gaussian posterior ``(b_x, b_p) ~ N((a, c), V)`` the
95 % set of ratios ``r = b_x / b_p`` consistent with it is

.. math::

    \\{ r : (a - r c)^2 \\le z^2 (V_{xx} - 2 r V_{xp} + r^2 V_{pp}) \\}, \\qquad (2)

a quadratic inequality ``A r^2 + B r + C <= 0`` with ``A = c^2 - z^2 V_pp``. When
``A > 0`` (the price slope is distinguishable from 0 at the level) the set is the
bounded interval between the roots; otherwise it is unbounded (the whole line or two
rays) and the ratio has no finite interval: we say so instead of printing one
(:class:`Ratio` ``bounded=False``). The delta method's symmetric interval would hide
that; Fieller's is exact for a ratio of jointly Gaussian slopes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from pbo_core.data import Feature, Schema
from pbo_core.rules import describe_categories, describe_side, describe_threshold
from pbo_core.text import fmt_number, humanize

__all__ = [
    "MONEY_UNITS",
    "Ratio",
    "TradeOff",
    "attribute_table",
    "describe_categories",
    "describe_side",
    "describe_threshold",
    "fieller_ratio",
    "hours_per_unit",
    "humanize",
    "is_money",
    "price_column",
    "ratio_text",
    "singular_unit",
    "slope_label",
    "tradeoff_table",
    "tradeoffs",
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
_Z95 = 1.959963984540054


def attribute_table(schema: Schema) -> pd.DataFrame:
    """One row per feature: name, label, kind, levels or range, unit, description."""
    rows = []
    for f in schema.features:
        if f.kind == "numeric":
            rng = f"{fmt_number(f.bounds[0])} – {fmt_number(f.bounds[1])}" if f.bounds else ""
        elif f.kind == "binary":
            rng = " / ".join(f.levels or ("0", "1"))
        else:
            rng = " / ".join(f.levels)
        rows.append(
            {
                "feature": f.name,
                "label": f.display,
                "kind": f.kind,
                "levels or range": rng,
                "unit": f.unit,
                "description": f.description,
            }
        )
    return pd.DataFrame(rows)


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


def _num(v: float, digits: int = 2) -> str:
    """A signed number with ``digits`` significant digits (at least 2 decimals above 0.1)."""
    if not math.isfinite(v):
        return "n/a"
    if v == 0:
        return "0"
    if abs(v) >= 0.1:
        return f"{v:+.2f}" if abs(v) < 10 else f"{v:+.1f}"
    return f"{v:+.{digits}g}"


def _amount(v: float) -> str:
    """An unsigned-looking amount (money), 3 significant digits."""
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def slope_label(
    feature: Feature, column_label: str, slope: float, code: Any = None, short: bool = False
) -> str:
    """One slope in the attribute's own unit with a direction word.

    Numeric: ``"Price: -0.32 per guilder (more is worse)"``; times in minutes (or seconds)
    per hour (minute). Ordinal: per level step toward the last level ("up"). Indicator columns
    (binary, categorical level, multi-hot value): the shift against the reference.
    ``short`` (tree boxes) drops the "(more is ...)" phrase of numeric and ordinal slopes.
    """
    word = "better" if slope > 0 else "worse"
    tail = "" if short else f" (more is {word})"
    if feature.kind == "numeric":
        h = hours_per_unit(feature)
        if h is not None and h < 1:
            per, value = ("minute", slope * (1 / 60) / h) if h < 1 / 60 else ("hour", slope / h)
        else:
            per, value = singular_unit(feature.unit) or "unit", slope
        return f"{feature.display}: {_num(value)} per {per}{tail}"
    if feature.kind == "ordinal" and code is None and feature.levels:
        return f"{feature.display}: {_num(slope)} per level up{tail}"
    return f"{column_label}: {_num(slope)} ({word})"


@dataclass(frozen=True)
class Ratio:
    """A ratio of two jointly Gaussian slopes with its Fieller interval (2).

    ``bounded`` is ``False`` when the interval is unbounded (the denominator's slope is
    not distinguishable from 0 at the level); ``low``/``high`` are then NaN.
    """

    estimate: float
    low: float
    high: float
    bounded: bool

    def scaled(self, factor: float) -> Ratio:
        """The ratio times ``factor`` (a negative factor swaps the bounds)."""
        lo, hi = self.low * factor, self.high * factor
        return Ratio(self.estimate * factor, min(lo, hi), max(lo, hi), self.bounded)


def fieller_ratio(
    num: float, den: float, cov: np.ndarray | Sequence[Sequence[float]], level: float = 0.95
) -> Ratio:
    """Fieller's interval (2) for ``num / den`` with ``cov`` the 2x2 covariance of (num, den).

    Raises
    ------
    ValueError
        If ``cov`` is not a symmetric positive semi-definite 2x2 matrix.
    """
    V = np.asarray(cov, dtype=float)
    if V.shape != (2, 2) or not np.allclose(V, V.T) or np.linalg.eigvalsh(V).min() < -1e-12:
        raise ValueError("cov must be a symmetric PSD 2x2 matrix")
    z = _Z95 if level == 0.95 else float(ndtri(0.5 + level / 2))
    z2 = z * z
    est = num / den if den != 0 else float("nan")
    A = den * den - z2 * V[1, 1]
    B = -2.0 * (num * den - z2 * V[0, 1])
    C = num * num - z2 * V[0, 0]
    if A <= 0 or den == 0:
        return Ratio(est, float("nan"), float("nan"), False)
    disc = max(B * B - 4 * A * C, 0.0)
    root = math.sqrt(disc)
    return Ratio(est, (-B - root) / (2 * A), (-B + root) / (2 * A), True)


def price_column(schema: Schema, columns: Sequence[str]) -> int | None:
    """Index (into ``columns``, design names) of the price attribute's column, if any."""
    for i, name in enumerate(columns):
        if name in schema.names and is_money(schema[name]):
            return i
    return None


@dataclass(frozen=True)
class TradeOff:
    """One trade-off ratio (1) of one leaf (``leaf=None``: the item-weighted average)."""

    leaf: int | None
    attribute: str
    kind: str  # "value of time" or "willingness to pay"
    unit: str  # e.g. "guilders per hour"
    ratio: Ratio

    def text(self, short: bool = False) -> str:
        """``"Value of time: 10.6 guilders per hour [95% CI 8.9, 12.5]"`` (``short``: no
        "95% CI" and a short note when the interval is unbounded)."""
        head = "Value of time" if self.kind == "value of time" else f"Value of {self.attribute}"
        return f"{head}: {ratio_text(self.ratio, self.unit, short=short)}"


def tradeoffs(model: Any, respondent: Any = None) -> list[TradeOff]:
    """Value of time and willingness to pay, per leaf and overall, with Fieller intervals.

    ``model`` has linear leaves (``slope_posterior``, ``slope_columns_``, ``schema_``,
    ``item_leaf_``); the overall ratio uses the slopes averaged over leaves weighted by
    their items. Empty when the model has no price slope. Time attributes give the value
    of time (money per hour saved); other numeric and ordinal attributes the money one
    more unit (level) is worth, ``-b_x / b_p``.
    """
    cols = list(getattr(model, "slope_columns_", []))
    schema: Schema = model.schema_
    p = price_column(schema, cols)
    if p is None:
        return []
    money_pl = schema[cols[p]].unit or "money"
    means, covs = model.slope_posterior(respondent)
    w = np.bincount(model.item_leaf_, minlength=model.n_leaves_).astype(float)
    overall = model.slope_posterior(respondent, weights=w) if w.sum() > 0 else None
    blocks: list[tuple[int | None, np.ndarray, np.ndarray]] = [
        (leaf, means[leaf], covs[leaf]) for leaf in range(model.n_leaves_)
    ]
    if overall is not None:
        blocks.append((None, overall[0], overall[1]))
    out: list[TradeOff] = []
    for j, name in enumerate(cols):
        if j == p or name not in schema.names:
            continue
        f = schema[name]
        h = hours_per_unit(f)
        if f.kind not in ("numeric", "ordinal"):
            continue
        for leaf, mu, S in blocks:
            r = fieller_ratio(mu[j], mu[p], S[np.ix_([j, p], [j, p])])
            if h is not None:
                out.append(
                    TradeOff(
                        leaf, f.display, "value of time", f"{money_pl} per hour", r.scaled(1 / h)
                    )
                )
            else:
                per = "level" if f.kind == "ordinal" else (singular_unit(f.unit) or "unit")
                out.append(
                    TradeOff(
                        leaf,
                        f.display,
                        "willingness to pay",
                        f"{money_pl} per {per}",
                        r.scaled(-1.0),
                    )
                )
    return out


def ratio_text(r: Ratio, unit: str, short: bool = False) -> str:
    """``"10.6 guilders per hour [95% CI 8.9, 12.5]"``, or the estimate with the reason
    there is no finite interval (``short``: ``"10.6 guilders/hour [8.9, 12.5]"``)."""
    if r.bounded:
        ci = f"[{'' if short else '95% CI '}{_amount(r.low)}, {_amount(r.high)}]"
    else:
        ci = "[CI unbounded]" if short else "[95% CI unbounded: price effect not clearly nonzero]"
    return f"{_amount(r.estimate)} {unit.replace(' per ', '/') if short else unit} {ci}"


def tradeoff_table(
    items: Sequence[TradeOff], leaf_numbers: Sequence[int] | None = None
) -> pd.DataFrame:
    """The trade-offs as a table (leaf shown with its displayed number; overall last)."""
    rows = []
    for t in items:
        num = (
            None
            if t.leaf is None
            else (int(leaf_numbers[t.leaf]) if leaf_numbers is not None else t.leaf)
        )
        rows.append(
            {
                "leaf": "overall" if num is None else str(num),
                "trade-off": "value of time"
                if t.kind == "value of time"
                else f"value of {t.attribute}",
                "estimate": t.ratio.estimate,
                "95% CI low": t.ratio.low,
                "95% CI high": t.ratio.high,
                "unit": t.unit,
                "interval": "Fieller"
                if t.ratio.bounded
                else "unbounded (price effect not clearly nonzero)",
            }
        )
    return pd.DataFrame(rows)


def slope_columns(model: Any) -> list[tuple[Feature, Any]]:
    """``(feature, design column)`` of every slope column of a linear-leaf model."""
    schema: Schema = model.schema_
    by_name = {c.name: c for c in model.design_.columns}
    out = []
    for name in model.slope_columns_:
        col = by_name[name]
        out.append((schema.features[schema.columns[col.source].feature], col))
    return out


def has_slopes(model: Any) -> bool:
    """Does ``model`` have linear leaves with at least one slope column?"""
    return bool(getattr(model, "slope_columns_", None)) and hasattr(model, "slope_posterior")


def leaf_slope_lines(model: Any, leaf: int, short: bool = False) -> list[str]:
    """The slope labels of one leaf (:func:`slope_label`), in design-column order."""
    mean, _ = model.slope_posterior()
    return [
        slope_label(f, col.label, float(v), col.code, short=short)
        for (f, col), v in zip(slope_columns(model), mean[int(leaf)], strict=True)
    ]


def value_of_time(model: Any) -> dict[int | None, TradeOff]:
    """The value-of-time trade-off of every leaf (and ``None``: overall), if the model has
    a price and a time slope (the first time attribute)."""
    out: dict[int | None, TradeOff] = {}
    first = None
    for t in tradeoffs(model):
        if t.kind != "value of time":
            continue
        first = first or t.attribute
        if t.attribute == first:
            out[t.leaf] = t
    return out
