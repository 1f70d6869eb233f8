"""An own study's files read and checked: the one loader of an analyst's choice data.

:func:`load_choice_file` is the one loader of such data: the command line's
``conjoint-accuracy --data FILE`` and ``report --data FILE`` call it, and a saved study
(:mod:`data_loaders.study_store`) loads through it. Every shape of file loads: long or
wide (any number of alternatives, inferred when not given), with or without respondent
and task columns, choices or full rankings, opt-outs, alternative-specific constants and
respondent features (see :mod:`data_loaders.layout` for what is inferred).
:func:`check_upload` collects *every* problem of an upload (each attribute cell that does
not parse, named by line and column; missing columns, listing the columns the file has;
respondent features) before the loader runs, so nothing is imported half. The attribute
editor's rows (:func:`attribute_rows`, :func:`attributes_from_rows`) and the form's
inspection (:func:`inspect_upload`) live here too.

Files are bounded before they are parsed (:mod:`data_loaders.limits`: at most
:data:`MAX_UPLOAD_MB` MB each, a capped header, rows, cells, JSON depth).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data_loaders import fields, limits, readers
from data_loaders._common import data_home, quoted, read_csv_lines, where
from data_loaders.access import check_file
from data_loaders.conjoint import (
    Attribute,
    StudyMeta,
    build_from_long,
    is_missing,
    normalize_value,
    read_attribute_table,
    resolve_attributes,
    wide_to_long,
)
from data_loaders.conjoint.build import parse_flags
from data_loaders.layout import (
    ColumnMap,
    feature_candidates,
    infer_attributes,
    labelled_alternatives,
    list_columns,
    missing_codes,
    natural_key,
    parse_zero_rule,
    readable,
    resolve_columns,
)
from data_loaders.prepare import (
    MISSING_ATTRIBUTE,
    drop_long_tasks,
    dropped_note,
    group_levels,
    long_rule_rows,
    parse_availability_rule,
    prepare_wide,
)
from data_loaders.questions import OpenQuestionsError, open_questions
from data_loaders.recipes import preview_lines
from data_loaders.selection import parse_where, where_mask
from pbo_core.collinearity import collinear_attributes, constant_attributes
from pbo_core.data import ColumnRole, DataValidationError, Feature, Schema, Study
from pbo_core.plan import Role, plan_with
from pbo_core.units import money_candidate

__all__ = [
    "ALTERNATIVE_ATTRIBUTE",
    "DIRECTIONS",
    "KINDS",
    "MAX_UPLOAD_MB",
    "Inspection",
    "Problem",
    "attribute_rows",
    "attributes_from_json",
    "attributes_from_rows",
    "build_study",
    "check_upload",
    "inspect_upload",
    "load_choice_file",
    "read_upload",
    "read_upload_table",
    "with_respondents",
]

#: Largest accepted upload (each file), in MB (:data:`data_loaders.limits.MAX_FILE_MB`).
MAX_UPLOAD_MB = limits.MAX_FILE_MB
#: Kinds offered in the attribute editor, and the directions.
KINDS = ("numeric", "ordinal", "categorical", "binary")
DIRECTIONS = ("", "higher is better", "lower is better")
#: Name of the attribute ``--alternative-attribute`` adds (alternative-specific constants).
ALTERNATIVE_ATTRIBUTE = "alternative"
_LEVEL_SEP = " | "
#: The attribute editor's columns, for a refusal's sentence.
_ROW_FIELDS = {c: c for c in ("name", "label", "unit", "description")} | {"levels": "levels"}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an upload: where (file, line, column) and what."""

    file: str
    message: str
    line: str = ""
    column: str = ""

    def one_line(self) -> str:
        """The problem as one line (the command line's stderr)."""
        msg = " ".join(self.message.split())
        if msg.startswith(self.file):
            return msg
        many = "," in self.line or " more" in self.line
        place = self.file + (f", line{'s' if many else ''} {self.line}" if self.line else "")
        place += f", column {self.column!r}" if self.column else ""
        return f"{place}: {msg}"


