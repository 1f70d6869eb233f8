"""A tiny reverse proxy with sticky sessions for several dashboard processes (load tests).

Every browser is bound to one backend process by a route cookie (``dtpbo_route``): a
request without it gets a new route (backends in turn) and the cookie in its response;
every later request carrying it goes to the same process. That is what a Streamlit
server needs: a browser's websocket session, its uploads and its downloads live in one
process (the elicitation sessions themselves are in the shared SQLite store, so any
process can resume a link). Plain requests are forwarded one per connection
(``Connection: close``), websocket upgrades are piped both ways while they last.

    python tests/benchmarks/sticky_proxy.py --port 8501 --backend 127.0.0.1:8601 \\
        --backend 127.0.0.1:8602

For a real server use nginx with the same rule (``docs/shared-server.md``); this one
exists so that ``tests/benchmarks/concurrent_visitors.py --processes 2`` runs anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import secrets
from collections.abc import Sequence

COOKIE = "dtpbo_route"
_HEAD_LIMIT = 64 * 1024


def route_of(headers: Sequence[str]) -> str | None:
    """The route cookie of a request's header lines, if any."""
    for line in headers:
        name, _, value = line.partition(":")
        if name.strip().lower() != "cookie":
            continue
        for part in value.split(";"):
            key, _, val = part.strip().partition("=")
            if key == COOKIE and val:
                return val
    return None


class StickyProxy:
    """Routes browsers to ``backends`` (``(host, port)``), each browser always to one."""

    def __init__(self, backends: Sequence[tuple[str, int]]) -> None:
        if not backends:
            raise ValueError("at least one backend")
        self.backends = list(backends)
        self.routes: dict[str, int] = {}
        self._turn = itertools.count()
        self.requests = [0] * len(self.backends)
        self.websockets = [0] * len(self.backends)

    def pick(self, route: str | None) -> tuple[int, str | None]:
        """``(backend, new route or None)`` for a request with cookie ``route``."""
        if route is not None and route in self.routes:
            return self.routes[route], None
        if route is not None:  # a route of an earlier proxy run: keep it where it hashes
            k = int(hashlib.sha256(route.encode()).hexdigest(), 16) % len(self.backends)
            self.routes[route] = k
            return k, None
        new = secrets.token_urlsafe(12)
        k = next(self._turn) % len(self.backends)
        self.routes[new] = k
        return k, new

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection: one request, or one websocket for its lifetime."""
        backend_writer: asyncio.StreamWriter | None = None
        try:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                return
            lines = head.decode("latin-1").split("\r\n")[:-2]
            request, headers = lines[0], lines[1:]
            upgrade = any(
                h.partition(":")[0].strip().lower() == "upgrade"
                and "websocket" in h.partition(":")[2].lower()
                for h in headers
            )
            k, new_route = self.pick(route_of(headers))
            (self.websockets if upgrade else self.requests)[k] += 1
            backend_reader, backend_writer = await asyncio.open_connection(*self.backends[k])
            if not upgrade:  # one request per connection: the next one is routed afresh
                headers = [
                    h
                    for h in headers
                    if h.partition(":")[0].strip().lower() not in ("connection", "keep-alive")
                ]
                headers.append("Connection: close")
            backend_writer.write("\r\n".join([request, *headers, "", ""]).encode("latin-1"))
            await backend_writer.drain()
            upstream = asyncio.create_task(_pipe(reader, backend_writer))
            downstream = asyncio.create_task(
                _respond(backend_reader, writer, new_route, close=not upgrade)
            )
            if upgrade:  # a websocket lasts until either side closes it
                _, pending = await asyncio.wait(
                    {upstream, downstream}, return_when=asyncio.FIRST_COMPLETED
                )
            else:  # the response is complete when the backend closes (Connection: close)
                await downstream
                pending = {upstream}
            for task in pending:
                task.cancel()
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (backend_writer, writer):
                if w is not None:
                    w.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        if writer.can_write_eof():
            try:
                writer.write_eof()
            except (ConnectionError, OSError):
                pass


async def _respond(
    backend: asyncio.StreamReader,
    client: asyncio.StreamWriter,
    new_route: str | None,
    *,
    close: bool,
) -> None:
    """The backend's response to the client, with the route cookie in its head."""
    try:
        head = await backend.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return
    lines = head.decode("latin-1").split("\r\n")[:-2]
    if close:
        lines = [h for h in lines if h.partition(":")[0].strip().lower() not in ("connection",)] + [
            "Connection: close"
        ]
    if new_route is not None:
        lines.append(f"Set-Cookie: {COOKIE}={new_route}; Path=/; HttpOnly; SameSite=Lax")
    client.write("\r\n".join([*lines, "", ""]).encode("latin-1"))
    try:
        while data := await backend.read(65536):
            client.write(data)
            await client.drain()
    except (ConnectionError, OSError):
        pass


async def serve(port: int, backends: Sequence[tuple[str, int]], host: str = "127.0.0.1") -> None:
    """Run the proxy on ``host:port`` until cancelled."""
    proxy = StickyProxy(backends)
    server = await asyncio.start_server(proxy.handle, host, port, limit=_HEAD_LIMIT)
    async with server:
        await server.serve_forever()


def _backend(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--port", type=int, required=True, help="port to listen on (127.0.0.1)")
    ap.add_argument(
        "--backend", action="append", type=_backend, required=True, help="host:port, repeated"
    )
    args = ap.parse_args(argv)
    try:
        asyncio.run(serve(args.port, args.backend))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
