"""A small async client for OpenAI-compatible chat servers (vLLM, llama.cpp server, OpenAI).

:class:`LLMConfig` gathers the connection settings (from arguments or the environment);
:class:`LLMClient` sends chat requests through the ``openai`` package's ``AsyncOpenAI``
with

* a bounded number of requests in flight (``asyncio.Semaphore``),
* retries with exponential backoff and seeded jitter on timeouts, connection errors, 429
  and 5xx answers (the ``openai`` client's own retries are switched off),
* structured output that works across servers: ``response_format={"type": "json_schema"}``
  where the server supports it (vLLM, OpenAI) and ``{"type": "json_object"}`` plus a schema
  hint in the prompt otherwise (llama.cpp's server answers HTTP 500 to ``json_schema``).
  A ``json_object`` request also carries the schema as ``response_format["schema"]``,
  which llama.cpp (and llama-cpp-python) turn into a grammar that constrains decoding;
  a server that rejects the extra key gets plain ``json_object``.
  In ``"auto"`` mode the first request negotiates, in this order: ``json_schema``,
  ``json_object`` with schema, plain ``json_object``, moving on only when the server
  clearly rejects a format (HTTP 400/422/501, or an error body saying the format is not
  supported, as llama.cpp's HTTP 500 does). Any other 5xx is transient: it is retried with
  the same format and never downgrades it. The accepted format is remembered for later
  requests (:attr:`LLMClient.negotiated`). Only one request negotiates at a time; once the
  format is settled, requests run with the full concurrency.

The API key is never logged, never part of a record and masked in ``repr``/``str``; it
(and any ``Bearer ...`` token) is also removed from answers and error texts
(:func:`redact_secrets`), since a server may echo it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, Protocol

import openai

from feature_extraction.spec import schema_hint

log = logging.getLogger(__name__)

ResponseFormat = Literal["auto", "json_schema", "json_object"]
RESPONSE_FORMATS: tuple[str, ...] = ("auto", "json_schema", "json_object")
#: Structured-output formats a request can use (``CallRecord.response_format``).
STRUCTURED_FORMATS: tuple[str, ...] = ("json_schema", "json_object+schema", "json_object")

#: Placeholder key sent to local servers that need none (the ``openai`` client needs one).
NO_KEY = "not-needed"

_MASK = "***"

#: Environment variables read by :meth:`LLMConfig.from_env` (``DTPBO_LLM_*`` first).
ENV_VARS: dict[str, tuple[str, ...]] = {
    "base_url": ("DTPBO_LLM_BASE_URL", "OPENAI_BASE_URL"),
    "model": ("DTPBO_LLM_MODEL",),
    "api_key": ("DTPBO_LLM_API_KEY", "OPENAI_API_KEY"),
    "temperature": ("DTPBO_LLM_TEMPERATURE",),
    "max_concurrency": ("DTPBO_LLM_MAX_CONCURRENCY",),
    "timeout": ("DTPBO_LLM_TIMEOUT",),
    "max_retries": ("DTPBO_LLM_MAX_RETRIES",),
    "response_format": ("DTPBO_LLM_RESPONSE_FORMAT",),
    "max_tokens": ("DTPBO_LLM_MAX_TOKENS",),
    "max_validation_retries": ("DTPBO_LLM_MAX_VALIDATION_RETRIES",),
    "backoff_base": ("DTPBO_LLM_BACKOFF_BASE",),
    "backoff_max": ("DTPBO_LLM_BACKOFF_MAX",),
}

_BEARER_RE = re.compile(r"(Bearer\s+)[^\s'\",;()\[\]{}<>]+", re.IGNORECASE)


def redact_secrets(text: str | None, secret: str | None = None) -> str | None:
    """``text`` with ``secret`` and every ``Bearer <token>`` replaced by ``***``."""
    if not text:
        return text
    if secret:
        text = text.replace(secret, _MASK)
    return _BEARER_RE.sub(r"\1" + _MASK, text)


class RedactingFilter(logging.Filter):
    """Logging filter that removes a secret (and ``Bearer`` tokens) from every record."""

    def __init__(self, secret: str | None) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = redact_secrets(msg, self.secret)
        if clean != msg or record.args:
            record.msg, record.args = clean, None
        return True


@dataclass
class LLMConfig:
    """Connection and retry settings.

    Parameters
    ----------
    base_url
        Server URL including ``/v1`` (e.g. ``http://127.0.0.1:8000/v1``); ``None`` uses
        the ``openai`` default (OpenAI's API).
    model
        Model name as the server knows it.
    api_key
        Secret key; ``None`` sends a placeholder (local servers need none). Masked in
        ``repr``/``str`` and never logged.
    temperature
        Sampling temperature (0 = as deterministic as the server allows).
    max_concurrency
        Maximum number of requests in flight.
    timeout
        Per-request timeout in seconds.
    max_retries
        Transport retries per request (timeouts, connection errors, 408/409/429/5xx).
    max_validation_retries
        How often an invalid answer is re-asked with the validation error fed back.
    backoff_base, backoff_max
        Backoff before retry ``k`` (0-based) is ``min(backoff_max, backoff_base * 2**k)``
        times a jitter factor in ``[0.5, 1.5)`` drawn from a generator seeded by ``seed``.
    seed
        Seed of the jitter generator (and sent to the server as ``seed``).
    response_format
        ``"auto"`` (probe ``json_schema``, fall back to ``json_object`` and remember),
        ``"json_schema"`` or ``"json_object"``.
    max_tokens
        Cap on generated tokens per answer (``None`` = server default).
    """

    base_url: str | None = None
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.0
    max_concurrency: int = 4
    timeout: float = 60.0
    max_retries: int = 4
    max_validation_retries: int = 2
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    seed: int = 0
    response_format: ResponseFormat = "auto"
    max_tokens: int | None = 1024

    def __post_init__(self) -> None:
        if self.response_format not in RESPONSE_FORMATS:
            raise ValueError(
                f"response_format {self.response_format!r} is not one of {RESPONSE_FORMATS}"
            )
        if int(self.max_concurrency) < 1:
            raise ValueError("max_concurrency must be at least 1")
        if float(self.timeout) <= 0:
            raise ValueError("timeout must be positive")
        if int(self.max_retries) < 0 or int(self.max_validation_retries) < 0:
            raise ValueError("retry counts must be >= 0")
        if self.api_key is not None and not str(self.api_key):
            self.api_key = None

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "api_key":
                v = _MASK if v else None
            parts.append(f"{f.name}={v!r}")
        return f"LLMConfig({', '.join(parts)})"

    __str__ = __repr__

    def to_dict(self) -> dict[str, Any]:
        """Settings for records and logs, with the API key masked."""
        d = asdict(self)
        d["api_key"] = _MASK if self.api_key else None
        return d

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """Settings from the environment, overridden by non-``None`` keyword arguments.

        Reads ``DTPBO_LLM_BASE_URL`` (or ``OPENAI_BASE_URL``), ``DTPBO_LLM_MODEL``,
        ``DTPBO_LLM_API_KEY`` (or ``OPENAI_API_KEY``), ``DTPBO_LLM_TEMPERATURE``,
        ``DTPBO_LLM_MAX_CONCURRENCY``, ``DTPBO_LLM_TIMEOUT``, ``DTPBO_LLM_MAX_RETRIES``,
        ``DTPBO_LLM_RESPONSE_FORMAT``, ``DTPBO_LLM_MAX_TOKENS``,
        ``DTPBO_LLM_MAX_VALIDATION_RETRIES``, ``DTPBO_LLM_BACKOFF_BASE`` and
        ``DTPBO_LLM_BACKOFF_MAX``.
        """
        env = os.environ if env is None else env
        types = {f.name: f.type for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for name, names in ENV_VARS.items():
            raw = next((env[n] for n in names if env.get(n)), None)
            if raw is None:
                continue
            t = str(types[name])
            try:
                if "float" in t:
                    kwargs[name] = float(raw)
                elif t.startswith("int"):
                    kwargs[name] = int(raw)
                else:
                    kwargs[name] = raw
            except ValueError:
                raise ValueError(f"environment variable {names[0]}: cannot parse {raw!r}") from None
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kwargs)

    def redact(self, text: str | None) -> str | None:
        """``text`` with the API key (if any) and ``Bearer`` tokens replaced by ``***``."""
        return redact_secrets(text, self.api_key)


@dataclass
class CallRecord:
    """One HTTP request to the server (successful or not).

    Attributes
    ----------
    kind
        What the call was for (``"extract"``, ``"reason"``, ``"propose"``...).
    latency_s
        Wall time of the request in seconds.
    outcome
        ``"ok"`` or the error class (``"RateLimitError"``, ``"APITimeoutError"``...).
    status_code
        HTTP status of a failed request (``None`` for timeouts/connection errors).
    response_format
        ``"json_schema"``, ``"json_object+schema"``, ``"json_object"`` or ``"text"``.
    prompt_tokens, completion_tokens
        Token usage reported by the server (``None`` if not reported).
    log_id
        Id given by a :class:`CallLog` that logged the request before it was sent
        (``None`` when no call log was used).
    """

    kind: str
    latency_s: float
    outcome: str
    status_code: int | None = None
    response_format: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    log_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation."""
        return asdict(self)


@dataclass
class ChatResult:
    """The answer to one chat request after transport retries.

    Attributes
    ----------
    content
        Text of the first choice (``None`` if the server sent none).
    calls
        Every HTTP request made for this answer (failed attempts included).
    response_format
        Structured-output mode of the successful request.
    """

    content: str | None
    calls: list[CallRecord]
    response_format: str

    @property
    def latency_s(self) -> float:
        """Latency of the successful request."""
        return self.calls[-1].latency_s

    @property
    def prompt_tokens(self) -> int | None:
        """Prompt tokens of the successful request."""
        return self.calls[-1].prompt_tokens

    @property
    def completion_tokens(self) -> int | None:
        """Completion tokens of the successful request."""
        return self.calls[-1].completion_tokens


class CallLog(Protocol):
    """Where requests are logged *before* they are sent (so a killed run leaves a trace)."""

    def start(self, kind: str, response_format: str) -> int | None:
        """Log a request about to be sent; return its id."""

    def finish(self, log_id: int | None, record: CallRecord) -> None:
        """Complete the entry ``log_id`` with the outcome of the request."""


class LLMRequestError(RuntimeError):
    """A request that failed for good (non-retryable error or retries exhausted).

    Attributes
    ----------
    reason
        Human-readable reason (API key redacted).
    calls
        Every HTTP request made.
    """

    def __init__(self, reason: str, calls: Sequence[CallRecord]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.calls = list(calls)


_RETRYABLE_STATUS = frozenset({408, 409, 429})
#: HTTP answers to a structured-output request that mean "this format is unsupported".
_SCHEMA_REJECT_STATUS = frozenset({400, 422, 501})
#: An error body that says a request option is unsupported (e.g. llama.cpp's HTTP 500
#: "response_format type must be one of \"text\" or \"json_object\"", or
#: llama-cpp-python 0.3's HTTP 500 pydantic message "1 validation error: {'type':
#: 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be
#: 'text' or 'json_object'\"}").
_UNSUPPORTED_RE = re.compile(
    r"not\s+supported|unsupported|not\s+implemented|must\s+be\s+one\s+of|unrecogni[sz]ed"
    r"|unknown\s+(?:field|argument|parameter|key|type)|not\s+permitted|invalid\s+type"
    r"|input\s+should\s+be|literal_error|extra\s+inputs\s+are\s+not\s+permitted",
    re.IGNORECASE,
)
_FORMAT_RE = re.compile(r"response_format|json_schema|schema|format|grammar", re.IGNORECASE)


def _status(exc: BaseException) -> int | None:
    return getattr(exc, "status_code", None)


def _rejects_format(exc: BaseException) -> bool:
    """Whether ``exc`` clearly says the structured-output format is unsupported.

    HTTP 400/422/501 do; any other status only with an error body saying so (llama.cpp
    answers ``json_schema`` with HTTP 500 and such a body). A bare 5xx is transient.
    """
    code = _status(exc)
    if code is None:
        return False
    if code in _SCHEMA_REJECT_STATUS:
        return True
    body = f"{exc} {getattr(exc, 'body', '')}"
    return bool(_UNSUPPORTED_RE.search(body) and _FORMAT_RE.search(body))


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    code = _status(exc)
    return code is not None and (code in _RETRYABLE_STATUS or code >= 500)


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class LLMClient:
    """Async chat client with bounded concurrency, backoff and structured-output fallback.

    Parameters
    ----------
    config
        Connection settings.
    response_mode
        Known structured-output format of the server (``"json_schema"``,
        ``"json_object+schema"`` or ``"json_object"``, see :attr:`negotiated`), e.g.
        remembered from an earlier run; overrides ``config.response_format``.

    Use as ``async with LLMClient(config) as client: ...`` or call :meth:`aclose`.
    """

    def __init__(self, config: LLMConfig, *, response_mode: str | None = None) -> None:
        self.config = config
        #: "auto", "json_schema" or "json_object" (see also ``object_schema``).
        self.response_mode: str = config.response_format
        #: Whether the server accepts ``response_format["schema"]`` with ``json_object``
        #: (``None`` = not known yet).
        self.object_schema: bool | None = None
        #: Whether a structured-output request has succeeded with :attr:`negotiated`
        #: (a format reached only by rejections is not worth remembering across runs).
        self.confirmed = False
        if response_mode in STRUCTURED_FORMATS:
            self.response_mode = "json_schema" if response_mode == "json_schema" else "json_object"
            if response_mode != "json_schema":
                self.object_schema = response_mode == "json_object+schema"
        self._client = openai.AsyncOpenAI(
            api_key=config.api_key or NO_KEY,
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=0,
        )
        self._rng = random.Random(config.seed)
        self._sem: asyncio.Semaphore | None = None
        self._probe_lock: asyncio.Lock | None = None
        self.in_flight = 0
        self.max_in_flight = 0

    def __repr__(self) -> str:
        return f"LLMClient(config={self.config!r}, response_mode={self.response_mode!r})"

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the underlying HTTP client."""
        await self._client.close()

    # ------------------------------------------------------------------ formats
    @property
    def negotiated(self) -> str:
        """The structured-output format in use: ``"json_schema"``, ``"json_object+schema"``,
        ``"json_object"`` or ``"auto"`` (not settled yet)."""
        if self.response_mode == "json_schema":
            return "json_schema"
        if self.response_mode == "json_object" and self.object_schema is not None:
            return "json_object+schema" if self.object_schema else "json_object"
        return "auto"

    def _candidates(self) -> list[str]:
        """Formats to try, in order, for a request with a JSON schema."""
        obj = {
            None: ["json_object+schema", "json_object"],
            True: ["json_object+schema"],
            False: ["json_object"],
        }[self.object_schema]
        if self.response_mode == "json_schema":
            return ["json_schema"]
        if self.response_mode == "json_object":
            return obj
        return ["json_schema", *obj]

    def _settle(self, fmt: str, rejected: Sequence[str] = ()) -> None:
        if fmt == "json_schema":
            self.response_mode = "json_schema"
        elif fmt == "json_object+schema":
            self.response_mode, self.object_schema = "json_object", True
        elif fmt == "json_object":
            self.response_mode = "json_object"
            if "json_object+schema" in rejected:
                self.object_schema = False

    def _reject(self, fmt: str) -> None:
        """Remember that the server clearly rejected ``fmt`` (negotiation only)."""
        if fmt == "json_schema":
            self.response_mode = "json_object"
        elif fmt == "json_object+schema":
            self.response_mode, self.object_schema = "json_object", False

    def _unsettled(self) -> bool:
        return len(self._candidates()) > 1

    # ------------------------------------------------------------------ helpers
    def _primitives(self) -> tuple[asyncio.Semaphore, asyncio.Lock]:
        if self._sem is None or self._probe_lock is None:
            self._sem = asyncio.Semaphore(int(self.config.max_concurrency))
            self._probe_lock = asyncio.Lock()
        return self._sem, self._probe_lock

    def backoff_delay(self, attempt: int, exc: BaseException | None = None) -> float:
        """Seconds to wait before retry ``attempt`` (0-based); honours ``Retry-After``."""
        cfg = self.config
        delay = min(cfg.backoff_max, cfg.backoff_base * 2.0**attempt)
        delay *= 0.5 + self._rng.random()
        hint = _retry_after(exc) if exc is not None else None
        if hint is not None and math.isfinite(hint):
            delay = max(delay, min(hint, cfg.backoff_max))
        return delay

    async def _call(
        self,
        kind: str,
        messages: list[dict[str, str]],
        mode: str,
        json_schema: Mapping[str, Any] | None,
        name: str,
        max_tokens: int | None,
        call_log: CallLog | None = None,
    ) -> tuple[Any, CallRecord]:
        """One HTTP request inside the semaphore. Raises the ``openai`` error on failure.

        With ``call_log`` the request is logged before it is sent and completed after.
        """
        cfg = self.config
        kwargs: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "seed": cfg.seed,
        }
        mt = max_tokens if max_tokens is not None else cfg.max_tokens
        if mt is not None:
            kwargs["max_tokens"] = mt
        if mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(json_schema or {}), "strict": True},
            }
        elif mode in ("json_object", "json_object+schema"):
            kwargs["response_format"] = {"type": "json_object"}
            if mode == "json_object+schema":
                kwargs["response_format"]["schema"] = dict(json_schema or {})
            if json_schema is not None:
                kwargs["messages"] = _with_hint(messages, json_schema)
        sem, _ = self._primitives()
        async with sem:
            log_id = call_log.start(kind, mode) if call_log is not None else None
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            t0 = time.perf_counter()
            try:
                resp = await self._client.chat.completions.create(**kwargs)
            except BaseException as e:
                rec = CallRecord(kind, time.perf_counter() - t0, type(e).__name__, _status(e), mode)
                rec.log_id = log_id
                if call_log is not None:
                    call_log.finish(log_id, rec)
                if isinstance(e, openai.OpenAIError):
                    e.call_record = rec  # type: ignore[attr-defined]
                raise
            finally:
                self.in_flight -= 1
        usage = getattr(resp, "usage", None)
        rec = CallRecord(
            kind,
            time.perf_counter() - t0,
            "ok",
            None,
            mode,
            getattr(usage, "prompt_tokens", None),
            getattr(usage, "completion_tokens", None),
            log_id,
        )
        if call_log is not None:
            call_log.finish(log_id, rec)
        return resp, rec

    def _describe(self, exc: BaseException) -> str:
        code = _status(exc)
        head = f"{type(exc).__name__}" + (f" (HTTP {code})" if code else "")
        msg = str(exc).strip()
        if len(msg) > 300:
            msg = msg[:300] + "..."
        return self.config.redact(f"{head}: {msg}" if msg else head)

    # ------------------------------------------------------------------ requests
    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        json_schema: Mapping[str, Any] | None = None,
        name: str = "answer",
        kind: str = "extract",
        max_tokens: int | None = None,
        call_log: CallLog | None = None,
    ) -> ChatResult:
        """Send one chat request; structured JSON output when ``json_schema`` is given.

        Parameters
        ----------
        messages
            Chat messages (``role``/``content``).
        json_schema
            JSON schema of the answer; ``None`` asks for free text.
        name
            Schema name sent with ``json_schema`` requests.
        kind
            Label of the call in :class:`CallRecord`.
        max_tokens
            Overrides ``config.max_tokens`` for this request.
        call_log
            Logs every HTTP request before it is sent (e.g. the cache's call log).

        Returns
        -------
        ChatResult
            The answer, with the API key and ``Bearer`` tokens redacted from its content.

        Raises
        ------
        LLMRequestError
            On a non-retryable error or when the transport retries are exhausted.
        """
        return await self._with_retries(messages, json_schema, name, kind, max_tokens, call_log)

    async def _attempt(
        self,
        calls: list[CallRecord],
        messages: list[dict[str, str]],
        json_schema: Mapping[str, Any] | None,
        name: str,
        kind: str,
        max_tokens: int | None,
        call_log: CallLog | None,
    ) -> tuple[Any, str]:
        """One attempt. While the format is not settled only one attempt at a time
        negotiates (holding the probe lock for that attempt only, not its backoff); the
        others wait and then run concurrently with the settled format."""
        args = (calls, messages, json_schema, name, kind, max_tokens, call_log)
        if json_schema is not None and self._unsettled():
            _, probe_lock = self._primitives()
            async with probe_lock:
                if self._unsettled():
                    return await self._negotiate(*args)
        return await self._negotiate(*args)

    async def _negotiate(
        self,
        calls: list[CallRecord],
        messages: list[dict[str, str]],
        json_schema: Mapping[str, Any] | None,
        name: str,
        kind: str,
        max_tokens: int | None,
        call_log: CallLog | None = None,
    ) -> tuple[Any, str]:
        """One attempt: try the candidate formats in order, moving on only when the
        server clearly rejects a format (:func:`_rejects_format`). Raises the last
        ``openai`` error (a transient one is retried by the caller with the same format)."""
        cands = self._candidates() if json_schema is not None else ["text"]
        for i, fmt in enumerate(cands):
            try:
                resp, rec = await self._call(
                    kind, messages, fmt, json_schema, name, max_tokens, call_log
                )
            except openai.OpenAIError as exc:
                calls.append(_record_of(exc, kind, fmt))
                if i + 1 < len(cands) and _rejects_format(exc):
                    log.warning(
                        "server rejected response_format %s (%s); trying %s",
                        fmt,
                        self._describe(exc),
                        cands[i + 1],
                    )
                    self._reject(fmt)
                    continue
                raise
            calls.append(rec)
            if json_schema is not None and len(cands) > 1:
                self._settle(fmt, rejected=cands[:i])
                log.info("structured output: using response_format %s from now on", fmt)
            if json_schema is not None:
                self.confirmed = True
            return resp, fmt
        raise AssertionError("unreachable")  # pragma: no cover

    async def _with_retries(
        self,
        messages: list[dict[str, str]],
        json_schema: Mapping[str, Any] | None,
        name: str,
        kind: str,
        max_tokens: int | None,
        call_log: CallLog | None = None,
    ) -> ChatResult:
        calls: list[CallRecord] = []
        attempt = 0
        while True:
            try:
                resp, fmt = await self._attempt(
                    calls, messages, json_schema, name, kind, max_tokens, call_log
                )
            except openai.OpenAIError as err:
                if (json_schema is not None and _rejects_format(err)) or not _retryable(err):
                    raise LLMRequestError(f"request failed: {self._describe(err)}", calls) from None
                if attempt >= self.config.max_retries:
                    raise LLMRequestError(
                        f"request failed after {attempt + 1} attempt(s): {self._describe(err)}",
                        calls,
                    ) from None
                delay = self.backoff_delay(attempt, err)
                log.warning(
                    "%s; retry %d/%d in %.2fs",
                    self._describe(err),
                    attempt + 1,
                    self.config.max_retries,
                    delay,
                )
                attempt += 1
                await asyncio.sleep(delay)
                continue
            return ChatResult(self.config.redact(_content(resp)), calls, fmt)


def _record_of(exc: BaseException, kind: str, mode: str) -> CallRecord:
    rec = getattr(exc, "call_record", None)
    if isinstance(rec, CallRecord):
        return rec
    return CallRecord(kind, 0.0, type(exc).__name__, _status(exc), mode)


def _content(resp: Any) -> str | None:
    choices = getattr(resp, "choices", None) or []
    if not choices:
        return None
    message = getattr(choices[0], "message", None)
    return getattr(message, "content", None)


def _with_hint(
    messages: list[dict[str, str]], json_schema: Mapping[str, Any]
) -> list[dict[str, str]]:
    """Messages with the schema hint appended to the system message (or prepended as one)."""
    out = [dict(m) for m in messages]
    hint = schema_hint(json_schema)
    for m in out:
        if m.get("role") == "system":
            m["content"] = m["content"] + hint
            return out
    return [{"role": "system", "content": hint.strip()}, *out]


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """The command-line options of an LLM endpoint (one group; read by :func:`config_from_args`).

    Every option defaults to ``None``, so :meth:`LLMConfig.from_env` fills what is not
    given from the ``DTPBO_LLM_*`` / ``OPENAI_*`` variables. The API key is never an option.
    """
    g = parser.add_argument_group("LLM endpoint (defaults from DTPBO_LLM_* / OPENAI_* variables)")
    g.add_argument("--base-url", help="server URL incl. /v1, e.g. http://127.0.0.1:8080/v1")
    g.add_argument("--model", help="model name as the server knows it")
    g.add_argument("--temperature", type=float, help="sampling temperature (default 0)")
    g.add_argument("--concurrency", type=int, help="max requests in flight (default 4)")
    g.add_argument("--timeout", type=float, help="per-request timeout in seconds (default 60)")
    g.add_argument("--max-retries", type=int, help="transport retries per request (default 4)")
    g.add_argument(
        "--response-format",
        choices=RESPONSE_FORMATS,
        help="structured output: auto (probe json_schema, fall back to json_object), "
        "json_schema or json_object (default auto)",
    )
    g.add_argument("--max-tokens", type=int, help="cap on generated tokens per answer")


def config_from_args(args: argparse.Namespace) -> LLMConfig:
    """The :class:`LLMConfig` of :func:`add_endpoint_arguments`' options and the environment.

    Raises ``SystemExit`` with a message when no model is named anywhere.
    """
    cfg = LLMConfig.from_env(
        base_url=args.base_url,
        model=args.model,
        temperature=args.temperature,
        max_concurrency=args.concurrency,
        timeout=args.timeout,
        max_retries=args.max_retries,
        response_format=args.response_format,
        max_tokens=args.max_tokens,
    )
    if not cfg.model:
        raise SystemExit("error: no model given (--model or DTPBO_LLM_MODEL)")
    return cfg