# ----------------------------------------------------------------------------- loading
def load_choice_file(
    path: str | Path,
    attributes: str | Path | Sequence[Attribute] | None,
    columns: ColumnMap | None = None,
    meta: StudyMeta | None = None,
    sep: str | None = None,
    *,
    ask: bool = True,
) -> Study:
    """A choice file of any accepted format and any shape, through the conjoint loaders.

    The file is read by :func:`data_loaders.readers.read_table` (CSV with any separator,
    detected unless ``sep`` names it, TSV, ``.dat``, Parquet, ``.xlsx``, compressed with
    gzip, bz2 or zip).

    ``attributes=None`` infers the table from the columns (:func:`infer_attributes`, as
    the Add-a-study form does); unset parts of ``columns`` are inferred
    (:func:`~data_loaders.layout.resolve_columns`; ``None``: everything inferred, layout
    included). The file is bounded by
    :mod:`data_loaders.limits` before it is parsed.

    Raises
    ------
    DataValidationError
        For malformed data, naming the file, line and column (from the readers); a
        missing column lists the columns the file has.
    """
    p = check_file(path, "choice file")
    frame = readers.read_table(p, str(p), sep).frame
    return build_study(
        frame, str(p), attributes, columns or ColumnMap(format="auto"), meta, ask=ask
    )


def build_study(
    frame: pd.DataFrame,
    name: str,
    attributes: str | Path | Sequence[Attribute] | None,
    columns: ColumnMap,
    meta: StudyMeta | None = None,
    *,
    ask: bool = True,
) -> Study:
    """The study of a choice table read from a file (index = file line); see
    :func:`load_choice_file`. ``ask``: refuse a file that leaves a column's meaning open
    (:func:`data_loaders.questions.open_questions`); a saved study, whose import answered
    them, loads with ``ask=False``.

    Raises
    ------
    OpenQuestionsError
        When ``ask`` and the file leaves a column's meaning open, naming the columns.
    """
    cols, notes = resolve_columns(frame, columns, name)
    if attributes is None:
        attrs = infer_attributes(frame, cols, notes)
    else:
        attrs = resolve_attributes(attributes)
    study = _build(frame, name, attrs, cols, notes, meta)  # the file's own problems first
    if ask:
        questions = open_questions(frame, attrs, cols, attributes_given=attributes is not None)
        if questions:
            raise OpenQuestionsError(name, questions)
    return study


def _free(frame: pd.DataFrame, base: str) -> str:
    name = base
    while name in frame.columns:
        name = f"_{name}_"
    return name


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


def _alternative_attribute(
    values: Sequence[Any], attrs: Sequence[Attribute], column: str
) -> Attribute:
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
    if note not in notes:
        notes.append(note)
    return frame.loc[keep], {"where": cols.where, "rows": n, "of": total}


#: The values a split column may hold (lower case) -> the split's word.
SPLIT_VALUES = {
    "train": "train", "training": "train", "validation": "validation", "valid": "validation",
    "val": "validation", "test": "test", "testing": "test", "holdout": "test",
}  # fmt: skip


def _own_split(frame: pd.DataFrame, column: str, study: Study, name: str) -> np.ndarray:
    """``train``/``validation``/``test`` of every comparison, from the file's split
    column (each comparison's row: its loser's line); a choice task's rows must agree."""
    if column not in frame.columns:
        raise DataValidationError(f"{name}: --split-col {column!r}: no such column; "
                                  f"{list_columns(frame.columns)}")  # fmt: skip
    words = frame[column].map(lambda v: SPLIT_VALUES.get(str(v).strip().lower(), ""))
    bad = words == ""
    if bad.any():
        line = frame.index[bad.to_numpy()][0]
        raise DataValidationError(
            f"{name}, line {line}, column {column!r}: {frame.loc[line, column]!r} is not "
            "train, validation or test"
        )
    lines = np.asarray(study.extras["pair_line"])
    split = words.loc[lines].to_numpy(dtype=object)
    keys = study.data.task_keys()
    mixed = pd.Series(split).groupby(keys).nunique().to_numpy() > 1
    if mixed.any():
        raise DataValidationError(
            f"{name}, column {column!r}: a choice task's rows are in two parts of the split; "
            "give every row of a task the same value"
        )
    return split


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
    notes.append("units given: " + ", ".join(f"{n} {u}" for n, u in cols.units))
    return [replace(a, unit=units[a.name]) if a.name in units else a for a in attrs]


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


def _describe(
    frame: pd.DataFrame, cols: ColumnMap, attrs: Sequence[Attribute], study: Study
) -> tuple[ColumnRole, ...]:
    """What every column of the file means in the imported study (its role, type, unit;
    :class:`pbo_core.data.ColumnRole`), in the file's order."""
    kinds = {f.name: f for f in study.schema.features}
    users = {f.name: f for f in (study.user_schema.features if study.user_schema else ())}
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
        f = kinds.get(a.name)
        kind = f.kind if f is not None else a.kind
        unit = f.unit if f is not None else a.unit
        for alt, c in (
            zip(cols.alternatives, cols.source_columns(a.source_column), strict=True)
            if cols.format == "wide"
            else [("", a.source_column)]
        ):
            put(c, "attribute", kind, unit=unit, attribute=a.name, alternative=alt)
    for name, _label in cols.respondent_features:
        f = users.get(name)
        put(name, "respondent feature", f.kind if f is not None else "")
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


