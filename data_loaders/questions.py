"""What an import cannot decide alone: the open questions about a file's columns.

A column's meaning is decided once, at import, and never guessed silently. Where the
data leave it open, :func:`open_questions` names the columns and the answers instead of
scoring a meaningless study, and the import refuses until they are answered
(:class:`OpenQuestionsError`; the command line prints each question with the flags that
answer it, the Add-a-study form shows it beside the fields that do):

* **a row index or an id as an attribute**: a numeric attribute whose every row holds a
  value of its own that rises with the rows, or is named like an index (``rownames``
  1, 2, 3, ...; a case number): ``--ignore COLUMN``, or ``--numeric COLUMN`` when it
  really is a number;
* **integer codes that look like categories**: an attribute holding the whole numbers
  1..K (3 <= K <= :data:`MAX_CODES`) whose name or table states no unit
  (``TripTimeHours`` 1-8 are hours), or a respondent feature holding 3..K whole numbers
  (trip purpose 1-9, ticket type, who pays): ``--categorical COLUMN`` (the codes are
  levels) or ``--numeric COLUMN`` (they are amounts or scores);
* **a missing-value code inside a column's values**: a code given for every column
  (``--missing 99``) that lies strictly inside the range of an attribute column with many
  values (a trip of 99 minutes is a value): give it for the columns where it means
  "missing" (``--missing Q3=99``).

An attribute table given by the analyst decides the attributes' kinds, so it asks
nothing about them; the answers are kept in the import's recipe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from data_loaders.conjoint import Attribute, normalize_value
from data_loaders.layout import ColumnMap, attribute_columns, missing_codes
from pbo_core.data import DataValidationError
from pbo_core.units import unit_in_name

__all__ = ["MAX_CODES", "OpenQuestionsError", "Question", "open_questions"]

#: Most levels integer codes are asked about (more values are amounts, not categories).
MAX_CODES = 12
#: Fewest rows for "every row has a value of its own" to say row index or id.
MIN_ROWS_FOR_INDEX = 20
#: Names (lower case) of a row index or a case number.
INDEX_NAMES = frozenset(
    {"rownames", "row.names", "index", "row", "rowid", "row_id", "unnamed: 0", "obs",
     "observation", "case", "caseid", "case_id", "id", "x", "..1"}
)  # fmt: skip


@dataclass(frozen=True)
class Question:
    """One open question: the columns it is about, what is open, and the answers."""

    columns: tuple[str, ...]
    text: str
    answers: tuple[str, ...]

    def one_line(self) -> str:
        """The question and its answers as one line."""
        return f"{self.text}; answer with {' or '.join(self.answers)}"


class OpenQuestionsError(DataValidationError):
    """The file leaves columns' meanings open (:attr:`questions`); nothing is imported."""

    def __init__(self, name: str, questions: Sequence[Question]) -> None:
        self.questions = tuple(questions)
        n = len(self.questions)
        head = f"{name}: {n} question{'s' if n != 1 else ''} before this file is a study"
        super().__init__(head + ": " + " | ".join(q.one_line() for q in self.questions))


def _numbers(s: pd.Series) -> np.ndarray | None:
    """The values as floats (missing ones dropped), or ``None`` if one is not a number."""
    x = pd.to_numeric(s.dropna(), errors="coerce")
    if x.isna().any():
        return None
    return x.to_numpy(dtype=float)


def _whole(x: np.ndarray) -> bool:
    return bool(len(x)) and bool(np.all(x == np.round(x)))


def _index_like(name: str, x: np.ndarray) -> bool:
    """Whole numbers that never repeat and either carry an index's name
    (:data:`INDEX_NAMES`) or rise (or fall) with every row of the file
    (``n >= MIN_ROWS_FOR_INDEX``): a row index or a case number, not an amount."""
    if not (_whole(x) and len(np.unique(x)) == len(x)):
        return False
    if name.strip().lower() in INDEX_NAMES:
        return True
    step = np.diff(x)
    return len(x) >= MIN_ROWS_FOR_INDEX and bool((step > 0).all() or (step < 0).all())


def _codes(x: np.ndarray, from_one: bool) -> list[int] | None:
    """The distinct whole numbers when they look like category codes: 3..MAX_CODES of
    them from 0 to 20, and (``from_one``: an attribute) exactly 1..K (ages 10, 20, ... 60
    are no codes)."""
    if not _whole(x):
        return None
    vals = sorted({int(v) for v in x})
    if not 3 <= len(vals) <= MAX_CODES or vals[0] < 0 or vals[-1] > 20:
        return None
    if from_one and vals != list(range(1, len(vals) + 1)):
        return None
    return vals


