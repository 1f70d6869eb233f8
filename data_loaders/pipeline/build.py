"""Stage 4 of the import, **build the situations and the data**: the study itself.

:func:`build` turns the described choice situations into a
:class:`~pbo_core.data.Study` through the shared conjoint loader
(:func:`data_loaders.conjoint.build_from_long`; a wide file is reshaped first,
:func:`data_loaders.conjoint.wide_to_long`, its unavailable alternatives are no
profiles): items, comparisons and choice situations, respondent features (declared codes
as categories), the import's notes, what was dropped, every column's role and the
analysis plan (money and time roles with their units, the alternatives' constants). An
exact linear relation among the attributes is refused, naming them; an attribute that
never differs within a choice is left out, and the study is described again without it
(:attr:`Built.again`). The questions the file leaves open are asked once the study
builds, and a respondent-features file is joined last. Its value, :class:`Built`, is what
:func:`data_loaders.pipeline.save.save` writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data_loaders._common import read_csv_lines
from data_loaders.conjoint import (
    StudyMeta,
    build_from_long,
    is_missing,
    normalize_value,
    wide_to_long,
)
from data_loaders.layout import ColumnMap, list_columns, natural_key
from data_loaders.pipeline.describe import ALTERNATIVE_ATTRIBUTE, Description
from data_loaders.pipeline.interpret import Layout, free_name
from data_loaders.pipeline.problems import Problem, Refused, problem_of
from data_loaders.pipeline.read import staging
from data_loaders.questions import OpenQuestionsError
from pbo_core.collinearity import collinear_attributes, constant_attributes
from pbo_core.data import ColumnRole, Feature, Schema, Study
from pbo_core.errors import DataValidationError
from pbo_core.plan import Role, plan_with

__all__ = ["SPLIT_VALUES", "Built", "build", "with_respondents"]

#: The values a split column may hold (lower case) -> the split's word.
SPLIT_VALUES = {
    "train": "train", "training": "train", "validation": "validation", "valid": "validation",
    "val": "validation", "test": "test", "testing": "test", "holdout": "test",
}  # fmt: skip


@dataclass(frozen=True, eq=False)
class Built:
    """The study built from a description.

    Attributes
    ----------
    description
        The describe stage's value.
    study
        The study: data, schema, notes and what was dropped (``extras``), every
        column's role (``columns``) and the analysis plan.
    again
        When attributes never differ within a choice: the layout without them, to
        describe and build again (``study`` is then not final).
    """

    description: Description
    study: Study
    again: Layout | None = None


def build(description: Description, *, meta: StudyMeta | None = None) -> Built:
    """The study of ``description`` (see the module); ``meta``: its provenance.

    Raises
    ------
    DataValidationError
        For malformed rows (from the loader, naming the file and line) or an exact linear
        relation among the attributes.
    OpenQuestionsError
        When the file leaves a column's meaning open (:meth:`Layout.questions`).
    Refused
        For a respondent-features file that does not fit, with its problems.
    """
    d, name = description, description.layout.read.name
    long, opts = _long_table(d) if d.columns.format == "wide" else _long_keys(d)
    features = d.columns.feature_names
    study = build_from_long(
        long,
        list(d.all_attributes),
        name=name,
        from_file=True,
        no_choice="error",
        exclude=(),
        user_columns=features,
        user_schema=None,
        meta=meta or StudyMeta(),
        **opts,  # type: ignore[arg-type]
    )
    study = _respondent_features(study, d.columns)
    notes = list(d.notes)
    again = _without_constant(d, study, notes)
    if again is not None:
        return Built(d, study, again)
    for c in collinear_attributes(study.schema, study.data):
        if c.exact:
            raise DataValidationError(
                f"{name}: {c.sentence()} (remove one from the attribute table, or pass "
                f"--drop-attributes {c.attributes[-1]})"
            )
        notes.append(c.sentence())
    notes += [n for n in d.dropped if n not in notes]
    study = replace(study, extras=_extras(d, study, notes), columns=_roles(d, study))
    study = _plan(study, d.columns, d.money_how)
    questions = d.layout.questions()  # what the file leaves open, once its own problems are none
    if questions:
        raise OpenQuestionsError(name, questions)
    read = d.layout.read
    if read.respondents is not None:
        key = d.columns.respondent or "respondent"
        study, more = with_respondents(study, *read.respondents, key)
        if more:
            raise Refused(more)
    return Built(d, study)


def _long_keys(d: Description) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A long file's choice rows and the loader's columns."""
    cols = d.columns
    resp, task, prof = d.keys
    return d.prepared.frame, dict(
        respondent=resp,
        task=task,
        alternative=prof,
        chosen=cols.chosen_column,
        rank=cols.rank or None,
        opt_out_alternatives=cols.opt_out,
    )