def _coded_features(study: Study, cols: ColumnMap) -> Study:
    """``study`` with the respondent features the analyst declared category codes
    (``--categorical PURPOSE``) as categorical features, their levels the codes in
    numeric order."""
    assert study.users is not None and study.user_schema is not None
    declared = [n for n in cols.categorical if n in study.users.columns]
    if not declared:
        return study
    users = study.users.copy()
    feats = []
    for ft in study.user_schema.features:
        if ft.name not in declared:
            feats.append(ft)
            continue
        text = users[ft.name].map(lambda v: None if is_missing(v) else str(normalize_value(v)))
        users[ft.name] = text
        levels = tuple(sorted({v for v in text if v is not None}, key=natural_key))
        feats.append(Feature(ft.name, "categorical", levels=levels, label=ft.label))
    data = replace(study.data, users=users)
    return replace(study, data=data, users=users, user_schema=Schema(tuple(feats)))


def _plan(study: Study, cols: ColumnMap, money_how: str) -> Study:
    """``study`` with the analysis plan its import decided: the money and travel-time
    attributes (with their units and how they were chosen), the alternatives whose
    constants the conditional logit estimates and their reference."""
    alt = ALTERNATIVE_ATTRIBUTE if ALTERNATIVE_ATTRIBUTE in study.schema.names else None
    if cols.reference is not None and alt is None:
        raise DataValidationError(
            f"{study.data.source}: --reference {cols.reference!r} needs alternative constants "
            "(the alternatives are unlabelled here; --constants yes)"
        )
    if alt is not None and cols.reference is not None:
        levels = study.schema[alt].levels
        if cols.reference not in levels:
            raise DataValidationError(
                f"{study.data.source}: --reference {cols.reference!r} is not an alternative "
                f"({', '.join(levels)})"
            )
    unit = {f.name: f.unit for f in study.schema.features}
    money = cols.money_attribute or None
    time = cols.time_attribute or None
    plan = plan_with(
        study,
        money=Role(money, unit.get(money, ""), money_how) if money else None,
        time=Role(time, unit.get(time, ""), "chosen at import") if time else None,
        alternative=alt,
        reference=cols.reference if alt is not None else None,
        how="chosen at import",
    )
    return replace(study, plan=plan)


