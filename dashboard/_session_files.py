"""Session files a visitor brings to the Live elicitation page, bounded before any work.

A session is replayed answer by answer, and every answer refits the model, so the cost of
opening a session grows with its length (the paper DT on Electricity: 200 answers 1.5 s,
500 answers 9 s; the linear-leaf tree 200 answers 43 s). A file (a JSON export, an
answers CSV) or a stored session therefore has to pass, in this order and before anything
is fitted or stored:

1. its size (:data:`MAX_FILE_BYTES`) and, for JSON, the nesting of its brackets (a
   non-recursive scan, :func:`data_loaders.limits.json_depth_over`);
2. its length: at most :data:`MAX_ANSWERS` rows and actions together (a CSV's lines are
   counted in its bytes before pandas reads it);
3. its configuration: a study this visitor may open or a 2-D benchmark, a query rule of
   the page, a seed in range and the item sample the page itself would use
   (``max_items``), so a file cannot ask for a session on 10^12 items;
4. its rows and actions, by replaying them into a fresh session (bounded by step 2): a row
   that names no item, a winner equal to its loser, an unknown action is refused with the
   row's number, and nothing is stored;
5. the replay's time: a session whose replay has not finished after :func:`replay_seconds`
   (8 s; ``$DTPBO_REPLAY_SECONDS``) is refused between two answers. Step 2 bounds the
   paper DT (200 answers in about 1.5 s), not the GP or the linear-leaf tree, whose 200
   answers took 17 s and 13-23 s on Electricity (``tests/benchmarks/session_replay.py``,
   2 cores at load 3-8).

:class:`SessionRefused` carries the one-sentence reason shown on the page.
"""

from __future__ import annotations

import io
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from data_loaders.limits import json_depth_over

__all__ = [
    "ACTIONS",
    "MAX_ANSWERS",
    "MAX_FILE_BYTES",
    "Checked",
    "SessionRefused",
    "check_answers_csv",
    "check_config",
    "check_json",
    "check_length",
    "replay",
    "replay_seconds",
]

#: Most rows (loaded answers) plus actions a session may hold: a person answering at a
#: demo gives tens; replaying 200 answers stays within a page's wait (docs/speed.md).
MAX_ANSWERS = 200
#: Largest session file accepted (a 200-answer export is well below 100 KB).
MAX_FILE_BYTES = 1 * 2**20
#: Deepest bracket nesting of a JSON session (an export is 4 deep).
MAX_JSON_DEPTH = 8
#: Largest seed (NumPy seeds are non-negative; the page offers 0, 1, ...).
MAX_SEED = 2**32 - 1
#: Seconds a session's replay may take (every answer refits the model); an operator
#: setting, ``$DTPBO_REPLAY_SECONDS``.
REPLAY_SECONDS = 8.0
#: The actions of a session's log.
ACTIONS = ("A", "B", "tie", "skip")
#: Longest text kept from a file's cells (ids, labels, the participant's name).
_MAX_CELL = 200


class SessionRefused(ValueError):
    """A session file or stored session that is not opened; the message is one sentence
    saying why (safe to show: it quotes no more than a row number and a limit)."""


def _kb(n: int) -> str:
    return f"{n / 1024:,.0f} KB"


def check_length(n_rows: int, n_actions: int = 0, what: str = "the file") -> None:
    """Refuse a session longer than :data:`MAX_ANSWERS` rows and actions together."""
    total = int(n_rows) + int(n_actions)
    if total > MAX_ANSWERS:
        raise SessionRefused(
            f"{what} holds {total:,} answers, more than {MAX_ANSWERS:,}, the most a "
            "session may hold here; nothing was loaded"
        )


def _check_size(blob: bytes) -> None:
    if len(blob) > MAX_FILE_BYTES:
        raise SessionRefused(
            f"the file is {_kb(len(blob))}, more than {_kb(MAX_FILE_BYTES)}, the largest "
            "session file accepted here; nothing was loaded"
        )


@dataclass(frozen=True)
class Checked:
    """A session file that passed the checks: its configuration, loaded rows, actions
    and participant (the file's other fields are not used)."""

    config: tuple[str, str, str, int, int | None]
    base: list[dict[str, Any]]
    actions: list[str]
    participant: str


def _scalar(v: Any) -> bool:
    if isinstance(v, str):
        return len(v) <= _MAX_CELL
    if isinstance(v, float):
        return math.isfinite(v)
    return v is None or isinstance(v, bool | int)


