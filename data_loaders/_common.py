"""Helpers shared by the loaders: locating data, reading tables, naming the bad line.

Every loader error names the file and the line (or, for in-memory tables, the row) so a
user can open the file and fix it. Missing data raise :class:`DataNotAvailableError`,
whose message says how to obtain the data.

Errors quote names, not content: on a server the path may be a visitor's guess at a
sensitive file, so a message never echoes a raw line. Column names found in a file are
listed only when the header shares a column with the expected ones and every name looks
like a column name (:func:`describe_columns`); a cell value only when it is short and
plain (:func:`quoted`). Every file is checked by :mod:`data_loaders.access` before it is
opened.
"""

from __future__ import annotations

import csv
import gzip
import os
import re
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data_loaders.access import DATA_HOME_ENV, check_file, check_path, data_home
from data_loaders.readers import scrub
from pbo_core.data import DataValidationError
from pbo_core.errors import DataNotAvailableError

__all__ = ["DATA_HOME_ENV", "data_home"]  # re-exported for the loaders and the dashboard

#: Folder with the data vendored in the repository (train, electricity, mapping files).
VENDORED_DIR = Path(__file__).resolve().parent / "data"

#: Longest column name or cell value an error message quotes.
MAX_QUOTED = 32
#: Most column names an error message lists.
MAX_NAMES = 12
#: Most column names an error about an analyst's own file lists.
MAX_OWN_NAMES = 120
#: What a quotable name or value looks like: letters, digits and ``_ . - + / ( ) %`` and
#: inner spaces; no ``=``, ``:``, quotes or control characters.
_PLAIN = re.compile(r"[\w.+\-/()%]+(?: [\w.+\-/()%]+)*")


def _plain(text: str) -> bool:
    return len(text) <= MAX_QUOTED and _PLAIN.fullmatch(text) is not None and text.isprintable()


def quoted(value: Any) -> str:
    """A cell value for an error message: its ``repr`` when it is a number or a short plain
    string, else only its kind and length (never the raw content)."""
    v = py(value)
    if isinstance(v, bool | int | float):
        return repr(v)
    text = str(v)
    if isinstance(v, str) and _plain(text):
        return repr(text)
    return f"a value of {len(text)} character(s) (not shown)"


def describe_columns(
    present: Iterable[Any], needed: Iterable[Any] = (), *, own: bool = False
) -> str:
    """The columns of a table for an error message: ``the file has columns: 'a', 'b'``.

    The names are listed (escaped, at most :data:`MAX_NAMES`) only when the header shares
    at least one column with ``needed`` and every name is short and plain; otherwise only
    their number, so a file that is not a data table never has its first line echoed.
    ``own=True`` is for an analyst's own upload or file (:mod:`data_loaders.user_studies`):
    its plain names are listed whatever they are (up to :data:`MAX_OWN_NAMES`), others
    by their length only.
    """
    names = [str(c) for c in present]
    if own:
        shown = [repr(n) if _plain(n) else f"(a name of {len(n)} characters)" for n in names]
        more = len(names) - MAX_OWN_NAMES
        listed = ", ".join(shown[:MAX_OWN_NAMES]) or "none"
        return f"the file has columns: {listed}" + (f" and {more} more" if more > 0 else "")
    plausible = bool(set(names) & {str(c) for c in needed})
    if plausible and all(_plain(n) for n in names):
        more = len(names) - MAX_NAMES
        listed = ", ".join(repr(n) for n in names[:MAX_NAMES])
        return f"the file has columns: {listed}" + (f" and {more} more" if more > 0 else "")
    return (
        f"the header has {len(names)} column(s) and does not match the expected ones "
        "(names not shown)"
    )


def resolve_path(
    path: str | os.PathLike[str] | None,
    env_var: str,
    *,
    what: str,
    how_to: str,
    folder: bool = False,
) -> Path:
    """The file (or, with ``folder=True``, folder) given as ``path``, else the one named by
    ``env_var``, after :mod:`data_loaders.access` allowed it (nothing is opened).

    Raises
    ------
    DataNotAvailableError
        When neither is given or the named path does not exist; the message contains
        ``how_to``.
    data_loaders.access.PathRefusedError
        When the path is outside the allowed roots, a device, FIFO, too large...
    """
    if path is not None:
        p = Path(path).expanduser()
        origin = "the given path"
    elif os.environ.get(env_var):
        p = Path(os.environ[env_var]).expanduser()
        origin = f"${env_var}"
    else:
        raise DataNotAvailableError(
            f"{what}: no path was given and ${env_var} is not set. {how_to}"
        )
    try:
        check_path(p, folder=folder, what=what)
    except FileNotFoundError:
        raise DataNotAvailableError(f"{what}: {p} ({origin}) does not exist. {how_to}") from None
    return p


