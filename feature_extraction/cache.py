"""SQLite cache of LLM extractions and per-call statistics.

One row per extraction, keyed by ``(message id, hash of text, hash of spec, model,
prompt version)``: a rerun only asks for what is missing, a changed text, spec, model or
prompt template asks again. Every row is committed as soon as it is written (WAL
journal), so results survive a crash or a killed run.

Tables
------
``extractions``
    key columns, ``status`` (``ok`` | ``invalid`` | ``error``), ``values_json``, ``error``
    (reason of a failure), ``raw`` (last answer text), ``attempts``, total ``latency_s``
    and token counts, ``response_format``, ``created_at``.
``calls``
    every HTTP request: ``kind`` (``extract``, ``reason``, ``propose``), key of the item
    or request, latency, outcome, tokens. Extraction requests are logged *before* they are
    sent (outcome ``sent``) and completed when they end, so a request killed in flight
    still counts (:meth:`ExtractionCache.call_log`). :meth:`ExtractionCache.stats`
    summarises the table in the style of DT-PBO Table 4 (mean ± sd latency, tokens).
``completions``
    free-text answers of the feature-proposal steps, keyed by a request hash.
``meta``
    small key/value facts (e.g. the structured-output mode a server supports).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from feature_extraction.client import CallRecord

#: Outcome of a logged request that has not ended (in flight, or its process was killed).
SENT = "sent"

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS extractions (
    message_id TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    status TEXT NOT NULL,
    values_json TEXT,
    error TEXT,
    raw TEXT,
    attempts INTEGER,
    latency_s REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    response_format TEXT,
    created_at TEXT,
    PRIMARY KEY (message_id, text_hash, spec_hash, model, prompt_version)
);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    key TEXT,
    model TEXT,
    latency_s REAL,
    outcome TEXT,
    status_code INTEGER,
    response_format TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created_at TEXT
);
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    kind TEXT,
    model TEXT,
    content TEXT,
    latency_s REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created_at TEXT
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


def default_cache_path() -> Path:
    """Default cache file.

    ``$DTPBO_LLM_CACHE`` if set, else ``llm_cache.sqlite`` in the data folder
    (``$DTPBO_DATA_HOME``, default ``~/.cache/dtpbo``: the rule of
    :func:`data_loaders.access.data_home`, which this package may not import), the one
    folder a page may write below, so the default is a path a typed one could be too.
    """
    env = os.environ.get("DTPBO_LLM_CACHE")
    if env:
        return Path(env).expanduser()
    home = os.environ.get("DTPBO_DATA_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".cache" / "dtpbo"
    return base / "llm_cache.sqlite"


def completion_key(model: str, kind: str, version: str, messages: Sequence[Any]) -> str:
    """Key of a cached completion: a hash of the model, request kind, prompt version and
    the chat messages (the same question to the same model is answered once)."""
    blob = json.dumps([model, kind, version, list(messages)], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class CacheKey:
    """Key of one cached extraction."""

    message_id: str
    text_hash: str
    spec_hash: str
    model: str
    prompt_version: str

    def as_tuple(self) -> tuple[str, str, str, str, str]:
        """Values in column order."""
        return (self.message_id, self.text_hash, self.spec_hash, self.model, self.prompt_version)

    def __str__(self) -> str:
        return "|".join(self.as_tuple())


@dataclass
class CachedExtraction:
    """One row of the ``extractions`` table."""

    key: CacheKey
    status: str
    values: dict[str, Any] | None
    error: str | None
    raw: str | None
    attempts: int
    latency_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    response_format: str | None
    created_at: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ExtractionCache:
    """SQLite cache (WAL journal, one commit per write).

    Parameters
    ----------
    path
        Database file (parent folders are created); ``":memory:"`` for a throw-away cache.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._con = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        with self._lock:
            if self.path != ":memory:":
                self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("PRAGMA synchronous=NORMAL")
            self._con.executescript(_SCHEMA_SQL)
            self._con.commit()

    def __repr__(self) -> str:
        return f"ExtractionCache({self.path!r})"

    def __enter__(self) -> ExtractionCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._con.close()

    # ------------------------------------------------------------------ extractions
    def get(self, key: CacheKey) -> CachedExtraction | None:
        """The cached row for ``key`` or ``None``."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[CacheKey]) -> dict[CacheKey, CachedExtraction]:
        """Cached rows for the keys that have one."""
        keys = list(keys)
        out: dict[CacheKey, CachedExtraction] = {}
        with self._lock:
            for k in keys:
                row = self._con.execute(
                    "SELECT status, values_json, error, raw, attempts, latency_s, prompt_tokens,"
                    " completion_tokens, response_format, created_at FROM extractions WHERE"
                    " message_id=? AND text_hash=? AND spec_hash=? AND model=? AND"
                    " prompt_version=?",
                    k.as_tuple(),
                ).fetchone()
                if row is None:
                    continue
                out[k] = CachedExtraction(
                    key=k,
                    status=row[0],
                    values=json.loads(row[1]) if row[1] is not None else None,
                    error=row[2],
                    raw=row[3],
                    attempts=int(row[4] or 0),
                    latency_s=float(row[5] or 0.0),
                    prompt_tokens=row[6],
                    completion_tokens=row[7],
                    response_format=row[8],
                    created_at=row[9],
                )
        return out

    def put(
        self,
        key: CacheKey,
        *,
        status: str,
        values: dict[str, Any] | None = None,
        error: str | None = None,
        raw: str | None = None,
        attempts: int = 0,
        latency_s: float = 0.0,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        response_format: str | None = None,
        calls: Sequence[CallRecord] = (),
    ) -> None:
        """Insert or replace the row for ``key`` and log its calls; commits at once."""
        if status not in ("ok", "invalid", "error"):
            raise ValueError(f"status must be ok, invalid or error, got {status!r}")
        with self._lock:
            self._con.execute(
                "INSERT OR REPLACE INTO extractions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    *key.as_tuple(),
                    status,
                    json.dumps(values) if values is not None else None,
                    error,
                    raw,
                    attempts,
                    latency_s,
                    prompt_tokens,
                    completion_tokens,
                    response_format,
                    _now(),
                ),
            )
            self._insert_calls(calls, str(key), key.model)
            self._con.commit()

    def _insert_calls(self, calls: Sequence[CallRecord], key: str, model: str) -> None:
        calls = [c for c in calls if c.log_id is None]  # the others are logged already
        now = _now()
        self._con.executemany(
            "INSERT INTO calls (kind, key, model, latency_s, outcome, status_code,"
            " response_format, prompt_tokens, completion_tokens, created_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    c.kind,
                    key,
                    model,
                    c.latency_s,
                    c.outcome,
                    c.status_code,
                    c.response_format,
                    c.prompt_tokens,
                    c.completion_tokens,
                    now,
                )
                for c in calls
            ],
        )

    def start_call(self, kind: str, *, key: str, model: str, response_format: str = "") -> int:
        """Log a request before it is sent (outcome ``sent``); return its row id."""
        with self._lock:
            cur = self._con.execute(
                "INSERT INTO calls (kind, key, model, outcome, response_format, created_at)"
                " VALUES (?,?,?,?,?,?)",
                (kind, key, model, SENT, response_format, _now()),
            )
            self._con.commit()
            return int(cur.lastrowid)

    def finish_call(self, log_id: int, record: CallRecord) -> None:
        """Complete the row of :meth:`start_call` with the request's outcome."""
        with self._lock:
            self._con.execute(
                "UPDATE calls SET latency_s=?, outcome=?, status_code=?, response_format=?,"
                " prompt_tokens=?, completion_tokens=? WHERE id=?",
                (
                    record.latency_s,
                    record.outcome,
                    record.status_code,
                    record.response_format,
                    record.prompt_tokens,
                    record.completion_tokens,
                    log_id,
                ),
            )
            self._con.commit()

    def call_log(self, key: str, model: str) -> CacheCallLog:
        """A :class:`feature_extraction.client.CallLog` writing to this cache's call table."""
        return CacheCallLog(self, key, model)

    def extractions(
        self, *, model: str | None = None, spec_hash: str | None = None
    ) -> pd.DataFrame:
        """All extraction rows (optionally of one model/spec) as a table."""
        q = "SELECT * FROM extractions"
        cond, args = [], []
        if model is not None:
            cond.append("model=?")
            args.append(model)
        if spec_hash is not None:
            cond.append("spec_hash=?")
            args.append(spec_hash)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        with self._lock:
            return pd.read_sql_query(q, self._con, params=args)

    def calls(self, *, kind: str | None = None, model: str | None = None) -> pd.DataFrame:
        """Logged HTTP calls as a table."""
        q = "SELECT * FROM calls"
        cond, args = [], []
        if kind is not None:
            cond.append("kind=?")
            args.append(kind)
        if model is not None:
            cond.append("model=?")
            args.append(model)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        with self._lock:
            return pd.read_sql_query(q + " ORDER BY id", self._con, params=args)

    # ------------------------------------------------------------------ completions
    def get_completion(self, key: str) -> str | None:
        """Cached free-text answer for a request hash."""
        with self._lock:
            row = self._con.execute(
                "SELECT content FROM completions WHERE key=?", (key,)
            ).fetchone()
        return None if row is None else row[0]

    def put_completion(
        self, key: str, *, kind: str, model: str, content: str, calls: Sequence[CallRecord] = ()
    ) -> None:
        """Store a free-text answer (and log its calls)."""
        last = calls[-1] if calls else None
        with self._lock:
            self._con.execute(
                "INSERT OR REPLACE INTO completions VALUES (?,?,?,?,?,?,?,?)",
                (
                    key,
                    kind,
                    model,
                    content,
                    last.latency_s if last else None,
                    last.prompt_tokens if last else None,
                    last.completion_tokens if last else None,
                    _now(),
                ),
            )
            self._insert_calls(calls, key, model)
            self._con.commit()

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str) -> str | None:
        """A stored fact or ``None``."""
        with self._lock:
            row = self._con.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        """Store a fact."""
        with self._lock:
            self._con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            self._con.commit()

    # ------------------------------------------------------------------ statistics
    def stats(self, *, model: str | None = None) -> pd.DataFrame:
        """Table 4-style running-time statistics.

        One row per (model, kind) of successful calls, plus one ``extraction (per item)``
        row per model summing all calls of an item (validation retries included).

        Columns: ``model``, ``kind``, ``n``, ``latency_mean_s``, ``latency_sd_s``,
        ``prompt_tokens_mean``, ``completion_tokens_mean``, ``tokens_total``,
        ``failed_calls`` (requests that did not answer, unfinished ones included),
        ``unfinished_calls`` (logged as sent but never ended: in flight, or killed) and,
        on the per-item row, ``invalid_items`` / ``error_items`` (extraction rows whose
        answers stayed invalid / whose requests failed; 0 on call rows).
        """
        calls = self.calls(model=model)
        rows: list[dict[str, Any]] = []
        if calls.empty:
            return pd.DataFrame(columns=_STATS_COLUMNS)
        for (m, kind), g in calls.groupby(["model", "kind"], sort=True):
            ok = g[g["outcome"] == "ok"]
            rows.append(
                _summary(
                    m,
                    f"{kind} call",
                    ok,
                    n_failed=int((g["outcome"] != "ok").sum()),
                    n_unfinished=int((g["outcome"] == SENT).sum()),
                )
            )
        with self._lock:
            status = pd.read_sql_query(
                "SELECT model, status, COUNT(*) AS n FROM extractions GROUP BY model, status",
                self._con,
            )
        if model is not None:
            status = status[status["model"] == model]
        ext = calls[(calls["kind"] == "extract") & (calls["outcome"] == "ok")]
        per_item = ext.groupby(["model", "key"], sort=True).agg(
            latency_s=("latency_s", "sum"),
            prompt_tokens=("prompt_tokens", "sum"),
            completion_tokens=("completion_tokens", "sum"),
        )
        for m in sorted(set(ext["model"]) | set(status["model"])):
            g = per_item.xs(m, level="model") if m in set(ext["model"]) else per_item.iloc[:0]
            counts = status[status["model"] == m].set_index("status")["n"]
            rows.append(
                _summary(
                    m,
                    "extraction (per item)",
                    g.reset_index(),
                    n_failed=0,
                    n_invalid=int(counts.get("invalid", 0)),
                    n_error=int(counts.get("error", 0)),
                )
            )
        return pd.DataFrame(rows, columns=_STATS_COLUMNS)


