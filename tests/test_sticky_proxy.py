"""tests/benchmarks/sticky_proxy.py: the load test's reverse proxy keeps each browser on one
dashboard process (route cookie), forwards plain requests and passes websockets through."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "benchmarks" / "sticky_proxy.py"


def _load():
    spec = importlib.util.spec_from_file_location("sticky_proxy", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


proxy_mod = _load()


async def _backend(name: str) -> asyncio.AbstractServer:
    """A backend that names itself: plain requests get ``name`` (and the connection
    closed); an upgrade gets 101 and then echoes ``name:`` + each chunk."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        if "upgrade: websocket" in head.lower():
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
            try:
                while data := await reader.read(100):
                    writer.write(name.encode() + b":" + data)
                    await writer.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
        else:
            assert "connection: close" in head.lower()  # one request per connection
            body = f"{name}|{head.splitlines()[0]}".encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: keep-alive\r\n\r\n%s"
                % (len(body), body)
            )
            await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def _get(port: int, cookie: str | None = None) -> tuple[str, dict[str, str], str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    extra = f"Cookie: a=1; {proxy_mod.COOKIE}={cookie}\r\n" if cookie else ""
    writer.write(f"GET /x HTTP/1.1\r\nHost: h\r\n{extra}Connection: keep-alive\r\n\r\n".encode())
    raw = (await reader.read()).decode("latin-1")  # the proxy closes after the response
    writer.close()
    head, _, body = raw.partition("\r\n\r\n")
    lines = head.split("\r\n")
    headers = {}
    for h in lines[1:]:
        k, _, v = h.partition(":")
        headers[k.strip().lower()] = v.strip()
    return lines[0], headers, body


def test_each_browser_stays_on_one_backend_and_new_ones_take_turns() -> None:
    async def scenario() -> None:
        backends = [await _backend("one"), await _backend("two")]
        ports = [s.sockets[0].getsockname()[1] for s in backends]
        proxy = proxy_mod.StickyProxy([("127.0.0.1", p) for p in ports])
        server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            status, headers, body = await _get(port)
            assert status.endswith("200 OK") and body == "one|GET /x HTTP/1.1"
            assert headers["connection"] == "close"
            cookie = headers["set-cookie"].split(";")[0].split("=", 1)[1]
            for _ in range(3):  # the same browser: always the same backend, no new cookie
                _, again, body = await _get(port, cookie)
                assert body.startswith("one|") and "set-cookie" not in again
            _, other, body = await _get(port)  # a new browser: the next backend
            assert body.startswith("two|") and "set-cookie" in other
            _, _, body = await _get(port, "from-an-earlier-proxy-run")  # kept where it hashes
            _, _, body2 = await _get(port, "from-an-earlier-proxy-run")
            assert body == body2
            # a websocket goes to the browser's backend and lasts
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                f"GET /_stcore/stream HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nCookie: {proxy_mod.COOKIE}={cookie}\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            assert b"101" in head.split(b"\r\n")[0] and b"connection: close" not in head.lower()
            for msg in (b"hello", b"again"):
                writer.write(msg)
                await writer.drain()
                assert await reader.readexactly(4 + len(msg)) == b"one:" + msg
            writer.close()
            assert sum(proxy.requests) == 7 and proxy.websockets == [1, 0]
        finally:
            server.close()
            for b in backends:
                b.close()

    asyncio.run(asyncio.wait_for(scenario(), 20))


def test_the_route_cookie_is_read_among_others() -> None:
    assert proxy_mod.route_of(["Host: h", f"Cookie: x=1; {proxy_mod.COOKIE}=abc; y=2"]) == "abc"
    assert proxy_mod.route_of(["cookie: dtpbo_visitor=zzz"]) is None
    assert proxy_mod.route_of([f"Cookie: {proxy_mod.COOKIE}="]) is None