def env_path_status(env_var: str, how_to: str) -> tuple[bool, str]:
    """``(available, reason)`` for a data set located by an environment variable."""
    value = os.environ.get(env_var)
    if not value:
        return False, f"${env_var} is not set. {how_to}"
    p = Path(value).expanduser()
    if not p.exists():
        return False, f"${env_var} = {value} does not exist. {how_to}"
    return True, f"found at {p} (${env_var})"


def py(value: Any) -> Any:
    """A NumPy scalar as the Python value (so messages read ``2``, not ``np.int64(2)``)."""
    return value.item() if isinstance(value, np.generic) else value


def where(source: str, label: Any, from_file: bool) -> str:
    """``"<file>, line N"`` for file tables, ``"<source>, row N"`` for in-memory tables."""
    return f"{source}, line {py(label)}" if from_file else f"{source}, row {py(label)!r}"


def read_csv_lines(path: Path, *, exact_lines: bool = False, **kwargs: Any) -> pd.DataFrame:
    """Read a CSV (``.gz`` allowed) with the physical line number as the index.

    The header is line 1, so the first record is line 2. Blank lines are dropped but
    keep the numbering of the lines after them. A UTF-8 byte-order mark is accepted
    (pandas drops it from the first column name). Quoted fields spanning several lines
    shift the numbers unless ``exact_lines=True`` (plain CSV only; reads the file twice),
    which gives every record the line it starts on.

    Raises
    ------
    DataValidationError
        Naming the file if it cannot be parsed (the pandas message, which names the line,
        is kept, quoted fragments removed), is empty, is not UTF-8 or is a truncated or
        corrupt gzip file.
    data_loaders.access.PathRefusedError
        When the file may not be opened (see :mod:`data_loaders.access`).
    """
    check_file(path)
    try:
        frame = pd.read_csv(path, skip_blank_lines=False, **kwargs)
    except pd.errors.EmptyDataError:
        raise DataValidationError(f"{path}: the file is empty (no header line)") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise DataValidationError(
            f"{path}: cannot be decompressed, the gzip file is truncated or corrupt ({exc})"
        ) from None
    except UnicodeDecodeError as exc:
        raise DataValidationError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); pass "
            "read_csv_kwargs={'encoding': ...} for another encoding"
        ) from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataValidationError(f"{path}: cannot be read as CSV: {scrub(str(exc))}") from None
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise DataValidationError(f"{path}: cannot be read: {exc.strerror or 'error'}") from None
    frame.index = pd.RangeIndex(2, 2 + len(frame))
    if exact_lines and str(path).lower().endswith(".csv"):
        starts = _record_starts(path, kwargs.get("sep", ","), kwargs.get("encoding"))
        if starts is not None and len(starts) == len(frame) + 1:
            frame.index = pd.Index(starts[1:])
    blank = frame.isna().all(axis=1)
    if blank.any():
        frame = frame.loc[~blank.to_numpy()]
    return frame


def _record_starts(path: Path, sep: str, encoding: str | None) -> list[int] | None:
    """The line on which each CSV record starts (blank lines are records, as for pandas
    with ``skip_blank_lines=False``); ``None`` when the file cannot be read so."""
    try:
        with open(path, newline="", encoding=encoding or "utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=sep)
            starts, prev = [], 0
            for _ in reader:
                starts.append(prev + 1)
                prev = reader.line_num
    except (OSError, UnicodeDecodeError, csv.Error, TypeError):
        return None
    return starts


def missing_columns_error(
    source: str,
    missing: Iterable[str],
    present: Iterable[Any],
    from_file: bool,
    hint: str = "",
    *,
    needed: Iterable[Any] = (),
) -> DataValidationError:
    """Error for absent columns, naming the header line of a file.

    ``needed`` are all the columns the loader wanted; the present names are listed only
    when they overlap (see :func:`describe_columns`).
    """
    place = f"{source}, line 1 (header)" if from_file else f"{source} (columns)"
    msg = f"{place}: missing column(s) {sorted(set(missing))}; {describe_columns(present, needed)}"
    return DataValidationError(f"{msg}. {hint}" if hint else msg)


def freeze(*arrays: np.ndarray | None) -> None:
    """Make arrays read-only (studies are cached and shared between callers)."""
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)


def file_stamp(path: Path) -> tuple[str, int, int]:
    """``(resolved path, mtime_ns, size)``: a cache key that changes when the file does."""
    st = path.stat()
    return str(path.resolve()), st.st_mtime_ns, st.st_size
