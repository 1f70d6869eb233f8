"""Readable split rules: the condition on one side of a split of a schema column.

``"Comfort class: 1 (middle) .. 2 (least comfortable)"``, ``"party in {Democrat,
Independent}"``. Item trees (:mod:`pbo_core.explain.export`), user trees
(:mod:`pbo_core.hierarchy`) and segment trees (:mod:`pbo_core.segments`) word their
splits with these functions; :mod:`pbo_core.explain.labels` re-exports them as the public
home of readable text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pbo_core.data import Schema
from pbo_core.text import fmt_number, humanize, with_unit

__all__ = ["describe_categories", "describe_path", "describe_side", "describe_threshold"]


def describe_threshold(schema: Schema, column: int, threshold: float, right: bool) -> str:
    """Readable condition ``x[column] >= threshold`` (``right``) or ``< threshold``.

    Ordinal thresholds print the range of level labels on their side, both ends named
    so the scale's direction shows ("Comfort class: 1 (middle) .. 2 (least
    comfortable)", "sensitivity = 90%" for a single level); binary ones print the
    chosen value ("invitation = telephone call"), multi-hot ones membership
    ("red flags include chest pain"); numeric ones add the meaning of special codes on
    their side ("Fixed price < 3.5 ¢/kWh (or variable rate)"). snake_case level codes
    read as words.
    """
    c = schema.columns[column]
    f = schema.features[c.feature]
    if f.kind == "numeric":
        op = ">=" if right else "<"
        text = f"{f.display} {op} {with_unit(fmt_number(threshold), f.unit)}"
        codes = [m for v, m in f.special if (v >= threshold) == right]
        return text + (f" (or {' or '.join(codes)})" if codes else "")
    if f.kind == "ordinal":
        # ordinal rules name the range of levels on their side, ends included, so the
        # direction of the scale reads from the level labels ("1 .. 2 (least comfortable)")
        k = math.floor(threshold) + 1  # first code on the right side
        k = min(max(k, 1), len(f.levels) - 1)
        lo, hi = (k, len(f.levels) - 1) if right else (0, k - 1)
        if lo == hi:
            return f"{f.display} = {with_unit(f.level_label(lo), f.unit)}"
        first = with_unit(f.level_label(lo), f.unit)
        last = with_unit(f.level_label(hi), f.unit)
        return f"{f.display}: {first} .. {last}"
    if f.kind == "binary":
        return f"{f.display} = {f.level_label(1 if right else 0)}"
    # multi-hot column
    verb = "includes" if right else "does not include"
    return f"{f.display} {verb} {humanize(str(c.value))}"


def describe_categories(schema: Schema, column: int, codes: Iterable[int]) -> str:
    """Readable condition "feature in {levels}" for a categorical column."""
    c = schema.columns[column]
    f = schema.features[c.feature]
    labels = [f.level_label(int(k)) for k in sorted(set(int(k) for k in codes))]
    if len(labels) == 1:
        return f"{f.display} = {labels[0]}"
    return f"{f.display} in {{{', '.join(labels)}}}"


def describe_side(
    schema: Schema, column: int, threshold: float, right_codes: Iterable[int], right: bool
) -> str:
    """Readable condition on one side of a split of ``column``.

    A categorical column goes right for the codes ``right_codes`` (left: the others);
    any other column goes right for ``x >= threshold``. User and segment trees word their
    splits (:class:`~pbo_core.hierarchy.UserSplit`) with this.
    """
    if schema.is_categorical[column]:
        if right:
            return describe_categories(schema, column, right_codes)
        f = schema.features[schema.columns[column].feature]
        return describe_categories(
            schema, column, frozenset(range(len(f.levels))) - set(right_codes)
        )
    return describe_threshold(schema, column, threshold, right)


def describe_path(
    schema: Schema, steps: Iterable[tuple[int, float, Iterable[int], bool]]
) -> list[str]:
    """The conditions of a tree path, one per column, repeated conditions merged.

    ``steps`` are ``(column, threshold, right_codes, right)`` from the root down (as
    :func:`describe_side` takes them). Thresholds on one numeric or ordinal column become
    one interval ("23.5 <= Age < 36.5", not "Age < 36.5 AND Age < 28.5"), category sets
    of one column their intersection; binary and multi-hot columns keep their last
    condition. Columns are listed in the order the path first uses them.
    """
    order: list[int] = []
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}
    cats: dict[int, set[int]] = {}
    last: dict[int, tuple[float, frozenset[int], bool]] = {}
    for column, threshold, right_codes, right in steps:
        column = int(column)
        if column not in order:
            order.append(column)
        codes = frozenset(int(k) for k in right_codes)
        last[column] = (float(threshold), codes, bool(right))
        if schema.is_categorical[column]:
            f = schema.features[schema.columns[column].feature]
            side = set(codes) if right else set(range(len(f.levels))) - set(codes)
            cats[column] = side if column not in cats else cats[column] & side
        elif right:
            lo[column] = max(lo.get(column, -math.inf), float(threshold))
        else:
            hi[column] = min(hi.get(column, math.inf), float(threshold))
    out = []
    for column in order:
        f = schema.features[schema.columns[column].feature]
        if schema.is_categorical[column]:
            out.append(describe_categories(schema, column, cats[column]))
        elif f.kind in ("numeric", "ordinal") and column in lo and column in hi:
            if f.kind == "ordinal":
                a = min(max(math.floor(lo[column]) + 1, 0), len(f.levels) - 1)
                b = min(max(math.floor(hi[column]), 0), len(f.levels) - 1)
                first = with_unit(f.level_label(a), f.unit)
                last_ = with_unit(f.level_label(b), f.unit)
                out.append(
                    f"{f.display} = {first}" if a == b else f"{f.display}: {first} .. {last_}"
                )
            else:
                low = with_unit(fmt_number(lo[column]), f.unit)
                high = with_unit(fmt_number(hi[column]), f.unit)
                out.append(f"{low} <= {f.display} < {high}")
        elif column in lo or column in hi:
            right = column in lo
            threshold = lo[column] if right else hi[column]
            out.append(describe_threshold(schema, column, threshold, right))
        else:
            threshold, codes, right = last[column]
            out.append(describe_side(schema, column, threshold, codes, right))
    return out