def _build(
    frame: pd.DataFrame,
    name: str,
    attrs: Sequence[Attribute],
    cols: ColumnMap,
    notes: list[str],
    meta: StudyMeta | None,
) -> Study:
    """The study of a resolved column map (shared by the loader and the upload check).

    Attributes the analyst left out (``cols.drop_attributes``) are not read. An exact
    linear relation among the attributes' differences is refused, naming the columns
    (:func:`pbo_core.collinearity.collinear_attributes`); attributes that never differ
    within a comparison are dropped with a note; near relations become notes.

    ``study.extras["attribute_table"]`` is the table as given, the left-out attributes
    included, so that it and ``extras["columns"]`` (their names in ``drop_attributes``)
    import the file again to the same study (the saved study, the recipe)."""
    table = list(attrs)
    unknown = [n for n in cols.drop_attributes if n not in {a.name for a in attrs}]
    if unknown:
        raise DataValidationError(
            f"{name}: cannot leave out {', '.join(map(repr, unknown))}: not an attribute "
            f"(attributes: {', '.join(a.name for a in attrs)})"
        )
    attrs = [a for a in attrs if a.name not in cols.drop_attributes]
    notes = list(notes)
    frame, selected = _select(frame, cols, name, notes)
    attrs = _with_units(attrs, cols, name, notes)
    cols, money_how = _money(cols, attrs, name, notes)
    cols = replace(
        cols,
        respondent_features=tuple((n, lb or readable(n)) for n, lb in cols.respondent_features),
    )
    features = cols.feature_names
    f = frame.copy(deep=False)
    if cols.format == "long":
        resp, task, prof = cols.respondent, cols.task, cols.profile
        if not resp:
            resp = _free(f, "respondent")
            f[resp] = f[task].to_numpy()
        if not task:
            _no_task_check(f, cols, resp, name)
            task = _free(f, "task")
            f[task] = 1
        if not prof:
            prof = _free(f, "profile")
            f[prof] = f.groupby([resp, task], sort=False).cumcount().to_numpy() + 1
        opt_keys = {normalize_value(v) for v in cols.opt_out}
        real = ~f[prof].map(lambda v: normalize_value(v) in opt_keys).to_numpy(dtype=bool)
        prep = drop_long_tasks(f, cols, attrs, [resp, task], real, prof, name)
        f = prep.frame
        dropped_notes = dropped_note(prep, "choice situations")
        all_attrs = attrs
        opt = {normalize_value(v) for v in cols.opt_out}
        # the alternatives in the file's order (first appearance), as a wide file's columns
        vals = [v for v in pd.unique(f[prof]) if normalize_value(v) not in opt]
        cols = _constants(cols, vals if cols.profile else [], notes, name)
        if cols.alternative_attribute:
            all_attrs = [*attrs, _alternative_attribute(vals, attrs, prof)]
        long, opts = (
            f,
            dict(
                respondent=resp,
                task=task,
                alternative=prof,
                chosen=cols.chosen_column,
                rank=cols.rank or None,
                opt_out_alternatives=cols.opt_out,
            ),
        )
    else:
        prep = prepare_wide(f, cols, attrs, name)
        f = prep.frame
        dropped_notes = dropped_note(prep, "rows (choice situations)")
        resp = cols.respondent
        if not resp:
            resp = _free(f, "respondent")
            f[resp] = f.index.to_numpy()
        numbered = None
        if cols.choice_coding in ("0", "1"):
            base = int(cols.choice_coding)
            numbered = {str(k + base): a for k, a in enumerate(cols.alternatives)}
        if not len(f):
            hint = ""
            if any(MISSING_ATTRIBUTE in n for n in dropped_notes):
                codes = ", ".join(str(c) for c in cols.missing or ())
                hint = (
                    f"; if {codes or 'those codes'} are values here, not missing answers, "
                    "give the codes that are (--missing, '' for none)"
                )
            raise DataValidationError(
                f"{name}: no choice situation is left ({'; '.join(dropped_notes)}){hint}"
            )
        if cols.task:  # task numbers of a respondent's rows, before any row was dropped
            task_of = None
        else:
            task_of = _free(f, "task")
            whole = frame.groupby(
                frame[cols.respondent] if cols.respondent else frame.index, sort=False
            ).cumcount()
            f[task_of] = whole.loc[f.index].to_numpy() + 1
        long = wide_to_long(
            f,
            attrs,
            respondent=resp,
            task=cols.task or task_of,
            choice=cols.chosen_column,
            alternatives=cols.alternatives,
            choice_values=numbered,
            opt_out_values=cols.opt_out,
            column_template=cols.template,
            keep_columns=features,
            name=name,
            from_file=True,
        )
        if prep.available is not None:  # unavailable alternatives are no profiles
            row = pd.Index(f.index).get_indexer(long.index)
            j = {a: k for k, a in enumerate(cols.alternatives)}
            alt = long["alternative"].map(lambda a: j.get(a, -1)).to_numpy()
            ok = np.ones(len(long), dtype=bool)
            real_alt = alt >= 0
            ok[real_alt] = prep.available[row[real_alt], alt[real_alt]]
            long = long.loc[ok]
        all_attrs = attrs
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
            cols = replace(cols, alternative_attribute=True)
            notes.append(
                f"alternative constants: yes ({', '.join(bare)} has no attribute columns: "
                "its constant is its utility)"
            )
        cols = _constants(cols, list(cols.alternatives), notes, name)
        if cols.alternative_attribute:
            all_attrs = [
                *attrs,
                _alternative_attribute(list(cols.alternatives), attrs, "alternative"),
            ]
        opts = dict(
            respondent="respondent",
            task="task",
            alternative="alternative",
            chosen="chosen",
            opt_out_alternatives=("__opt_out__",),
        )
    study = build_from_long(
        long,
        all_attrs,
        name=name,
        from_file=True,
        no_choice="error",
        exclude=(),
        user_columns=features,
        user_schema=None,
        meta=meta or StudyMeta(),
        **opts,  # type: ignore[arg-type]
    )
    if study.user_schema is not None:
        study = _coded_features(study, cols)
        labels = dict(cols.respondent_features)
        schema = Schema(
            tuple(
                replace(ft, label=labels.get(ft.name) or ft.label)
                for ft in study.user_schema.features
            )
        )
        study = replace(study, user_schema=schema)
    constant = [
        n for n in constant_attributes(study.schema, study.data) if n in {a.name for a in attrs}
    ]
    if constant:
        notes.append(
            f"left out: {', '.join(constant)} (never differs between the alternatives of a "
            "choice, so no model can estimate its effect)"
        )
        kept = replace(cols, drop_attributes=(*cols.drop_attributes, *constant))
        return _build(frame, name, table, kept, notes, meta)
    for c in collinear_attributes(study.schema, study.data):
        if c.exact:
            last = c.attributes[-1]
            raise DataValidationError(
                f"{name}: {c.sentence()} (remove one from the attribute table, or pass "
                f"--drop-attributes {last})"
            )
        notes.append(c.sentence())
    notes += [n for n in dropped_notes if n not in notes]
    extras = dict(study.extras)
    extras.update(columns=cols, import_notes=notes, attribute_table=table)
    extras["dropped"] = dict(prep.dropped)
    extras["dropped_lines"] = {k: list(v) for k, v in prep.lines.items()}
    if selected is not None:
        extras["selected"] = selected
    if cols.split:
        extras["split"] = _own_split(frame, cols.split, study, name)
        extras["split_column"] = cols.split
    extras["file_columns"] = [str(c) for c in frame.columns]
    if cols.weight:
        w = pd.to_numeric(frame[cols.weight], errors="coerce")
        extras["weight"] = {
            "column": cols.weight,
            "sum": float(w.sum()),
            "min": float(w.min()),
            "max": float(w.max()),
        }
        notes.append(
            f"weights ({cols.weight!r}, {w.min():g} to {w.max():g}) recorded, not used: the "
            "models take no weights, every choice counts once"
        )
    study = replace(study, extras=extras, columns=_describe(frame, cols, attrs, study))
    return _plan(study, cols, money_how)


