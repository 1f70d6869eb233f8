"""Readers of an analyst's own table files, one per format, registered in one place.

Every entry point of an own study reads through :func:`read_table`: the Add-a-study
form (its file uploader accepts :func:`accepted_suffixes`, its help is
:func:`accepted_text` and :func:`format_notes`), ``python -m data_loaders import-study``
(whose help states :func:`accepted_text`),
:func:`data_loaders.user_studies.check_upload` / :func:`~data_loaders.user_studies.save_study`
and :func:`~data_loaders.user_studies.load_choice_file` (``--data``).

Formats (:data:`READERS`, keyed by the file's last suffix before any compression; a
reader registered anywhere, before or after this module's own, is read everywhere, as
everything derived from the list is computed when asked):

==========  ===============================================================
``.csv``    text; the separator is detected (comma, semicolon, tab, ``|``, spaces)
``.tsv``    text, tab preferred when detecting
``.dat``    text, tab preferred (Biogeme's tab-separated data files)
``.txt``    text, detected as ``.csv``
``.parquet`` Apache Parquet (pyarrow)
``.xlsx``   Excel workbook, its first sheet (openpyxl)
==========  ===============================================================

Any of them may be compressed (:data:`COMPRESSIONS`: ``.gz``, ``.bz2``, or a ``.zip``
holding exactly one table); gzip is also recognised by its first bytes whatever the
name. A separator given by the caller (``--sep``, the form's *Separator*) overrides the
detection (:func:`parse_sep` reads ``,``, ``;``, ``tab``, ``\\t``, ``|``, ``spaces``...).

**Bounds** (:mod:`data_loaders.limits`), each checked before the step that could grow:
the file itself at most :data:`~data_loaders.limits.MAX_FILE_BYTES`; every compressed
format decompressed in chunks and stopped at that limit (a ``.zip`` member by its
declared size, read with the same cap); an ``.xlsx``'s own zip parts at most
:data:`XLSX_MAX_BYTES` together and its shared strings at most
:data:`XLSX_SHARED_MAX_BYTES`, each row's text measured before it is written (a string
shared by many cells is copied into each); a Parquet file's rows, columns and
uncompressed size from its footer before any column is read, then the same size from
its pages' own headers (:func:`parquet_page_bytes`: a footer may claim less than the
pages hold), and its text columns read as dictionaries and measured as written out (a
value repeated from a dictionary page) before any is copied into its rows. Parquet and
Excel tables are converted to comma-separated text, which is then bounded (header,
lines, cells) and parsed exactly as a CSV file, so every format gives the same table
for the same data, and
:attr:`Table.text` is what a saved study keeps as ``choices.csv``.

Errors are one sentence naming the file and saying what to do; they never quote a
Python representation or a line of the file. :func:`read_table` raises
:class:`~data_loaders.limits.LimitError` for a bound and
:class:`~pbo_core.data.DataValidationError` otherwise; :func:`refusal` says the same with
the standard library alone (the command line asks it before loading pandas).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import os
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NoReturn

from data_loaders import limits
from data_loaders.access import check_file
from pbo_core.errors import DataValidationError, LimitError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COMPRESSIONS",
    "ENCODINGS",
    "PARQUET_MAX_BYTES",
    "READERS",
    "SEPARATORS",
    "XLSX_MAX_BYTES",
    "XLSX_SHARED_MAX_BYTES",
    "Format",
    "Read",
    "Table",
    "accepted_suffixes",
    "accepted_text",
    "csv_text",
    "detect_sep",
    "encoding_name",
    "format_notes",
    "parse_sep",
    "read_table",
    "refusal",
    "register",
    "scrub",
    "separator_name",
    "uploader_types",
]

#: Separators the detection tries, with their names (``\s+``: one or more spaces/tabs).
SEPARATORS: dict[str, str] = {
    ",": "comma",
    ";": "semicolon",
    "\t": "tab",
    "|": "pipe (|)",
    r"\s+": "spaces",
}
#: Words :func:`parse_sep` understands besides the characters themselves.
_SEP_WORDS = {
    "comma": ",",
    "semicolon": ";",
    "tab": "\t",
    "\\t": "\t",
    "pipe": "|",
    "space": r"\s+",
    "spaces": r"\s+",
    "whitespace": r"\s+",
    " ": r"\s+",
}
#: Compression suffixes and their names.
COMPRESSIONS: dict[str, str] = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip"}
#: Largest sum of the uncompressed parts of an ``.xlsx`` (its sheets are verbose XML).
XLSX_MAX_BYTES = 8 * limits.MAX_FILE_BYTES
#: Largest shared-string part of an ``.xlsx`` (uncompressed), read whole before any row:
#: the strings of a table within the text limit, with their XML.
XLSX_SHARED_MAX_BYTES = 2 * limits.MAX_FILE_BYTES
#: Largest uncompressed Parquet table (from its footer), before it is read.
PARQUET_MAX_BYTES = 4 * limits.MAX_FILE_BYTES
#: Lines (and bytes) of a text the separator is detected from.
_SNIFF_LINES = 200
_SNIFF_BYTES = 2**20
_CHUNK = 2**20
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"
_PARQUET_MAGIC = b"PAR1"


class _Refused(Exception):
    """A file that is not read: a bound (``limit``) or a problem with its content."""

    def __init__(self, message: str, limit: bool = False) -> None:
        super().__init__(message)
        self.limit = limit


def _raise(exc: _Refused) -> NoReturn:
    """Re-raise as :class:`~data_loaders.limits.LimitError` or ``DataValidationError``."""
    if exc.limit:
        raise LimitError(str(exc)) from None
    raise DataValidationError(str(exc)) from None


def scrub(message: str) -> str:
    """A parser's message with quoted fragments (possibly file content) removed."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", message)[:200]


