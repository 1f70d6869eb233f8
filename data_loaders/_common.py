"""Helpers shared by the loaders: locating data, reading tables, naming the bad line.

Every loader error names the file and the line (or, for in-memory tables, the row) so a
user can open the file and fix it. Missing data raise :class:`DataNotAvailableError`,
whose message says how to obtain the data.
"""

from __future__ import annotations

import csv
import gzip
import os
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import DataValidationError

#: Folder with the data vendored in the repository (train, electricity, mapping files).
VENDORED_DIR = Path(__file__).resolve().parent / "data"

#: Environment variable naming the folder for downloaded data (default ``~/.cache/dtpbo``).
DATA_HOME_ENV = "DTPBO_DATA_HOME"


class DataNotAvailableError(FileNotFoundError):
    """The data of a study are not on this machine; the message says how to get them."""


def data_home() -> Path:
    """Folder for data the user downloads (``$DTPBO_DATA_HOME`` or ``~/.cache/dtpbo``)."""
    env = os.environ.get(DATA_HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "dtpbo"


def resolve_path(
    path: str | os.PathLike[str] | None, env_var: str, *, what: str, how_to: str
) -> Path:
    """The file or folder given as ``path``, else the one named by ``env_var``.

    Raises
    ------
    DataNotAvailableError
        When neither is given or the named path does not exist; the message contains
        ``how_to``.
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
    if not p.exists():
        raise DataNotAvailableError(f"{what}: {p} ({origin}) does not exist. {how_to}")
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
        is kept), is empty, is not UTF-8 or is a truncated or corrupt gzip file.
    """
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
        raise DataValidationError(f"{path}: cannot be read as CSV: {exc}") from None
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise DataValidationError(f"{path}: cannot be read: {exc}") from None
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
    source: str, missing: Iterable[str], present: Iterable[Any], from_file: bool, hint: str = ""
) -> DataValidationError:
    """Error for absent columns, naming the header line of a file."""
    place = f"{source}, line 1 (header)" if from_file else f"{source} (columns)"
    msg = f"{place}: missing column(s) {sorted(set(missing))}; columns present: {list(present)}"
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
