"""Bounds on an analyst's own files, checked before any parsing that can grow.

One module of named limits, used by every entry point of an analyst's own data: the
Add-a-study form, :func:`data_loaders.user_studies.check_upload` and
:func:`~data_loaders.user_studies.save_study`, ``python -m data_loaders import-study``
and :func:`~data_loaders.user_studies.load_choice_file` (the command line's ``--data``).

What is checked, in this order, each before anything is parsed:

* the size of the CSV text (a gzip file is counted decompressed, streamed in chunks and
  stopped at the limit): :data:`MAX_FILE_BYTES`;
* the header line, read with a byte cap (never handed to pandas whole):
  :data:`MAX_HEADER_BYTES`, then its number of columns: :data:`MAX_COLUMNS`;
* the number of lines: :data:`MAX_ROWS`, and lines x columns: :data:`MAX_CELLS`;
* JSON attribute tables: size :data:`MAX_JSON_BYTES` and nesting depth
  :data:`MAX_JSON_DEPTH`, by a non-recursive scan of the brackets (a 200,000-deep
  document is refused, never handed to the recursive ``json`` parser).

A refusal raises :class:`LimitError` (a :class:`~pbo_core.errors.DataValidationError`)
whose message is one sentence naming the file and the limit; :func:`csv_file_refusal`
returns that sentence instead. The module imports the standard library and
:mod:`pbo_core.errors` only, so a file is refused before pandas or the models load.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import zlib
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

from pbo_core.errors import DataValidationError, LimitError

__all__ = [
    "MAX_ALTERNATIVES",
    "MAX_CELLS",
    "MAX_COLUMNS",
    "MAX_FILE_BYTES",
    "MAX_FILE_MB",
    "MAX_HEADER_BYTES",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_ROWS",
    "LimitError",
    "check_csv_bytes",
    "check_csv_file",
    "check_json_bytes",
    "csv_file_refusal",
    "csv_text_refusal",
    "file_bytes",
    "json_depth_over",
    "load_json_bytes",
]

#: Largest CSV text of an own study (each file; gzip counted decompressed), in MB.
MAX_FILE_MB = 20
#: :data:`MAX_FILE_MB` in bytes.
MAX_FILE_BYTES = MAX_FILE_MB * 2**20
#: Longest header line read (bytes); a longer one is refused without reading further.
MAX_HEADER_BYTES = 256 * 2**10
#: Most columns in a header (the widest public choice data sets have about 100).
MAX_COLUMNS = 2_000
#: Most lines in a file.
MAX_ROWS = 1_000_000
#: Most cells (lines x columns) in a file.
MAX_CELLS = 5_000_000
#: Most alternatives of a wide file (and alternatives inferred from column names).
MAX_ALTERNATIVES = 50
#: Largest JSON attribute table, in bytes.
MAX_JSON_BYTES = 2**20
#: Deepest nesting of a JSON attribute table (a normal table is 4 deep).
MAX_JSON_DEPTH = 32

_CHUNK = 2**20
_GZIP_MAGIC = b"\x1f\x8b"


class _Refused(Exception):
    """Raised inside the module; the public checks turn it into :class:`LimitError`
    (``limit=True``) or :class:`~pbo_core.errors.DataValidationError`."""

    def __init__(self, message: str, limit: bool = True) -> None:
        super().__init__(message)
        self.limit = limit


_F = TypeVar("_F", bound=Callable[..., Any])


def _public(fn: _F) -> _F:
    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _Refused as exc:
            cls = LimitError if exc.limit else DataValidationError
            raise cls(str(exc)) from None

    return run  # type: ignore[return-value]


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def _refuse(name: str, what: str) -> _Refused:
    return _Refused(f"{name}: {what}.")


def _chunks(raw: io.BufferedIOBase | Any, gz: bool, name: str) -> Iterator[bytes]:
    """The CSV text in chunks (decompressed when ``gz``), refused past MAX_FILE_BYTES."""
    src: Any = gzip.GzipFile(fileobj=raw) if gz else raw
    total = 0
    try:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                return
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise _refuse(
                    name,
                    f"the {'decompressed ' if gz else ''}text is larger than {MAX_FILE_MB} MB, "
                    f"the limit for an own study (data_loaders.limits.MAX_FILE_MB)",
                )
            yield chunk
    except (EOFError, zlib.error, gzip.BadGzipFile, OSError):
        raise _Refused(
            f"{name}: cannot be decompressed, the gzip file is truncated or corrupt", limit=False
        ) from None


def _check_stream(chunks: Iterator[bytes], name: str, sep: str = ",") -> None:
    """Header (byte cap, columns split by ``sep``; ``\\s+``: runs of spaces), lines and
    cells of a CSV text given in chunks."""
    head = b""
    newline = -1
    lines = 0
    last = b""
    for chunk in chunks:
        if newline < 0:
            head += chunk
            newline = head.find(b"\n")
            if newline < 0 and len(head) > MAX_HEADER_BYTES:
                raise _refuse(
                    name,
                    f"the header line is longer than {MAX_HEADER_BYTES // 2**10} KiB, the limit "
                    "for an own study (data_loaders.limits.MAX_HEADER_BYTES)",
                )
            if newline > MAX_HEADER_BYTES:
                raise _refuse(
                    name,
                    f"the header line is longer than {MAX_HEADER_BYTES // 2**10} KiB, the limit "
                    "for an own study (data_loaders.limits.MAX_HEADER_BYTES)",
                )
        lines += chunk.count(b"\n")
        if lines > MAX_ROWS + 1:
            raise _refuse(
                name,
                f"it has more than {MAX_ROWS:,} lines, the limit for an own study "
                "(data_loaders.limits.MAX_ROWS)",
            )
        last = chunk
    if last and not last.endswith(b"\n"):
        lines += 1
    header = head if newline < 0 else head[:newline]
    text = header.decode("utf-8-sig", errors="replace").rstrip("\r")
    if sep == r"\s+":
        n_cols = len(text.split())
    else:
        n_cols = len(next(csv.reader(io.StringIO(text), delimiter=sep), [])) if text else 0
    if n_cols > MAX_COLUMNS:
        raise _refuse(
            name,
            f"the header has {n_cols:,} columns, more than {MAX_COLUMNS:,}, the limit for an "
            "own study (data_loaders.limits.MAX_COLUMNS)",
        )
    if n_cols * max(lines - 1, 0) > MAX_CELLS:
        raise _refuse(
            name,
            f"{lines - 1:,} lines x {n_cols:,} columns is more than {MAX_CELLS:,} cells, the "
            "limit for an own study (data_loaders.limits.MAX_CELLS)",
        )


@_public
def check_csv_bytes(content: bytes, name: str) -> None:
    """Refuse an uploaded CSV text (or gzip) over a limit, before it is parsed.

    Raises
    ------
    LimitError
        Naming ``name`` and the limit.
    """
    gz = content[:2] == _GZIP_MAGIC
    if not gz and len(content) > MAX_FILE_BYTES:
        raise _refuse(
            name,
            f"{_mb(len(content))} is over {MAX_FILE_MB} MB, the limit for an own study "
            "(data_loaders.limits.MAX_FILE_MB)",
        )
    _check_stream(_chunks(io.BytesIO(content), gz, name), name)


@_public
def check_csv_file(path: str | os.PathLike[str], name: str | None = None) -> None:
    """Refuse a CSV file (``.gz`` allowed) over a limit; reads at most the limits' bytes.

    Raises
    ------
    LimitError
        Naming the file and the limit.
    """
    shown = name or str(path)
    size = os.stat(path).st_size
    with open(path, "rb") as raw:
        gz = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        if not gz and size > MAX_FILE_BYTES:
            raise _refuse(
                shown,
                f"{_mb(size)} is over {MAX_FILE_MB} MB, the limit for an own study "
                "(data_loaders.limits.MAX_FILE_MB)",
            )
        _check_stream(_chunks(raw, gz, shown), shown)


def csv_text_refusal(content: bytes, name: str, sep: str = ",") -> str | None:
    """Why a (decompressed) text would be refused, its columns split by ``sep``: size,
    header, columns, lines, cells (one sentence); ``None`` when it is within the limits.
    Needs no data model (:mod:`data_loaders.readers` asks it for every text format)."""
    try:
        if len(content) > MAX_FILE_BYTES:
            raise _refuse(
                name,
                f"{_mb(len(content))} is over {MAX_FILE_MB} MB, the limit for an own study "
                "(data_loaders.limits.MAX_FILE_MB)",
            )
        _check_stream(iter([content]), name, sep)
    except _Refused as exc:
        return str(exc)
    return None


def csv_file_refusal(path: str | os.PathLike[str], name: str | None = None) -> str | None:
    """Why :func:`check_csv_file` would refuse a file (one sentence), or ``None``; needs
    no data model (the command line asks before it imports one)."""
    try:
        check_csv_file.__wrapped__(path, name)  # type: ignore[attr-defined]
    except _Refused as exc:
        return str(exc)
    return None


_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def json_depth_over(content: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the brackets of a JSON text nest deeper than ``limit`` (strings skipped).

    A single pass over the tokens with a counter, no recursion: it stops at the first
    bracket past the limit, so a 200,000-deep document is refused at once.
    """
    depth = 0
    for m in _JSON_TOKENS.finditer(content):
        c = m.group()[:1]
        if c in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif c in (b"]", b"}"):
            depth -= 1
    return False


