"""Extract spec features from item texts with an OpenAI-compatible LLM.

For every item the LLM gets the spec's prompt (:func:`feature_extraction.spec.build_messages`)
and answers one JSON object. The answer is parsed and validated against the spec; an
invalid answer is re-asked with the validation errors fed back
(``config.max_validation_retries`` times) and then recorded as ``invalid`` with the
reason. Transport failures that outlast the retries are recorded as ``error``. Nothing
is coerced: a row is either spec-valid or a failure with a reason.

With a cache (:class:`feature_extraction.cache.ExtractionCache`) every result is
committed as soon as it arrives; a rerun asks only for items without a row (and, by
default, re-asks transport ``error`` rows; ``retry_failed=True`` re-asks ``invalid`` rows
too).

The extracted table (:meth:`ExtractionResult.table`, :func:`save_table`) has one row per
item: ``message_id``, ``status``, ``error`` and one column per feature (multi-hot values
as lists in memory and ``;``-joined strings in CSV files).
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import pandas as pd

from feature_extraction.cache import CacheKey, ExtractionCache
from feature_extraction.client import CallRecord, LLMClient, LLMConfig, LLMRequestError
from feature_extraction.spec import (
    PROMPT_VERSION,
    AnswerValidationError,
    Spec,
    build_messages,
    feedback_message,
    text_hash,
)
from pbo_core.data import DataValidationError, split_multi_hot

log = logging.getLogger(__name__)

Status = Literal["ok", "invalid", "error"]

#: ``progress(done, total, record)``: called after every requested item.
ProgressCallback = Callable[[int, int, "ExtractionRecord"], None]


@dataclass
class ExtractionRecord:
    """Outcome of the extraction of one item.

    Attributes
    ----------
    message_id
        Item id.
    status
        ``"ok"`` (``values`` is spec-valid), ``"invalid"`` (the model kept answering
        invalid JSON/values) or ``"error"`` (the request failed).
    values
        ``{feature: value}`` when ``status == "ok"``, else ``None``.
    error
        Reason of a failure (validation errors or the request error).
    raw
        Text of the last answer.
    attempts
        Answers requested (1 + validation retries used).
    latency_s, prompt_tokens, completion_tokens
        Totals over the successful HTTP calls of this item.
    response_format
        Structured-output mode of the last answer.
    cached
        True when the record came from the cache.
    calls
        The HTTP calls made for this item in this run.
    """

    message_id: str
    status: Status
    values: dict[str, Any] | None = None
    error: str | None = None
    raw: str | None = None
    attempts: int = 0
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    response_format: str | None = None
    cached: bool = False
    calls: list[CallRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True for a spec-valid row."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation."""
        d = asdict(self)
        d["calls"] = [c.to_dict() for c in self.calls]
        return d


@dataclass
class ExtractionResult:
    """All records of one extraction run.

    Attributes
    ----------
    spec
        The spec the features were extracted with.
    records
        One record per item, in input order.
    n_requested
        Items sent to the LLM in this run (the rest came from the cache).
    model
        Model name.
    """

    spec: Spec
    records: list[ExtractionRecord]
    n_requested: int
    model: str

    @property
    def n_cached(self) -> int:
        """Items answered from the cache."""
        return sum(r.cached for r in self.records)

    @property
    def n_ok(self) -> int:
        """Items with a spec-valid row."""
        return sum(r.ok for r in self.records)

    def counts(self) -> dict[str, int]:
        """Numbers of ok / invalid / error records, requested and cached items."""
        out = {"ok": 0, "invalid": 0, "error": 0}
        for r in self.records:
            out[r.status] += 1
        out["requested"] = self.n_requested
        out["cached"] = self.n_cached
        return out

    def table(self, *, include_failed: bool = True) -> pd.DataFrame:
        """The extracted table: ``message_id``, ``status``, ``error`` and the features."""
        rows = []
        for r in self.records:
            if not include_failed and not r.ok:
                continue
            row: dict[str, Any] = {"message_id": r.message_id, "status": r.status, "error": r.error}
            for name in self.spec.names:
                row[name] = (r.values or {}).get(name) if r.ok else None
            rows.append(row)
        return pd.DataFrame(rows, columns=["message_id", "status", "error", *self.spec.names])

    def failures(self) -> pd.DataFrame:
        """Failed items with their status and reason."""
        t = self.table()
        return t.loc[t["status"] != "ok", ["message_id", "status", "error"]].reset_index(drop=True)