def check_config(
    config: Sequence[Any],
    *,
    studies: Sequence[str],
    functions: Sequence[str],
    methods: Sequence[str],
    page_max_items: Callable[[str], int | None],
) -> tuple[str, str, str, int, int | None]:
    """A session's ``(kind, source, method, seed, max_items)`` when the page could have
    made it: a study in ``studies`` (those this visitor may open) or a function in
    ``functions``, a method in ``methods``, a seed in ``0 .. MAX_SEED`` and the item sample
    the page uses for that study (``page_max_items(source)``; none for a benchmark)."""
    try:
        kind, source, method, seed, max_items = config
    except (TypeError, ValueError):
        raise SessionRefused("the session's configuration is incomplete") from None
    kind, source, method = str(kind), str(source), str(method)
    if kind == "items":
        if source not in studies:
            raise SessionRefused("the session's study is not available here")
    elif kind == "benchmark":
        if source not in functions:
            raise SessionRefused("the session's function is not available here")
    else:
        raise SessionRefused("the session is neither on a study's items nor a benchmark")
    if method not in methods:
        raise SessionRefused("the session's query rule is not offered here")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise SessionRefused(f"the session's seed must be a whole number from 0 to {MAX_SEED}")
    wanted = page_max_items(source) if kind == "items" else None
    if max_items is not None and (isinstance(max_items, bool) or not isinstance(max_items, int)):
        raise SessionRefused("the session's item sample (max_items) is not a whole number")
    if max_items != wanted:
        shown = "all items" if wanted is None else f"{wanted}"
        raise SessionRefused(
            f"the session's item sample (max_items) must be {shown} for this "
            f"{'study' if kind == 'items' else 'function'}, as the page uses"
        )
    return kind, source, method, int(seed), max_items


def check_json(blob: bytes, **config_rules: Any) -> Checked:
    """Bound, parse and check an exported session (see the module docstring, steps 1-3);
    ``config_rules`` are :func:`check_config`'s keyword arguments."""
    _check_size(blob)
    if json_depth_over(blob, MAX_JSON_DEPTH):
        raise SessionRefused(
            f"the file nests deeper than {MAX_JSON_DEPTH} levels, which no session export "
            "does; nothing was loaded"
        )
    try:
        doc = json.loads(blob.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise SessionRefused("the file is not JSON text; nothing was loaded") from None
    if not isinstance(doc, dict) or doc.get("format") != "dtpbo-elicitation-session":
        raise SessionRefused("the file is not an elicitation session exported by this dashboard")
    base, actions = doc.get("base") or [], doc.get("actions") or []
    if not isinstance(base, list) or not isinstance(actions, list):
        raise SessionRefused("the file's answers are not lists")
    check_length(len(base), len(actions))
    cfg = doc.get("config")
    if not isinstance(cfg, dict):
        raise SessionRefused("the session's configuration is missing")
    config = check_config(
        [cfg.get(k) for k in ("kind", "source", "method", "seed", "max_items")], **config_rules
    )
    for k, row in enumerate(base, start=1):
        if not isinstance(row, dict) or not all(
            isinstance(c, str) and len(c) <= _MAX_CELL and _scalar(v) for c, v in row.items()
        ):
            raise SessionRefused(f"loaded answer {k} is not a row of plain values")
    for k, a in enumerate(actions, start=1):
        if a not in ACTIONS:
            raise SessionRefused(f"action {k} is not one of A, B, tie or skip")
    participant = doc.get("participant") or ""
    return Checked(config, base, [str(a) for a in actions], str(participant)[:80])


def check_answers_csv(blob: bytes) -> pd.DataFrame:
    """Bound an answers CSV (size, then lines counted in its bytes) before pandas reads
    it; the table (its rows are checked by replaying them)."""
    _check_size(blob)
    lines = blob.count(b"\n") + (0 if blob.endswith(b"\n") else 1)
    check_length(max(lines - 1, 0))
    try:
        return pd.read_csv(io.BytesIO(blob))
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError):
        raise SessionRefused("the file is not a CSV table of answers") from None


def replay_seconds() -> float:
    """Seconds a replay may take: ``$DTPBO_REPLAY_SECONDS`` (a positive number), else
    :data:`REPLAY_SECONDS`."""
    try:
        value = float(os.environ.get("DTPBO_REPLAY_SECONDS", ""))
    except ValueError:
        return REPLAY_SECONDS
    return value if math.isfinite(value) and value > 0 else REPLAY_SECONDS


def replay(
    sess: Any,
    base: Sequence[dict[str, Any]] | pd.DataFrame,
    actions: Sequence[str],
    what: str = "the file",
) -> Any:
    """``sess`` (fresh) brought to ``base`` (loaded answers: rows or a table) +
    ``actions``, after :func:`check_length`; a row or action that cannot be replayed, or a
    replay still running after :func:`replay_seconds`, raises :class:`SessionRefused`
    (nothing is kept)."""
    check_length(len(base), len(actions), what)
    budget = replay_seconds()
    deadline = time.monotonic() + budget
    total = len(base) + len(actions)
    done = 0

    def too_slow() -> SessionRefused:
        return SessionRefused(
            f"{what} takes longer than {budget:g} s to open here ({done} of {total} answers "
            "replayed, every answer refits the model); nothing was loaded"
        )

    try:
        if len(base):
            table = base if isinstance(base, pd.DataFrame) else pd.DataFrame.from_records(base)
            try:
                sess.replay(table, deadline=deadline)
            except TimeoutError as exc:
                done = int(getattr(exc, "done", 0))
                raise too_slow() from None
            done = len(base)
        for a in actions:
            if time.monotonic() > deadline:
                raise too_slow()
            sess.apply(a)
            done += 1
    except SessionRefused:
        raise
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise SessionRefused(f"{what} cannot be replayed here ({_short(exc)})") from None
    return sess


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:199] + "…"