def _too_big(name: str, what: str) -> _Refused:
    return _Refused(
        f"{name}: the {what} is larger than {limits.MAX_FILE_MB} MB, the limit for an own "
        "study (data_loaders.limits.MAX_FILE_MB).",
        limit=True,
    )


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Format:
    """One readable format: its suffix, what it is called and its reader.

    ``reader(data, name, sep)`` gets the (decompressed) bytes, the name shown in messages
    and the separator asked for (``None``: detect), and returns the table as
    comma-separated text with what it found (:class:`Read`). ``text``: a delimited text
    (a separator and an encoding apply); otherwise a binary format converted to CSV, and
    ``label`` is what :meth:`Table.describe` calls it. ``note``: what a reader of the
    form's help should know (``"an .xlsx is read from its first sheet"``).
    """

    suffix: str
    label: str
    reader: Callable[[bytes, str, str | None], Read]
    text: bool = True
    prefer: str = ","
    example: str = ""
    note: str = ""


@dataclass
class Read:
    """What a reader returns: the table's CSV text and how it was read."""

    text: bytes
    sep: str = ","
    sep_source: str = ""  # "detected", "given" or "" (no separator: a binary format)
    details: list[str] = field(default_factory=list)
    decimal: str = "."  # "," for numbers written 12,5 (a text not separated by commas)


#: The readers, by suffix (lower case, with the dot), in the order the help lists them.
READERS: dict[str, Format] = {}


def register(
    suffix: str,
    label: str,
    *,
    text: bool = True,
    prefer: str = ",",
    example: str = "",
    note: str = "",
) -> Callable[[Callable[[bytes, str, str | None], Read]], Callable[..., Read]]:
    """Register a reader for ``suffix`` (a decorator); see :class:`Format`."""

    def add(fn: Callable[[bytes, str, str | None], Read]) -> Callable[..., Read]:
        READERS[suffix.lower()] = Format(suffix.lower(), label, fn, text, prefer, example, note)
        return fn

    return add


def accepted_suffixes() -> tuple[str, ...]:
    """Every suffix a file may end with: :data:`READERS` (as registered now) and
    :data:`COMPRESSIONS`."""
    return (*READERS, *COMPRESSIONS)


def __getattr__(name: str) -> Any:
    # the former constant ACCEPTED_SUFFIXES, now read when asked (a reader registered
    # later is in it): accepted_suffixes()
    if name == "ACCEPTED_SUFFIXES":
        return accepted_suffixes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def accepted_text() -> str:
    """The accepted suffixes as one phrase, for help texts and messages."""
    kinds = ", ".join(READERS)
    return f"accepted: {kinds}, and {'/'.join(COMPRESSIONS)} of those"


def format_notes() -> str:
    """What the form's help says of the formats: the text ones (a separator and an
    encoding apply), the binary ones (none does) and each format's note."""
    text = ", ".join(s for s, f in READERS.items() if f.text)
    binary = [f.label for f in READERS.values() if not f.text]
    notes = [f.note for f in READERS.values() if f.note]
    out = f"Text files ({text}, compressed or not) have a separator and an encoding"
    if binary:
        both = binary[0] if len(binary) == 1 else ", ".join(binary[:-1]) + " and " + binary[-1]
        out += f"; {both} files have neither"
    return out + "." + "".join(f" {n[0].upper()}{n[1:]}." for n in notes)


def uploader_types() -> list[str]:
    """:func:`accepted_suffixes` without the dot, for ``st.file_uploader(type=...)``."""
    return [s.lstrip(".") for s in accepted_suffixes()]


def separator_name(sep: str) -> str:
    """``"tab"``, ``"comma"``... (the character itself for another one)."""
    return SEPARATORS.get(sep, f"'{sep}'")


def _separated(sep: str) -> str:
    """``"tab-separated"``, ``"|-separated"``, ``"space-separated"``..."""
    word = {"|": "|", r"\s+": "space"}.get(sep, separator_name(sep))
    return f"{word}-separated"


def parse_sep(value: str | None) -> str | None:
    """A separator as given on the command line or in the form (``None``: detect).

    Accepts the characters (``,`` ``;`` ``|`` a tab), ``\\t`` as typed in a shell, and the
    words ``comma``, ``semicolon``, ``tab``, ``pipe``, ``space(s)``/``whitespace``;
    ``auto``, ``detect`` or nothing for detection.

    Raises
    ------
    ValueError
        For anything else, in words (the accepted forms).
    """
    if value is None:
        return None
    v = value if value in ("\t", " ") else value.strip()
    low = v.lower()
    if low in ("", "auto", "detect"):
        return None
    if low in _SEP_WORDS:
        return _SEP_WORDS[low]
    if v in SEPARATORS:
        return v
    if len(v) == 1 and v.isprintable() and not v.isalnum() and v not in "\"'":
        return v
    raise ValueError(
        "the separator must be one character (, ; | or a tab) or one of the words comma, "
        "semicolon, tab, pipe, spaces; leave it out to detect it"
    )


# --------------------------------------------------------------------------- names
_PLAIN = re.compile(r"[\w.+\-()% ]{1,80}")


def _shown(member: str) -> str:
    """A zip member's base name for a message (its length when it is not plain)."""
    base = PurePosixPath(member.replace("\\", "/")).name
    return base if _PLAIN.fullmatch(base) else f"(a name of {len(base)} characters)"