# ----------------------------------------------------------------------------- inference
def attribute_rows(attributes: Sequence[Attribute]) -> pd.DataFrame:
    """The attribute table as editable rows: name, label, kind, unit, levels, direction."""
    rows = []
    for a in attributes:
        direction, desc = "", a.description
        for d in DIRECTIONS[1:]:
            if desc.endswith(f"({d})"):
                direction, desc = d, desc[: -len(d) - 2].rstrip()
        rows.append(
            {
                "name": a.name,
                "label": a.label,
                "kind": a.kind,
                "unit": a.unit,
                "levels (in order)": _LEVEL_SEP.join(a.levels),
                "direction": direction,
                "description": desc,
            }
        )
    return pd.DataFrame(rows)


def attributes_from_rows(rows: pd.DataFrame) -> tuple[list[Attribute], list[Problem]]:
    """Attributes from edited rows (:func:`attribute_rows`), and every row's problem
    (each text bounded first, :func:`data_loaders.fields.check_column_fields`)."""
    out, problems = [], []
    if len(rows) > limits.MAX_COLUMNS:
        return [], [Problem("attribute table", f"more than {limits.MAX_COLUMNS:,} rows")]
    for k, r in enumerate(rows.fillna("").to_dict(orient="records")):
        name = str(r.get("name", "")).strip()
        levels = tuple(
            s.strip() for s in str(r.get("levels (in order)", "")).split("|") if s.strip()
        )
        kind = str(r.get("kind", "")).strip()
        desc = str(r.get("description", "")).strip()
        direction = str(r.get("direction", "")).strip()
        if direction:
            desc = f"{desc} ({direction})".strip()
        try:
            typed = {c: str(r.get(c, "")) for c in ("name", "label", "unit", "description")}
            fields.check_column_fields({**typed, "levels": levels}, labels=_ROW_FIELDS)
            out.append(
                Attribute(
                    name,
                    kind,  # type: ignore[arg-type]
                    levels=() if kind == "numeric" else levels,
                    label=str(r.get("label", "")).strip(),
                    unit=str(r.get("unit", "")).strip(),
                    description=desc,
                )
            )
        except DataValidationError as exc:
            column = name if len(name) <= 40 else f"({len(name):,} characters)"
            problems.append(Problem("attribute table", str(exc), line=str(k + 1), column=column))
    return out, problems


def attributes_from_json(content: bytes, file: str) -> tuple[list[Attribute], list[Problem]]:
    """An uploaded JSON attribute table (the format of ``--attributes``) and its problems
    (one over the limits of :mod:`data_loaders.limits` is refused before it is parsed)."""
    try:
        limits.check_json_bytes(content, file)
    except limits.LimitError as exc:
        return [], [Problem(file, str(exc))]
    with _staging() as tmp:
        staged = Path(tmp) / "attributes.json"
        staged.write_bytes(content)
        try:
            return read_attribute_table(staged), []
        except (DataValidationError, UnicodeDecodeError) as exc:
            return [], [_problem(exc, file, str(staged))]


# ----------------------------------------------------------------------------- checking
_LOC = re.compile(r"line (\d+(?: \(header\))?)")
_COL = re.compile(r"column '([^']+)'")


