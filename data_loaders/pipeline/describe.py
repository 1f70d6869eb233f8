"""Stage 3 of the import, **describe the columns**: what every column and row means.

:func:`describe` decides, once, what the interpreted layout leaves to decide and says it
in notes: the rows the study reads (a selection, ``--where``), the attributes kept and
their units (``--units``; a unit is never assumed), the money and travel-time attributes
(the money one proposed by the one money rule, :func:`pbo_core.units.money_candidate`,
when not given), the respondent features' labels, the choice situations and the rows
dropped from them and why (missing-value codes, availability: :mod:`data_loaders.prepare`)
and the alternatives' constants (labelled alternatives get them, the profiles of a
generic design do not). Its value, :class:`Description`, also holds every column's role,
type and unit (:class:`pbo_core.data.ColumnRole`) and is what
:func:`data_loaders.pipeline.build.build` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from data_loaders._common import quoted, where
from data_loaders.conjoint import Attribute, is_missing, normalize_value
from data_loaders.conjoint.build import parse_flags
from data_loaders.layout import ColumnMap, labelled_alternatives, parse_zero_rule, readable
from data_loaders.pipeline.interpret import Layout, free_name
from data_loaders.prepare import (
    MISSING_ATTRIBUTE,
    Prepared,
    drop_long_tasks,
    dropped_note,
    parse_availability_rule,
    prepare_wide,
)
from data_loaders.selection import parse_where, where_mask
from pbo_core.data import ColumnRole
from pbo_core.errors import DataValidationError
from pbo_core.units import money_candidate

__all__ = ["ALTERNATIVE_ATTRIBUTE", "Description", "describe"]

#: Name of the attribute ``--alternative-attribute`` adds (alternative-specific constants).
ALTERNATIVE_ATTRIBUTE = "alternative"


@dataclass(frozen=True, eq=False)
class Description:
    """What a file's columns and rows mean, decided.

    Attributes
    ----------
    layout
        The interpret stage's value.
    columns
        The column map with the money and time attributes, the respondent features'
        labels and the alternatives' constants decided.
    attributes
        The attributes the study keeps, with their units.
    all_attributes
        Those and, with constants, the categorical attribute of the alternatives
        (:data:`ALTERNATIVE_ATTRIBUTE`).
    money_how
        How the money attribute was chosen, in words.
    frame
        The file's rows the study reads (all, or those meeting the selection).
    selected
        The selection and its counts (``None``: no selection).
    prepared
        The rows that are choice situations (:attr:`~data_loaders.prepare.Prepared.frame`;
        a long file's with its respondent, task and alternative columns, :attr:`keys`)
        and what was dropped, emptied or set to 0, and why.
    dropped
        :attr:`prepared`'s drops in words.
    keys
        Long: the respondent, task and alternative columns of the choice rows (made up
        where the file has none); wide: ``()``.
    notes
        Everything read, inferred and decided so far, one sentence each.
    roles
        What every column of the file means (its role, type and unit); a respondent
        feature's type is read from its values when the study is built.
    """

    layout: Layout
    columns: ColumnMap
    attributes: tuple[Attribute, ...]
    all_attributes: tuple[Attribute, ...]
    money_how: str
    frame: pd.DataFrame
    selected: dict[str, Any] | None
    prepared: Prepared
    dropped: tuple[str, ...]
    keys: tuple[str, ...]
    notes: tuple[str, ...]
    roles: tuple[ColumnRole, ...]


def describe(layout: Layout) -> Description:
    """What the columns and rows of ``layout``'s file mean (see the module).

    Raises
    ------
    DataValidationError
        For a decision the file or the flags make impossible (an attribute left out that
        is none, a unit of a coded attribute, a money attribute that is not numeric, no
        row left...), naming the file and the flag.
    """
    name, cols = layout.read.name, layout.columns
    attrs = _kept(layout)
    notes = list(layout.notes)
    frame, selected = _select(layout.read.frame, cols, name, notes)
    attrs = _with_units(attrs, cols, name, notes)
    cols, money_how = _money(cols, attrs, name, notes)
    cols = replace(
        cols,
        respondent_features=tuple((n, lb or readable(n)) for n, lb in cols.respondent_features),
    )
    if cols.format == "long":
        prep, keys, alternatives = _long_rows(frame, cols, attrs, name)
        dropped = dropped_note(prep, "choice situations")
        cols = _constants(cols, alternatives if cols.profile else [], notes, name)
        column = keys[2]
    else:
        prep, keys = _wide_rows(frame, cols, attrs, name), ()
        dropped = dropped_note(prep, "rows (choice situations)")
        if not len(prep.frame):
            raise DataValidationError(f"{name}: no choice situation is left ({'; '.join(dropped)})"
                                      + _missing_hint(cols, dropped))  # fmt: skip
        cols = _constants(_constant_only(frame, cols, attrs, name, notes),
                          list(cols.alternatives), notes, name)  # fmt: skip
        alternatives, column = list(cols.alternatives), "alternative"
    all_attrs = list(attrs)
    if cols.alternative_attribute:
        all_attrs.append(_alternative_attribute(alternatives, attrs, column))
    return Description(
        layout, cols, tuple(attrs), tuple(all_attrs), money_how, frame, selected, prep,
        tuple(dropped), keys, tuple(notes), _roles(frame, cols, attrs),
    )  # fmt: skip


def _kept(layout: Layout) -> list[Attribute]:
    """The attributes not left out (``--drop-attributes`` must name attributes)."""
    attrs, drop = layout.attributes, layout.columns.drop_attributes
    unknown = [n for n in drop if n not in {a.name for a in attrs}]
    if unknown:
        raise DataValidationError(
            f"{layout.read.name}: cannot leave out {', '.join(map(repr, unknown))}: not an "
            f"attribute (attributes: {', '.join(a.name for a in attrs)})"
        )
    return [a for a in attrs if a.name not in drop]


def _select(
    frame: pd.DataFrame, cols: ColumnMap, name: str, notes: list[str]
) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The rows meeting ``cols.where`` (all without one) and what was selected."""
    clauses = parse_where(cols.where)
    if not clauses:
        return frame, None
    keep = where_mask(frame, clauses, name)
    n, total = int(keep.sum()), len(keep)
    if not n:
        raise DataValidationError(f"{name}: no row meets --where {cols.where!r}")
    note = f"rows selected: {n:,} of {total:,} meet --where {cols.where!r}"
    if note not in notes:  # described again without an attribute: said once
        notes.append(note)
    return frame.loc[keep], {"where": cols.where, "rows": n, "of": total}


def _with_units(
    attrs: Sequence[Attribute], cols: ColumnMap, name: str, notes: list[str]
) -> list[Attribute]:
    """The attribute table with the units the analyst stated (``--units TT=min``)."""
    if not cols.units:
        return list(attrs)
    by_name = {a.name: a for a in attrs}
    blank = [n for n, u in cols.units if not n or not u]
    if blank:
        raise DataValidationError(
            f"{name}: --units {blank[0]!r}: write NAME=UNIT, comma-separated (TT=min,CO=CHF)"
        )
    unknown = [n for n, _ in cols.units if n not in by_name]
    if unknown:
        raise DataValidationError(
            f"{name}: --units names {', '.join(map(repr, unknown))}, not an attribute "
            f"(attributes: {', '.join(by_name) or 'none'})"
        )
    coded = [n for n, _ in cols.units if by_name[n].kind != "numeric"]
    if coded:
        raise DataValidationError(
            f"{name}: --units: {', '.join(map(repr, coded))} is not numeric, so it has no unit"
        )
    units = dict(cols.units)
    note = "units given: " + ", ".join(f"{n} {u}" for n, u in cols.units)
    if note not in notes:  # described again without an attribute: said once
        notes.append(note)
    return [replace(a, unit=units[a.name]) if a.name in units else a for a in attrs]


def _money(
    cols: ColumnMap, attrs: Sequence[Attribute], name: str, notes: list[str]
) -> tuple[ColumnMap, str]:
    """The money and travel-time attributes checked (the money one proposed by the one
    money rule, :func:`pbo_core.units.money_candidate`, when not given), and how the
    money attribute was chosen."""
    money = cols.money_attribute
    numeric = [a.name for a in attrs if a.kind == "numeric"]
    how = "chosen at import"
    if money is None:
        money, rule = money_candidate(attrs)
        if money:
            how = f"proposed at import {rule}; confirm in the plan"
            notes.append(
                f"money attribute: {money!r} ({rule}; --money-attribute to change, '' for none)"
            )
    elif money and money not in numeric:
        raise DataValidationError(
            f"{name}: the money attribute {money!r} is not a numeric attribute (numeric "
            f"attributes: {', '.join(numeric) or 'none'})"
        )
    time = cols.time_attribute or None
    if time is not None and time not in numeric:
        raise DataValidationError(
            f"{name}: the travel-time attribute {time!r} is not a numeric attribute (numeric "
            f"attributes: {', '.join(numeric) or 'none'})"
        )
    if time is not None and time == money:
        raise DataValidationError(
            f"{name}: {time!r} cannot be both the money and the travel-time attribute"
        )
    return replace(cols, money_attribute=money, time_attribute=time), how


def _long_rows(
    frame: pd.DataFrame, cols: ColumnMap, attrs: Sequence[Attribute], name: str
) -> tuple[Prepared, tuple[str, str, str], list[Any]]:
    """A long file's choice situations (:func:`~data_loaders.prepare.drop_long_tasks`),
    their respondent, task and alternative columns (numbered where the file has none)
    and the alternatives in the file's order (first appearance), opt-outs left out."""
    f = frame.copy(deep=False)
    resp, task, prof = cols.respondent, cols.task, cols.profile
    if not resp:
        resp = free_name(f, "respondent")
        f[resp] = f[task].to_numpy()
    if not task:
        _no_task_check(f, cols, resp, name)
        task = free_name(f, "task")
        f[task] = 1
    if not prof:
        prof = free_name(f, "profile")
        f[prof] = f.groupby([resp, task], sort=False).cumcount().to_numpy() + 1
    opt = {normalize_value(v) for v in cols.opt_out}
    real = ~f[prof].map(lambda v: normalize_value(v) in opt).to_numpy(dtype=bool)
    prep = drop_long_tasks(f, cols, attrs, [resp, task], real, prof, name)
    alternatives = [v for v in pd.unique(prep.frame[prof]) if normalize_value(v) not in opt]
    return prep, (resp, task, prof), alternatives


def _no_task_check(f: pd.DataFrame, cols: ColumnMap, resp: str, name: str) -> None:
    """A long file without a task column: each respondent's rows must be one task."""
    if cols.rank:
        ranked = f[[resp, cols.rank]].dropna()
        dup = ranked.duplicated([resp, cols.rank], keep=False).to_numpy()
        what = "rows with the same rank"
    else:
        chosen = parse_flags(f[cols.chosen_column], name, True, cols.chosen_column)
        per = pd.Series(chosen, index=f.index).groupby(f[resp].to_numpy()).transform("sum")
        dup = chosen & (per.to_numpy() > 1)
        what = "chosen rows"
    if not dup.any():
        return
    lines = f.index[dup]
    r = f.loc[lines[0], resp]
    same = lines[(f.loc[lines, resp] == r).to_numpy()]
    shown = ", ".join(str(x) for x in same[:6]) + (", ..." if len(same) > 6 else "")
    who = f"respondent {quoted(r)}" if not resp.startswith("_") else "the file"
    raise DataValidationError(
        f"{where(name, lines[0], True)}: {who} has {len(same)} {what} (lines {shown}) and "
        "there is no task column, so the tasks cannot be told apart; name the task column "
        "(--task-col, or 'Task column' in the form)"
    )


def _wide_rows(
    frame: pd.DataFrame, cols: ColumnMap, attrs: Sequence[Attribute], name: str
) -> Prepared:
    """A wide file's choice situations (:func:`~data_loaders.prepare.prepare_wide`)."""
    return prepare_wide(frame.copy(deep=False), cols, attrs, name)


def _missing_hint(cols: ColumnMap, dropped: Sequence[str]) -> str:
    """When missing-value codes dropped rows: how to say they are values."""
    if not any(MISSING_ATTRIBUTE in n for n in dropped):
        return ""
    codes = ", ".join(str(c) for c in cols.missing or ())
    return (
        f"; if {codes or 'those codes'} are values here, not missing answers, give the codes "
        "that are (--missing, '' for none)"
    )


def _constant_only(
    frame: pd.DataFrame, cols: ColumnMap, attrs: Sequence[Attribute], name: str, notes: list[str]
) -> ColumnMap:
    """A wide file's alternatives without attribute columns have their constant only, so
    the constants are needed (refused when the analyst said no)."""
    bare = [
        alt
        for alt in cols.alternatives
        if not any(cols.column(a.source_column, alt) in frame.columns for a in attrs)
    ]
    if bare and cols.alternative_attribute is False:
        raise DataValidationError(
            f"{name}: {', '.join(bare)} has no attribute columns, so only its constant "
            "can describe it; alternative constants are needed (--constants yes or auto)"
        )
    if bare and cols.alternative_attribute is None:
        notes.append(
            f"alternative constants: yes ({', '.join(bare)} has no attribute columns: "
            "its constant is its utility)"
        )
        return replace(cols, alternative_attribute=True)
    return cols


def _constants(
    cols: ColumnMap, alternatives: Sequence[Any], notes: list[str], name: str
) -> ColumnMap:
    """``cols`` with its alternative constants decided: as given, else (``None``) the
    econometrician's default, constants for labelled alternatives
    (:func:`~data_loaders.layout.labelled_alternatives`), none for the numbered or
    lettered profiles of a generic design; the decision is a note."""
    names = [
        v.strip() if isinstance(v, str) else str(normalize_value(v))
        for v in alternatives
        if not is_missing(v)
    ]
    if cols.alternative_attribute is not None:
        if cols.alternative_attribute and not names:
            raise DataValidationError(
                f"{name}: alternative constants need alternatives with names (a profile "
                "column, --profile-col, or the wide layout's alternatives)"
            )
        return cols
    labelled, why = labelled_alternatives(names)
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    if labelled:
        notes.append(
            f"alternative constants: yes (the alternatives {shown} carry names: labelled "
            "alternatives get constants by default; --constants no to leave them out)"
        )
    elif names:
        notes.append(
            f"alternative constants: no (the alternatives {shown} are {why}: a generic "
            "design; --constants yes to add them)"
        )
    return replace(cols, alternative_attribute=labelled)


def _alternative_attribute(
    values: Sequence[Any], attrs: Sequence[Attribute], column: str
) -> Attribute:
    """The categorical attribute whose levels are the alternatives (their constants)."""
    if any(a.name == ALTERNATIVE_ATTRIBUTE for a in attrs):
        raise DataValidationError(
            f"an attribute is already named {ALTERNATIVE_ATTRIBUTE!r}; rename it to use the "
            "alternative as an attribute"
        )
    levels: list[str] = []
    seen: set[str] = set()
    for v in values:
        if is_missing(v):
            continue
        key = normalize_value(v)
        if key not in seen:
            seen.add(key)
            levels.append(v.strip() if isinstance(v, str) else key)
    return Attribute(
        ALTERNATIVE_ATTRIBUTE,
        "categorical",
        levels=tuple(levels),
        label="Alternative",
        description="the alternative itself (alternative-specific constant)",
        column=column,
    )


def _roles(
    frame: pd.DataFrame, cols: ColumnMap, attrs: Sequence[Attribute]
) -> tuple[ColumnRole, ...]:
    """What every column of the file means in the imported study (its role, type, unit;
    :class:`pbo_core.data.ColumnRole`), in the file's order; a respondent feature's type
    is left for the build, which reads it from the values."""
    roles: dict[str, ColumnRole] = {}

    def put(column: str, role: str, kind: str = "", **kw: str) -> None:
        if column and column in frame.columns and column not in roles:
            roles[column] = ColumnRole(column, role, kind, **kw)

    put(cols.respondent, "respondent", "id")
    put(cols.task, "task", "id")
    if cols.format == "long":
        put(cols.profile, "alternative", "code")
        put(cols.rank, "choice", "rank")
        put(cols.chosen_column, "choice", "flag")
    else:
        put(cols.chosen_column, "choice", "code", how=f"numbered from {cols.choice_coding}"
            if cols.choice_coding in ("0", "1") else "names the alternative")  # fmt: skip
        for alt, c in zip(cols.alternatives, cols.availability or (), strict=False):
            put(c, "availability", "flag", alternative=alt)
    for a in attrs:
        for alt, c in (
            zip(cols.alternatives, cols.source_columns(a.source_column), strict=True)
            if cols.format == "wide"
            else [("", a.source_column)]
        ):
            put(c, "attribute", a.kind, unit=a.unit, attribute=a.name, alternative=alt)
    for name, _label in cols.respondent_features:
        put(name, "respondent feature")
    put(cols.weight or "", "weight")
    conditions = [c.column for c in parse_where(cols.where)]
    for rule in cols.zero_when:
        conditions.append(parse_zero_rule(rule)[2])
    for rule in cols.available_when:
        conditions.append(parse_availability_rule(rule)[1])
    for c in conditions:
        put(c, "condition")
    for c in frame.columns:
        how = "left out (--ignore)" if c in cols.ignore else "not named"
        put(str(c), "ignored", how=how)
    return tuple(roles[str(c)] for c in frame.columns if str(c) in roles)