def _suffixes(name: str) -> tuple[str, str]:
    """``(format suffix, compression suffix)`` of a file name, lower case (``""``: none)."""
    base = PurePosixPath(name.replace("\\", "/")).name.lower()
    parts = base.split(".")[1:]
    comp = ""
    if parts and "." + parts[-1] in COMPRESSIONS:
        comp = "." + parts.pop()
    return ("." + parts[-1] if parts else ""), comp


# --------------------------------------------------------------------------- decompression
def _stream(src: Any, name: str, kind: str) -> bytes:
    """All of ``src`` (a file object that decompresses), refused past the limit."""
    out = io.BytesIO()
    try:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                return out.getvalue()
            if out.tell() + len(chunk) > limits.MAX_FILE_BYTES:
                raise _too_big(name, "decompressed text")
            out.write(chunk)
    except (EOFError, zlib.error, gzip.BadGzipFile, OSError, ValueError):
        raise _Refused(
            f"{name}: cannot be decompressed, the {kind} file is truncated or corrupt; "
            "compress it again or give it uncompressed"
        ) from None


def _unzip(raw: bytes, name: str) -> tuple[bytes, str]:
    """The one table inside a zip and its member name, read with the size cap."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
        members = [
            i
            for i in zf.infolist()
            if not i.is_dir()
            and not i.filename.startswith("__MACOSX/")
            and not PurePosixPath(i.filename).name.startswith(".")
        ]
    except (zipfile.BadZipFile, OSError, ValueError):
        raise _Refused(
            f"{name}: cannot be decompressed, the zip file is truncated or corrupt; "
            "compress it again or give the table uncompressed"
        ) from None
    if len(members) != 1:
        listed = ", ".join(_shown(m.filename) for m in members[:6]) or "nothing"
        more = f" and {len(members) - 6} more" if len(members) > 6 else ""
        raise _Refused(
            f"{name}: a .zip must hold exactly one table and this one holds "
            f"{len(members)} files ({listed}{more}); zip the choice table alone or give it "
            "uncompressed"
        )
    (info,) = members
    if info.file_size > limits.MAX_FILE_BYTES:
        raise _too_big(name, f"decompressed file {_shown(info.filename)}")
    try:
        with zf.open(info) as fh:
            data = fh.read(limits.MAX_FILE_BYTES + 1)
    except RuntimeError:  # encrypted
        raise _Refused(
            f"{name}: {_shown(info.filename)} is encrypted; give the table without a password"
        ) from None
    except (zipfile.BadZipFile, EOFError, zlib.error, OSError, NotImplementedError, ValueError):
        raise _Refused(
            f"{name}: cannot be decompressed, the zip file is truncated, corrupt or uses an "
            "unusual compression; zip it again with the usual settings or give it uncompressed"
        ) from None
    if len(data) > limits.MAX_FILE_BYTES:
        raise _too_big(name, "decompressed text")
    return data, info.filename


def _is_xlsx(raw: bytes) -> bool:
    try:
        return "xl/workbook.xml" in zipfile.ZipFile(io.BytesIO(raw)).namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


@dataclass(frozen=True)
class _Source:
    """A file's bytes decompressed, with its format (a key of :data:`READERS`)."""

    data: bytes
    fmt: str
    compression: str = ""
    member: str = ""


def _open(raw: bytes, name: str) -> _Source:
    """Decompress (bounded) and tell the format, from the name and the first bytes."""
    fmt, comp = _suffixes(name)
    if not comp and raw[:2] == _GZIP_MAGIC:
        comp = ".gz"
    if not comp and raw[:4] == _ZIP_MAGIC and fmt != ".xlsx":
        comp = "" if _is_xlsx(raw) else ".zip"
        fmt = ".xlsx" if not comp else fmt
    if len(raw) > limits.MAX_FILE_BYTES:
        raise _Refused(
            f"{name}: {len(raw) / 2**20:.1f} MB is over {limits.MAX_FILE_MB} MB, the limit for "
            "an own study (data_loaders.limits.MAX_FILE_MB).",
            limit=True,
        )
    member = ""
    if comp == ".gz":
        data = _stream(gzip.GzipFile(fileobj=io.BytesIO(raw)), name, "gzip")
    elif comp == ".bz2":
        data = _stream(bz2.BZ2File(io.BytesIO(raw)), name, "bz2")
    elif comp == ".zip":
        data, member = _unzip(raw, name)
        fmt, inner = _suffixes(member)
        if inner:
            raise _Refused(
                f"{name}: holds {_shown(member)}, compressed again; put the table itself in "
                "the .zip"
            )
    else:
        data = raw
    if data[:4] == _PARQUET_MAGIC and fmt != ".parquet":
        fmt = ".parquet"
    elif data[:4] == _ZIP_MAGIC and fmt not in (".xlsx",) and _is_xlsx(data):
        fmt = ".xlsx"
    if fmt == "" and not data[:4] == _ZIP_MAGIC:
        fmt = ".csv"  # no suffix: text, the separator detected
    if fmt not in READERS:
        old = fmt == ".xls"
        raise _Refused(
            f"{name}: "
            + (
                "old Excel workbooks (.xls) are not read; save it as .xlsx or CSV"
                if old
                else f"not a format the import reads ({accepted_text()}); save the table as CSV"
            )
        )
    return _Source(data, fmt, COMPRESSIONS.get(comp, ""), member)


# --------------------------------------------------------------------------- separators
def _fields(rows: list[str], sep: str) -> list[int]:
    if sep == r"\s+":
        return [len(r.split()) for r in rows if r.strip()]
    try:
        return [len(r) for r in csv.reader(rows, delimiter=sep) if any(c.strip() for c in r)]
    except csv.Error:
        return []


