"""Elicitation sessions and sidebar settings stored in SQLite in the per-user data folder.

The database is ``<data home>/dashboard/sessions.sqlite`` (the data home is
``$DTPBO_DATA_HOME``, default ``~/.cache/dtpbo``; never the checkout). A session is stored
as what makes it: its configuration (mode, study or function, query rule, seed, item
sample), an optional table of answers loaded from a file (``base``) and the log of the
actions taken since (``"A"``, ``"B"``, ``"tie"``, ``"skip"``). Sessions are deterministic,
so replaying the log gives the same questions, answers and favourite: a session survives a
browser refresh and an app restart, and is resumed from its link (``?session=<id>``) or
the session picker.

Many visitors, one store:

* a session belongs to the browser that started it (``owner``: a hash of the browser's
  visitor token, never the token itself); :func:`list_sessions` lists one owner's
  sessions; anyone with a session's link (its id, 128 random bits) can open it;
* the action log is a table ``answers(session_id, seq, action)`` with ``seq`` the action's
  position after the loaded table; :func:`record_action` writes one action and the
  session's summary in **one transaction**, and an action arriving twice for the same
  ``(session_id, seq)`` (a double click, a retry) is stored once
  (:class:`AnswerConflict` when the second one differs: another tab answered first);
* SQLite runs in WAL mode with a busy timeout (:data:`BUSY_TIMEOUT_S`), so concurrent
  visitors (and several server processes sharing the data folder) wait for each other's
  short transactions instead of failing; a process's own writers queue at its lock
  (:data:`_WRITE_LOCK`) first; a transaction takes an open connection from a
  small pool (:data:`POOL_SIZE`, one thread at a time on each) and gives it back;
* each session remembers which server process (:data:`SERVER_ID`) last wrote it, so a page
  resumed after a restart can say that an answer given while the server stopped may be
  missing (and says nothing when that process still runs: several processes behind a
  proxy, :func:`server_stopped`);
* a visit that never answers leaves no row (:class:`Draft`); each process sweeps rows
  without answers and, with :data:`EXPIRY_ENV` set, old sessions (:func:`sweep_store`).

Settings hold the sidebar data paths per owner (paths only: no API keys or other secrets
are ever written here).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import secrets
import socket
import sqlite3
import threading
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

#: Version of the exported JSON document (2: with the participant name).
EXPORT_VERSION = 2
#: How long a writer waits for another visitor's transaction before failing, in seconds.
BUSY_TIMEOUT_S = 10.0
_LOG = logging.getLogger(__name__)


def _started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, Linux), ``""`` if unknown:
    with the process id it names one process even when ids are reused (a container's)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


#: This server process: ``host/pid/start/random`` (changes at every start; several
#: processes may serve one store; see :attr:`SessionRecord.server`, :func:`server_stopped`).
SERVER_ID = f"{socket.gethostname()}/{os.getpid()}/{_started(os.getpid())}/{uuid.uuid4().hex[:8]}"


def server_stopped(server: str) -> bool:
    """Whether the server process ``server`` (a :data:`SERVER_ID`) has stopped since it
    wrote a session: ``False`` for this process and for another one still running on this
    machine (several processes behind a proxy share the store), ``True`` for one that is
    gone or an id of an older version (a random id per start); ``False`` when it cannot
    be told (another machine)."""
    if not server or server == SERVER_ID:
        return False
    parts = server.split("/")
    if len(parts) != 4 or not parts[1].isdigit():
        return True
    host, pid, start, _ = parts
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        pass  # it exists (another user's) or the id is odd: compare the start below
    return bool(start) and _started(int(pid)) != start


#: The actions of the log.
ACTIONS = ("A", "B", "tie", "skip")
#: Operator setting: sessions not updated for this many days are deleted with their
#: answers, and so are the sidebar paths of browsers not seen for as long (unset, empty or
#: 0: kept for ever).
EXPIRY_ENV = "DTPBO_SESSION_EXPIRY_DAYS"
#: How often a server process sweeps the store (at its first use, then at most this often).
SWEEP_EVERY_S = 3600.0
#: A session row with no answers is deleted once it is this old (a row is written with the
#: session's first answer; older stores kept one for every visit).
EMPTY_GRACE_S = 600.0

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
CREATE TABLE IF NOT EXISTS answers (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    action TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated REAL NOT NULL DEFAULT 0
);
"""