# ---------------------------------------------------------------------- items
def as_items(
    items: pd.DataFrame | Mapping[str, str] | Iterable[tuple[str, str]],
) -> list[tuple[str, str]]:
    """``[(message_id, text), ...]`` from a table (columns ``message_id``, ``text``), a
    mapping or pairs. Ids must be unique and texts non-empty strings."""
    if isinstance(items, pd.DataFrame):
        missing = {"message_id", "text"} - set(items.columns)
        if missing:
            raise ValueError(f"items table lacks column(s) {sorted(missing)}")
        pairs = list(zip(items["message_id"].astype(str), items["text"], strict=True))
    elif isinstance(items, Mapping):
        pairs = [(str(k), v) for k, v in items.items()]
    else:
        pairs = [(str(k), v) for k, v in items]
    seen: set[str] = set()
    for mid, text in pairs:
        if mid in seen:
            raise ValueError(f"duplicate message id {mid!r}")
        seen.add(mid)
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"message {mid!r}: text must be a non-empty string")
    return pairs


# ---------------------------------------------------------------------- extraction
class Extractor:
    """Extract a spec's features from texts (async; see :func:`extract_features`).

    Parameters
    ----------
    spec
        Features to extract.
    config
        LLM settings.
    cache
        Optional cache; results are written to it as they arrive.
    client
        Optional client to reuse (e.g. across proposal rounds); created otherwise.
    """

    def __init__(
        self,
        spec: Spec,
        config: LLMConfig,
        *,
        cache: ExtractionCache | None = None,
        client: LLMClient | None = None,
    ) -> None:
        self.spec = spec
        self.config = config
        self.cache = cache
        self._client = client
        self.spec_hash = spec.spec_hash()
        self.json_schema = spec.answer_json_schema()
        self._stored_mode: str | None = None

    def key(self, message_id: str, text: str) -> CacheKey:
        """Cache key of one item."""
        return CacheKey(
            message_id, text_hash(text), self.spec_hash, self.config.model, PROMPT_VERSION
        )

    def _mode_key(self) -> str:
        return f"response_format|{self.config.base_url}|{self.config.model}"

    def _remember_format(self, client: LLMClient) -> None:
        """Store the negotiated format as soon as an answer confirms it (a killed run keeps
        it); a format reached only by rejections, with no answer yet, is not stored."""
        mode = client.negotiated
        if (
            not client.confirmed
            or self.cache is None
            or self.config.response_format != "auto"
            or mode == "auto"
            or mode == self._stored_mode
        ):
            return
        self.cache.set_meta(self._mode_key(), mode)
        self._stored_mode = mode

    async def run(
        self,
        items: pd.DataFrame | Mapping[str, str] | Iterable[tuple[str, str]],
        *,
        progress: ProgressCallback | None = None,
        retry_failed: bool = False,
    ) -> ExtractionResult:
        """Extract all items; return records in input order."""
        pairs = as_items(items)
        keys = [self.key(mid, text) for mid, text in pairs]
        cached = self.cache.get_many(keys) if self.cache is not None else {}
        records: dict[str, ExtractionRecord] = {}
        todo: list[tuple[str, str, CacheKey]] = []
        for (mid, text), k in zip(pairs, keys, strict=True):
            c = cached.get(k)
            if c is not None and (c.status == "ok" or (c.status == "invalid" and not retry_failed)):
                records[mid] = ExtractionRecord(
                    mid,
                    c.status,  # type: ignore[arg-type]
                    c.values,
                    c.error,
                    c.raw,
                    c.attempts,
                    c.latency_s,
                    c.prompt_tokens,
                    c.completion_tokens,
                    c.response_format,
                    cached=True,
                )
            else:
                todo.append((mid, text, k))
        if todo:
            log.info(
                "extracting %d item(s) with %s (%d from cache)",
                len(todo),
                self.config.model,
                len(pairs) - len(todo),
            )
            client = self._client
            own = client is None
            if client is None:
                mode = None
                if self.cache is not None and self.config.response_format == "auto":
                    mode = self.cache.get_meta(self._mode_key())
                    self._stored_mode = mode
                client = LLMClient(self.config, response_mode=mode)
            try:
                done = 0
                tasks = [asyncio.ensure_future(self._one(client, *t)) for t in todo]
                try:
                    for fut in asyncio.as_completed(tasks):
                        rec = await fut
                        records[rec.message_id] = rec
                        done += 1
                        if progress is not None:
                            progress(done, len(todo), rec)
                finally:
                    for t in tasks:
                        t.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                self._remember_format(client)
            finally:
                if own:
                    await client.aclose()
        return ExtractionResult(
            self.spec, [records[mid] for mid, _ in pairs], len(todo), self.config.model
        )

    async def _one(self, client: LLMClient, mid: str, text: str, key: CacheKey) -> ExtractionRecord:
        messages = build_messages(self.spec, text)
        calls: list[CallRecord] = []
        rec = ExtractionRecord(mid, "error")
        n_answers = 1 + int(self.config.max_validation_retries)
        call_log = self.cache.call_log(str(key), key.model) if self.cache is not None else None
        for attempt in range(n_answers):
            try:
                res = await client.chat(
                    messages,
                    json_schema=self.json_schema,
                    name="features",
                    kind="extract",
                    call_log=call_log,
                )
            except LLMRequestError as e:
                calls.extend(e.calls)
                rec.status, rec.error = "error", e.reason
                break
            calls.extend(res.calls)
            self._remember_format(client)
            rec.attempts = attempt + 1
            rec.raw = res.content
            rec.response_format = res.response_format
            try:
                rec.values = self.spec.parse_answer(res.content)
            except AnswerValidationError as e:
                rec.status = "invalid"
                rec.error = f"invalid answer after {attempt + 1} attempt(s): " + "; ".join(e.errors)
                log.info("message %s: invalid answer (%s)", mid, "; ".join(e.errors))
                messages = [
                    *messages,
                    {"role": "assistant", "content": res.content or ""},
                    {"role": "user", "content": feedback_message(e.errors)},
                ]
                continue
            rec.status, rec.error = "ok", None
            break
        # The client already redacts answers; this also covers texts built from them.
        rec.raw, rec.error = self.config.redact(rec.raw), self.config.redact(rec.error)
        ok_calls = [c for c in calls if c.outcome == "ok"]
        rec.calls = calls
        rec.latency_s = sum(c.latency_s for c in ok_calls)
        rec.prompt_tokens = _sum_or_none(c.prompt_tokens for c in ok_calls)
        rec.completion_tokens = _sum_or_none(c.completion_tokens for c in ok_calls)
        if self.cache is not None:
            self.cache.put(
                key,
                status=rec.status,
                values=rec.values,
                error=rec.error,
                raw=rec.raw,
                attempts=rec.attempts,
                latency_s=rec.latency_s,
                prompt_tokens=rec.prompt_tokens,
                completion_tokens=rec.completion_tokens,
                response_format=rec.response_format,
                calls=calls,
            )
        return rec


