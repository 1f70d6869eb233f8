"""An own study's files read and checked: the one loader of an analyst's choice data.

The import is a pipeline of five stages (:mod:`data_loaders.pipeline`: read, interpret
the layout, describe the columns, build the study, save); this module runs them for its
callers. :func:`load_choice_file` is the one loader of such data: the command line's
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

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from data_loaders import fields, limits, readers
from data_loaders.access import check_file
from data_loaders.conjoint import Attribute, StudyMeta, read_attribute_table
from data_loaders.layout import ColumnMap, feature_candidates
from data_loaders.pipeline import build, describe, interpret, read
from data_loaders.pipeline.build import Built, with_respondents
from data_loaders.pipeline.describe import ALTERNATIVE_ATTRIBUTE
from data_loaders.pipeline.interpret import (
    Layout,
    available_rows,
    cell_problems,
    missing_attribute_columns,
)
from data_loaders.pipeline.problems import Problem, Refused, problem_of
from data_loaders.pipeline.read import staging
from data_loaders.prepare import group_levels, prepare_wide
from data_loaders.questions import OpenQuestionsError, open_questions
from data_loaders.recipes import preview_lines
from pbo_core.data import DataValidationError, Study
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
    "check",
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
_LEVEL_SEP = " | "
#: The attribute editor's columns, for a refusal's sentence.
_ROW_FIELDS = {c: c for c in ("name", "label", "unit", "description")} | {"levels": "levels"}


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
    :func:`load_choice_file`: the pipeline's stages 2 to 4 (interpret, describe, build).
    ``ask``: refuse a file that leaves a column's meaning open
    (:func:`data_loaders.questions.open_questions`); a saved study, whose import answered
    them, loads with ``ask=False``.

    Raises
    ------
    OpenQuestionsError
        When ``ask`` and the file leaves a column's meaning open, naming the columns.
    """
    layout = interpret.interpret(
        read.of_frame(frame, name), columns, attributes, check=False, ask=ask
    )
    return _built(layout, meta).study


def _built(layout: Layout, meta: StudyMeta | None = None) -> Built:
    """Stages 3 and 4: describe and build (again without the attributes that never
    differ within a choice, when the build finds some)."""
    built = build.build(describe.describe(layout), meta=meta)
    while built.again is not None:
        built = build.build(describe.describe(built.again), meta=meta)
    return built


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
    with staging() as tmp:
        staged = Path(tmp) / "attributes.json"
        staged.write_bytes(content)
        try:
            return read_attribute_table(staged), []
        except (DataValidationError, UnicodeDecodeError) as exc:
            return [], [problem_of(exc, file, str(staged))]


# ----------------------------------------------------------------------------- checking
def read_upload_table(
    content: bytes, file: str, sep: str | None = None, encoding: str | None = None
) -> tuple[readers.Table | None, list[Problem]]:
    """An upload (any format of :func:`data_loaders.readers.accepted_suffixes`, chosen
    by the suffixes of ``file``, a base name) read after the limits, with how it was read
    (:meth:`~data_loaders.readers.Table.describe`); or its problem."""
    try:
        return readers.read_table(content, file, sep, encoding=encoding), []
    except DataValidationError as exc:
        return None, [problem_of(exc, file, file)]


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
        layout = interpret.interpret(
            read.of_frame(frame, file),
            replace(columns, respondent_features=()),
            check=False,
            ask=False,
        )
        attrs = list(layout.attributes)
        cands = feature_candidates(frame, layout.columns, attrs)
    except DataValidationError as exc:
        return Inspection(None, problems=[problem_of(exc, file, file)])
    cols = replace(layout.columns, respondent_features=columns.respondent_features)
    numeric = [a.name for a in attrs if a.kind == "numeric"]
    return Inspection(
        cols,
        list(layout.notes),
        attrs,
        cands,
        numeric,
        money_candidate(attrs)[0],
        problems=[],
        preview=_preview(layout, cols),
    )


def _preview(layout: Layout, cols: ColumnMap) -> list[str]:
    """:func:`data_loaders.recipes.preview_lines` of the study an upload would give (its
    respondent features as named, not checked here), or the problem in one line."""
    frame, file, attrs = layout.read.frame, layout.read.name, list(layout.attributes)
    try:
        checked = (
            prepare_wide(frame, cols, attrs, file).frame
            if cols.format == "wide"
            else available_rows(frame, cols, file)
        )
        found = missing_attribute_columns(checked, attrs, cols, file)
        found += cell_problems(group_levels(checked, cols, attrs), attrs, cols, file)
        if found:
            return [f"not yet importable: {found[0].one_line()}"]
        study = _built(replace(layout, notes=())).study  # its respondent features unnamed
    except (DataValidationError, ValueError) as exc:
        return [f"not yet importable: {problem_of(exc, file, file).one_line()}"]
    asked = [f"question: {q.one_line()}" for q in open_questions(frame, attrs, cols)]
    feats = [f"{n} ({lb})" if lb else n for n, lb in cols.respondent_features]
    return asked + [
        f"respondent features: {', '.join(feats) or 'none'}"
        if line.startswith("respondent features:")
        else line
        for line in preview_lines(study)
    ]


def check(
    content: bytes,
    file: str,
    attributes: Sequence[Attribute] | None,
    columns: ColumnMap,
    respondents: tuple[bytes, str] | None = None,
    sep: str | None = None,
    encoding: str | None = None,
) -> Built:
    """Stages 1 to 4 of the import (read, interpret, describe, build) on an upload: the
    built study (see :func:`check_upload`).

    Raises
    ------
    Refused
        With every problem found.
    """
    layout = interpret.interpret(
        read.read(content, file, sep, encoding, respondents), columns, attributes
    )
    try:
        return _built(layout)
    except OpenQuestionsError as exc:
        raise Refused(
            [Problem(file, q.one_line(), column=", ".join(q.columns)) for q in exc.questions]
        ) from None
    except Refused:
        raise
    except (DataValidationError, ValueError) as exc:
        raise Refused([problem_of(exc, file, file)]) from None


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
    try:
        return check(content, file, attributes, columns, respondents, sep, encoding).study, []
    except Refused as exc:
        return None, exc.problems