def _sample(data: bytes) -> list[str]:
    """The first lines of a text (the last, possibly cut, line dropped)."""
    head = data[:_SNIFF_BYTES]
    text = head.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()
    if len(head) < len(data) and len(lines) > 1:
        lines = lines[:-1]
    return lines[: _SNIFF_LINES + 1]


def _consistent(counts: list[int]) -> bool:
    """A header of at least two fields, no line longer, most lines as long."""
    if not counts or counts[0] < 2:
        return False
    k = counts[0]
    body = counts[1:]
    return all(c <= k for c in body) and sum(c == k for c in body) * 2 >= len(body)


def detect_sep(data: bytes, name: str, prefer: str = ",") -> str:
    """The separator of a text: the candidate of :data:`SEPARATORS` that splits the
    header into the most fields (at least two) and most lines into as many; ties go to
    ``prefer``, then comma, tab, semicolon, pipe; spaces only when no other one fits.

    Raises
    ------
    _Refused
        When none fits, saying how to name it.
    """
    lines = _sample(data)
    if not lines:
        return prefer
    order = [prefer] + [s for s in (",", "\t", ";", "|") if s != prefer]
    best, best_k = "", 1
    for sep in order:
        counts = _fields(lines, sep)
        if _consistent(counts) and counts[0] > best_k:
            best, best_k = sep, counts[0]
    if best:
        return best
    if _consistent(_fields(lines, r"\s+")):
        return r"\s+"
    raise _Refused(
        f"{name}: cannot tell the separator (no comma, semicolon, tab, | or spaces split "
        "the header and the lines below it into the same columns); name it: --sep ';' "
        "(or --sep '\\t', ...) on the command line, the Separator choice in the form"
    )


def _header_note(data: bytes, sep: str) -> str:
    """For a one-column read: the separators the header does contain."""
    lines = _sample(data)
    header = lines[0] if lines else ""
    plural = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "| characters"}
    found = [n for s, n in plural.items() if s != sep and s in header]
    return f"; its header line holds {' and '.join(found)}" if found else ""


# --------------------------------------------------------------------------- readers
def _check_text(data: bytes, name: str, sep: str) -> None:
    """The limits of a text (size, header, columns split by ``sep``, lines, cells)."""
    why = limits.csv_text_refusal(data, name, sep)
    if why:
        raise _Refused(why, limit=True)


#: Encodings a text that is not UTF-8 is read in, in order: Windows' Western European
#: code page (Excel's "CSV" on Windows), then ISO Latin-1 (every byte is a character).
FALLBACK_ENCODINGS = ("cp1252", "latin-1")
#: The text encodings the import reads, a closed list: the Add-a-study form offers them
#: (besides detecting one), ``--encoding`` and a recipe's ``encoding`` take one of them
#: (or another name of the same codec: ``utf8``, ``latin1``, ``windows-1252``).
#: UTF-8, UTF-16 (Excel's "Unicode text"), Windows' Western, Central European, Cyrillic,
#: Greek and Turkish code pages, ISO Latin-1, Latin-2 and Latin-9, Mac Roman, KOI8-R,
#: Japanese, Chinese and Korean. Each decodes in time linear in the text; a codec that is
#: no text encoding (``punycode``: quadratic, ``zlib_codec``, ``rot13``) is refused.
ENCODINGS = (
    "utf-8",
    "utf-16",
    "cp1252",
    "latin-1",
    "iso-8859-15",
    "cp1250",
    "cp1251",
    "mac-roman",
    "iso-8859-2",
    "cp1253",
    "cp1254",
    "koi8-r",
    "shift_jis",
    "euc-jp",
    "gb18030",
    "big5",
    "euc-kr",
)
_ENCODING_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d+,\d+\s*$")
_DECIMAL_POINT = re.compile(r"^\s*[+-]?\d*\.\d+\s*$")