@_public
def check_json_bytes(content: bytes, name: str) -> None:
    """Refuse a JSON attribute table over :data:`MAX_JSON_BYTES` or :data:`MAX_JSON_DEPTH`.

    Raises
    ------
    LimitError
        Naming ``name`` and the limit.
    """
    if len(content) > MAX_JSON_BYTES:
        raise _refuse(
            name,
            f"{_mb(len(content))} is over {MAX_JSON_BYTES // 2**20} MB, the limit for an "
            "attribute table (data_loaders.limits.MAX_JSON_BYTES)",
        )
    if json_depth_over(content):
        raise _refuse(
            name,
            f"its brackets nest deeper than {MAX_JSON_DEPTH} levels, the limit for an "
            "attribute table (data_loaders.limits.MAX_JSON_DEPTH)",
        )


def load_json_bytes(content: bytes, name: str) -> Any:
    """A JSON document after :func:`check_json_bytes`.

    Raises
    ------
    LimitError
        Over a limit.
    DataValidationError
        For invalid JSON or text that is not UTF-8, naming the file (and the line).
    """
    check_json_bytes(content, name)
    error = DataValidationError
    try:
        return json.loads(content.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise error(f"{name}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise error(f"{name}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:  # defence in depth; the scan above refuses deep documents first
        raise LimitError(f"{name}: it nests deeper than {MAX_JSON_DEPTH} levels.") from None


@_public
def file_bytes(path: str | os.PathLike[str], limit: int, name: str | None = None) -> bytes:
    """The bytes of a small file, refused (without reading) when larger than ``limit``."""
    shown = name or str(path)
    size = Path(path).stat().st_size
    if size > limit:
        raise _refuse(shown, f"{_mb(size)} is over the limit of {_mb(limit)}")
    return Path(path).read_bytes()
