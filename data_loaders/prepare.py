"""What an import drops and fills before the conjoint loader reads a choice table.

:func:`prepare_wide` applies a resolved :class:`~data_loaders.layout.ColumnMap` to a wide
table: missing-value codes (``ColumnMap.missing``), availability columns
(``ColumnMap.availability``), numbered choices and no-choice values, attributes given
for some alternatives only (``ColumnMap.fill_attributes``: 0 elsewhere) and text levels
grouped (``ColumnMap.levels``). Every row it drops is counted under its reason, in words
(:attr:`Prepared.dropped`), so the preview and the import's notes say what was left out
and why. :func:`drop_long_tasks` does the same for a long table's choice situations
(availability rules remove the rows of the alternatives they make unavailable,
:func:`long_rule_rows`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from data_loaders import fields
from data_loaders.conjoint import Attribute, is_missing, normalize_value
from data_loaders.conjoint.build import parse_flags
from data_loaders.layout import OTHER_LEVEL, ColumnMap, missing_codes, parse_zero_rule
from pbo_core.data import DataValidationError

__all__ = [
    "Prepared",
    "availability_rule",
    "code_mask",
    "drop_long_tasks",
    "dropped_note",
    "group_levels",
    "long_rule_rows",
    "parse_availability_rule",
    "prepare_wide",
]

#: Reasons a choice situation is dropped (the keys of :attr:`Prepared.dropped`).
NO_CHOICE = "with no or an unknown choice"
CHOSEN_UNAVAILABLE = "whose chosen alternative is marked unavailable"
ONE_AVAILABLE = "with fewer than two alternatives available"
MISSING_ATTRIBUTE = "with a missing-value code in an attribute of an available alternative"


@dataclass
class Prepared:
    """A table ready for the loader, what was dropped and the cells emptied.

    Attributes
    ----------
    frame
        The kept rows (index = file line); a wide table's unavailable alternatives have
        placeholder attribute cells (:attr:`available` says which).
    available
        Wide: ``(rows, alternatives)`` booleans, or ``None`` when every alternative is
        always available.
    dropped
        Reason -> number of rows (choice situations) dropped.
    emptied
        Column -> respondent-feature cells holding a missing-value code (made empty).
    zeroed
        Zero rule (``ColumnMap.zero_when``) -> the rows it applies to.
    unavailable
        Availability rule (``ColumnMap.available_when``) -> the rows where it makes its
        alternative unavailable.
    lines
        Reason -> the file lines dropped for it (a long file's choice situation: its
        first line).
    """

    frame: pd.DataFrame
    available: np.ndarray | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    emptied: dict[str, int] = field(default_factory=dict)
    zeroed: dict[str, int] = field(default_factory=dict)
    unavailable: dict[str, int] = field(default_factory=dict)
    lines: dict[str, list[int]] = field(default_factory=dict)


def code_mask(col: pd.Series, codes: Sequence[str]) -> np.ndarray:
    """Cells of ``col`` holding one of the missing-value ``codes`` (compared as text:
    ``-1`` matches ``-1.0``)."""
    if not codes or len(col) == 0:
        return np.zeros(len(col), dtype=bool)
    keys = {normalize_value(c) for c in codes}
    values, uniques = pd.factorize(col, use_na_sentinel=False)
    hit = np.array([not is_missing(u) and normalize_value(u) in keys for u in uniques], dtype=bool)
    return hit[values] if len(uniques) else np.zeros(len(col), dtype=bool)


def _placeholder(a: Attribute) -> Any:
    return 0 if a.kind == "numeric" else a.levels[0]


def _group_levels(frame: pd.DataFrame, cols: Sequence[str], a: Attribute) -> None:
    """Cells of a ``group:K`` attribute outside its levels become :data:`OTHER_LEVEL`."""
    keep = {normalize_value(v) for v in a.levels}
    for c in cols:
        if c not in frame.columns:
            continue
        s = frame[c]
        out = s.map(lambda v: v if is_missing(v) or normalize_value(v) in keep else OTHER_LEVEL)
        frame[c] = out


def _grouped(cols: ColumnMap, attrs: Sequence[Attribute]) -> list[Attribute]:
    rules = dict(cols.levels)
    return [
        a for a in attrs if rules.get(a.name, "").startswith("group:") and OTHER_LEVEL in a.levels
    ]


def _chosen_index(frame: pd.DataFrame, cols: ColumnMap, name: str) -> np.ndarray:
    """Each row's chosen alternative (0..J-1), -1 for another value (an opt-out, empty)."""
    alts = list(cols.alternatives)
    lookup: dict[str, int] = {}
    if cols.choice_coding in ("0", "1"):
        base = int(cols.choice_coding)
        lookup = {str(k + base): k for k in range(len(alts))}
    else:
        for k, a in enumerate(alts):
            lookup[normalize_value(a)] = k
            lookup[normalize_value(f"{cols.chosen_column}{a}")] = k
    values, uniques = pd.factorize(frame[cols.chosen_column], use_na_sentinel=False)
    idx = np.array(
        [-1 if is_missing(u) else lookup.get(normalize_value(u), -1) for u in uniques],
        dtype=np.int64,
    )
    return idx[values] if len(uniques) else np.zeros(0, dtype=np.int64)