def _as_utf8(data: bytes, name: str) -> tuple[bytes, str]:
    """``data`` as UTF-8 text and the encoding it was read in (``""``: UTF-8 already).

    UTF-16 with its byte-order mark (Excel's "Unicode text") is decoded as such; another
    text that does not decode as UTF-8 with the first of :data:`FALLBACK_ENCODINGS` that
    reads it (a latin-1 or cp1252 file from a spreadsheet); either is encoded as UTF-8, so
    every later step (and a saved study's ``choices.csv``) reads UTF-8.

    Raises
    ------
    _Refused
        For a text holding NUL bytes (UTF-16 without its mark, or no text at all).
    """
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16").encode("utf-8"), "UTF-16"
        except UnicodeDecodeError:
            raise _Refused(f"{name}: not readable as UTF-16 text; save it as CSV UTF-8") from None
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise _Refused(
            f"{name}: holds NUL bytes (UTF-16 text without its byte-order mark, or not a "
            "text at all); save it as CSV UTF-8"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return data, ""
    for enc in FALLBACK_ENCODINGS:
        try:
            return data.decode(enc).encode("utf-8"), enc
        except UnicodeDecodeError:
            continue
    return data, ""  # pragma: no cover - latin-1 decodes every byte


def _decimal_comma(data: bytes, sep: str) -> bool:
    """Numbers written with a decimal comma (``12,5``) in a text separated by another
    character: some cells of the first lines are such numbers and none has a decimal
    point."""
    if sep == ",":
        return False
    lines = _sample(data)[1:]
    if sep == r"\s+":
        cells = [c for r in lines for c in r.split()]
    else:
        try:
            cells = [c for r in csv.reader(lines, delimiter=sep) for c in r]
        except csv.Error:
            return False
    commas = sum(bool(_DECIMAL_COMMA.match(c)) for c in cells)
    return commas > 0 and not any(_DECIMAL_POINT.match(c) for c in cells)


def _text_reader(prefer: str) -> Callable[[bytes, str, str | None], Read]:
    def read(data: bytes, name: str, sep: str | None) -> Read:
        _check_text(data, name, ",")  # header cap and lines first, whatever the separator
        data, encoding = _as_utf8(data, name)
        details = [f"encoding {encoding} (not UTF-8; read as {encoding})"] if encoding else []
        source = "given" if sep else "detected"
        sep = sep or detect_sep(data, name, prefer)
        if sep != ",":
            _check_text(data, name, sep)  # columns and cells with the separator found
        decimal = "," if _decimal_comma(data, sep) else "."
        if decimal == ",":
            details.append("decimal commas (12,5 read as 12.5)")
        return Read(data, sep, source, details, decimal)

    return read


for _suffix, _label, _prefer, _example in (
    (".csv", "comma-separated (or semicolon-, tab-, |-separated) text", ",", "choices.csv"),
    (".tsv", "tab-separated text", "\t", "choices.tsv"),
    (".dat", "tab-separated text (Biogeme's data files)", "\t", "swissmetro.dat"),
    (".txt", "delimited text", ",", "choices.txt"),
):
    register(_suffix, _label, prefer=_prefer, example=_example)(_text_reader(_prefer))


def _csv_text(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")


@register(".parquet", "Apache Parquet", text=False, example="choices.parquet")
def _read_parquet(data: bytes, name: str, sep: str | None) -> Read:
    """A Parquet table, bounded by its footer (rows, columns, uncompressed size) first."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
    except (pa.ArrowException, OSError, ValueError):
        raise _Refused(
            f"{name}: cannot be read as Parquet (not a Parquet file, or a truncated one); "
            "write it again or give the table as CSV"
        ) from None
    rows, cols = meta.num_rows, meta.num_columns
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if cols > limits.MAX_COLUMNS:
        raise _Refused(
            f"{name}: the table has {cols:,} columns, more than {limits.MAX_COLUMNS:,}, the "
            "limit for an own study (data_loaders.limits.MAX_COLUMNS).",
            True,
        )
    if rows > limits.MAX_ROWS or rows * cols > limits.MAX_CELLS:
        raise _Refused(
            f"{name}: {rows:,} rows x {cols:,} columns is over the limits for an own study "
            f"({limits.MAX_ROWS:,} rows, {limits.MAX_CELLS:,} cells; "
            "data_loaders.limits.MAX_ROWS, MAX_CELLS).",
            True,
        )
    try:  # the footer's sizes may lie: its pages say what decompressing them takes
        size = max(size, parquet_page_bytes(data, meta))
    except ValueError:
        raise _Refused(
            f"{name}: cannot be read as Parquet (a page header that does not parse, or "
            "pages outside the file); write it again or give the table as CSV"
        ) from None
    if size > PARQUET_MAX_BYTES:
        raise _Refused(
            f"{name}: the uncompressed table is larger than {PARQUET_MAX_BYTES // 2**20} MB, "
            "the limit for an own study (data_loaders.readers.PARQUET_MAX_BYTES).",
            True,
        )
    try:
        schema = pq.ParquetFile(io.BytesIO(data)).schema_arrow
        texts = [
            f.name
            for f in schema
            if pa.types.is_string(f.type)
            or pa.types.is_large_string(f.type)
            or pa.types.is_binary(f.type)
            or pa.types.is_large_binary(f.type)
        ]
        # text columns kept as dictionaries (a value and its row's index), so a value
        # repeated from a dictionary page is counted before it is copied into every row
        table = pq.read_table(io.BytesIO(data), read_dictionary=texts or None)
        _check_expanded(table, name)
        frame = table.to_pandas()
    except _Refused:
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError):
        raise _Refused(
            f"{name}: cannot be read as Parquet (a column of a type the import does not "
            "read, or a damaged file); write it again or give the table as CSV"
        ) from None
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.name is not None:
        frame = frame.reset_index()
    return Read(_csv_text(frame))


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned LEB128 varint of Thrift's compact protocol at ``pos``: (value, next)."""
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _skip(data: bytes, pos: int, kind: int, depth: int = 0) -> int:
    """Past one value of compact type ``kind`` at ``pos`` (nesting at most 16 deep)."""
    if depth > 16:
        raise ValueError("nesting")
    if kind in (1, 2):  # a boolean field's value is in its type
        return pos
    if kind == 3:  # byte
        return pos + 1
    if kind in (4, 5, 6):  # i16, i32, i64: zigzag varints
        return _varint(data, pos)[1]
    if kind == 7:  # double
        return pos + 8
    if kind == 8:  # binary: its length, then the bytes
        n, pos = _varint(data, pos)
        return pos + n
    if kind in (9, 10):  # list, set: size and element type in one byte (15: size follows)
        if pos >= len(data):
            raise ValueError("list")
        head, pos = data[pos], pos + 1
        n, elem = head >> 4, head & 0x0F
        if n == 15:
            n, pos = _varint(data, pos)
        for _ in range(n):
            pos = pos + 1 if elem in (1, 2) else _skip(data, pos, elem, depth + 1)
        return pos
    if kind == 11:  # map: size, then key and value types in one byte
        n, pos = _varint(data, pos)
        if n:
            types, pos = data[pos], pos + 1
            for _ in range(n):
                pos = _skip(data, pos, types >> 4, depth + 1)
                pos = _skip(data, pos, types & 0x0F, depth + 1)
        return pos
    if kind == 12:  # struct
        return _struct(data, pos, depth + 1)[0]
    raise ValueError(f"type {kind}")


def _struct(data: bytes, pos: int, depth: int = 0) -> tuple[int, dict[int, int]]:
    """Past a compact struct at ``pos``: (next position, its top-level integer fields)."""
    ints: dict[int, int] = {}
    field_id = 0
    while True:
        if pos >= len(data):
            raise ValueError("struct")
        head, pos = data[pos], pos + 1
        if head == 0:  # stop
            return pos, ints
        delta, kind = head >> 4, head & 0x0F
        if delta:
            field_id += delta
        else:
            raw, pos = _varint(data, pos)
            field_id = (raw >> 1) ^ -(raw & 1)
        if kind in (4, 5, 6):
            raw, pos = _varint(data, pos)
            ints[field_id] = (raw >> 1) ^ -(raw & 1)
        else:
            pos = _skip(data, pos, kind, depth)


def parquet_page_bytes(data: bytes, meta: Any) -> int:
    """The uncompressed bytes of every page of a Parquet file, read from each page's
    own header (Thrift compact ``PageHeader``: field 2 its uncompressed size, field 3
    its compressed size), walking each column chunk from its first page for the
    chunk's compressed size. The footer's sizes are not trusted: a 46 kB file whose
    footer claims 1 kB for a page that inflates to 1 GiB is counted as 1 GiB, before
    anything is decompressed.

    Raises
    ------
    ValueError
        When a header does not parse or a page lies outside the file.
    """
    total = 0
    end_of_pages = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            col = group.column(c)
            start = col.data_page_offset
            if col.has_dictionary_page and col.dictionary_page_offset:
                start = min(start, col.dictionary_page_offset)
            pos, end = start, min(start + col.total_compressed_size, end_of_pages)
            if not 4 <= pos < end:
                raise ValueError("a column chunk outside the file")
            while pos < end:
                pos, header = _struct(data, pos)
                uncompressed, compressed = header.get(2, -1), header.get(3, -1)
                if uncompressed < 0 or compressed < 0:
                    raise ValueError("a page header without its sizes")
                total += uncompressed
                pos += compressed
    return total


def _check_expanded(table: Any, name: str) -> None:
    """Refuse a Parquet table whose text columns, written out once per row, would be larger
    than the text limit (:data:`~data_loaders.limits.MAX_FILE_BYTES`): a dictionary-encoded
    column is measured from its dictionary's lengths and its rows' indices, so a short
    file whose dictionary holds one long value for every row (23 KB: 8,000 x 1 MB) is
    refused before that value is copied 8,000 times."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for column in table.columns:
        for chunk in column.chunks:
            if pa.types.is_dictionary(chunk.type):
                lengths = pc.binary_length(chunk.dictionary)
                total += int(pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0)
            elif pa.types.is_string(chunk.type) or pa.types.is_binary(chunk.type):
                total += int(pc.sum(pc.binary_length(chunk)).as_py() or 0)
            elif pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type):
                total += int(pc.sum(pc.binary_length(chunk)).as_py() or 0)
            if total > limits.MAX_FILE_BYTES:
                raise _Refused(
                    f"{name}: its text columns hold more than {limits.MAX_FILE_MB} MB of text "
                    "once every row is written out (values repeated from the file's "
                    "dictionaries), the limit for an own study (data_loaders.limits."
                    "MAX_FILE_MB).",
                    True,
                )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        return repr(value)
    if hasattr(value, "isoformat"):
        return value.isoformat(sep=" ") if hasattr(value, "hour") else value.isoformat()
    return str(value)


def _column_letter(k: int) -> str:
    out = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        out = chr(65 + r) + out
    return out


@register(
    ".xlsx",
    "Excel workbook",
    text=False,
    example="choices.xlsx",
    note="an .xlsx is read from its first sheet (an old .xls: save it as .xlsx or CSV)",
)
def _read_xlsx(data: bytes, name: str, sep: str | None) -> Read:
    """The first sheet of a workbook as CSV text, streamed row by row and bounded."""
    try:
        parts = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise _Refused(
            f"{name}: cannot be read as an Excel workbook (not an .xlsx, or a truncated "
            "one); save it again from the spreadsheet or as CSV"
        ) from None
    if sum(p.file_size for p in parts) > XLSX_MAX_BYTES:
        raise _Refused(
            f"{name}: the workbook's parts are larger than {XLSX_MAX_BYTES // 2**20} MB "
            "uncompressed, the limit for an own study (data_loaders.readers.XLSX_MAX_BYTES).",
            True,
        )
    shared = sum(p.file_size for p in parts if p.filename.lower().endswith("sharedstrings.xml"))
    if shared > XLSX_SHARED_MAX_BYTES:  # read whole by openpyxl before any row
        raise _Refused(
            f"{name}: the workbook's shared strings are larger than "
            f"{XLSX_SHARED_MAX_BYTES // 2**20} MB uncompressed, the limit for an own study "
            "(data_loaders.readers.XLSX_SHARED_MAX_BYTES).",
            True,
        )
    try:
        import openpyxl
    except ImportError:  # pragma: no cover - a dependency of the package
        raise _Refused(
            f"{name}: reading .xlsx needs the openpyxl package (pip install openpyxl); or "
            "save the sheet as CSV"
        ) from None
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception:  # openpyxl raises many kinds on a damaged workbook
        raise _Refused(
            f"{name}: cannot be read as an Excel workbook (damaged, or not an .xlsx); save "
            "it again from the spreadsheet or as CSV"
        ) from None
    try:
        sheets = book.worksheets
        if not sheets:
            raise _Refused(f"{name}: the workbook has no sheet")
        sheet = sheets[0]
        sheet.reset_dimensions()
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        width = 0
        size = 0
        for n, row in enumerate(sheet.iter_rows(values_only=True), start=1):
            if n == 1:
                named = [k for k, v in enumerate(row) if v is not None and str(v).strip()]
                width = named[-1] + 1 if named else 0
                if width == 0:
                    raise _Refused(
                        f"{name}: the first row of sheet {_shown(sheet.title)} is empty; put "
                        "the column names in row 1"
                    )
                if width > limits.MAX_COLUMNS:
                    raise _Refused(
                        f"{name}: the header has {width:,} columns, more than "
                        f"{limits.MAX_COLUMNS:,}, the limit for an own study "
                        "(data_loaders.limits.MAX_COLUMNS).",
                        True,
                    )
            extra = [k for k, v in enumerate(row[width:], start=width) if v is not None]
            if extra:
                raise _Refused(
                    f"{name}, row {n}: a value in column {_column_letter(extra[0])}, right of "
                    "the last named column; name that column in row 1 or delete the value"
                )
            if n > limits.MAX_ROWS + 1:
                raise _Refused(
                    f"{name}: it has more than {limits.MAX_ROWS:,} rows, the limit for an own "
                    "study (data_loaders.limits.MAX_ROWS).",
                    True,
                )
            cells = [_cell(v) for v in row[:width]] + [""] * (width - len(row))
            # measured before it is written: a shared string is one object however many
            # cells name it, its copies into the text are what grows
            size += sum(map(len, cells)) + len(cells)
            if size > limits.MAX_FILE_BYTES:
                raise _too_big(name, "sheet as text")
            writer.writerow(cells)
        title, count = sheet.title, len(sheets)
    except _Refused:
        raise
    except Exception:  # a damaged sheet part
        raise _Refused(
            f"{name}: cannot be read as an Excel workbook (a damaged sheet); save it again "
            "from the spreadsheet or as CSV"
        ) from None
    finally:
        book.close()
    note = f"sheet {_shown(title)}" + (f" (the first of {count})" if count > 1 else "")
    return Read(out.getvalue().encode("utf-8"), details=[note])


# --------------------------------------------------------------------------- parsing
def _parse(text: bytes, name: str, sep: str, decimal: str = ".") -> pd.DataFrame:
    """CSV text as a table whose index is the file line (header = line 1), blank lines
    dropped (as :func:`data_loaders._common.read_csv_lines`); ``decimal=","`` reads
    ``12,5`` as 12.5."""
    import pandas as pd

    try:
        frame = pd.read_csv(io.BytesIO(text), sep=sep, skip_blank_lines=False, decimal=decimal)
    except pd.errors.EmptyDataError:
        raise _Refused(f"{name}: the file is empty (no header line)") from None
    except UnicodeDecodeError as exc:
        raise _Refused(
            f"{name}: not UTF-8 text (byte {exc.start}); save it as UTF-8 (in a spreadsheet: "
            "CSV UTF-8)"
        ) from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise _Refused(
            f"{name}: cannot be read as {_separated(sep)} text: "
            f"{scrub(str(exc))}; check that line, or name another separator"
        ) from None
    frame.index = pd.RangeIndex(2, 2 + len(frame))
    blank = frame.isna().all(axis=1)
    if blank.any():
        frame = frame.loc[~blank.to_numpy()]
    return frame


@dataclass(eq=False)
class Table:
    """A table read from an own file, and how it was read.

    Attributes
    ----------
    frame
        The table; its index is the line of the (text) file, header = line 1 (a sheet's
        row; a Parquet file's row + 1).
    name
        The file's name as shown in messages.
    format
        Its suffix in :data:`READERS` (``".dat"``...).
    sep
        The separator of the text (``","`` for Parquet and Excel, converted to CSV).
    sep_source
        ``"detected"``, ``"given"`` or ``""`` (a binary format).
    compression
        ``"gzip"``, ``"bz2"``, ``"zip"`` or ``""``.
    member
        The table's name inside a ``.zip``.
    details
        More of what was read (an Excel sheet).
    """

    frame: pd.DataFrame
    name: str
    format: str
    sep: str
    sep_source: str
    compression: str = ""
    member: str = ""
    details: list[str] = field(default_factory=list)
    _text: bytes = b""

    def describe(self) -> str:
        """What was read, in words: ``x.dat: tab-separated text (separator detected;
        --sep to change), 301 rows, 14 columns``."""
        fmt = READERS.get(self.format)
        what = fmt.label if fmt is not None and not fmt.text else ""
        if not what:
            what = f"{separator_name(self.sep)}-separated text".replace("pipe (|)-", "|-").replace(
                "spaces-separated", "space-separated"
            )
            if self.sep_source == "detected":
                what += " (separator detected; --sep or the form's Separator to change)"
        if self.details:
            what += ", " + ", ".join(self.details)
        if self.compression:
            inside = f" holding {_shown(self.member)}" if self.member else ""
            what = f"{self.compression}-compressed{inside}: {what}"
        rows, cols = self.frame.shape
        return f"{self.name}: {what}; {rows:,} rows, {cols:,} columns"

    @property
    def text(self) -> bytes:
        """The table as comma-separated UTF-8 text: the file's own text when it was
        comma-separated, else the table written by pandas (what a saved study keeps)."""
        if self.sep == ",":
            return self._text
        return _csv_text(self.frame)


def _raw(source: bytes | str | os.PathLike[str], what: str) -> bytes:
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    p = check_file(source, what)
    size = os.stat(p).st_size
    if size > limits.MAX_FILE_BYTES:
        raise _Refused(
            f"{source}: {size / 2**20:.1f} MB is over {limits.MAX_FILE_MB} MB, the limit for "
            "an own study (data_loaders.limits.MAX_FILE_MB).",
            limit=True,
        )
    return Path(p).read_bytes()


def encoding_name(value: str) -> str:
    """The encoding of :data:`ENCODINGS` that ``value`` names (``"UTF8"`` -> ``"utf-8"``,
    ``"windows-1252"`` -> ``"cp1252"``).

    Raises
    ------
    ValueError
        For any other name (another codec, or no name at all), in words listing them.
    """
    import codecs

    text = str(value).strip()
    known = {codecs.lookup(e).name: e for e in ENCODINGS}
    try:
        if not _ENCODING_NAME.fullmatch(text):
            raise LookupError(text)
        return known[codecs.lookup(text).name]
    except (LookupError, KeyError):
        what = repr(text) if len(text) <= 40 and text.isprintable() else "that name"
        raise ValueError(
            f"{what} is not an encoding the import reads; name one of "
            f"{', '.join(ENCODINGS)}, or leave it out to detect it"
        ) from None


def _decoded(data: bytes, name: str, encoding: str) -> bytes:
    """A text in ``encoding`` (``--encoding``, one of :data:`ENCODINGS`) as UTF-8; a
    refusal in words for another encoding or bytes it does not decode."""
    try:
        encoding = encoding_name(encoding)
    except ValueError as exc:
        raise _Refused(f"{name}: --encoding {exc}") from None
    try:
        return data.decode(encoding).encode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Refused(
            f"{name}: not {encoding} text (byte {exc.start:,}); name another --encoding, or "
            "leave it out to detect it"
        ) from None


def _prepare(
    source: bytes | str | os.PathLike[str],
    name: str | None,
    sep: str | None,
    what: str,
    encoding: str | None = None,
) -> tuple[_Source, Read, str]:
    shown = name or str(source)
    src = _open(_raw(source, what), shown)
    fmt = READERS[src.fmt]
    inner = f"{shown} ({_shown(src.member)})" if src.member else shown
    data = _decoded(src.data, inner, encoding) if encoding and fmt.text else src.data
    got = fmt.reader(data, inner, sep if fmt.text else None)
    if encoding and fmt.text:
        got.details.insert(0, f"encoding {encoding} (given)")
    if not fmt.text:
        _check_text(got.text, f"{shown} (as CSV text)", ",")
    return src, got, shown


def csv_text(
    source: bytes | str | os.PathLike[str],
    name: str | None = None,
    sep: str | None = None,
    what: str = "choice file",
    encoding: str | None = None,
) -> bytes:
    """:attr:`Table.text` of a file without parsing it when it is comma-separated text
    already (the file's own text, decompressed) or Parquet/Excel (converted); other
    separators are parsed and written again with commas.

    Raises
    ------
    data_loaders.limits.LimitError, pbo_core.data.DataValidationError
        As :func:`read_table`.
    """
    try:
        _, got, shown = _prepare(source, name, sep, what, encoding)
        if got.sep == ",":
            return got.text
        return _csv_text(_parse(got.text, shown, got.sep, got.decimal))
    except _Refused as exc:
        _raise(exc)


def refusal(
    source: bytes | str | os.PathLike[str],
    name: str | None = None,
    sep: str | None = None,
    what: str = "choice file",
    encoding: str | None = None,
) -> str | None:
    """Why :func:`read_table` would refuse a text file before parsing it (bounds, the
    separator, compression), with the standard library only; ``None`` when it would go
    on. Parquet and Excel files are only checked for their size here."""
    try:
        raw = _raw(source, what)
        shown = name or str(source)
        src = _open(raw, shown)
        fmt = READERS[src.fmt]
        if fmt.text:
            data = _decoded(src.data, shown, encoding) if encoding else src.data
            fmt.reader(data, shown, sep)
    except _Refused as exc:
        return str(exc)
    except OSError as exc:  # absent, or refused by data_loaders.access
        return str(exc)
    return None


def read_table(
    source: bytes | str | os.PathLike[str],
    name: str | None = None,
    sep: str | None = None,
    what: str = "choice file",
    encoding: str | None = None,
) -> Table:
    """Read an own table file of any accepted format (:func:`accepted_suffixes`).

    Parameters
    ----------
    source
        A path (checked by :func:`data_loaders.access.check_file`) or the file's bytes
        (an upload).
    name
        The name shown in messages; its suffixes choose the reader (an upload's base
        name: never used as a path). Default: the path as given.
    sep
        The separator of a text file (see :func:`parse_sep`); ``None`` detects it.
    encoding
        The encoding of a text file (``--encoding``); ``None`` detects UTF-8, UTF-16 with
        its mark, cp1252 or latin-1.
    what
        What the file is, for access refusals (``"choice file"``).

    Returns
    -------
    Table
        The table (index = file line) and how it was read.

    Raises
    ------
    data_loaders.limits.LimitError
        Over a bound of :mod:`data_loaders.limits` (or the module's own).
    pbo_core.data.DataValidationError
        When it cannot be read; the message names the file and what to do.
    data_loaders.access.PathRefusedError, FileNotFoundError
        For a path that may not be opened, or is absent.
    """
    try:
        src, got, shown = _prepare(source, name, sep, what, encoding)
        frame = _parse(got.text, shown, got.sep, got.decimal)
        if frame.shape[1] < 2:
            hint = _header_note(got.text, got.sep)
            raise _Refused(
                f"{shown}: split by {separator_name(got.sep)} ({got.sep_source or 'as CSV'}) "
                f"it has one column{hint}; a choice table has several: name the separator "
                "that splits it (--sep, or the form's Separator)"
            )
    except _Refused as exc:
        _raise(exc)
    return Table(
        frame,
        shown,
        src.fmt,
        got.sep,
        got.sep_source,
        src.compression,
        src.member,
        got.details,
        got.text,
    )
