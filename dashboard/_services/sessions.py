"""Elicitation sessions and sidebar settings stored in SQLite in the per-user data folder.

The database is ``<data home>/dashboard/sessions.sqlite`` (the data home is
``$DTPBO_DATA_HOME``, default ``~/.cache/dtpbo``; never the checkout). A session is stored
as what makes it: its configuration (mode, study or function, query rule, seed, item
sample), an optional table of answers loaded from a file (``base``) and the log of the
actions taken since (``"A"``, ``"B"``, ``"tie"``, ``"skip"``). Sessions are deterministic,
so replaying the log gives the same questions, answers and favourite: a session survives a
browser refresh and an app restart, and is resumed from the session picker.

Settings hold the sidebar data paths (paths only: no API keys or other secrets are
ever written here).
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from data_loaders._common import data_home
from pbo_core.session import ElicitationSession

#: Version of the exported JSON document.
EXPORT_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    method TEXT NOT NULL,
    seed INTEGER NOT NULL,
    max_items INTEGER,
    base TEXT NOT NULL DEFAULT '[]',
    actions TEXT NOT NULL DEFAULT '[]',
    n_answers INTEGER NOT NULL DEFAULT 0,
    favourite TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def db_path() -> Path:
    """The session database in the per-user data folder."""
    return data_home() / "dashboard" / "sessions.sqlite"


_READY: set[Path] = set()


@contextmanager
def _connect() -> Iterator[sqlite3.Connection]:
    path = db_path()
    if path not in _READY or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path, timeout=10) as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)
        _READY.add(path)
    con = sqlite3.connect(path, timeout=10)
    try:
        # WAL + NORMAL: a commit survives an app crash; only a power cut may lose the last
        con.execute("PRAGMA synchronous=NORMAL")
        with con:
            yield con
    finally:
        con.close()


@dataclass(frozen=True)
class SessionRecord:
    """One stored session."""

    id: str
    created: float
    updated: float
    kind: str
    source: str
    method: str
    seed: int
    max_items: int | None
    base: list[dict[str, Any]]
    actions: list[str]
    n_answers: int
    favourite: str

    @property
    def config(self) -> tuple[str, str, str, int, int | None]:
        """``(kind, source, method, seed, max_items)``: what the page's controls choose."""
        return (self.kind, self.source, self.method, self.seed, self.max_items)

    def title(self) -> str:
        """A line for the session picker."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.updated))
        fav = f", favourite {self.favourite}" if self.favourite else ""
        n = self.n_answers
        return (
            f"{self.source} · {self.method} · seed {self.seed} — {n} answer"
            f"{'' if n == 1 else 's'}{fav} ({when})"
        )


_COLS = (
    "id, created, updated, kind, source, method, seed, max_items, base, actions, "
    "n_answers, favourite"
)


def _record(row: tuple[Any, ...]) -> SessionRecord:
    (sid, created, updated, kind, source, method, seed, max_items, base, actions, n, fav) = row
    return SessionRecord(
        sid,
        float(created),
        float(updated),
        kind,
        source,
        method,
        int(seed),
        None if max_items is None else int(max_items),
        json.loads(base),
        json.loads(actions),
        int(n),
        fav,
    )


def create_session(
    config: tuple[str, str, str, int, int | None], base: pd.DataFrame | None = None
) -> str:
    """Store a new session (no actions yet); returns its id."""
    kind, source, method, seed, max_items = config
    sid = uuid.uuid4().hex[:12]
    now = time.time()
    rows = [] if base is None else json.loads(base.to_json(orient="records"))
    with _connect() as con:
        con.execute(
            f"INSERT INTO sessions ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', ?, '')",
            (
                sid,
                now,
                now,
                kind,
                source,
                method,
                int(seed),
                max_items,
                json.dumps(rows),
                len(rows),
            ),
        )
    return sid


def save_session(sid: str, sess: ElicitationSession, favourite: str = "") -> None:
    """Write the session's actions (after its loaded table) and summary."""
    with _connect() as con:
        row = con.execute("SELECT json_array_length(base) FROM sessions WHERE id = ?", (sid,))
        n_base = row.fetchone()
        if n_base is None:
            raise KeyError(f"no stored session {sid!r}")
        actions = sess.actions[int(n_base[0]) :]
        con.execute(
            "UPDATE sessions SET actions = ?, n_answers = ?, favourite = ?, updated = ? "
            "WHERE id = ?",
            (json.dumps(actions), sess.n_answers, favourite, time.time(), sid),
        )