_OPS = {
    "==": operator.eq,
    "=": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def parse_availability_rule(rule: str, name: str = "") -> tuple[str, str, str, str]:
    """``"car: license == 1"`` -> ``("car", "license", "==", "1")`` (quotes around the
    value removed); a :class:`~pbo_core.data.DataValidationError` in words for another
    form or a text over :data:`data_loaders.fields.MAX_TEXT_CHARS` (``name``: the file,
    for the message). Read in one pass (:func:`data_loaders.fields.parse_availability_rule`)."""
    return fields.parse_availability_rule(rule, name)


def availability_rule(
    rule: str, frame: pd.DataFrame, alternatives: Sequence[str], name: str
) -> tuple[str, np.ndarray]:
    """The alternative of an availability rule (``ColumnMap.available_when``) and the rows
    where it is available: ``"car: license == 1"`` -> ``("car", license == 1)``.

    ``==`` and ``!=`` compare values as the file writes them (``1`` = ``1.0``, text
    exactly); ``>``, ``>=``, ``<``, ``<=`` compare numbers. An empty cell meets no
    condition (the alternative is unavailable there). The one reading of a rule, for
    ``import-study --available-when`` and the Add-a-study form alike.

    Raises
    ------
    DataValidationError
        For another form, an unknown alternative or column, or an order on text, in words.
    """
    alt, col, op, value = parse_availability_rule(rule, name)
    if alt not in alternatives:
        raise DataValidationError(
            f"{name}: availability rule {rule!r}: {alt!r} is no alternative (alternatives: "
            f"{', '.join(alternatives)})"
        )
    if col not in frame.columns:
        raise DataValidationError(
            f"{name}: availability rule {rule!r}: the file has no column {col!r}"
        )
    cells = frame[col]
    empty = cells.map(is_missing).to_numpy(dtype=bool)
    if op in ("==", "=", "!="):
        want = normalize_value(value)
        hit = (cells.map(normalize_value) == want).to_numpy(dtype=bool)
        ok = hit if op != "!=" else ~hit
    else:
        try:
            bound = float(value)
        except ValueError:
            raise DataValidationError(
                f"{name}: availability rule {rule!r}: {op} needs a number, not {value!r}"
            ) from None
        numbers = pd.to_numeric(cells, errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            ok = np.asarray(_OPS[op](numbers, bound), dtype=bool) & ~np.isnan(numbers)
    return alt, ok & ~empty


def prepare_wide(
    frame: pd.DataFrame, cols: ColumnMap, attrs: Sequence[Attribute], name: str
) -> Prepared:
    """The wide table of a resolved map with its drops applied (see the module).

    Raises
    ------
    DataValidationError
        For an availability cell that is no 1/0 flag, naming the file, line and column.
    """
    f = frame.copy()
    alts = list(cols.alternatives)
    dropped: dict[str, int] = {}
    lines: dict[str, list[int]] = {}
    keep = np.ones(len(f), dtype=bool)

    def drop(mask: np.ndarray, reason: str) -> None:
        new = mask & keep
        if new.any():
            dropped[reason] = dropped.get(reason, 0) + int(new.sum())
            lines.setdefault(reason, []).extend(int(x) for x in f.index[new])
            keep[new] = False

    for stem in cols.fill_attributes:  # 0 for the alternatives without the column
        for a in alts:
            c = cols.column(stem, a)
            if c not in f.columns:
                f[c] = 0
    zeroed: dict[str, int] = {}
    for rule in cols.zero_when:  # Biogeme's TRAIN_CO * (GA == 0)
        stem, which, col, value = parse_zero_rule(rule)
        when = (f[col].map(normalize_value) == normalize_value(value)).to_numpy(dtype=bool)
        for a in which or alts:
            c = cols.column(stem, a)
            if c in f.columns and when.any():
                f[c] = f[c].astype(object).where(~when, 0)
        zeroed[rule] = int(when.sum())
    emptied: dict[str, int] = {}
    for c in cols.feature_names:
        hit = code_mask(f[c], missing_codes(cols, c))
        if hit.any():
            emptied[c] = int(hit.sum())
            f[c] = f[c].mask(hit)
    choice = f[cols.chosen_column]
    no_choice = code_mask(choice, (*cols.no_choice, *missing_codes(cols, cols.chosen_column)))
    drop(no_choice, NO_CHOICE)
    avail = np.ones((len(f), len(alts)), dtype=bool)
    for j, c in enumerate(cols.availability or ()):
        if c:
            col = f[c].mask(code_mask(f[c], missing_codes(cols, c)))
            avail[:, j] = parse_flags(col, name, True, c)
    unavailable: dict[str, int] = {}
    for rule in cols.available_when:  # car: license == 1
        alt, ok = availability_rule(rule, f, alts, name)
        unavailable[rule] = int((~ok).sum())
        avail[:, alts.index(alt)] &= ok
    chosen = _chosen_index(f, cols, name)
    has = chosen >= 0
    unavailable_choice = np.zeros(len(f), dtype=bool)
    unavailable_choice[has] = ~avail[np.flatnonzero(has), chosen[has]]
    drop(unavailable_choice, CHOSEN_UNAVAILABLE)
    missing_attr = np.zeros(len(f), dtype=bool)
    for a in attrs:
        for j, alt in enumerate(alts):
            c = cols.column(a.source_column, alt)
            if c not in f.columns:
                continue
            hit = code_mask(f[c], missing_codes(cols, c))
            missing_attr |= hit & avail[:, j]
            off = ~avail[:, j]
            if off.any():  # never read: a placeholder the attribute parses
                f[c] = f[c].astype(object).where(~off, _placeholder(a))
    drop(missing_attr, MISSING_ATTRIBUTE)
    drop(avail.sum(axis=1) < 2, ONE_AVAILABLE)
    for a in _grouped(cols, attrs):
        _group_levels(f, [cols.column(a.source_column, alt) for alt in alts], a)
    any_off = not avail.all()
    return Prepared(
        f.loc[keep],
        avail[keep] if any_off else None,
        dropped,
        emptied,
        zeroed,
        unavailable,
        lines,
    )


def group_levels(frame: pd.DataFrame, cols: ColumnMap, attrs: Sequence[Attribute]) -> pd.DataFrame:
    """``frame`` with the rare levels of ``group:K`` attributes as :data:`OTHER_LEVEL`
    (a copy when there are any; long layout's columns, or every alternative's)."""
    grouped = _grouped(cols, attrs)
    if not grouped:
        return frame
    f = frame.copy()
    for a in grouped:
        if cols.format == "wide":
            names = [cols.column(a.source_column, alt) for alt in cols.alternatives]
        else:
            names = [a.source_column]
        _group_levels(f, names, a)
    return f


def long_rule_rows(
    f: pd.DataFrame, cols: ColumnMap, profile: str, real: np.ndarray, name: str = ""
) -> tuple[np.ndarray, dict[str, int]]:
    """The rows of a long table its availability rules (``ColumnMap.available_when``)
    remove, and each rule's count.

    A long file lists each choice situation's alternatives as its rows (the ``profile``
    column names them; ``real``: not an opt-out row), so a rule ``"car: license == 1"``
    removes the rows of ``car`` where the condition is false, read on the row itself
    (:func:`availability_rule`: the same reading, checks and messages as for a wide
    file). A rule's alternative is a value of the profile column, written as the file
    writes it (``1`` for ``1.0``).

    Raises
    ------
    DataValidationError
        For a rule of another form, an alternative the profile column never names, an
        unknown column or an order on text, naming the file and the rule.
    """
    off = np.zeros(len(f), dtype=bool)
    counts: dict[str, int] = {}
    if not cols.available_when:
        return off, counts
    codes, uniques = pd.factorize(f[profile], use_na_sentinel=False)
    keys = np.array([normalize_value(u) for u in uniques], dtype=object)
    names: dict[str, str] = {}  # the alternative as written -> its key
    for k in pd.unique(codes[real]):
        u = uniques[int(k)]
        if not is_missing(u):
            names.setdefault(u.strip() if isinstance(u, str) else keys[int(k)], keys[int(k)])
    keyed = keys[codes] if len(uniques) else np.zeros(0, dtype=object)
    for rule in cols.available_when:  # car: license == 1
        alt, ok = availability_rule(rule, f, list(names), name)
        hit = (keyed == names[alt]) & real & ~ok
        counts[rule] = int(hit.sum())
        off |= hit
    return off, counts


def drop_long_tasks(
    f: pd.DataFrame,
    cols: ColumnMap,
    attrs: Sequence[Attribute],
    keys: Sequence[str],
    real: np.ndarray,
    profile: str = "",
    name: str = "",
) -> Prepared:
    """A long table's choice situations (rows grouped by ``keys``) without a missing-value
    code in an attribute of a real row and with at least two real rows (``real``: not an
    opt-out); features' codes emptied, ``group:K`` levels grouped.

    Availability rules (``ColumnMap.available_when``; ``profile``: the column naming a
    row's alternative, ``name``: the file) remove the rows of the alternatives they make
    unavailable (:func:`long_rule_rows`) before that, as a wide table's unavailable
    alternatives are no profiles: a choice situation whose chosen row is removed is
    dropped and counted (:data:`CHOSEN_UNAVAILABLE`), one left with fewer than two
    alternatives too (:data:`ONE_AVAILABLE`), the reasons a wide table gives.
    """
    f = f.copy()
    dropped: dict[str, int] = {}
    masks: dict[str, np.ndarray] = {}
    tkey = f.groupby(list(keys), sort=False).ngroup().to_numpy()
    n = int(tkey.max()) + 1 if len(tkey) else 0
    off, unavailable = long_rule_rows(f, cols, profile, real, name)
    real = real & ~off
    chosen_off = np.zeros(n, dtype=bool)
    if off.any() and cols.chosen_column and cols.chosen_column in f.columns:
        c = cols.chosen_column
        chosen = parse_flags(f[c], name, True, c)
        chosen_off[tkey[off & chosen]] = True
        if chosen_off.any():
            dropped[CHOSEN_UNAVAILABLE] = int(chosen_off.sum())
            masks[CHOSEN_UNAVAILABLE] = chosen_off
    bad = np.zeros(n, dtype=bool)
    for a in attrs:
        c = a.source_column
        if c in f.columns:
            hit = code_mask(f[c], missing_codes(cols, c)) & real
            bad[tkey[hit]] = True
    bad &= ~chosen_off
    if bad.any():
        why = MISSING_ATTRIBUTE  # of a row a rule left: an available alternative
        if not cols.available_when:
            why = why.replace("an available alternative", "an alternative")
        dropped[why] = int(bad.sum())
        masks[why] = bad
    few = np.bincount(tkey, weights=real.astype(float), minlength=n) < 2
    few &= ~(bad | chosen_off)
    if few.any():
        by_rule = np.zeros(n, dtype=bool)
        by_rule[tkey[off]] = True
        for why, which in (
            ("with fewer than two alternatives", few & ~by_rule),
            (ONE_AVAILABLE, few & by_rule),
        ):
            if which.any():
                dropped[why] = int(which.sum())
                masks[why] = which
    emptied: dict[str, int] = {}
    for c in cols.feature_names:
        hit = code_mask(f[c], missing_codes(cols, c))
        if hit.any():
            emptied[c] = int(hit.sum())
            f[c] = f[c].mask(hit)
    for a in _grouped(cols, attrs):
        _group_levels(f, [a.source_column], a)
    keep = ~(bad | few | chosen_off)[tkey] & ~off
    first = pd.Series(f.index.to_numpy()).groupby(tkey).min().to_numpy() if n else np.zeros(0)
    lines = {why: [int(first[t]) for t in np.flatnonzero(m)] for why, m in masks.items()}
    return Prepared(f.loc[keep], None, dropped, emptied, {}, unavailable, lines)


def dropped_note(p: Prepared, unit: str) -> list[str]:
    """The notes of what was dropped and emptied, in words (``unit``: rows or choice
    situations)."""
    out = []
    if p.dropped:
        parts = "; ".join(f"{n:,} {why}" for why, n in p.dropped.items())
        total = sum(p.dropped.values())
        one = unit.replace("situations", "situation").replace("rows", "row")
        out.append(f"dropped {total:,} {unit if total != 1 else one}: {parts}")
    for rule, n in p.zeroed.items():
        out.append(f"set to 0: {rule} ({n:,} rows)")
    for rule, n in p.unavailable.items():
        out.append(f"available when {rule} (unavailable on {n:,} rows)")
    if p.emptied:
        parts = ", ".join(f"{c} ({n:,})" for c, n in p.emptied.items())
        out.append(f"respondent-feature cells with a missing-value code, left empty: {parts}")
    return out