#: Columns added after the first release (``ALTER TABLE`` on older stores).
_ADDED = {
    "owner": "TEXT NOT NULL DEFAULT ''",
    "participant": "TEXT NOT NULL DEFAULT ''",
    "server": "TEXT NOT NULL DEFAULT ''",
}


class AnswerConflict(RuntimeError):
    """Question ``seq`` of a session already holds a different answer (another tab)."""


def owner_of(token: str) -> str:
    """The owner stored with a session: a hash of the browser's visitor token."""
    return hashlib.sha256(f"dtpbo-visitor:{token}".encode()).hexdigest()[:32]


def _migrate(con: sqlite3.Connection) -> None:
    """Bring an older store up to the schema: new columns, the action log as rows."""
    have = {row[1] for row in con.execute("PRAGMA table_info(sessions)")}
    for name, decl in _ADDED.items():
        if name not in have:
            con.execute(f"ALTER TABLE sessions ADD COLUMN {name} {decl}")
    if "updated" not in {row[1] for row in con.execute("PRAGMA table_info(settings)")}:
        con.execute("ALTER TABLE settings ADD COLUMN updated REAL NOT NULL DEFAULT 0")
        con.execute("UPDATE settings SET updated = ?", (time.time(),))  # their age unknown
    rows = con.execute(
        "SELECT id, actions FROM sessions WHERE actions != '[]' AND id NOT IN "
        "(SELECT DISTINCT session_id FROM answers)"
    ).fetchall()
    now = time.time()
    for sid, actions in rows:
        con.executemany(
            "INSERT OR IGNORE INTO answers (session_id, seq, action, created) VALUES (?,?,?,?)",
            [(sid, k, a, now) for k, a in enumerate(json.loads(actions))],
        )
        con.execute("UPDATE sessions SET actions = '[]' WHERE id = ?", (sid,))


def db_path() -> Path:
    """The session database in the per-user data folder."""
    return data_home() / "dashboard" / "sessions.sqlite"


_READY: set[Path] = set()
#: Open connections kept per database for the next transaction (each used by one thread at
#: a time). Opening a connection, setting its pragmas and closing it cost more than the
#: answer's own transaction, and closing the last connection to a WAL database
#: checkpoints and deletes the WAL file (a sync to disk) after every answer.
POOL_SIZE = 8
_POOL: dict[Path, list[sqlite3.Connection]] = {}
_POOL_LOCK = threading.Lock()