def load_session(sid: str) -> SessionRecord | None:
    """The stored session ``sid`` (``None`` when there is none)."""
    with _connect() as con:
        row = con.execute(f"SELECT {_COLS} FROM sessions WHERE id = ?", (sid,)).fetchone()
    return None if row is None else _record(row)


def list_sessions(limit: int = 100) -> list[SessionRecord]:
    """Stored sessions, most recently updated first."""
    with _connect() as con:
        rows = con.execute(
            f"SELECT {_COLS} FROM sessions ORDER BY updated DESC LIMIT ?", (int(limit),)
        ).fetchall()
    return [_record(r) for r in rows]


def latest_session(config: tuple[str, str, str, int, int | None]) -> SessionRecord | None:
    """The most recently updated session with this configuration."""
    kind, source, method, seed, max_items = config
    with _connect() as con:
        row = con.execute(
            f"SELECT {_COLS} FROM sessions WHERE kind = ? AND source = ? AND method = ? "
            "AND seed = ? AND max_items IS ? ORDER BY updated DESC LIMIT 1",
            (kind, source, method, int(seed), max_items),
        ).fetchone()
    return None if row is None else _record(row)


def delete_session(sid: str) -> None:
    """Remove a stored session."""
    with _connect() as con:
        con.execute("DELETE FROM sessions WHERE id = ?", (sid,))


def replay(sess: ElicitationSession, rec: SessionRecord) -> ElicitationSession:
    """``sess`` (fresh, built from ``rec.config``) brought to the stored state."""
    if rec.base:
        sess.replay(pd.DataFrame.from_records(rec.base))
    for action in rec.actions:
        sess.apply(action)
    return sess


# ----------------------------------------------------------------------------- exports
def export_json(sess: ElicitationSession, rec: SessionRecord) -> str:
    """The session as a JSON document: configuration, action log and answer table."""
    doc = {
        "format": "dtpbo-elicitation-session",
        "version": EXPORT_VERSION,
        "config": {
            "kind": rec.kind,
            "source": rec.source,
            "method": rec.method,
            "seed": rec.seed,
            "max_items": rec.max_items,
        },
        "base": rec.base,
        "actions": sess.actions[len(rec.base) :],
        "answers": json.loads(sess.to_frame().to_json(orient="records")),
    }
    return json.dumps(doc, indent=1)


def import_json(text: str | bytes) -> str:
    """Store a session exported by :func:`export_json` as a new session; returns its id.

    Raises
    ------
    ValueError
        When the document is not such an export.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != "dtpbo-elicitation-session":
        raise ValueError("not an elicitation session exported by this dashboard")
    cfg = doc.get("config") or {}
    try:
        config = (
            str(cfg["kind"]),
            str(cfg["source"]),
            str(cfg["method"]),
            int(cfg["seed"]),
            None if cfg.get("max_items") is None else int(cfg["max_items"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the session's configuration is incomplete: {exc}") from exc
    actions = [str(a) for a in doc.get("actions") or []]
    bad = [a for a in actions if a not in ("A", "B", "tie", "skip")]
    if bad:
        raise ValueError(f"unknown actions {bad[:3]} (expected A, B, tie or skip)")
    base = doc.get("base") or []
    sid = create_session(config, pd.DataFrame.from_records(base) if base else None)
    with _connect() as con:
        con.execute(
            "UPDATE sessions SET actions = ?, n_answers = ? WHERE id = ?",
            (json.dumps(actions), len(base) + sum(a != "skip" for a in actions), sid),
        )
    return sid


# ----------------------------------------------------------------------------- settings
def get_setting(key: str, default: Any = None) -> Any:
    """A stored setting (JSON value)."""
    with _connect() as con:
        row = con.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return default if row is None else json.loads(row[0])


def set_setting(key: str, value: Any) -> None:
    """Store a setting (a JSON value; never a secret)."""
    with _connect() as con:
        con.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )


def stored_paths() -> dict[str, str]:
    """Sidebar data paths saved by an earlier run."""
    paths = get_setting("data_paths", {})
    return {str(k): str(v) for k, v in paths.items()} if isinstance(paths, dict) else {}


def store_paths(paths: dict[str, str]) -> None:
    """Save the sidebar data paths (empty entries dropped)."""
    set_setting("data_paths", {k: v.strip() for k, v in paths.items() if v and v.strip()})