def _sum_or_none(values: Iterable[int | None]) -> int | None:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


async def extract_features_async(
    items: pd.DataFrame | Mapping[str, str] | Iterable[tuple[str, str]],
    spec: Spec,
    config: LLMConfig,
    *,
    cache: ExtractionCache | None = None,
    client: LLMClient | None = None,
    progress: ProgressCallback | None = None,
    retry_failed: bool = False,
) -> ExtractionResult:
    """Async version of :func:`extract_features`."""
    ex = Extractor(spec, config, cache=cache, client=client)
    return await ex.run(items, progress=progress, retry_failed=retry_failed)


def extract_features(
    items: pd.DataFrame | Mapping[str, str] | Iterable[tuple[str, str]],
    spec: Spec,
    config: LLMConfig,
    *,
    cache: ExtractionCache | None = None,
    progress: ProgressCallback | None = None,
    retry_failed: bool = False,
) -> ExtractionResult:
    """Extract ``spec``'s features from every item's text.

    Parameters
    ----------
    items
        Table with columns ``message_id`` and ``text``, a ``{id: text}`` mapping or
        ``(id, text)`` pairs.
    spec
        Features to extract.
    config
        LLM settings (:meth:`LLMConfig.from_env` reads them from the environment).
    cache
        Optional SQLite cache: results are committed as they arrive and reused.
    progress
        ``progress(done, total, record)`` after each requested item (drives a progress
        bar in the CLI or the dashboard).
    retry_failed
        Re-ask items cached as ``invalid`` (transport ``error`` rows are always re-asked).

    Returns
    -------
    ExtractionResult
        One record per item; failures carry their reason.

    Notes
    -----
    Runs its own event loop; inside a running loop (e.g. Jupyter) it runs in a worker
    thread. Use :func:`extract_features_async` from async code.
    """
    coro_args = (items, spec, config)
    kwargs = {"cache": cache, "progress": progress, "retry_failed": retry_failed}
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(extract_features_async(*coro_args, **kwargs))
    box: dict[str, Any] = {}

    def _target() -> None:
        try:
            box["result"] = asyncio.run(extract_features_async(*coro_args, **kwargs))
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=_target, name="feature-extraction")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


