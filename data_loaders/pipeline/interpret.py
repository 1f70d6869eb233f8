"""Stage 2 of the import, **interpret the layout**: which columns hold what.

:func:`interpret` resolves the column map (layout, respondent, task, profile and chosen
columns, alternatives, availability, missing-value codes: every unset part inferred by
:func:`data_loaders.layout.resolve_columns`, each inference a note) and the attribute
table (as given, or inferred by :func:`data_loaders.layout.infer_attributes`). An upload
is then checked cell by cell (``check``): every attribute column the table names must be
in the file and every cell the loader will read must parse; all such problems are
reported at once. Its value, :class:`Layout`, is what
:func:`data_loaders.pipeline.describe.describe` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data_loaders.conjoint import Attribute, is_missing, normalize_value, resolve_attributes
from data_loaders.layout import (
    ColumnMap,
    feature_candidates,
    infer_attributes,
    list_columns,
    missing_codes,
    resolve_columns,
)
from data_loaders.pipeline.problems import Problem, Refused, problem_of
from data_loaders.pipeline.read import ReadFile
from data_loaders.prepare import group_levels, long_rule_rows, prepare_wide
from data_loaders.questions import Question, open_questions
from pbo_core.errors import DataValidationError

__all__ = [
    "Layout",
    "available_rows",
    "cell_problems",
    "free_name",
    "interpret",
    "missing_attribute_columns",
]


@dataclass(frozen=True, eq=False)
class Layout:
    """A file's layout interpreted.

    Attributes
    ----------
    read
        The read stage's value (the table).
    columns
        The column map with every part resolved (:func:`data_loaders.layout.resolve_columns`).
    attributes
        The attribute table, as given or inferred (the left-out ones included:
        ``columns.drop_attributes`` names them).
    notes
        What was read and inferred, one sentence each.
    attributes_given
        The analyst gave the table (it decides the attributes' kinds).
    ask
        Ask what the file leaves open about its columns' meanings
        (:func:`data_loaders.questions.open_questions`), once the study is built (a
        file's own problems come first); a saved study, whose import answered them, is
        not asked.
    """

    read: ReadFile
    columns: ColumnMap
    attributes: tuple[Attribute, ...]
    notes: tuple[str, ...] = ()
    attributes_given: bool = False
    ask: bool = True

    def questions(self) -> list[Question]:
        """What the file leaves open (empty: nothing, or not asked)."""
        if not self.ask:
            return []
        return open_questions(
            self.read.frame,
            list(self.attributes),
            self.columns,
            attributes_given=self.attributes_given,
        )


def interpret(
    read: ReadFile,
    columns: ColumnMap,
    attributes: str | Path | Sequence[Attribute] | None = None,
    *,
    check: bool = True,
    ask: bool = True,
) -> Layout:
    """The layout of ``read``'s table under ``columns`` (unset parts inferred) with the
    attribute table ``attributes`` (``None``: inferred from the columns).

    ``check`` (an upload): every attribute column must be in the file and every cell the
    loader reads must parse; the respondent-feature candidates not kept are a note.
    ``ask``: ask what the file leaves open once the study is built
    (:meth:`Layout.questions`).

    Raises
    ------
    Refused
        With every problem found (a missing column lists the file's columns; each cell
        that does not parse is named by line and column).
    """
    frame, name = read.frame, read.name
    try:
        cols, notes = resolve_columns(frame, columns, name)
        if read.how:
            notes.insert(0, read.how)  # how it was read: format, separator, size
        attrs = (
            infer_attributes(frame, cols, notes)
            if attributes is None
            else resolve_attributes(attributes if isinstance(attributes, str | Path)
                                    else list(attributes))
        )  # fmt: skip
    except DataValidationError as exc:
        if not check:
            raise
        raise Refused([problem_of(exc, name, name)]) from None
    layout = Layout(read, cols, tuple(attrs), tuple(notes), attributes is not None, ask)
    if not check:
        return layout
    _check_cells(layout)
    return _with_candidates(layout)


def _check_cells(layout: Layout) -> None:
    """Refuse a file whose attribute columns are missing or whose cells do not parse."""
    frame, cols, attrs, name = (
        layout.read.frame,
        layout.columns,
        layout.attributes,
        layout.read.name,
    )
    checked = group_levels(frame, cols, attrs)
    try:  # the cells the loader reads: available, not dropped
        if cols.format == "wide":
            checked = prepare_wide(frame, cols, attrs, name).frame
        elif cols.available_when:
            checked = group_levels(available_rows(frame, cols, name), cols, attrs)
    except DataValidationError as exc:
        raise Refused([problem_of(exc, name, name)]) from None
    problems = missing_attribute_columns(checked, attrs, cols, name)
    problems += cell_problems(checked, attrs, cols, name)
    if problems:
        raise Refused(problems)


def _with_candidates(layout: Layout) -> Layout:
    """The layout with a note naming the columns that could be respondent features (none
    named, no respondents file)."""
    cols = layout.columns
    if cols.feature_names or layout.read.respondents is not None:
        return layout
    spare = feature_candidates(layout.read.frame, cols, list(layout.attributes))
    if not spare:
        return layout
    note = (
        f"respondent-feature candidates, not kept: {', '.join(spare[:12])}"
        + (f" and {len(spare) - 12} more" if len(spare) > 12 else "")
        + " (name them as respondent features, --respondent-features, for the "
        "Hierarchy page's user groups)"
    )
    return replace(layout, notes=(*layout.notes, note))


def free_name(frame: pd.DataFrame, base: str) -> str:
    """``base``, or ``_base_`` (and so on) when the table has a column of that name."""
    name = base
    while name in frame.columns:
        name = f"_{name}_"
    return name


def available_rows(frame: pd.DataFrame, cols: ColumnMap, file: str) -> pd.DataFrame:
    """A long table without the rows its availability rules remove
    (:func:`~data_loaders.prepare.long_rule_rows`): the cells the loader reads, checked as
    a wide table's available cells are. Without a profile column the alternatives are
    numbered by row, as the describe stage numbers them."""
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
        prof = free_name(frame, "profile")
        f = frame.assign(**{prof: numbers})
    opt = {normalize_value(v) for v in cols.opt_out}
    real = ~f[prof].map(lambda v: normalize_value(v) in opt).to_numpy(dtype=bool)
    off, _ = long_rule_rows(f, cols, prof, real, file)
    return frame.loc[~off]


def cell_problems(
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


def missing_attribute_columns(
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
