"""``python -m dashboard`` (what ``make run`` starts) listens on 127.0.0.1 only and answers
only loopback ``Host`` and ``Origin`` headers (no DNS rebinding); shared mode is what opens
it to a network (``make serve``) and to its host names. Read from the kernel's socket table
(``/proc/net/tcp``, ``tcp6``: what ``ss -ltn`` prints) and raw requests, with a real
server."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fixtures.streamlit_server import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
_LISTEN = "0A"


def listening(port: int) -> set[str]:
    """The local addresses a TCP port is listening on."""
    out = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, hex_port = local.split(":")
            if int(hex_port, 16) != port or state != _LISTEN:
                continue
            if width == 8:
                out.add(".".join(str(b) for b in reversed(bytes.fromhex(addr))))
            else:
                out.add("::1" if addr.endswith("01000000") and set(addr[:24]) == {"0"} else addr)
    return out


#: The requests :func:`serve` sends: (what, path, Host, Origin, websocket upgrade); the
#: Host's ``{port}`` is the server's.
PROBES = [
    ("page", "/", "127.0.0.1:{port}", None, False),
    ("page as localhost", "/", "localhost:{port}", None, False),
    ("page as [::1]", "/", "[::1]:{port}", None, False),
    ("websocket", "/_stcore/stream", "127.0.0.1:{port}", "http://127.0.0.1:{port}", True),
    (
        "websocket from localhost",
        "/_stcore/stream",
        "localhost:{port}",
        "http://localhost:{port}",
        True,
    ),
    ("page, rebound name", "/", "evil.example:{port}", None, False),
    ("health, rebound name", "/_stcore/health", "evil.example", None, False),
    (
        "websocket, rebound name",
        "/_stcore/stream",
        "evil.example:{port}",
        "http://evil.example:{port}",
        True,
    ),
    ("websocket, other origin", "/_stcore/stream", "127.0.0.1:{port}", "http://evil.example", True),
    ("websocket, null origin", "/_stcore/stream", "127.0.0.1:{port}", "null", True),
    ("page, loopback prefix", "/", "127.0.0.1.evil.example:{port}", None, False),
]


def status(port: int, path: str, host: str, origin: str | None, websocket: bool) -> int:
    """The HTTP status the server answers a request (a websocket upgrade: 101 if taken)."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    if websocket:
        key = base64.b64encode(os.urandom(16)).decode()
        lines += [
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Protocol: streamlit",
        ]
    else:
        lines.append("Connection: close")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    return int(head.split(b" ", 2)[1])


def serve(tmp_path: Path, shared: bool) -> tuple[set[str], dict[str, int]]:
    """Start ``python -m dashboard`` (personal or shared mode): the addresses it listens
    on and the status of each of :data:`PROBES`."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DTPBO_")}
    env.update(
        PYTHONPATH=str(ROOT),
        DTPBO_DATA_HOME=str(tmp_path / "home"),
        DTPBO_NO_DEFAULT_RESULTS="1",
        **({"DTPBO_SHARED_SERVER": "1"} if shared else {}),
    )
    cmd = [sys.executable, "-m", "dashboard", "--server.headless=true", f"--server.port={port}"]
    with (tmp_path / f"log-{shared}").open("w") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                    break
                except OSError:
                    time.sleep(0.3)
            answers = {
                what: status(
                    port, path, host.format(port=port), origin and origin.format(port=port), ws
                )
                for what, path, host, origin, ws in PROBES
            }
            return listening(port), answers
        finally:
            proc.terminate()
            proc.wait(30)


def test_a_personal_server_listens_on_this_machine_only(tmp_path: Path) -> None:
    """127.0.0.1 only, and a request naming another host (a page that rebound its name to
    127.0.0.1, or opened the websocket from its own origin) is refused: 403."""
    addresses, answers = serve(tmp_path, shared=False)
    assert addresses == {"127.0.0.1"}
    assert answers == {
        "page": 200,
        "page as localhost": 200,
        "page as [::1]": 200,
        "websocket": 101,
        "websocket from localhost": 101,
        "page, rebound name": 403,
        "health, rebound name": 403,
        "websocket, rebound name": 403,
        "websocket, other origin": 403,
        "websocket, null origin": 403,
        "page, loopback prefix": 403,
    }


def test_shared_mode_opens_the_network(tmp_path: Path) -> None:
    """All interfaces, every host name (the reverse proxy in front names its hosts,
    docs/shared-server.md)."""
    addresses, answers = serve(tmp_path, shared=True)
    assert addresses == {"0.0.0.0"}
    assert answers["page, rebound name"] == 200 and answers["websocket, rebound name"] == 101