# ---------------------------------------------------------------------- tables on disk
def _cell_out(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return ";".join(str(x) for x in v)
    return v


def save_table(table: pd.DataFrame, path: str | Path) -> Path:
    """Write an extracted table as CSV, JSON (records) or Parquet, by suffix.

    Multi-hot lists become ``;``-joined strings in CSV/Parquet and stay lists in JSON.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix == ".json":
        recs = json.loads(table.to_json(orient="records"))
        path.write_text(json.dumps(recs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    elif suffix in (".parquet", ".pq"):
        table.map(_cell_out).to_parquet(path, index=False)
    else:
        table.map(_cell_out).to_csv(path, index=False)
    return path


def _csv_record_lines(text: str) -> list[int]:
    """The physical line (header = line 1) on which each CSV record starts.

    Blank lines are skipped, as :func:`pandas.read_csv` skips them, and a quoted field
    spanning several lines moves the next record's number on by as many lines.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    lines: list[int] = []
    prev = 0
    for row in reader:
        if row and prev:
            lines.append(prev + 1)
        prev = reader.line_num
    return lines


def _table_rows(table: pd.DataFrame, suffix: str, text: str | None) -> tuple[list[int], str]:
    """Labels of the rows of a read table for messages, and what they count."""
    if text is not None:
        lines = _csv_record_lines(text)
        if len(lines) == len(table):
            return lines, "line"
    if suffix == ".json":
        return list(range(1, len(table) + 1)), "record"
    if suffix in (".parquet", ".pq"):
        return list(range(1, len(table) + 1)), "row"
    return list(range(2, len(table) + 2)), "line"


def check_unique_message_ids(
    table: pd.DataFrame, label: str, rows: Sequence[int], unit: str
) -> None:
    """Raise ``DataValidationError`` naming both rows when a ``message_id`` repeats.

    ``rows`` labels the table's rows as the error should (file lines, records, rows) and
    ``unit`` says what they count.
    """
    ids = table["message_id"]
    dup = ids.duplicated().to_numpy()
    if dup.any():
        i = int(dup.argmax())
        mid = ids.iloc[i]
        first = int(ids.eq(mid).to_numpy().argmax())
        raise DataValidationError(
            f"{label}, {unit} {rows[i]}, column 'message_id': {mid!r} repeats {unit} "
            f"{rows[first]} (one row per message; which one is meant?)"
        )


def _check_feature_cells(
    table: pd.DataFrame, spec: Spec, name: str, rows: list[int], unit: str
) -> None:
    """Cells of usable rows (status ``ok`` or no status column) must satisfy the spec."""
    ok = (
        table["status"].astype(str).eq("ok").to_numpy()
        if "status" in table.columns
        else [True] * len(table)
    )
    for f in spec.features:
        if f.name not in table.columns:
            continue
        for i, v in enumerate(table[f.name]):
            if not ok[i] or v is None or (isinstance(v, float) and v != v and f.type != "numeric"):
                continue
            if f.type == "multi_hot":
                value: Any = split_multi_hot(v)
            elif f.type == "numeric":
                try:
                    value = float(v)
                except (TypeError, ValueError):
                    value = v
                if isinstance(value, float) and value != value:
                    continue
            else:
                value = v if isinstance(v, str) else str(v)
            _, problem = f.validate_value(value)
            if problem is not None:
                raise DataValidationError(f"{name}, {unit} {rows[i]}, column {f.name!r}: {problem}")


def load_table(
    path: str | Path | bytes | BinaryIO, spec: Spec | None = None, *, name: str | None = None
) -> pd.DataFrame:
    """Read an extracted (or ground-truth) table written by :func:`save_table`.

    Parameters
    ----------
    path
        The file (CSV, JSON records or Parquet, by suffix), or its bytes (or a binary
        buffer) read in memory; then ``name`` gives the suffix and the name in messages
        (an uploaded file is parsed in memory and never written to disk).
    spec
        Multi-hot columns of ``spec`` are turned back into lists (empty cells become
        empty lists), and every cell of a usable row (``status`` ``ok``, or no status
        column) must be an allowed value of its feature.
    name
        Name of an in-memory table in messages (only its base name is used).

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    DataValidationError
        (a ``ValueError``) naming the file, the line (CSV; header = line 1), JSON record or
        Parquet row, and the column: unreadable or empty file, no ``message_id`` column,
        an empty or repeated ``message_id`` (both lines named), a value the spec does not
        allow.
    """
    if isinstance(path, str | Path):
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"feature table {str(p)!r} does not exist")
        label, suffix = str(p), p.suffix.lower()
        raw = p.read_bytes()
    else:
        raw = bytes(path) if isinstance(path, bytes | bytearray) else path.read()
        base = re.split(r"[\\/]", name or "uploaded table")[-1] or "uploaded table"
        label, suffix = base, Path(base).suffix.lower()
    text: str | None = None
    try:
        if suffix == ".json":
            table = pd.DataFrame(json.loads(raw.decode("utf-8-sig")))
        elif suffix in (".parquet", ".pq"):
            table = pd.read_parquet(io.BytesIO(raw))
        else:
            text = raw.decode("utf-8-sig")
            table = pd.read_csv(
                io.StringIO(text), dtype={"message_id": str}, keep_default_na=False, na_values=[""]
            )
    except pd.errors.EmptyDataError:
        raise DataValidationError(f"{label}: the file is empty (no header line)") from None
    except json.JSONDecodeError as exc:
        raise DataValidationError(f"{label}, line {exc.lineno}: invalid JSON ({exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise DataValidationError(
            f"{label}: not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None
    except Exception as exc:  # parser errors of pandas / pyarrow, bad JSON layout
        raise DataValidationError(f"{label}: cannot be read as a feature table: {exc}") from None
    if "message_id" not in table.columns:
        raise DataValidationError(
            f"{label}, line 1 (header): feature table has no 'message_id' column; "
            f"columns present: {list(table.columns)}"
            if text is not None
            else f"{label}: feature table has no 'message_id' column"
        )
    rows, unit = _table_rows(table, suffix, text)
    ids = table["message_id"]
    empty = ids.isna().to_numpy() | ids.astype(str).str.strip().eq("").to_numpy()
    if empty.any():
        i = int(empty.argmax())
        raise DataValidationError(f"{label}, {unit} {rows[i]}, column 'message_id': is empty")
    table["message_id"] = ids.astype(str)
    check_unique_message_ids(table, label, rows, unit)
    if spec is not None:
        _check_feature_cells(table, spec, label, rows, unit)
        for f in spec.features:
            if f.name in table.columns and f.type == "multi_hot":
                table[f.name] = [split_multi_hot(v) for v in table[f.name]]
    return table


def records_to_jsonl(records: Sequence[ExtractionRecord], path: str | Path) -> Path:
    """Write records (with reasons of failures) as JSON lines."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r.to_dict(), ensure_ascii=False) + "\n")
    return path