def _long_table(d: Description) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A wide file's choice situations reshaped to long rows (tasks numbered per
    respondent when the file has no task column, as the file's rows come), the rows of
    unavailable alternatives left out; and the loader's columns."""
    cols, prep, frame, name = d.columns, d.prepared, d.frame, d.layout.read.name
    f = prep.frame.copy(deep=False)
    resp = cols.respondent
    if not resp:
        resp = free_name(f, "respondent")
        f[resp] = f.index.to_numpy()
    numbered = None
    if cols.choice_coding in ("0", "1"):
        base = int(cols.choice_coding)
        numbered = {str(k + base): a for k, a in enumerate(cols.alternatives)}
    task_of = None
    if not cols.task:  # task numbers of a respondent's rows, before any row was dropped
        task_of = free_name(f, "task")
        whole = frame.groupby(
            frame[cols.respondent] if cols.respondent else frame.index, sort=False
        ).cumcount()
        f[task_of] = whole.loc[f.index].to_numpy() + 1
    long = wide_to_long(
        f,
        list(d.attributes),
        respondent=resp,
        task=cols.task or task_of,
        choice=cols.chosen_column,
        alternatives=cols.alternatives,
        choice_values=numbered,
        opt_out_values=cols.opt_out,
        column_template=cols.template,
        keep_columns=cols.feature_names,
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
    return long, dict(
        respondent="respondent",
        task="task",
        alternative="alternative",
        chosen="chosen",
        opt_out_alternatives=("__opt_out__",),
    )


def _respondent_features(study: Study, cols: ColumnMap) -> Study:
    """``study`` with its respondent features' labels, and the ones the analyst declared
    category codes (``--categorical PURPOSE``) as categorical features, their levels the
    codes in numeric order."""
    if study.user_schema is None:
        return study
    assert study.users is not None
    declared = [n for n in cols.categorical if n in study.users.columns]
    labels = dict(cols.respondent_features)
    users = study.users.copy() if declared else study.users
    feats = []
    for ft in study.user_schema.features:
        if ft.name in declared:
            text = users[ft.name].map(lambda v: None if is_missing(v) else str(normalize_value(v)))
            users[ft.name] = text
            levels = tuple(sorted({v for v in text if v is not None}, key=natural_key))
            ft = Feature(ft.name, "categorical", levels=levels, label=ft.label)
        feats.append(replace(ft, label=labels.get(ft.name) or ft.label))
    if declared:
        study = replace(study, data=replace(study.data, users=users), users=users)
    return replace(study, user_schema=Schema(tuple(feats)))


def _without_constant(d: Description, study: Study, notes: list[str]) -> Layout | None:
    """The layout without the attributes that never differ within a choice (no model can
    estimate their effect), said in ``notes``; ``None`` when there are none."""
    kept = {a.name for a in d.attributes}
    constant = [n for n in constant_attributes(study.schema, study.data) if n in kept]
    if not constant:
        return None
    notes.append(
        f"left out: {', '.join(constant)} (never differs between the alternatives of a "
        "choice, so no model can estimate its effect)"
    )
    cols = replace(d.columns, drop_attributes=(*d.columns.drop_attributes, *constant))
    return replace(d.layout, columns=cols, notes=tuple(notes))


def _extras(d: Description, study: Study, notes: list[str]) -> dict[str, Any]:
    """The study's extras: the resolved map, the notes, the attribute table as given
    (left-out attributes included: it and the map import the file again to the same
    study), what was dropped and selected, the own split and the weights."""
    cols, frame, prep = d.columns, d.frame, d.prepared
    extras = dict(study.extras)
    extras.update(columns=cols, import_notes=notes, attribute_table=list(d.layout.attributes))
    extras["dropped"] = dict(prep.dropped)
    extras["dropped_lines"] = {k: list(v) for k, v in prep.lines.items()}
    if d.selected is not None:
        extras["selected"] = d.selected
    if cols.split:
        extras["split"] = _own_split(frame, cols.split, study, d.layout.read.name)
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
    return extras


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


def _roles(d: Description, study: Study) -> tuple[ColumnRole, ...]:
    """The description's column roles, a respondent feature's type read from its values
    (the study's respondent schema)."""
    users: Mapping[str, Feature] = {
        f.name: f for f in (study.user_schema.features if study.user_schema else ())
    }
    return tuple(
        replace(r, kind=users[r.column].kind)
        if r.role == "respondent feature" and r.column in users
        else r
        for r in d.roles
    )


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


def _read_respondents(
    content: bytes, name: str, key: str
) -> tuple[pd.DataFrame | None, list[Problem]]:
    with staging() as tmp:
        staged = Path(tmp) / "respondents.csv"
        staged.write_bytes(content)
        try:
            users = read_csv_lines(staged)
        except DataValidationError as exc:
            return None, [problem_of(exc, name, str(staged))]
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