class CacheCallLog:
    """Call log of one item (see :meth:`ExtractionCache.call_log`)."""

    def __init__(self, cache: ExtractionCache, key: str, model: str) -> None:
        self.cache, self.key, self.model = cache, key, model

    def start(self, kind: str, response_format: str) -> int | None:
        """Log a request about to be sent."""
        return self.cache.start_call(
            kind, key=self.key, model=self.model, response_format=response_format
        )

    def finish(self, log_id: int | None, record: CallRecord) -> None:
        """Complete the entry with the request's outcome."""
        if log_id is not None:
            self.cache.finish_call(log_id, record)


_STATS_COLUMNS = [
    "model",
    "kind",
    "n",
    "latency_mean_s",
    "latency_sd_s",
    "prompt_tokens_mean",
    "completion_tokens_mean",
    "tokens_total",
    "failed_calls",
    "unfinished_calls",
    "invalid_items",
    "error_items",
]


def _summary(
    model: str,
    kind: str,
    g: pd.DataFrame,
    *,
    n_failed: int,
    n_unfinished: int = 0,
    n_invalid: int = 0,
    n_error: int = 0,
) -> dict[str, Any]:
    lat = g["latency_s"].to_numpy(dtype=float)
    pt = pd.to_numeric(g["prompt_tokens"], errors="coerce").to_numpy(dtype=float)
    ct = pd.to_numeric(g["completion_tokens"], errors="coerce").to_numpy(dtype=float)

    def _mean(a: np.ndarray) -> float:
        a = a[np.isfinite(a)]
        return float(a.mean()) if len(a) else float("nan")

    return {
        "model": model,
        "kind": kind,
        "n": len(g),
        "latency_mean_s": float(lat.mean()) if len(lat) else float("nan"),
        "latency_sd_s": float(lat.std(ddof=1)) if len(lat) > 1 else float("nan"),
        "prompt_tokens_mean": _mean(pt),
        "completion_tokens_mean": _mean(ct),
        "tokens_total": int(np.nansum(pt) + np.nansum(ct)),
        "failed_calls": n_failed,
        "unfinished_calls": n_unfinished,
        "invalid_items": n_invalid,
        "error_items": n_error,
    }


