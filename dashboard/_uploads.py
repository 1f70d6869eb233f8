"""Uploaded files: parsed in memory, shown by their base name only.

A browser sends the file name it likes (``../../x.csv``, ``/etc/x.csv``,
``C:\\x\\y.csv``); pages never join it to a folder. They read ``up.getvalue()`` in memory
and use :func:`upload_name` only to name the file in messages.
"""

from __future__ import annotations

import re

__all__ = ["upload_name"]

_SEP = re.compile(r"[\\/]")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def upload_name(name: object, default: str = "uploaded file") -> str:
    """The base name of an uploaded file, safe to show or to use as a file name.

    Directory parts (``/`` or ``\\``), drive letters and control characters are removed;
    ``""``, ``"."`` and ``".."`` give ``default``.
    """
    base = _SEP.split(str(name or ""))[-1]
    base = _UNSAFE.sub("", base).split(":")[-1].strip()
    return default if base in ("", ".", "..") else base
