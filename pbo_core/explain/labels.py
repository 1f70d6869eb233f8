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
  guilder (more is worse)"``; times stated in minutes read per hour (``"-1.7 per hour"``);
  an attribute with no stated unit reads per unit, never per an assumed one;
* trade-off ratios against the **money attribute** ``p``: the analysis plan's
  (:func:`money_attribute`; decided by the study's loader or at import, changed in the
  plan), and the text names it. The money one unit of ``x`` is worth at equal utility is

  .. math::

      \\mathrm{WTP}_x = -b_x / b_p, \\qquad
      \\mathrm{VOT} = b_t / b_p \\cdot h_t^{-1} \\quad (1)

  with the *value of time* (VOT) the money a person pays to save one hour of travel
  time ``t`` (``h_t`` hours per unit of ``t``: 1/60 for minutes). Units come from the
  study's description (:func:`pbo_core.units.tradeoff_unit`, the one conversion): a time
  with no stated unit gives "units of Cost per unit of Travel time", never "per hour".
  A money slope of the wrong sign (clearly positive: more money preferred) prices
  nothing: no ratio is shown, only the reason (:attr:`Ratio.reason`).

Interval (Fieller 1954). Under the Gaussian posterior ``(b_x, b_p) ~ N((a, c), V)`` the
95 % set of ratios ``r = b_x / b_p`` consistent with it is

.. math::

    \\{ r : (a - r c)^2 \\le z^2 (V_{xx} - 2 r V_{xp} + r^2 V_{pp}) \\}, \\qquad (2)