def format_stats(stats: pd.DataFrame) -> str:
    """Plain-text rendering of :meth:`ExtractionCache.stats` ("0.323 ± 0.050 s")."""
    if stats.empty:
        return "no calls recorded"
    lines = []
    for r in stats.itertuples(index=False):
        sd = "" if np.isnan(r.latency_sd_s) else f" ± {r.latency_sd_s:.3f}"
        tok = (
            ""
            if np.isnan(r.prompt_tokens_mean)
            else f", tokens/call {r.prompt_tokens_mean:.0f} in + {r.completion_tokens_mean:.0f} out"
        )
        if r.kind == "extraction (per item)":
            failed = (
                f"failed items {r.invalid_items + r.error_items} "
                f"({r.invalid_items} invalid, {r.error_items} error)"
            )
        else:
            failed = f"failed calls {r.failed_calls}"
            if r.unfinished_calls:
                failed += f" ({r.unfinished_calls} unfinished: in flight or killed)"
        lat = "n/a" if np.isnan(r.latency_mean_s) else f"{r.latency_mean_s:.3f}{sd} s"
        lines.append(
            f"{r.model:<24} {r.kind:<24} n={r.n:<5} latency {lat}"
            f"{tok}, total tokens {r.tokens_total}, {failed}"
        )
    return "\n".join(lines)
