"""``python -m dashboard`` (what ``make run`` starts) listens on 127.0.0.1 only; shared mode
is what opens it to a network (``make serve``). Read from the kernel's socket table
(``/proc/net/tcp``, ``tcp6``: what ``ss -ltn`` prints), with a real server."""

from __future__ import annotations

import os
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


def serve(tmp_path: Path, shared: bool) -> set[str]:
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
            return listening(port)
        finally:
            proc.terminate()
            proc.wait(30)


def test_a_personal_server_listens_on_this_machine_only(tmp_path: Path) -> None:
    assert serve(tmp_path, shared=False) == {"127.0.0.1"}


def test_shared_mode_opens_the_network(tmp_path: Path) -> None:
    assert serve(tmp_path, shared=True) == {"0.0.0.0"}