def _span(vals: list[int]) -> str:
    return (
        f"{vals[0]}-{vals[-1]}"
        if vals == list(range(vals[0], vals[-1] + 1))
        else (", ".join(map(str, vals)))
    )


def open_questions(
    frame: pd.DataFrame,
    attrs: Sequence[Attribute],
    cols: ColumnMap,
    *,
    attributes_given: bool = False,
) -> list[Question]:
    """The questions ``frame`` leaves open under the resolved map ``cols`` with the
    attribute table ``attrs`` (``attributes_given``: the analyst's own table, which
    decides the attributes' kinds). Empty: nothing is open."""
    out: list[Question] = []
    declared = set(cols.categorical) | set(cols.numeric) | set(cols.ignore)
    sources = attribute_columns(frame, cols)
    if not attributes_given:
        for a in attrs:
            if a.kind != "numeric" or a.name in declared:
                continue
            srcs = [c for c in sources.get(a.source_column, [a.source_column]) if c in frame]
            if not srcs:
                continue
            x = _numbers(pd.concat([frame[c] for c in srcs]))
            if x is None or not len(x):
                continue
            codes = {float(k) for c in srcs for k in missing_codes(cols, c) if _is_number(k)}
            x = x[~np.isin(x, list(codes))] if codes else x
            if cols.format == "long" and _index_like(a.source_column, x):
                out.append(
                    Question(
                        (a.source_column,),
                        f"column {a.source_column!r} would be a numeric attribute, but every "
                        "row holds a value of its own: a row index or an id, not an "
                        "attribute of the alternatives?",
                        (f"--ignore {a.source_column}", f"--numeric {a.source_column}"),
                    )
                )
                continue
            vals = None if a.unit or unit_in_name(a.name) else _codes(x, from_one=True)
            if vals is not None:  # a unit says amounts (TripTimeHours 1-8)
                shown = ", ".join(srcs[:3]) + (" ..." if len(srcs) > 3 else "")
                out.append(
                    Question(
                        (a.name,),
                        f"attribute {a.name!r} ({shown}) holds the whole numbers "
                        f"{_span(vals)}: category codes (levels) or amounts?",
                        (f"--categorical {a.name}", f"--numeric {a.name}"),
                    )
                )
    for name, _label in cols.respondent_features:
        if name in declared or name not in frame:
            continue
        x = _numbers(frame[name])
        if x is None:
            continue
        codes = {float(k) for k in missing_codes(cols, name) if _is_number(k)}
        x = x[~np.isin(x, list(codes))] if codes else x
        vals = _codes(x, from_one=False)
        if vals is not None:
            out.append(
                Question(
                    (name,),
                    f"respondent feature {name!r} holds the whole numbers {_span(vals)}: "
                    "category codes (trip purpose 1 = commute, 2 = shopping, ...) or amounts?",
                    (f"--categorical {name}", f"--numeric {name}"),
                )
            )
    out += _codes_inside(frame, attrs, cols, sources)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _codes_inside(
    frame: pd.DataFrame,
    attrs: Sequence[Attribute],
    cols: ColumnMap,
    sources: dict[str, list[str]],
) -> list[Question]:
    """A missing-value code given for every column that lies strictly inside the values
    of an attribute column with at least 10 other values: a value there?"""
    out: list[Question] = []
    given = [c for c in cols.missing or () if "=" not in c and _is_number(c)]
    for code in given:
        v = float(code)
        inside: list[str] = []
        for a in attrs:
            if a.kind != "numeric":
                continue
            for c in sources.get(a.source_column, [a.source_column]):
                if c not in frame:
                    continue
                x = _numbers(frame[c])
                if x is None or not (x == v).any():
                    continue
                rest = x[x != v]
                if len(np.unique(rest)) >= 10 and rest.min() < v < rest.max():
                    inside.append(f"{c} ({normalize_value(rest.min())} to "
                                  f"{normalize_value(rest.max())})")  # fmt: skip
        if inside:
            cols_ = tuple(s.split(" (")[0] for s in inside)
            out.append(
                Question(
                    cols_,
                    f"the missing-value code {code} lies inside the values of "
                    f"{', '.join(inside[:4])}{' and more' if len(inside) > 4 else ''}: is "
                    f"{code} a value there?",
                    (
                        f"--missing COLUMN={code},... naming only the columns where {code} "
                        "means missing",
                    ),
                )
            )
    return out