def _staging() -> tempfile.TemporaryDirectory[str]:
    """A throw-away folder for an upload's bytes, below the per-user data folder.

    Uploads are staged there (not in the system temp folder) so that the loaders, which
    the dashboard confines to the allowed data roots (:mod:`data_loaders.access`), may read
    them; the folder is removed when the check is done.
    """
    root = data_home() / "staging"
    root.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=root)


def _problem(exc: Exception, file: str, staged: str) -> Problem:
    msg = str(exc).replace(staged, file)
    line = _LOC.search(msg)
    col = _COL.search(msg)
    return Problem(file, msg, line.group(1) if line else "", col.group(1) if col else "")


def _cell_problems(
    frame: pd.DataFrame, attributes: Sequence[Attribute], columns: ColumnMap, file: str
) -> list[Problem]:
    """Every attribute cell that does not parse (grouped by column and value); a long
    file's opt-out rows have no attributes."""
    problems = []
    if columns.format == "long" and columns.opt_out and columns.profile:
        opt = {normalize_value(v) for v in columns.opt_out}
        real = ~frame[columns.profile].map(lambda v: normalize_value(v) in opt).to_numpy(bool)
        frame = frame.loc[real]
    for a in attributes:
        for col in columns.source_columns(a.source_column):
            if col not in frame.columns:
                continue
            missing = {normalize_value(c) for c in missing_codes(columns, col)}
            codes, uniques = pd.factorize(frame[col], use_na_sentinel=False)
            for k, u in enumerate(uniques):
                if not is_missing(u) and normalize_value(u) in missing:
                    continue  # a missing-value code: its choice situation is dropped
                try:
                    a.parse(u)
                except ValueError as exc:
                    lines = frame.index[np.flatnonzero(codes == k)].tolist()
                    shown = ", ".join(map(str, lines[:8]))
                    more = f" and {len(lines) - 8} more" if len(lines) > 8 else ""
                    msg = f"attribute {a.display_name}: " + (
                        "the cell is empty" if is_missing(u) else f"{u!r} {exc}"
                    )
                    if is_missing(u):
                        msg += _opt_out_hint(frame, columns, lines)
                    problems.append(Problem(file, msg, line=shown + more, column=col))
    return problems


def _opt_out_hint(frame: pd.DataFrame, cols: ColumnMap, lines: list[Any]) -> str:
    """For empty cells of a long file without opt-out values that sit on exactly the rows
    of one profile value (``none``): say that it may be an opt-out."""
    if cols.format != "long" or cols.opt_out or not cols.profile:
        return ""
    values = {normalize_value(v) for v in frame.loc[lines, cols.profile]}
    if len(values) != 1:
        return ""
    (v,) = values
    every = frame[cols.profile].map(normalize_value).to_numpy() == v
    if int(every.sum()) != len(lines):  # only when every row of that value is empty there
        return ""
    return (
        f" (on every row whose {cols.profile} is {v!r}: if it means 'none of these', give it "
        f"as an opt-out value, --opt-out {v})"
    )


def _attribute_columns_missing(
    frame: pd.DataFrame, attributes: Sequence[Attribute], columns: ColumnMap, file: str
) -> list[Problem]:
    """The attribute table's columns the file lacks, each listing the file's columns."""
    out = []
    for a in attributes:
        for col in columns.source_columns(a.source_column):
            if col not in frame.columns:
                out.append(
                    Problem(
                        file,
                        f"missing column {col!r} (attribute {a.display_name}); "
                        + list_columns(frame.columns),
                        line="1 (header)",
                        column=col,
                    )
                )
    return out


def read_upload_table(
    content: bytes, file: str, sep: str | None = None, encoding: str | None = None
) -> tuple[readers.Table | None, list[Problem]]:
    """An upload (any format of :func:`data_loaders.readers.accepted_suffixes`, chosen
    by the suffixes of ``file``, a base name) read after the limits, with how it was read
    (:meth:`~data_loaders.readers.Table.describe`); or its problem."""
    try:
        return readers.read_table(content, file, sep, encoding=encoding), []
    except DataValidationError as exc:
        return None, [_problem(exc, file, file)]


def read_upload(
    content: bytes, file: str, sep: str | None = None
) -> tuple[pd.DataFrame | None, list[Problem]]:
    """An upload as a table (index = file line), after the limits; or its problem (see
    :func:`read_upload_table`)."""
    table, problems = read_upload_table(content, file, sep)
    return (None if table is None else table.frame), problems


