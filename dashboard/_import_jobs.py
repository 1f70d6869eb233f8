"""The Add-a-study form's work, as job bodies for the budgeted worker processes.

Reading an upload (up to 20 MB of text: a table of several hundred MB in pandas),
inferring its columns and checking and saving it are the largest allocations a visitor
can cause. The form (:mod:`dashboard._study_import`) runs them here, in a worker of
:mod:`dashboard._services.jobs` (its memory and time budget: ``DTPBO_JOB_MEMORY_MB``,
``DTPBO_JOB_SECONDS``), so the server process only ever holds the upload's bytes and
the small answers (column names, the inferred column map, problems, the saved study's
``study.json``); it never parses the table. Like :mod:`dashboard._work`, no Streamlit
and nothing of ``dashboard._services`` is imported here.

An imported study is loaded here too (:func:`load_study`): the server receives the
finished study, not the parse's temporaries. A worker keeps the last table it read
(:data:`_LAST`), so the form's next question about the same file (another column map)
does not parse it again; it lets it go at the import, or :data:`KEEP_S` seconds after
its last use (a form left half-filled), and hands the memory back to the system.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from dashboard import _memory
from data_loaders import access, registry
from data_loaders import user_studies as us

__all__ = ["inspect_upload", "load_study", "read_columns", "save_upload"]

#: The last table read in this process: ``(digest, name, sep, encoding) -> (frame,
#: problems, how)``.
_LAST: dict[tuple[str, str, str | None, str | None], tuple[Any, list[us.Problem], str]] = {}
_LOCK = threading.Lock()
#: Seconds a worker keeps the last table after its last use.
KEEP_S = 120.0
_TIMER: list[threading.Timer] = []


def release() -> None:
    """Let the kept table go (and its memory, :func:`dashboard._memory.trim`)."""
    with _LOCK:
        had = bool(_LAST)
        _LAST.clear()
    if had:
        _memory.trim(collect=True)


def _keep_for_a_while() -> None:
    with _LOCK:
        for t in _TIMER:
            t.cancel()
        _TIMER.clear()
        timer = threading.Timer(KEEP_S, release)
        timer.daemon = True
        _TIMER.append(timer)
    timer.start()


def digest(content: bytes) -> str:
    """The upload's identity (SHA-256)."""
    return hashlib.sha256(content).hexdigest()


def _table(
    content: bytes, name: str, sep: str | None, encoding: str | None = None
) -> tuple[Any, list[us.Problem], str]:
    key = (digest(content), name, sep, encoding)
    with _LOCK:
        value = _LAST.get(key)
    if value is None:
        release()  # one table at a time: the memory of the one being read
        table, problems = us.read_upload_table(content, name, sep, encoding)
        value = (None, problems, "") if table is None else (table.frame, problems, table.describe())
        with _LOCK:
            _LAST.clear()
            _LAST[key] = value
    _keep_for_a_while()
    return value


def read_columns(
    content: bytes,
    name: str,
    sep: str | None = None,
    encoding: str | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> tuple[list[str] | None, list[us.Problem], str]:
    """The upload's column names (``None`` when it cannot be read), its problems and how
    it was read (:meth:`data_loaders.readers.Table.describe`); ``sep`` and ``encoding``
    as ``import-study --sep --encoding`` (``None``: detected)."""
    frame, problems, how = _table(content, name, sep, encoding)
    return (None if frame is None else [str(c) for c in frame.columns]), problems, how


def inspect_upload(
    content: bytes,
    name: str,
    columns: str,
    sep: str | None = None,
    encoding: str | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> us.Inspection:
    """:func:`data_loaders.user_studies.inspect_upload` of the upload and a column map
    (JSON)."""
    frame, problems, _ = _table(content, name, sep, encoding)
    if frame is None:
        return us.Inspection(None, problems=problems)
    # a shallow copy: the inspection may rewrite the table's columns (a choice given as
    # 0/1 columns, data_loaders.layout.choice_from_indicators), the kept table stays as read
    return us.inspect_upload(frame.copy(deep=False), name, us.ColumnMap.from_json(columns))


def save_upload(
    *args: Any, progress: Callable[[float, str], None] | None = None, **kwargs: Any
) -> tuple[us.UserStudy | None, list[us.Problem]]:
    """:func:`data_loaders.user_studies.save_study` (check every row, then save); the
    table read for the form's questions is let go first."""
    release()
    try:
        return us.save_study(*args, **kwargs)
    finally:
        _memory.trim(collect=True)  # the worker holds nothing of the check afterwards


def load_study(
    key: str,
    options: tuple[tuple[str, str], ...] = (),
    progress: Callable[[float, str], None] | None = None,
) -> Any:
    """A registry study loaded here, inside the allowed data roots
    (:func:`data_loaders.access.confined`), for the server to keep only the result: the
    parse's temporaries stay in the worker."""
    with access.confined():
        return registry.load_study(key, **dict(options))
