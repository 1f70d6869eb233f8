"""Readers of the two conjoint layouts (long and wide) into a Study.

Long format (:func:`load_conjoint_long`)
    One row per respondent x task x alternative.
Wide format (:func:`load_conjoint_wide`)
    One row per respondent x task with the alternatives side by side; reshaped by
    :func:`wide_to_long`.

Both read a CSV file (:func:`read_table`) or take a DataFrame and hand the long rows to
:func:`data_loaders.conjoint.build.build_from_long`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data_loaders._common import missing_columns_error, quoted, read_csv_lines, where
from data_loaders.conjoint.attributes import (
    Attribute,
    is_missing,
    normalize_value,
    parse_attribute,
    resolve_attributes,
)
from data_loaders.conjoint.build import NoChoice, StudyMeta, build_from_long
from data_loaders.conjoint.exclusions import ExclusionRule
from pbo_core.data import ColumnRole, DataValidationError, Schema, Study

__all__ = ["load_conjoint_long", "load_conjoint_wide", "read_table", "wide_to_long"]

_OPT_OUT = "__opt_out__"


def read_table(
    data: str | os.PathLike[str] | pd.DataFrame,
    table_name: str | None,
    read_csv_kwargs: Mapping[str, Any] | None,
) -> tuple[pd.DataFrame, str, bool]:
    """The rows of a CSV file (index = file line) or a DataFrame, with a name for errors.

    Parameters
    ----------
    data
        CSV file (``.gz`` allowed) or a DataFrame.
    table_name
        Name of a DataFrame in error messages (default ``"table"``).
    read_csv_kwargs
        Extra arguments for :func:`pandas.read_csv`.

    Returns
    -------
    tuple
        ``(frame, name, from_file)``: the rows, the file path or table name, and whether
        the index holds file lines.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    """
    if isinstance(data, pd.DataFrame):
        return data, table_name or "table", False
    p = Path(data)
    return read_csv_lines(p, **dict(read_csv_kwargs or {})), str(p), True


def load_conjoint_long(
    data: str | os.PathLike[str] | pd.DataFrame,
    attributes: Sequence[Attribute] | str | os.PathLike[str],
    *,
    respondent: str = "respondent",
    task: str = "task",
    alternative: str = "profile",
    chosen: str = "chosen",
    rank: str | None = None,
    opt_out_alternatives: Collection[Any] = (),
    no_choice: NoChoice = "error",
    exclude: Sequence[ExclusionRule] = (),
    user_columns: Sequence[str] = (),
    user_schema: Schema | None = None,
    meta: StudyMeta | None = None,
    table_name: str | None = None,
    read_csv_kwargs: Mapping[str, Any] | None = None,
) -> Study:
    """Load long-format choice data (one row per respondent x task x alternative).

    Parameters
    ----------
    data
        CSV file (``.gz`` allowed) or a DataFrame.
    attributes
        The attributes, or the path of a JSON attribute table.
    respondent, task, alternative, chosen
        Column names. ``chosen`` holds 1/0, true/false or yes/no; empty = not chosen.
    rank
        A rank column (1 = best) read instead of ``chosen``: every pair of a task's real
        alternatives is ordered by rank (equal ranks: no comparison; an empty rank is
        below the given ones). See :func:`~data_loaders.conjoint.build.build_from_long`.
    opt_out_alternatives
        Values of ``alternative`` that mark an opt-out row (e.g. ``("C", "none")``).
    no_choice
        What a task without any chosen row means: ``"error"``, ``"opt_out"`` or
        ``"drop"``.
    exclude
        Per-respondent exclusion rules (see :mod:`data_loaders.conjoint.exclusions`).
    user_columns
        Respondent-level columns copied into ``study.users`` (must be constant within a
        respondent); ``user_schema`` describes them (inferred when ``None``).
    meta
        Key, title and provenance of the study.
    table_name
        Name used in error messages for a DataFrame (files use their path).
    read_csv_kwargs
        Extra arguments for :func:`pandas.read_csv` (e.g. ``sep=";"``).

    Returns
    -------
    Study
        Items = distinct profiles; pairs = chosen beats each other real alternative.
        ``data.task`` is the task of each pair; ``extras`` holds ``pair_line``,
        ``respondent_summary``, ``excluded`` and ``n_identical_skipped``.

    Raises
    ------
    DataValidationError
        For malformed data, naming the file and line (or the row of a DataFrame).
    """
    frame, name, from_file = read_table(data, table_name, read_csv_kwargs)
    attrs = resolve_attributes(attributes)
    study = build_from_long(
        frame,
        attrs,
        name=name,
        from_file=from_file,
        respondent=respondent,
        task=task,
        alternative=alternative,
        chosen=chosen,
        opt_out_alternatives=opt_out_alternatives,
        no_choice=no_choice,
        exclude=exclude,
        user_columns=user_columns,
        user_schema=user_schema,
        meta=meta or StudyMeta(),
        rank=rank,
    )
    roles = [
        ColumnRole(respondent, "respondent", "id"),
        ColumnRole(task, "task", "id"),
        ColumnRole(alternative, "alternative", "code"),
        ColumnRole(rank or chosen, "choice", "rank" if rank else "flag"),
        *(_attribute_role(study, a, a.source_column) for a in attrs),
    ]
    return _described(study, frame, roles, user_columns)


def wide_to_long(
    frame: pd.DataFrame,
    attributes: Sequence[Attribute],
    *,
    respondent: str,
    task: str | None,
    choice: str,
    alternatives: Sequence[str],
    choice_values: Mapping[Any, str] | None = None,
    opt_out_values: Collection[Any] = (),
    column_template: str = "{stem}{alt}",
    keep_columns: Sequence[str] = (),
    name: str = "table",
    from_file: bool = False,
) -> pd.DataFrame:
    """Reshape wide choice data to the long layout (columns ``respondent``, ``task``,
    ``alternative``, ``chosen`` and one per attribute, named by the attribute stem).

    A row whose choice is one of ``opt_out_values`` gets an extra opt-out row (alternative
    ``"__opt_out__"``) that is chosen. The index (file line) of every long row is that of
    its wide row.
    """
    alternatives = [str(a) for a in alternatives]
    cols = {
        (a.name, alt): column_template.format(stem=a.source_column, alt=alt)
        for a in attributes
        for alt in alternatives
    }
    needed = [respondent, choice, *([task] if task else []), *cols.values(), *keep_columns]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise missing_columns_error(name, missing, frame.columns, from_file, needed=needed)
    lookup: dict[str, str] = {}
    for alt in alternatives:
        lookup[normalize_value(alt)] = alt
        lookup[normalize_value(f"{choice}{alt}")] = alt
    for k, v in dict(choice_values or {}).items():
        if str(v) not in alternatives and str(v) != _OPT_OUT:
            raise ValueError(f"choice_values: {k!r} maps to {v!r}, not one of {alternatives}")
        lookup[normalize_value(k)] = str(v)
    for v in opt_out_values:
        lookup[normalize_value(v)] = _OPT_OUT
    codes, uniques = pd.factorize(frame[choice], use_na_sentinel=False)
    mapped = np.empty(len(uniques), dtype=object)
    for k, u in enumerate(uniques):
        if is_missing(u):
            mapped[k] = None
            continue
        key = normalize_value(u)
        if key not in lookup:
            label = frame.index[int(np.flatnonzero(codes == k)[0])]
            raise DataValidationError(
                f"{where(name, label, from_file)}: column {choice!r}: {quoted(u)} does not name an "
                f"alternative (expected one of {alternatives}"
                + (
                    f" or an opt-out value {list(opt_out_values)})"
                    if opt_out_values
                    else "; if it means 'none of these', give it as an opt-out value)"
                )
            )
        mapped[k] = lookup[key]
    chosen_alt = mapped[codes]
    # check the cells in their own columns, so an error names ``price2``, not ``price``
    answered = np.array([c is not None for c in chosen_alt], dtype=bool)
    for (aname, _alt), col in cols.items():
        attr = next(a for a in attributes if a.name == aname)
        parse_attribute(frame[col][answered], attr, name, from_file, col)
    task_col = (
        frame[task].to_numpy()
        if task
        else frame.groupby(respondent, sort=False).cumcount().to_numpy() + 1
    )
    parts = []
    pos = np.arange(len(frame))
    for j, alt in enumerate([*alternatives, _OPT_OUT]):
        if alt == _OPT_OUT:
            sel = chosen_alt == _OPT_OUT
            if not sel.any():
                continue
        else:
            sel = np.ones(len(frame), dtype=bool)
        part = pd.DataFrame(
            {
                "respondent": frame[respondent].to_numpy()[sel],
                "task": task_col[sel],
                "alternative": alt,
                "chosen": (chosen_alt == alt)[sel],
                "_pos": pos[sel] * (len(alternatives) + 1) + j,
            },
            index=frame.index[sel],
        )
        for a in attributes:
            part[a.source_column] = (
                frame[cols[(a.name, alt)]].to_numpy()[sel] if alt != _OPT_OUT else np.nan
            )
        for c in keep_columns:
            part[c] = frame[c].to_numpy()[sel]
        parts.append(part)
    long = pd.concat(parts).sort_values("_pos", kind="stable").drop(columns="_pos")
    return long


def load_conjoint_wide(
    data: str | os.PathLike[str] | pd.DataFrame,
    attributes: Sequence[Attribute] | str | os.PathLike[str],
    *,
    respondent: str = "respondent",
    task: str | None = "task",
    choice: str = "choice",
    alternatives: Sequence[str] = ("1", "2"),
    choice_values: Mapping[Any, str] | None = None,
    opt_out_values: Collection[Any] = (),
    column_template: str = "{stem}{alt}",
    no_choice: NoChoice = "error",
    exclude: Sequence[ExclusionRule] = (),
    user_columns: Sequence[str] = (),
    user_schema: Schema | None = None,
    meta: StudyMeta | None = None,
    table_name: str | None = None,
    read_csv_kwargs: Mapping[str, Any] | None = None,
) -> Study:
    """Load wide-format choice data (one row per task, alternatives side by side).

    Parameters
    ----------
    data
        CSV file (``.gz`` allowed) or a DataFrame.
    attributes
        The attributes (``column`` is the stem), or a JSON attribute table.
    respondent, task, choice
        Column names. ``task=None`` numbers the rows of each respondent 1, 2, ...
    alternatives
        Suffixes of the alternatives; attribute columns are
        ``column_template.format(stem=..., alt=...)`` (``price1``, ``price2``...).
    choice_values
        Raw choice value -> alternative suffix. By default the suffix itself (``1``) and
        the choice column name plus the suffix (``choice1``) are understood.
    opt_out_values
        Choice values meaning "none of these" (opt-out tasks); an empty choice is a task
        without a choice, handled by ``no_choice``.
    no_choice, exclude, user_columns, user_schema, meta, table_name, read_csv_kwargs
        As in :func:`load_conjoint_long`.
    """
    frame, name, from_file = read_table(data, table_name, read_csv_kwargs)
    attrs = resolve_attributes(attributes)
    long = wide_to_long(
        frame,
        attrs,
        respondent=respondent,
        task=task,
        choice=choice,
        alternatives=alternatives,
        choice_values=choice_values,
        opt_out_values=opt_out_values,
        column_template=column_template,
        keep_columns=user_columns,
        name=name,
        from_file=from_file,
    )
    study = build_from_long(
        long,
        attrs,
        name=name,
        from_file=from_file,
        respondent="respondent",
        task="task",
        alternative="alternative",
        chosen="chosen",
        opt_out_alternatives=(_OPT_OUT,),
        no_choice=no_choice,
        exclude=exclude,
        user_columns=user_columns,
        user_schema=user_schema,
        meta=meta or StudyMeta(),
    )
    roles = [
        ColumnRole(respondent, "respondent", "id"),
        *([ColumnRole(task, "task", "id")] if task else []),
        ColumnRole(choice, "choice", "code"),
        *(
            _attribute_role(study, a, column_template.format(stem=a.source_column, alt=alt), alt)
            for a in attrs
            for alt in alternatives
        ),
    ]
    return _described(study, frame, roles, user_columns)


def _attribute_role(study: Study, a: Attribute, column: str, alt: str = "") -> ColumnRole:
    """The description of an attribute's column (its kind and unit as the schema has them)."""
    f = study.schema[a.name] if a.name in study.schema.names else None
    return ColumnRole(
        column,
        "attribute",
        f.kind if f is not None else a.kind,
        unit=f.unit if f is not None else a.unit,
        attribute=a.name,
        alternative=alt,
        how="set by the study's loader",
    )


def _described(
    study: Study, frame: pd.DataFrame, roles: Sequence[ColumnRole], user_columns: Sequence[str]
) -> Study:
    """``study`` with the description of every column of ``frame`` (those named in
    ``roles``, the respondent features, the rest not used), in the file's order."""
    by = {r.column: r for r in roles if r.column in frame.columns}
    users = {f.name: f for f in (study.user_schema.features if study.user_schema else ())}
    for c in user_columns:
        if c in frame.columns:
            f = users.get(c)
            by.setdefault(c, ColumnRole(c, "respondent feature", f.kind if f else ""))
    study.columns = tuple(
        by.get(str(c), ColumnRole(str(c), "ignored", how="not used by the loader"))
        for c in frame.columns
    )
    return study