def _open(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
    # WAL + NORMAL: a commit survives an app crash; only a power cut may lose the last
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    con.execute("PRAGMA foreign_keys=ON")
    return con


def _drop_pools() -> None:
    """Close the idle pooled connections (of every database: a process serves one store,
    tests switch between many)."""
    with _POOL_LOCK:
        cons = [con for pool in _POOL.values() for con in pool]
        _POOL.clear()
    for con in cons:
        con.close()


_SET_UP_LOCK = threading.Lock()


def _set_up(path: Path) -> None:
    """WAL mode, the schema and the migration of an older store, once per process: under
    a lock (threads) and in one ``BEGIN IMMEDIATE`` transaction (processes sharing the
    store), so that two first visitors do not both add a column (``duplicate column``)."""
    with _SET_UP_LOCK:
        if path in _READY and path.exists():
            return
        _drop_pools()  # connections to a removed file would write to nowhere
        path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            con.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        con.execute(statement)
                _migrate(con)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        finally:
            con.close()
        _READY.add(path)


#: Held by this process's writing transactions (:func:`_connect`): its visitors' writes
#: queue here, each woken as the one before commits, instead of meeting at SQLite's lock,
#: whose busy handler sleeps in growing steps (up to 0.1 s) before it looks again. Other
#: processes of the same store still meet at SQLite's lock.
_WRITE_LOCK = threading.RLock()


@contextmanager
def _connect(write: bool = True) -> Iterator[sqlite3.Connection]:
    """A connection for one transaction (committed on success, rolled back on error),
    taken from the pool and given back (WAL mode and the schema are set up once);
    ``write``: the transaction writes (then it holds :data:`_WRITE_LOCK`; a reader in
    WAL mode never waits for a writer)."""
    path = db_path()
    if path not in _READY or not path.exists():
        _set_up(path)
    with _POOL_LOCK:
        pool = _POOL.setdefault(path, [])
        con = pool.pop() if pool else None
    if con is None:
        con = _open(path)
    try:
        with _WRITE_LOCK if write else contextlib.nullcontext():
            _maybe_sweep(con)
            with con:
                yield con
    except BaseException:
        con.close()  # after a failure, a fresh connection next time
        raise
    with _POOL_LOCK:
        pool = _POOL.setdefault(path, [])
        if len(pool) < POOL_SIZE:
            pool.append(con)
            return
    con.close()


def expiry_days() -> float | None:
    """Days after which a session expires (:data:`EXPIRY_ENV`; ``None``: never)."""
    raw = os.environ.get(EXPIRY_ENV, "").strip()
    if not raw:
        return None
    try:
        days = float(raw)
    except ValueError:
        _LOG.warning("%s=%r is not a number of days: sessions do not expire", EXPIRY_ENV, raw)
        return None
    return days if days > 0 and math.isfinite(days) else None


def sweep_store(con: sqlite3.Connection, now: float | None = None) -> dict[str, int]:
    """Delete what the store need not keep, in one transaction on ``con``: session rows
    with no answers and no loaded table (older than :data:`EMPTY_GRACE_S`), and, with
    :data:`EXPIRY_ENV` set, sessions and sidebar paths not updated for that many days.
    Returns how many rows of each kind went."""
    now = time.time() if now is None else now
    gone = {"empty_sessions": 0, "expired_sessions": 0, "expired_settings": 0}
    with con:
        gone["empty_sessions"] = con.execute(
            "DELETE FROM sessions WHERE updated < ? AND base = '[]' AND NOT EXISTS "
            "(SELECT 1 FROM answers WHERE session_id = sessions.id)",
            (now - EMPTY_GRACE_S,),
        ).rowcount
        days = expiry_days()
        if days is not None:
            cutoff = now - days * 86400.0
            con.execute(
                "DELETE FROM answers WHERE session_id IN "
                "(SELECT id FROM sessions WHERE updated < ?)",
                (cutoff,),
            )
            gone["expired_sessions"] = con.execute(
                "DELETE FROM sessions WHERE updated < ?", (cutoff,)
            ).rowcount
            gone["expired_settings"] = con.execute(
                "DELETE FROM settings WHERE key LIKE 'data_paths:%' AND updated < ?", (cutoff,)
            ).rowcount
    if any(gone.values()):
        _LOG.info("session store swept: %s", gone)
    return gone


_next_sweep = 0.0  # time.monotonic() of this process's next sweep


def _maybe_sweep(con: sqlite3.Connection) -> None:
    global _next_sweep
    now = time.monotonic()
    with _POOL_LOCK:
        if now < _next_sweep:
            return
        _next_sweep = now + SWEEP_EVERY_S
    try:
        sweep_store(con)
    except sqlite3.Error as exc:  # the visitor's own transaction goes on; next time again
        _LOG.warning("session store not swept: %s", exc)
        with _POOL_LOCK:
            _next_sweep = now


@dataclass(frozen=True)
class Draft:
    """What a session is made of before it is stored: its configuration, its owner and
    participant. The page keeps a new session as a draft and the store writes its row
    with the first action (:func:`record_action`), so visits without an answer leave
    nothing behind."""

    config: tuple[str, str, str, int, int | None]
    owner: str = ""
    participant: str = ""


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
    owner: str = ""
    participant: str = ""
    server: str = ""

    @property
    def config(self) -> tuple[str, str, str, int, int | None]:
        """``(kind, source, method, seed, max_items)``: what the page's controls choose."""
        return (self.kind, self.source, self.method, self.seed, self.max_items)

    def title(self) -> str:
        """A line for the session picker."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.updated))
        fav = f", favourite {self.favourite}" if self.favourite else ""
        who = f"{self.participant}: " if self.participant else ""
        n = self.n_answers
        return (
            f"{who}{self.source} · {self.method} · seed {self.seed} — {n} answer"
            f"{'' if n == 1 else 's'}{fav} ({when})"
        )


_COLS = (
    "id, created, updated, kind, source, method, seed, max_items, base, "
    "(SELECT json_group_array(action) FROM (SELECT action FROM answers "
    "WHERE session_id = sessions.id ORDER BY seq)), n_answers, favourite, owner, "
    "participant, server"
)


def _record(row: tuple[Any, ...]) -> SessionRecord:
    (sid, created, updated, kind, source, method, seed, max_items, base, actions, n, fav) = row[:12]
    owner, participant, server = row[12:]
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
        owner,
        participant,
        server,
    )


def new_session_id() -> str:
    """A fresh session id: 128 random bits, URL-safe (the link is the key to a session)."""
    return secrets.token_urlsafe(16)


def _insert_session(
    con: sqlite3.Connection,
    sid: str,
    config: tuple[str, str, str, int, int | None],
    rows: list[dict[str, Any]],
    owner: str,
    participant: str,
    *,
    or_ignore: bool = False,
) -> None:
    kind, source, method, seed, max_items = config
    now = time.time()
    con.execute(
        f"INSERT {'OR IGNORE ' if or_ignore else ''}INTO sessions (id, created, updated, "
        "kind, source, method, seed, max_items, base, actions, n_answers, favourite, owner, "
        "participant, server) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', ?, '', ?, ?, ?)",
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
            owner,
            participant.strip(),
            SERVER_ID,
        ),
    )


def create_session(
    config: tuple[str, str, str, int, int | None],
    base: pd.DataFrame | None = None,
    *,
    owner: str = "",
    participant: str = "",
) -> str:
    """Store a new session (no actions yet) of ``owner``; returns its id.

    For a session that starts from a loaded table (``base``); a new empty session is a
    :class:`Draft` with an id from :func:`new_session_id`, stored with its first action.
    """
    sid = new_session_id()
    rows = [] if base is None else json.loads(base.to_json(orient="records"))
    with _connect() as con:
        _insert_session(con, sid, config, rows, owner, participant)
    return sid


def _n_base(con: sqlite3.Connection, sid: str) -> int:
    row = con.execute("SELECT json_array_length(base) FROM sessions WHERE id = ?", (sid,))
    n_base = row.fetchone()
    if n_base is None:
        raise KeyError(f"no stored session {sid!r}")
    return int(n_base[0])


def record_action(
    sid: str, seq: int, action: str, n_answers: int, *, draft: Draft | None = None
) -> bool:
    """Store action number ``seq`` (0 = the first after the loaded table) of session ``sid``
    and its new answer count, in one transaction (with the session's row, from ``draft``,
    when it is not stored yet).

    Returns ``True`` when stored, ``False`` when this very action was already stored (a
    double click or a retry: nothing is written twice).

    Raises
    ------
    AnswerConflict
        When question ``seq`` already holds a different action, or ``seq`` leaves a gap.
    KeyError
        When there is no such session (and no ``draft``).
    sqlite3.Error
        When the write fails (the caller shows it; nothing is dropped silently).
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r} (expected one of {ACTIONS})")
    with _connect() as con:
        if draft is not None:
            _insert_session(
                con, sid, draft.config, [], draft.owner, draft.participant, or_ignore=True
            )
        _n_base(con, sid)
        cur = con.execute(
            "INSERT INTO answers (session_id, seq, action, created) "
            "SELECT ?, ?, ?, ? WHERE ? = (SELECT COUNT(*) FROM answers WHERE session_id = ?) "
            "ON CONFLICT (session_id, seq) DO NOTHING",
            (sid, int(seq), action, time.time(), int(seq), sid),
        )
        if cur.rowcount == 1:
            con.execute(
                "UPDATE sessions SET n_answers = ?, updated = ?, server = ? WHERE id = ?",
                (int(n_answers), time.time(), SERVER_ID, sid),
            )
            return True
        row = con.execute(
            "SELECT action FROM answers WHERE session_id = ? AND seq = ?", (sid, int(seq))
        ).fetchone()
    if row is not None and row[0] == action:
        return False
    if row is not None:
        raise AnswerConflict(
            f"question {seq + 1} of this session was already answered {row[0]!r} "
            "(in another tab or window?); reload the page to see the saved answers"
        )
    raise AnswerConflict(f"answer {seq + 1} arrived before answer {seq} was saved; reload the page")