a quadratic inequality ``A r^2 + B r + C <= 0`` with ``A = c^2 - z^2 V_pp``. When
``A > 0`` (the money slope's own 95 % interval excludes 0) the set is the bounded
interval between the roots; otherwise it is unbounded (the whole line or two rays): the
data do not pin the money slope away from zero, so the ratio is **not identified** and
no point estimate is shown either, only the reason (:class:`Ratio` ``bounded=False``,
:func:`ratio_text`). The delta method's symmetric interval would hide that; Fieller's
is exact for a ratio of jointly Gaussian slopes.

Numbers are rounded to the precision their interval supports (:func:`ci_decimals`: two
significant digits of the interval's half-width), and every slope carries its 95 %
interval (long form) or ``±`` half-width with a "sign unsure" mark when the interval
contains 0 (tree boxes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from pbo_core.data import Feature, Schema
from pbo_core.plan import plan_of
from pbo_core.rules import describe_categories, describe_side, describe_threshold
from pbo_core.text import fmt_number, humanize
from pbo_core.units import MONEY_UNITS, hours_per_unit, singular_unit, tradeoff_unit

__all__ = [
    "MONEY_UNITS",
    "NOT_IDENTIFIED",
    "Ratio",
    "TradeOff",
    "attribute_table",
    "ci_decimals",
    "ci_text",
    "coefficient_slope_lines",
    "coefficient_tradeoffs",
    "coefficient_value_of_time",
    "describe_categories",
    "describe_side",
    "describe_threshold",
    "evidence_display",
    "fieller_ratio",
    "hours_per_unit",
    "humanize",
    "money_attribute",
    "money_candidates",
    "money_sign_reason",
    "price_column",
    "ratio_text",
    "singular_unit",
    "slope_label",
    "time_attribute",
    "tradeoff_table",
    "tradeoffs",
]

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


def ci_decimals(low: float, high: float, at_most: int = 6) -> int:
    """Decimals that give two significant digits of an interval's half-width: the
    precision the data support (``[8.3, 13.7]`` -> 1, ``[6, 28]`` -> 0)."""
    half = abs(high - low) / 2
    if not math.isfinite(half) or half <= 0:
        return 2
    return int(min(max(1 - math.floor(math.log10(half)), 0), at_most))


def _fixed(v: float, decimals: int, signed: bool = False) -> str:
    """``v`` with ``decimals`` decimals, thousands separated, never ``-0``."""
    if not math.isfinite(v):
        return "n/a"
    text = f"{v:{'+' if signed else ''},.{decimals}f}"
    if text.lstrip("+-").strip("0.,") == "":  # rounds to zero: no "-0"
        text = f"{0:.{decimals}f}"
    return text


def ci_text(estimate: float, low: float, high: float, signed: bool = False) -> tuple[str, str]:
    """The estimate and ``"[low, high]"`` rounded alike to the interval's precision."""
    d = ci_decimals(low, high)
    return (
        _fixed(estimate, d, signed),
        f"[{_fixed(low, d, signed)}, {_fixed(high, d, signed)}]",
    )


def _num(v: float, digits: int = 2) -> str:
    """A signed number with ``digits`` significant digits (at least 2 decimals above 0.1)."""
    if not math.isfinite(v):
        return "n/a"
    if v == 0:
        return "0"
    if abs(v) >= 0.1:
        return f"{v:+.2f}" if abs(v) < 10 else f"{v:+.1f}"
    return f"{v:+.{digits}g}"


def slope_label(
    feature: Feature,
    column_label: str,
    slope: float,
    code: Any = None,
    short: bool = False,
    sd: float | None = None,
) -> str:
    """One slope in the attribute's own unit with a direction word.

    Numeric: ``"Price: -0.32 per guilder (more is worse)"``; times in minutes (or seconds)
    per hour (minute). Ordinal: per level step toward the last level ("up"). Indicator columns
    (binary, categorical level, multi-hot value): the shift against the reference.
    ``short`` (tree boxes) drops the "(more is ...)" phrase of numeric and ordinal slopes.
    With ``sd`` (the slope's posterior sd) the slope carries its 95 % interval, rounded to
    its precision: ``"Price: -0.32 per guilder [95% CI -0.37, -0.27] (more is worse)"``;
    short: ``"Price: -0.32 ±0.05 per guilder"``. An interval that contains 0 says the sign
    is not clear (``"direction unclear"``; short: ``"sign unsure"``).
    """
    scale, per = 1.0, None
    if feature.kind == "numeric":
        h = hours_per_unit(feature)
        if h is not None and h < 1:
            per, scale = ("minute", (1 / 60) / h) if h < 1 / 60 else ("hour", 1 / h)
        else:
            per = singular_unit(feature.unit) or "unit"
    elif feature.kind == "ordinal" and code is None and feature.levels:
        per = "level up"
    value = slope * scale
    name = feature.display if per is not None else column_label
    sure = True
    if sd is not None and math.isfinite(sd) and sd > 0:
        half = _Z95 * sd * abs(scale)
        sure = abs(value) > half
        est, ci = ci_text(value, value - half, value + half, signed=True)
        unit = f" per {per}" if per is not None else ""
        if short:
            return f"{name}: {est} ±{_fixed(half, ci_decimals(-half, half))}{unit}" + (
                "" if sure else " (sign unsure)"
            )
        word = "better" if value > 0 else "worse"
        how = (
            (f"more is {word}" if per is not None else word)
            if sure
            else "direction unclear: the interval contains 0"
        )
        return f"{name}: {est}{unit} [95% CI {ci[1:-1]}] ({how})"
    word = "better" if slope > 0 else "worse"
    if per is None:
        return f"{column_label}: {_num(slope)} ({word})"
    tail = "" if short else f" (more is {word})"
    return f"{name}: {_num(value)} per {per}{tail}"


@dataclass(frozen=True)
class Ratio:
    """A ratio of two jointly Gaussian slopes with its Fieller interval (2).

    ``bounded`` is ``False`` when the interval is unbounded (the denominator's slope is
    not distinguishable from 0 at the level); ``low``/``high`` are then NaN and the
    ratio is not identified (:attr:`identified`): pages show the reason, not
    ``estimate``.
    """

    estimate: float
    low: float
    high: float
    bounded: bool
    #: Why no ratio is shown although the interval is bounded (a money slope of the
    #: wrong sign); ``""``: none.
    reason: str = ""

    @property
    def identified(self) -> bool:
        """Is the ratio identified and meaningful (a finite 95 % interval: the
        denominator's slope is distinguishable from 0; and no :attr:`reason` against it)?"""
        return self.bounded and not self.reason

    def scaled(self, factor: float) -> Ratio:
        """The ratio times ``factor`` (a negative factor swaps the bounds)."""
        lo, hi = self.low * factor, self.high * factor
        return Ratio(self.estimate * factor, min(lo, hi), max(lo, hi), self.bounded, self.reason)

    def refused(self, reason: str) -> Ratio:
        """The ratio with a reason it is not shown."""
        return Ratio(self.estimate, self.low, self.high, self.bounded, reason)


def money_sign_reason(coef: float, var: float, money: str) -> str:
    """Why a money slope prices nothing, or ``""``: a slope clearly above 0 (its 95 %
    interval excludes 0) says more of the money attribute is preferred, so a value of
    time or a willingness to pay from it would be meaningless (``-0.41 per hour``)."""
    sd = math.sqrt(max(float(var), 0.0))
    if not (coef > 0 and sd >= 0 and coef > _Z95 * sd):
        return ""
    z = f", z {coef / sd:.1f}" if sd > 0 else ""
    return (
        f"the {money or 'money'} slope is positive ({coef:+.3g}{z}): more {money or 'money'} "
        "is preferred, so it prices nothing; check that it is the money attribute"
    )


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


def money_candidates(schema: Schema) -> list[str]:
    """Names of the attributes that can be the money attribute (the numeric ones, in
    schema order; the analysis plan says which one is)."""
    return [f.name for f in schema.features if f.kind == "numeric"]


def money_attribute(study: Any) -> tuple[str | None, str]:
    """The study's money attribute and how it was chosen: the analysis plan's
    (:func:`pbo_core.plan.plan_of`), e.g. ``("price", "set by the study's loader")``, or
    ``(None, reason)`` when the plan names none."""
    plan = plan_of(study)
    if plan.money is None:
        why = next((n for n in plan.notes if n.startswith("money")), "money: none named")
        return None, why.split(": ", 1)[-1]
    return plan.money.attribute, plan.money.how


def time_attribute(study: Any) -> tuple[str | None, str]:
    """The study's travel-time attribute and how it was chosen (the analysis plan's;
    ``None``: none named, so no value of time is shown)."""
    plan = plan_of(study)
    if plan.time is None:
        return None, "no travel-time attribute named in the analysis plan"
    return plan.time.attribute, plan.time.how


def price_column(schema: Schema, columns: Sequence[str], money: str | None = None) -> int | None:
    """Index (into ``columns``, design names) of the money attribute ``money`` (a feature
    name: the analysis plan's), or ``None`` when it is not given or has no column. No
    money attribute is guessed here (:func:`pbo_core.units.money_candidate` proposes one
    at import, into the plan)."""
    if money is None:
        return None
    return list(columns).index(money) if money in columns else None


@dataclass(frozen=True)
class TradeOff:
    """One trade-off ratio (1) of one leaf (``leaf=None``: the item-weighted average)."""

    leaf: int | None
    attribute: str
    kind: str  # "value of time" or "willingness to pay"
    unit: str  # e.g. "guilders per hour"
    ratio: Ratio
    #: The money attribute divided by (its label), named beside every value.
    money: str = ""

    def text(self, short: bool = False) -> str:
        """``"Value of time (money: Price): 10.6 guilders per hour [95% CI 8.3, 13.7]"``,
        or ``"... not identified: the Price slope's 95% CI includes 0"`` (``short``: no
        "95% CI", a short reason)."""
        head = "Value of time" if self.kind == "value of time" else f"Value of {self.attribute}"
        if self.money:
            head += f" (money: {self.money})"
        return f"{head}: {ratio_text(self.ratio, self.unit, short=short, money=self.money)}"


def tradeoffs(
    model: Any, respondent: Any = None, money: str | None = None, time: str | None = None
) -> list[TradeOff]:
    """Value of time and willingness to pay, per leaf and overall, with Fieller intervals.

    ``model`` has linear leaves (``slope_posterior``, ``slope_columns_``, ``schema_``,
    ``item_leaf_``); the overall ratio uses the slopes averaged over leaves weighted by
    their items. ``money`` names the money attribute (the analysis plan's; ``None``: no
    trade-offs). Only ``time``, the travel-time attribute the plan names
    (:func:`time_attribute`), gives the value of time (per hour when its unit is a
    stated duration, else per its unit, :func:`pbo_core.units.tradeoff_unit`); every other
    numeric and ordinal attribute the money one more unit (level) is worth,
    ``-b_x / b_p``. A block whose money slope is clearly positive gives its ratios with a
    reason and no number (:func:`money_sign_reason`).
    """
    cols = list(getattr(model, "slope_columns_", []))
    schema: Schema = model.schema_
    p = price_column(schema, cols, money)
    if p is None:
        return []
    money_f = schema[cols[p]]
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
        if f.kind not in ("numeric", "ordinal"):
            continue
        is_time = time is not None and name == time
        scale, unit = tradeoff_unit(money_f, f, time=is_time)
        kind = "value of time" if is_time else "willingness to pay"
        for leaf, mu, S in blocks:
            r = fieller_ratio(mu[j], mu[p], S[np.ix_([j, p], [j, p])])
            r = r.scaled(scale if is_time else -scale)
            why = money_sign_reason(float(mu[p]), float(S[p, p]), money_f.display)
            out.append(
                TradeOff(leaf, f.display, kind, unit, r.refused(why) if why else r, money_f.display)
            )
    return out


def coefficient_slope_lines(model: Any, short: bool = False) -> list[str]:
    """The attribute slopes of a model with one coefficient per attribute column (the
    conditional logit: ``attribute_columns_``, ``coef_``, ``cluster_se_``) in the
    attributes' units (:func:`slope_label`), each with its 95 % interval from the
    cluster-robust standard error (``short``: ``±`` half-width)."""
    cols = model.attribute_columns_
    coef, se = np.asarray(model.coef_), np.asarray(model.cluster_se_)
    return [
        slope_label(f, col.label, float(coef[j]), col.code, short=short, sd=float(se[j]))
        for j, (f, col) in enumerate(cols)
    ]


def coefficient_constant_lines(model: Any, short: bool = False) -> list[str]:
    """The alternative-specific constants of a conditional logit (its ``column_kinds_``
    ``"constant"``: the utility of an alternative over the reference's at equal
    attributes), each with its 95 % interval from the cluster-robust standard error
    (``short``: ``±`` half-width): ``"Constant: Train (vs Swissmetro): -0.70 ±0.16"``."""
    kinds = list(getattr(model, "column_kinds_", []))
    coef, se = np.asarray(model.coef_), np.asarray(model.cluster_se_)
    out = []
    for j, kind in enumerate(kinds):
        if kind != "constant":
            continue
        label, c = model.feature_names_[j], float(coef[j])
        half = _Z95 * float(se[j]) if math.isfinite(float(se[j])) else float("nan")
        if not math.isfinite(half) or half <= 0:
            out.append(f"{label}: {_num(c)}")
            continue
        est, ci = ci_text(c, c - half, c + half, signed=True)
        if short:
            out.append(f"{label}: {est} ±{_fixed(half, ci_decimals(-half, half))}")
        else:
            out.append(f"{label}: {est} [95% CI {ci[1:-1]}]")
    return out


def coefficient_tradeoffs(model: Any, money: str | None, time: str | None = None) -> list[TradeOff]:
    """The trade-offs of a model with one coefficient per attribute (the conditional
    logit: ``attribute_columns_``, ``column_names_``, ``coef_``, ``cluster_cov_``) against
    the plan's money attribute ``money``: the value of time of ``time`` and what one more
    unit (level) of every other numeric or ordinal attribute is worth, money attributes
    included (e.g. installation cost per unit of operating cost: an implied discount
    rate), with Fieller's interval (2) from the cluster-robust covariance. Units by
    :func:`pbo_core.units.tradeoff_unit`; a clearly positive money slope gives reasons,
    no numbers. Empty without a money attribute or its coefficient."""
    if money is None:
        return []
    names = list(getattr(model, "column_names_", []))
    if money not in names:
        return []
    j = names.index(money)
    cov = np.asarray(model.cluster_cov_)
    coef = np.asarray(model.coef_, dtype=float)
    cols = {col.name: f for f, col in model.attribute_columns_}
    money_f = cols.get(money)
    if money_f is None:
        return []
    why = money_sign_reason(float(coef[j]), float(cov[j, j]), money_f.display)
    out: list[TradeOff] = []
    for name, f in cols.items():
        if name == money or f.kind not in ("numeric", "ordinal") or name not in names:
            continue
        i = names.index(name)
        is_time = time is not None and name == time
        scale, unit = tradeoff_unit(money_f, f, time=is_time)
        V = cov[np.ix_([i, j], [i, j])]
        r = fieller_ratio(float(coef[i]), float(coef[j]), V).scaled(scale if is_time else -scale)
        kind = "value of time" if is_time else "willingness to pay"
        out.append(
            TradeOff(None, f.display, kind, unit, r.refused(why) if why else r, money_f.display)
        )
    return out


def coefficient_value_of_time(model: Any, money: str | None, time: str | None) -> TradeOff | None:
    """The value of time of a model with one coefficient per attribute (the conditional
    logit): the travel-time slope over the money slope (:func:`coefficient_tradeoffs`),
    per hour only when the time's unit is a stated duration; ``None`` when the plan names
    no money or time attribute, or the model has no coefficient on them."""
    if money is None or time is None:
        return None
    return next(
        (t for t in coefficient_tradeoffs(model, money, time) if t.kind == "value of time"),
        None,
    )


def evidence_display(
    ev: pd.DataFrame, shown: str | None = None, unit: str = "respondents"
) -> pd.DataFrame:
    """Held-out evidence (:func:`pbo_core.evaluation.evidence_table`) as pages and the
    report show it: percentages with one decimal, the CI as text, the row of the model
    drawn marked (``shown``: its label), the count named by its ``unit``; a model that
    could not be scored shows why instead of numbers (never ``nan``)."""
    ok = ev["heldout"].notna().to_numpy()

    def pct(v: pd.Series) -> list[str]:
        return [f"{100 * x:.1f}" if good else "—" for x, good in zip(v, ok, strict=True)]

    def nll() -> list[str]:
        if "nll" not in ev:
            return ["—"] * len(ev)
        return [
            f"{x:.3f} [{lo:.3f}, {hi:.3f}]" if good and np.isfinite(x) else "—"
            for x, lo, hi, good in zip(ev["nll"], ev["nll_low"], ev["nll_high"], ok, strict=True)
        ]

    def top1() -> list[str]:
        if "top1" not in ev:
            return ["—"] * len(ev)
        return [f"{100 * x:.1f}" if good and np.isfinite(x) else "—"
                for x, good in zip(ev["top1"], ok, strict=True)]  # fmt: skip

    return pd.DataFrame(
        {
            "model": [f"{m}  ◀ shown above" if m == shown else m for m in ev["method"]],
            "training (%)": pct(ev["train"]),
            "held-out (%)": pct(ev["heldout"]),
            "95% CI (%)": [
                f"{100 * lo:.1f} – {100 * hi:.1f}" if good else "—"
                for lo, hi, good in zip(ev["ci_low"], ev["ci_high"], ok, strict=True)
            ],
            f"held-out {unit}": [
                f"{int(n):,}" if good else "—" for n, good in zip(ev["n_heldout"], ok, strict=True)
            ],
            "held-out NLL per choice [95% CI]": nll(),
            "top-1 choice (%)": top1(),
            "not scored because": [str(e) if e else "" for e in ev["error"]],
        }
    )


#: What an unidentified ratio says instead of a number.
NOT_IDENTIFIED = "not identified"


def ratio_text(r: Ratio, unit: str, short: bool = False, money: str = "") -> str:
    """``"10.6 guilders per hour [95% CI 8.3, 13.7]"`` (rounded to the interval's
    precision; ``short``: ``"10.6 guilders/hour [8.3, 13.7]"``), or, when the money
    slope is not clearly nonzero, ``"not identified: the Price slope's 95% CI includes
    0"`` without a point estimate (``short``: ``"not identified (Price slope ≈ 0)"``)."""
    who = f"the {money} slope" if money else "the money slope"
    if r.reason:
        return (
            f"{NOT_IDENTIFIED} ({r.reason.split(':')[0][4:]})"
            if short
            else (f"not shown: {r.reason}")
        )
    if not r.identified:
        if short:
            return f"{NOT_IDENTIFIED} ({who[4:]} ≈ 0)"
        return f"{NOT_IDENTIFIED}: {who}'s 95% CI includes 0, so no finite interval exists"
    est, ci = ci_text(r.estimate, r.low, r.high)
    if not short:
        ci = f"[95% CI {ci[1:]}"
    return f"{est} {unit.replace(' per ', '/') if short else unit} {ci}"


def tradeoff_table(
    items: Sequence[TradeOff], leaf_numbers: Sequence[int] | None = None
) -> pd.DataFrame:
    """The trade-offs as a table (leaf shown with its displayed number; overall last).

    ``value [95% CI]`` is the text pages show (rounded to the interval's precision, or
    "not identified" with the reason); ``estimate`` and the bounds are rounded alike and
    empty (NaN) when the ratio is not identified.
    """
    rows = []
    for t in items:
        num = (
            None
            if t.leaf is None
            else (int(leaf_numbers[t.leaf]) if leaf_numbers is not None else t.leaf)
        )
        r = t.ratio
        d = ci_decimals(r.low, r.high)
        rows.append(
            {
                "leaf": "overall" if num is None else str(num),
                "trade-off": "value of time"
                if t.kind == "value of time"
                else f"value of {t.attribute}",
                "value [95% CI]": ratio_text(r, t.unit, money=t.money),
                "money attribute": t.money,
                "estimate": round(r.estimate, d) if r.identified else np.nan,
                "95% CI low": round(r.low, d) if r.identified else np.nan,
                "95% CI high": round(r.high, d) if r.identified else np.nan,
                "unit": t.unit,
                "interval": "Fieller"
                if r.identified
                else (
                    r.reason or f"{NOT_IDENTIFIED} (the {t.money or 'money'} slope's CI includes 0)"
                ),
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
    """The slope labels of one leaf (:func:`slope_label`), in design-column order, each
    with its 95 % interval (``short``: ``±`` half-width and a "sign unsure" mark)."""
    mean, cov = model.slope_posterior()
    sd = np.sqrt(np.maximum(np.diagonal(cov[int(leaf)]), 0.0))
    return [
        slope_label(f, col.label, float(v), col.code, short=short, sd=float(s))
        for (f, col), v, s in zip(slope_columns(model), mean[int(leaf)], sd, strict=True)
    ]


def value_of_time(
    model: Any, money: str | None = None, time: str | None = None
) -> dict[int | None, TradeOff]:
    """The value-of-time trade-off of every leaf (and ``None``: overall), if the model has
    a slope on the money attribute (``money``, default: guessed, :func:`price_column`)
    and on the travel-time attribute ``time`` (``None``: none, so no value of time)."""
    out: dict[int | None, TradeOff] = {}
    first = None
    for t in tradeoffs(model, money=money, time=time):
        if t.kind != "value of time":
            continue
        first = first or t.attribute
        if t.attribute == first:
            out[t.leaf] = t
    return out