@dataclass
class Inspection:
    """What the Add-a-study form shows for an upload and a (partial) column map."""

    columns: ColumnMap | None
    notes: list[str] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)
    numeric: list[str] = field(default_factory=list)
    money: str = ""
    problems: list[Problem] = field(default_factory=list)
    #: What the import would understand with the inferred attribute table
    #: (:func:`data_loaders.recipes.preview_lines`), or why it would not load.
    preview: list[str] = field(default_factory=list)


def inspect_upload(frame: pd.DataFrame, file: str, columns: ColumnMap) -> Inspection:
    """The resolved column map of an upload, what was inferred, the inferred attribute
    table, the respondent-feature candidates and the default money attribute; or the
    problem (naming the file and listing its columns)."""
    try:
        cols, notes = resolve_columns(frame, replace(columns, respondent_features=()), file)
        attrs = infer_attributes(frame, cols, notes)
        cands = feature_candidates(frame, cols, attrs)
    except DataValidationError as exc:
        return Inspection(None, problems=[_problem(exc, file, file)])
    cols = replace(cols, respondent_features=columns.respondent_features)
    numeric = [a.name for a in attrs if a.kind == "numeric"]
    return Inspection(
        cols,
        notes,
        attrs,
        cands,
        numeric,
        money_candidate(attrs)[0],
        problems=[],
        preview=_preview(frame, file, attrs, cols),
    )


def _available_rows(frame: pd.DataFrame, cols: ColumnMap, file: str) -> pd.DataFrame:
    """A long table without the rows its availability rules remove
    (:func:`~data_loaders.prepare.long_rule_rows`): the cells the loader reads, checked as
    a wide table's available cells are. Without a profile column the alternatives are
    numbered by row, as :func:`_build` numbers them."""
    if not cols.available_when:
        return frame
    prof = cols.profile
    f = frame
    if not prof or prof not in frame.columns:
        keys = [c for c in dict.fromkeys([cols.respondent or cols.task, cols.task]) if c]
        if keys and all(k in frame.columns for k in keys):
            numbers = frame.groupby(keys, sort=False).cumcount().to_numpy() + 1
        else:
            numbers = np.arange(1, len(frame) + 1)
        prof = _free(frame, "profile")
        f = frame.assign(**{prof: numbers})
    opt = {normalize_value(v) for v in cols.opt_out}
    real = ~f[prof].map(lambda v: normalize_value(v) in opt).to_numpy(dtype=bool)
    off, _ = long_rule_rows(f, cols, prof, real, file)
    return frame.loc[~off]


def _preview(
    frame: pd.DataFrame, file: str, attrs: Sequence[Attribute], cols: ColumnMap
) -> list[str]:
    """:func:`data_loaders.recipes.preview_lines` of the study an upload would give (its
    respondent features as named, not checked here), or the problem in one line."""
    try:
        checked = (
            prepare_wide(frame, cols, attrs, file).frame
            if cols.format == "wide"
            else _available_rows(frame, cols, file)
        )
        found = _attribute_columns_missing(checked, attrs, cols, file)
        found += _cell_problems(group_levels(checked, cols, attrs), attrs, cols, file)
        if found:
            return [f"not yet importable: {found[0].one_line()}"]
        plain = replace(cols, respondent_features=())
        study = _build(frame, file, attrs, plain, [], None)
    except (DataValidationError, ValueError) as exc:
        return [f"not yet importable: {_problem(exc, file, file).one_line()}"]
    asked = [f"question: {q.one_line()}" for q in open_questions(frame, attrs, cols)]
    feats = [f"{n} ({lb})" if lb else n for n, lb in cols.respondent_features]
    return asked + [
        f"respondent features: {', '.join(feats) or 'none'}"
        if line.startswith("respondent features:")
        else line
        for line in preview_lines(study)
    ]