def undo_action(sid: str, seq: int, n_answers: int) -> bool:
    """Remove action ``seq`` (the last one) of ``sid`` in one transaction; ``False`` when
    it was already removed. Undoing a session's only action removes its row too (a draft
    again: no row without answers)."""
    with _connect() as con:
        cur = con.execute(
            "DELETE FROM answers WHERE session_id = ? AND seq = ? AND seq = "
            "(SELECT MAX(seq) FROM answers WHERE session_id = ?)",
            (sid, int(seq), sid),
        )
        if cur.rowcount:
            con.execute(
                "UPDATE sessions SET n_answers = ?, updated = ?, server = ? WHERE id = ?",
                (int(n_answers), time.time(), SERVER_ID, sid),
            )
            con.execute(
                "DELETE FROM sessions WHERE id = ? AND base = '[]' AND NOT EXISTS "
                "(SELECT 1 FROM answers WHERE session_id = ?)",
                (sid, sid),
            )
        return bool(cur.rowcount)


def set_summary(sid: str, n_answers: int, favourite: str) -> None:
    """The session's answer count and favourite (shown in the session list)."""
    with _connect() as con:
        con.execute(
            "UPDATE sessions SET n_answers = ?, favourite = ? WHERE id = ?",
            (int(n_answers), favourite, sid),
        )


