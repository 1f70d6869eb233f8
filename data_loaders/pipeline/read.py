"""Stage 1 of the import, **read**: an upload's bytes become a table.

:func:`read` reads a choice file in any format of :mod:`data_loaders.readers` (bounded by
:mod:`data_loaders.limits` before it is parsed; the separator and encoding detected unless
given) and checks the bounds of a respondent-features file given beside it. Its value,
:class:`ReadFile`, is what :func:`data_loaders.pipeline.interpret.interpret` reads.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

import pandas as pd

from data_loaders import limits, readers
from data_loaders._common import data_home
from data_loaders.pipeline.problems import Problem, Refused, problem_of
from pbo_core.errors import DataValidationError

__all__ = ["ReadFile", "of_frame", "read", "staging"]


@dataclass(frozen=True, eq=False)
class ReadFile:
    """An upload read: its table and how it was read.

    Attributes
    ----------
    name
        The file's base name, as messages show it.
    frame
        The table (index = file line).
    how
        How it was read (format, separator, size: :meth:`data_loaders.readers.Table.describe`);
        ``""`` for a table read elsewhere (:func:`of_frame`).
    content, sep, encoding
        The file as given, and the separator and encoding asked for (``None``:
        detected); the save stage keeps it as comma-separated text.
    respondents
        A respondent-features file given beside it: ``(bytes, base name)``.
    """

    name: str
    frame: pd.DataFrame
    how: str = ""
    content: bytes = b""
    sep: str | None = None
    encoding: str | None = None
    respondents: tuple[bytes, str] | None = None


def read(
    content: bytes,
    name: str,
    sep: str | None = None,
    encoding: str | None = None,
    respondents: tuple[bytes, str] | None = None,
) -> ReadFile:
    """The upload ``content`` (named ``name``, a base name) read into a table.

    Raises
    ------
    Refused
        With the file's problem (over a limit, not readable) and the respondents file's.
    """
    problems: list[Problem] = []
    try:
        table: readers.Table | None = readers.read_table(content, name, sep, encoding=encoding)
    except DataValidationError as exc:
        table, problems = None, [problem_of(exc, name, name)]
    if respondents is not None:
        try:
            limits.check_csv_bytes(respondents[0], respondents[1])
        except DataValidationError as exc:
            problems.append(Problem(respondents[1], str(exc)))
    if table is None or problems:
        raise Refused(problems)
    return ReadFile(name, table.frame, table.describe(), content, sep, encoding, respondents)


def of_frame(frame: pd.DataFrame, name: str) -> ReadFile:
    """A table already read (a loader's file, the form's kept table) as the read stage's
    value."""
    return ReadFile(name, frame)


def staging() -> tempfile.TemporaryDirectory[str]:
    """A throw-away folder for an upload's bytes, below the per-user data folder.

    Uploads are staged there (not in the system temp folder) so that the loaders, which
    the dashboard confines to the allowed data roots (:mod:`data_loaders.access`), may read
    them; the folder is removed when the check is done.
    """
    root = data_home() / "staging"
    root.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=root)