def check_upload(
    content: bytes,
    file: str,
    attributes: Sequence[Attribute] | None,
    columns: ColumnMap,
    respondents: tuple[bytes, str] | None = None,
    sep: str | None = None,
    encoding: str | None = None,
) -> tuple[Study | None, list[Problem]]:
    """Check an upload with the loaders; the study, or ``None`` and every problem found.

    ``file`` (and the respondents' name) is the base name shown in messages. The limits
    come first (:mod:`data_loaders.limits`), then the columns (a missing one lists those
    the file has); cell problems are all collected; the loader then checks the rest
    (choices per task, flags) and reports its first problem. ``attributes=None`` infers
    the table, as the command line does without ``--attributes``. ``content`` is the
    file as given, in any accepted format (:func:`read_upload_table`; ``sep`` names a text
    file's separator and ``encoding`` its encoding, else they are detected).
    """
    table, problems = read_upload_table(content, file, sep, encoding)
    frame = None if table is None else table.frame
    if respondents is not None:
        try:
            limits.check_csv_bytes(respondents[0], respondents[1])
        except DataValidationError as exc:
            problems.append(Problem(respondents[1], str(exc)))
    if table is None or frame is None or problems:
        return None, problems
    try:
        cols, notes = resolve_columns(frame, columns, file)
        notes.insert(0, table.describe())  # how it was read: format, separator, size
        attrs = (
            infer_attributes(frame, cols, notes)
            if attributes is None
            else resolve_attributes(list(attributes))
        )
    except DataValidationError as exc:
        return None, [_problem(exc, file, file)]
    checked = group_levels(frame, cols, attrs)
    try:  # the cells the loader reads: available, not dropped
        if cols.format == "wide":
            checked = prepare_wide(frame, cols, attrs, file).frame
        elif cols.available_when:
            checked = group_levels(_available_rows(frame, cols, file), cols, attrs)
    except DataValidationError as exc:
        return None, [_problem(exc, file, file)]
    problems = _attribute_columns_missing(checked, attrs, cols, file)
    problems += _cell_problems(checked, attrs, cols, file)
    if problems:
        return None, problems
    if not cols.feature_names and respondents is None:
        spare = feature_candidates(frame, cols, attrs)
        if spare:
            notes.append(
                f"respondent-feature candidates, not kept: {', '.join(spare[:12])}"
                + (f" and {len(spare) - 12} more" if len(spare) > 12 else "")
                + " (name them as respondent features, --respondent-features, for the "
                "Hierarchy page's user groups)"
            )
    try:
        study = _build(frame, file, attrs, cols, notes, None)
    except (DataValidationError, ValueError) as exc:
        return None, [_problem(exc, file, file)]
    questions = open_questions(frame, attrs, cols, attributes_given=attributes is not None)
    if questions:  # what the file leaves open, asked once its own problems are none
        return None, [Problem(file, q.one_line(), column=", ".join(q.columns)) for q in questions]
    if respondents is not None:
        key = study.extras["columns"].respondent or "respondent"
        study, more = with_respondents(study, *respondents, key)
        if more:
            return None, more
    return study, []


def _read_respondents(
    content: bytes, name: str, key: str
) -> tuple[pd.DataFrame | None, list[Problem]]:
    with _staging() as tmp:
        staged = Path(tmp) / "respondents.csv"
        staged.write_bytes(content)
        try:
            users = read_csv_lines(staged)
        except DataValidationError as exc:
            return None, [_problem(exc, name, str(staged))]
    if key not in users.columns:
        msg = f"missing column {key!r} (the respondent); {list_columns(users.columns)}"
        return None, [Problem(name, msg, line="1 (header)", column=key)]
    dup = users[key].duplicated()
    if dup.any():
        lines = ", ".join(map(str, users.index[dup.to_numpy()][:8]))
        return None, [Problem(name, "respondent listed twice", line=lines, column=key)]
    return users, []


def with_respondents(
    study: Study, content: bytes, name: str, key: str
) -> tuple[Study, list[Problem]]:
    """The study with a respondent-features table (every study respondent must be listed),
    joined to the features taken from the choice file itself."""
    users, problems = _read_respondents(content, name, key)
    if users is None:
        return study, problems
    by_id = {str(v): i for i, v in zip(users.index, users[key], strict=True)}
    resp = study.respondents()
    absent = [r for r in resp if str(r) not in by_id]
    if absent:
        shown = ", ".join(map(str, absent[:8])) + (
            f" and {len(absent) - 8} more" if len(absent) > 8 else ""
        )
        return study, [Problem(name, f"respondents without a row: {shown}", column=key)]
    table = users.loc[[by_id[str(r)] for r in resp]].drop(columns=key)
    table.index = pd.Index(resp, name="respondent")
    try:
        schema = Schema.infer(table)
    except DataValidationError as exc:
        return study, [Problem(name, str(exc))]
    if study.users is not None and study.user_schema is not None:
        clash = sorted(set(table.columns) & set(study.users.columns))
        if clash:
            return study, [
                Problem(name, f"features also taken from the choice file: {', '.join(clash)}")
            ]
        table = study.users.reindex(table.index).join(table)
        schema = Schema(study.user_schema.features + schema.features)
    data = replace(study.data, users=table)
    study = replace(study, data=data, users=table, user_schema=schema)
    if study.plan is not None:  # the respondent features enter the plan's defaults
        p = study.plan
        study.plan = plan_with(
            study, money=p.money, time=p.time, alternative=p.alternative, reference=p.reference
        )
    return study, []