def mark_served(sid: str) -> None:
    """Record that this server process now serves ``sid`` (see :data:`SERVER_ID`)."""
    with _connect() as con:
        con.execute("UPDATE sessions SET server = ? WHERE id = ?", (SERVER_ID, sid))


def set_participant(sid: str, name: str) -> None:
    """The (optional) participant name of a session, shown in its exports."""
    with _connect() as con:
        con.execute("UPDATE sessions SET participant = ? WHERE id = ?", (name.strip(), sid))


def save_session(sid: str, sess: ElicitationSession, favourite: str = "") -> None:
    """Write the session's whole action log (after its loaded table) and summary, in one
    transaction (for a session loaded from a file; answers go through
    :func:`record_action`)."""
    now = time.time()
    with _connect() as con:
        actions = sess.actions[_n_base(con, sid) :]
        con.execute("DELETE FROM answers WHERE session_id = ?", (sid,))
        con.executemany(
            "INSERT INTO answers (session_id, seq, action, created) VALUES (?, ?, ?, ?)",
            [(sid, k, a, now) for k, a in enumerate(actions)],
        )
        con.execute(
            "UPDATE sessions SET n_answers = ?, favourite = ?, updated = ?, server = ? "
            "WHERE id = ?",
            (sess.n_answers, favourite, now, SERVER_ID, sid),
        )


def load_session(sid: str) -> SessionRecord | None:
    """The stored session ``sid`` (``None`` when there is none)."""
    with _connect(write=False) as con:
        row = con.execute(f"SELECT {_COLS} FROM sessions WHERE id = ?", (sid,)).fetchone()
    return None if row is None else _record(row)


def list_sessions(limit: int = 100, *, owner: str | None = None) -> list[SessionRecord]:
    """Stored sessions of ``owner`` (every owner's when ``None``), most recently updated
    first."""
    where, args = ("WHERE owner = ?", [owner]) if owner is not None else ("", [])
    with _connect(write=False) as con:
        rows = con.execute(
            f"SELECT {_COLS} FROM sessions {where} ORDER BY updated DESC LIMIT ?",
            (*args, int(limit)),
        ).fetchall()
    return [_record(r) for r in rows]


