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

__all__ = ["describe_categories", "describe_side", "describe_threshold"]


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
