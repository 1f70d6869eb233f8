"""What is wrong with an upload, as the stages of the import report it.

A stage that finds problems raises :class:`Refused` with every one of them (a file's
cells are all checked before the import refuses); the entry points
(:func:`data_loaders.study_files.check_upload`, the dashboard's form) list them. A
:class:`Problem` names the file, the line and the column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pbo_core.errors import DataValidationError

__all__ = ["Problem", "Refused", "problem_of"]


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


class Refused(DataValidationError):
    """A stage's refusal: every problem it found (:attr:`problems`); nothing is imported."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(p.one_line() for p in self.problems))


_LOC = re.compile(r"line (\d+(?: \(header\))?)")
_COL = re.compile(r"column '([^']+)'")


def problem_of(exc: Exception, file: str, staged: str) -> Problem:
    """A loader's error as a problem of ``file`` (the path it was staged at, ``staged``,
    replaced by the file's name), its line and column read from the message."""
    msg = str(exc).replace(staged, file)
    line = _LOC.search(msg)
    col = _COL.search(msg)
    return Problem(file, msg, line.group(1) if line else "", col.group(1) if col else "")