def latest_session(
    config: tuple[str, str, str, int, int | None], *, owner: str | None = None
) -> SessionRecord | None:
    """The most recently updated session with this configuration (of ``owner`` if given)."""
    kind, source, method, seed, max_items = config
    mine, args = ("AND owner = ? ", [owner]) if owner is not None else ("", [])
    with _connect(write=False) as con:
        row = con.execute(
            f"SELECT {_COLS} FROM sessions WHERE kind = ? AND source = ? AND method = ? "
            f"AND seed = ? AND max_items IS ? {mine}ORDER BY updated DESC LIMIT 1",
            (kind, source, method, int(seed), max_items, *args),
        ).fetchone()
    return None if row is None else _record(row)


def answer_counts() -> pd.DataFrame:
    """Every stored action: ``session_id``, ``seq``, ``action`` (for audits and the load
    test)."""
    with _connect(write=False) as con:
        rows = con.execute("SELECT session_id, seq, action FROM answers ORDER BY 1, 2").fetchall()
    return pd.DataFrame(rows, columns=["session_id", "seq", "action"])


def delete_session(sid: str) -> None:
    """Remove a stored session."""
    with _connect() as con:
        con.execute("DELETE FROM answers WHERE session_id = ?", (sid,))
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
        "session": rec.id,
        "participant": rec.participant,
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


def import_json(text: str | bytes, *, owner: str = "") -> str:
    """Store a session exported by :func:`export_json` as a new session of ``owner``;
    returns its id.

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
    bad = [a for a in actions if a not in ACTIONS]
    if bad:
        raise ValueError(f"unknown actions {len(bad)} (expected A, B, tie or skip)")
    base = doc.get("base") or []
    participant = str(doc.get("participant") or "")[:80]
    rows = json.loads(pd.DataFrame.from_records(base).to_json(orient="records")) if base else []
    sid = new_session_id()
    now = time.time()
    with _connect() as con:  # one transaction: never a row without its answers
        _insert_session(con, sid, config, rows, owner, participant)
        con.executemany(
            "INSERT INTO answers (session_id, seq, action, created) VALUES (?, ?, ?, ?)",
            [(sid, k, a, now) for k, a in enumerate(actions)],
        )
        con.execute(
            "UPDATE sessions SET n_answers = ? WHERE id = ?",
            (len(base) + sum(a != "skip" for a in actions), sid),
        )
    return sid


# ----------------------------------------------------------------------------- settings
def get_setting(key: str, default: Any = None) -> Any:
    """A stored setting (JSON value)."""
    with _connect(write=False) as con:
        row = con.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return default if row is None else json.loads(row[0])


def set_setting(key: str, value: Any) -> None:
    """Store a setting (a JSON value; never a secret)."""
    with _connect() as con:
        con.execute(
            "INSERT INTO settings (key, value, updated) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated = excluded.updated",
            (key, json.dumps(value), time.time()),
        )


def delete_setting(key: str) -> None:
    """Remove a setting."""
    with _connect() as con:
        con.execute("DELETE FROM settings WHERE key = ?", (key,))


def _paths_key(owner: str) -> str:
    return f"data_paths:{owner}" if owner else "data_paths"


def stored_paths(owner: str = "") -> dict[str, str]:
    """Sidebar data paths ``owner`` saved in an earlier visit (each browser has its own)."""
    paths = get_setting(_paths_key(owner), {})
    return {str(k): str(v) for k, v in paths.items()} if isinstance(paths, dict) else {}


def store_paths(paths: dict[str, str], owner: str = "") -> None:
    """Save ``owner``'s sidebar data paths (empty entries dropped; none: no row kept)."""
    cleaned = {k: v.strip() for k, v in paths.items() if v and v.strip()}
    if cleaned:
        set_setting(_paths_key(owner), cleaned)
    else:
        delete_setting(_paths_key(owner))
