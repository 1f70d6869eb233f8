"""Many visitors on one dashboard server: each keeps its own elicitation, under load.

Starts the dashboard (``python -m dashboard``, as ``make run`` does) on a free port with a
throw-away data folder and opens N Chromium contexts at once (N people: separate cookies,
separate tabs). Each opens Live elicitation (electricity study, default options; four
visitors at a time, ``--open-at-once``: sixteen first visits at once on a loaded 2-core
machine can take minutes), then all answer K questions at the same time, each with its own
seeded A/B pattern, then each reloads its page. Checked and reported:

* every visitor sees exactly its own K answers and the same favourite after the reload;
* the store holds N x K answers; ``mixed``: sessions whose stored actions are not exactly
  their visitor's pattern; ``duplicated``: answers stored more than once (same session and
  sequence number, or more than K in a session);
* ``server_p50`` / ``server_p95``: the server's own time of each answer, from the click
  reaching the server (its websocket message handled) to the answer's rerun done (the
  next question and everything the answer redraws sent), queue wait included; read from
  the log the server writes when ``DTPBO_ANSWER_LOG`` is set
  (:func:`dashboard._services.elicitation.finish_answer_clock`); ``server`` also gives the
  queue wait alone and the time until each of the page's marks (:func:`server_times`:
  stored, refit, asked, drawn, summary, shown); ``--switch-interval`` sets the servers'
  thread switch interval (``DTPBO_SWITCH_INTERVAL_S``) to compare;
* ``click_to_screen_p50`` / ``_p95`` beside it: the browser's own clock, from the click
  event on the answer button to the new answer count in the page (checked every
  animation frame, ``--screen-polling raf``, the default; ``mutation``: noted by a
  ``MutationObserver`` when the page changes, so the headless browsers need not draw
  frames while they wait; the runs in docs/shared-server.md say which was used);
  the N browsers run on the same machine, so this also measures them (``driver_s``: the
  same seen from this script, Playwright's click included).

    python tests/benchmarks/concurrent_visitors.py --visitors 16 --answers 5 --json -

``--shared`` starts the servers in shared mode (``make serve``'s setting; the one-command
fault suite ``tests/benchmarks/red_team.py`` runs the workload so).

Beyond one process: ``--processes 2`` starts two dashboard processes sharing one data folder
(one SQLite session store) behind a reverse proxy with sticky sessions (``--proxy python``:
``tests/benchmarks/sticky_proxy.py``; ``--proxy nginx``: Debian's nginx with
:data:`NGINX_CONF`, the configuration docs/shared-server.md shows); then also checked: every
visitor's answers were all served by one process.

    python tests/benchmarks/concurrent_visitors.py --visitors 32 --answers 5 --processes 2 --json -

The load average before and after is reported: on a shared machine every latency scales
with it. The simulated visitors run in the idle scheduling class (:data:`CLIENTS_NICE`,
``--clients-nice``), standing in for browsers on the visitors' own machines. Needs ``pip
install playwright`` and ``/usr/bin/chromium`` (never ``playwright install``). Exit status
1 when any check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the tests package importable
    sys.path.insert(0, str(ROOT))

from tests.fixtures.streamlit_server import (  # noqa: E402
    BROWSER_ARGS,
    CHROMIUM,
    free_port,
    streamlit_server,
)

#: Priority of the simulated visitors (this script once the servers are up, Playwright's
#: driver and Chromium): on a real server the visitors' browsers run on their own machines;
#: here N of them share the server's two cores and use 15-30 times its CPU (``cpu``:
#: ``clients_cpu_s`` against ``server_cpu_s``), so at the same priority the server's time
#: measures the queue for a core behind them. In Linux's idle scheduling class (``"idle"``,
#: as the dashboard's own background worker) they get a core only when neither the servers
#: nor any other process wants it; a niceness (``--clients-nice 10``) only weighs them
#: (10: about a tenth of a server's share each, so 32 of them still outweigh it);
#: ``--clients-nice 0``: the same priority.
CLIENTS_NICE: int | str = "idle"

_QUIET_JS = """(quietMs) => {
  const busy = !!document.querySelector('[data-testid="stStatusWidget"]');
  const now = performance.now();
  if (busy || window.__dtpboLastBusy === undefined) window.__dtpboLastBusy = now;
  if (busy) return false;
  const quiet = now - window.__dtpboLastBusy >= quietMs;
  if (quiet) window.__dtpboLastBusy = undefined;
  return quiet;
}"""
_METRIC_IS_JS = """([label, value]) => {
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    if (m.innerText.includes(label)) {
      const v = m.querySelector('[data-testid="stMetricValue"]');
      return !!v && v.innerText.trim() === value;
    }
  }
  return false;
}"""
#: Installed in every page: the moment of the last click on a button (the browser's clock).
_CLICK_CLOCK_JS = """document.addEventListener('click', (e) => {
  if (e.target && e.target.closest && e.target.closest('button')) {
    window.__dtpboClickAt = performance.now();
  }
}, true);"""
#: Installed in every page: the moment each value of the "Answers" metric first appears,
#: with the last click's moment then (noted at the DOM change, no polling in the page).
_SHOWN_CLOCK_JS = """window.__dtpboSeen = {};
new MutationObserver(() => {  // textContent: no layout forced (innerText would)
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    if (!m.textContent.includes('Answers')) continue;
    const v = m.querySelector('[data-testid="stMetricValue"]');
    const value = v ? v.textContent.trim() : null;
    if (value !== null && !(value in window.__dtpboSeen)) {
      window.__dtpboSeen[value] = {at: performance.now(), click: window.__dtpboClickAt};
    }
  }
}).observe(document, {subtree: true, childList: true, characterData: true});"""
#: The observer saw ``value``: milliseconds from the click before it to its appearance.
_SEEN_SINCE_CLICK_JS = """([value]) => {
  const s = window.__dtpboSeen && window.__dtpboSeen[value];
  if (!s) return false;
  return {ms: s.click === undefined ? null : s.at - s.click};
}"""
#: The metric shows ``value``: then milliseconds since that click (checked every frame).
_SHOWN_SINCE_CLICK_JS = """([label, value]) => {
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    if (m.innerText.includes(label)) {
      const v = m.querySelector('[data-testid="stMetricValue"]');
      if (v && v.innerText.trim() === value) {
        const at = window.__dtpboClickAt;
        return {ms: at === undefined ? null : performance.now() - at};
      }
      return false;
    }
  }
  return false;
}"""
_BUSY_JS = "() => !!document.querySelector('[data-testid=\"stStatusWidget\"]')"
_METRIC_JS = """([label]) => {
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    if (m.innerText.includes(label)) {
      const v = m.querySelector('[data-testid="stMetricValue"]');
      return v ? v.innerText.trim() : null;
    }
  }
  return null;
}"""


def patterns(n: int, k: int, seed: int = 0) -> list[list[str]]:
    """``n`` distinct seeded A/B patterns of length ``k`` (distinct while 2**k >= n)."""
    rng = np.random.default_rng(seed)
    out: list[list[str]] = []
    while len(out) < n:
        p = [str(s) for s in rng.choice(["A", "B"], size=k)]
        if p not in out or 2**k < n:
            out.append(p)
    return out


async def _idle(pg: Any, quiet_ms: float = 300.0, timeout_s: float = 180.0) -> None:
    """Wait until the page has shown no "running" status for ``quiet_ms`` (polled inside
    the browser: 16 pages polled over the DevTools protocol cost the shared CPU)."""
    await pg.wait_for_selector('[data-testid="stAppViewContainer"]', timeout=timeout_s * 1000)
    await pg.wait_for_function(_QUIET_JS, arg=quiet_ms, polling=50, timeout=timeout_s * 1000)


async def _metric(pg: Any, label: str) -> str | None:
    return await pg.evaluate(_METRIC_JS, [label])


async def _wait_metric(pg: Any, label: str, value: str, timeout_s: float = 180.0) -> None:
    try:
        await pg.wait_for_function(
            _METRIC_IS_JS, arg=[label, value], polling=10, timeout=timeout_s * 1000
        )
    except Exception as exc:  # playwright's TimeoutError
        raise TimeoutError(f"{label} did not become {value!r}") from exc


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system, all threads) of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (all processes, every core)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> set[int]:
    """Process ids below ``root`` (Linux ``/proc``)."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - out
        out |= frontier
    return out


class Marks:
    """CPU use while the visitors answer: the servers (their page processes), the servers'
    job workers (their child processes), the proxy (``proxy_pid`` and its children, e.g.
    nginx's worker), the benchmark's own clients (everything else it started: Playwright's
    driver, the browsers) and the whole machine (also other jobs)."""

    def __init__(self, pids: list[int], proxy_pid: int | None = None) -> None:
        self.pids = pids
        self.proxy_pid = proxy_pid
        self.at: dict[str, tuple[float, float, dict[str, dict[int, float]]]] = {}

    def _groups(self) -> dict[str, set[int]]:
        mine = _descendants(os.getpid())
        workers = set().union(*(_descendants(p) for p in self.pids)) if self.pids else set()
        proxy: set[int] = set()
        if self.proxy_pid is not None:
            proxy = {self.proxy_pid} | _descendants(self.proxy_pid)
        return {
            **{f"server{i}": {p} for i, p in enumerate(self.pids)},
            "workers": workers,
            "proxy": proxy,
            "clients": mine - set(self.pids) - workers - proxy,
        }

    def mark(self, name: str) -> None:
        cpu: dict[str, dict[int, float]] = {}
        try:
            machine = _machine_cpu()
            for group, pids in self._groups().items():
                cpu[group] = {}
                for p in pids:
                    try:
                        cpu[group][p] = _cpu_of(p)
                    except (OSError, IndexError, ValueError):  # ended meanwhile
                        pass
        except (OSError, IndexError, ValueError):  # not Linux: no CPU figures
            machine, cpu = float("nan"), {}
        self.at[name] = (time.perf_counter(), machine, cpu)

    def figures(self) -> dict[str, Any]:
        if not {"answering", "answered"} <= set(self.at):
            return {}
        (t0, m0, c0), (t1, m1, c1) = self.at["answering"], self.at["answered"]

        def used(group: str) -> float:  # a process started meanwhile counts from 0
            before = c0.get(group, {})
            return sum(v - before.get(p, 0.0) for p, v in c1.get(group, {}).items())

        servers = [used(f"server{i}") for i in range(len(self.pids))]
        return {
            "answering_wall_s": round(t1 - t0, 1),
            "server_cpu_s": [round(x, 1) for x in servers],
            "workers_cpu_s": round(used("workers"), 1),
            "proxy_cpu_s": None if self.proxy_pid is None else round(used("proxy"), 1),
            "clients_cpu_s": round(used("clients"), 1),
            "machine_busy_cpu_s": round(m1 - m0, 1),
            "server_share_of_busy": round(sum(servers) / max(m1 - m0, 1e-9), 3),
        }


async def visitor(
    browser: Any,
    url: str,
    pattern: list[str],
    start: asyncio.Barrier,
    done: asyncio.Barrier,
    marks: Marks,
    opening: asyncio.Semaphore,
    polling: str = "raf",
) -> dict:
    """One person: open, answer ``pattern``, reload; what they saw and the latencies."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1400})
    ctx.set_default_timeout(180_000)
    try:
        await ctx.add_init_script(_CLICK_CLOCK_JS)
        if polling == "mutation":
            await ctx.add_init_script(_SHOWN_CLOCK_JS)
        pg = await ctx.new_page()
        async with opening:  # people come in a few at a time; they answer all at once
            await pg.goto(f"{url}/elicitation?study=electricity")
            try:
                await _idle(pg)
                await _wait_metric(pg, "Answers", "0")
            except Exception as exc:  # a timeout: say what the page shows instead
                text = " ".join((await pg.inner_text("body")).split())[:600]
                raise TimeoutError(f"{exc}; the page shows: {text!r}") from exc
        if await start.wait() == 0:  # everyone has the page open before anyone answers
            marks.mark("answering")
        latencies, on_screen = [], []
        for k, side in enumerate(pattern, start=1):
            t0 = time.perf_counter()
            await pg.get_by_role("button", name=f"I prefer {side}").click()
            if polling == "mutation":  # the page's observer noted it; asked every 25 ms
                shown = await pg.wait_for_function(
                    _SEEN_SINCE_CLICK_JS, arg=[str(k)], polling=25, timeout=180_000
                )
            else:
                shown = await pg.wait_for_function(
                    _SHOWN_SINCE_CLICK_JS, arg=["Answers", str(k)], polling="raf", timeout=180_000
                )
            latencies.append(time.perf_counter() - t0)
            ms = (await shown.json_value())["ms"]
            on_screen.append(None if ms is None else ms / 1000)
            await _idle(pg)
        if await done.wait() == 0:  # everyone has answered
            marks.mark("answered")
        favourite = await _metric(pg, "Favourite")
        sid = parse_qs(urlparse(pg.url).query)["session"][0]
        await pg.reload()
        await _idle(pg)
        for label, value in (("Answers", str(len(pattern))), ("Favourite", favourite)):
            try:
                await _wait_metric(pg, label, str(value), timeout_s=60)
            except TimeoutError:
                pass  # reported below as seen
        after = {"answers": await _metric(pg, "Answers")}
        after["favourite"] = await _metric(pg, "Favourite")
        own = after["answers"] == str(len(pattern)) and after["favourite"] == favourite
        if not own:  # say what the page shows instead (and whether it was still running)
            after["running"] = bool(await pg.evaluate(_BUSY_JS))
            after["url"] = pg.url
            after["page"] = " ".join((await pg.inner_text("body")).split())[:600]
        return {
            "session": sid,
            "pattern": pattern,
            "latencies": latencies,
            "on_screen": on_screen,
            "favourite": favourite,
            "after_reload": after,
            "own_after_reload": own,
        }
    finally:
        await ctx.close()


def _pcts(values: list[float]) -> dict[str, Any]:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {"p50": None, "p95": None, "mean": None, "max": None, "n": 0}
    return {
        "p50": round(float(np.percentile(a, 50)), 3),
        "p95": round(float(np.percentile(a, 95)), 3),
        "mean": round(float(a.mean()), 3),
        "max": round(float(a.max()), 3),
        "n": int(a.size),
    }


def server_times(log: Path, runs: list[dict]) -> dict[str, Any]:
    """The server's own timing of the visitors' answers (``DTPBO_ANSWER_LOG`` lines):
    ``server``: click reached the server -> the answer's rerun done (queue wait + work);
    ``queue``: click reached the server -> its callback started; then, each from the click's
    arrival, the page's marks: ``stored`` (the answer written to the store), ``refit`` (the
    model refitted), ``summary`` (the session list's summary written), ``shown`` (the next
    question and the new count sent); which process served each answer (``by_process``;
    behind a sticky proxy a visitor's answers all go to one)."""
    ours = {r["session"] for r in runs}
    rows = []
    if log.exists():
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if row.get("session") in ours:
                rows.append(row)
    by_process: dict[int, int] = {}
    pids_of: dict[str, set[int]] = {}
    for r in rows:
        by_process[r["pid"]] = by_process.get(r["pid"], 0) + 1
        pids_of.setdefault(r["session"], set()).add(r["pid"])
    phases = sorted({k for r in rows for k in r if k.endswith("_s")} - {"server_s", "queue_s"})
    return {
        # sticky sessions: every answer of a visitor is served by one process
        "sessions_served_by_several_processes": sum(len(p) > 1 for p in pids_of.values()),
        "server_s": _pcts([r["server_s"] for r in rows]),
        "queue_s": _pcts([r["queue_s"] for r in rows]),
        # the clock's other marks, each from the click's arrival (the page's phases)
        **{k: _pcts([r[k] for r in rows if k in r]) for k in phases},
        "by_process": by_process,
    }


def audit(db: Path, runs: list[dict], k: int) -> dict[str, int]:
    """Answers in the store: total, mixed sessions, duplicated answers."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT session_id, seq, action FROM answers").fetchall()
    finally:
        con.close()
    by_session: dict[str, list[tuple[int, str]]] = {}
    for sid, seq, action in rows:
        by_session.setdefault(sid, []).append((int(seq), action))
    mixed = duplicated = 0
    for r in runs:
        got = sorted(by_session.get(r["session"], []))
        actions = [a for _, a in got]
        duplicated += max(0, len(got) - k) + len(got) - len({s for s, _ in got})
        mixed += actions != r["pattern"]
    return {
        "stored_answers": len(rows),
        "sessions_with_answers": len(by_session),
        "mixed": int(mixed),
        "duplicated": int(duplicated),
    }


#: The nginx configuration of ``--proxy nginx`` (docs/shared-server.md shows the same):
#: sticky sessions by a route cookie, websockets passed through.
NGINX_CONF = """\
worker_processes 1;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    # a browser's route: its cookie, or a new random one (hashed to a process)
    map $cookie_dtpbo_route $dtpbo_route {{
        ""      $request_id;
        default $cookie_dtpbo_route;
    }}
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ""      close;
    }}
    upstream dtpbo {{
        hash $dtpbo_route consistent;
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://dtpbo;
            proxy_http_version 1.1;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $remote_addr;  # the per-address quotas
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_read_timeout 1d;
            proxy_buffering off;
            add_header Set-Cookie "dtpbo_route=$dtpbo_route; Path=/; HttpOnly; SameSite=Lax";
        }}
    }}
}}
"""


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the proxy did not listen on {port}") from None
            time.sleep(0.1)


@contextmanager
def sticky_proxy(kind: str, urls: list[str], work: Path) -> Iterator[tuple[str, int]]:
    """A reverse proxy with sticky sessions in front of ``urls``; yields its URL and
    process id.

    ``kind``: ``"python"`` (``tests/benchmarks/sticky_proxy.py``) or ``"nginx"``
    (:data:`NGINX_CONF`; needs ``nginx`` on the PATH or in /usr/sbin).
    """
    port = free_port()
    backends = [u.removeprefix("http://") for u in urls]
    if kind == "python":
        cmd = [sys.executable, str(Path(__file__).with_name("sticky_proxy.py")), "--port"]
        cmd += [str(port), *(a for b in backends for a in ("--backend", b))]
    elif kind == "nginx":
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        prefix = work / "nginx"
        (prefix / "logs").mkdir(parents=True, exist_ok=True)
        servers = "\n".join(f"        server {b};" for b in backends)
        (prefix / "nginx.conf").write_text(NGINX_CONF.format(servers=servers, port=port))
        cmd = [exe, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-e", "stderr"]
        cmd += ["-g", f"daemon off; pid {prefix / 'nginx.pid'};"]
    else:
        raise ValueError(f"unknown proxy {kind!r}")
    log = (work / f"proxy-{kind}.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


async def run(
    n: int,
    k: int,
    seed: int,
    processes: int = 1,
    proxy: str = "python",
    open_at_once: int = 4,
    polling: str = "raf",
    switch_interval: float | None = None,
    clients_nice: int | str = CLIENTS_NICE,
    answer_log: Path | None = None,
    shared: bool = False,
) -> dict:
    from playwright.async_api import async_playwright

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dtpbo-visitors-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        log = work / "answers.jsonl"
        home = work / "data_home"  # one store for every process
        env = {"DTPBO_NO_DEFAULT_RESULTS": "1", "DTPBO_ANSWER_LOG": str(log)}
        if shared:  # a shared server's settings (make serve)
            env["DTPBO_SHARED_SERVER"] = "1"
        if switch_interval is not None:  # the servers' (dashboard/__main__.py), to compare
            env["DTPBO_SWITCH_INTERVAL_S"] = str(switch_interval)
        urls, pids = [], []
        for i in range(processes):
            (work / f"p{i}").mkdir()
            urls.append(
                stack.enter_context(streamlit_server(work / f"p{i}", extra_env=env, data_home=home))
            )
            pids.append(int((work / f"p{i}" / "streamlit.pid").read_text()))
        url, proxy_pid = urls[0], None
        if processes > 1:
            url, proxy_pid = stack.enter_context(sticky_proxy(proxy, urls, work))
        marks = Marks(pids, proxy_pid)
        # the servers (and the proxy) are started: from here on this process and what it
        # starts (Playwright's driver, Chromium) are the visitors' machines
        lower_priority(clients_nice)
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            start, done = asyncio.Barrier(n), asyncio.Barrier(n)
            opening = asyncio.Semaphore(max(1, open_at_once))
            t0 = time.perf_counter()
            runs = await asyncio.gather(
                *(
                    visitor(browser, url, q, start, done, marks, opening, polling)
                    for q in patterns(n, k, seed)
                )
            )
            wall = time.perf_counter() - t0
            await browser.close()
        checks = audit(home / "dashboard" / "sessions.sqlite", runs, k)
        server = server_times(log, runs)
        if answer_log is not None and log.exists():
            shutil.copyfile(log, answer_log)
        by_process = server.pop("by_process")
        server["answers_by_process"] = [by_process.get(pid, 0) for pid in pids]
    screen = _pcts([x for r in runs for x in r["on_screen"] if x is not None])
    driver = _pcts([x for r in runs for x in r["latencies"]])
    return {
        "visitors": n,
        "answers_each": k,
        "processes": processes,
        "shared": shared,
        "proxy": proxy if processes > 1 else None,
        "open_at_once": open_at_once,
        "screen_polling": polling,
        "switch_interval_s": switch_interval,
        "clients_nice": clients_nice,
        "expected_answers": n * k,
        **checks,
        "visitors_seeing_own_answers_after_reload": int(sum(r["own_after_reload"] for r in runs)),
        "server_p50": server["server_s"]["p50"],
        "server_p95": server["server_s"]["p95"],
        "click_to_screen_p50": screen["p50"],
        "click_to_screen_p95": screen["p95"],
        "server": server,
        "click_to_screen_s": screen,
        "driver_s": driver,
        "cpu": marks.figures(),
        "wall_s": round(wall, 1),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "runs": [
            {k_: v for k_, v in r.items() if k_ not in ("latencies", "on_screen")} for r in runs
        ],
    }


def checks_hold(res: dict) -> bool:
    """Every answer stored once in its own session, every visitor's own count and
    favourite after the reload, no visitor's answers on two processes."""
    return (
        res["stored_answers"] == res["expected_answers"]
        and res["mixed"] == 0
        and res["duplicated"] == 0
        and res["visitors_seeing_own_answers_after_reload"] == res["visitors"]
        and res["server"]["sessions_served_by_several_processes"] == 0
    )


def _nice_arg(text: str) -> int | str:
    if text == "idle":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a niceness (0-19) or 'idle', not {text!r}") from None


def lower_priority(nice: int | str) -> None:
    """Lower this process's priority, and so that of what it starts from now on (the
    simulated visitors): ``nice`` a niceness, or ``"idle"`` for Linux's ``SCHED_IDLE``
    class (run only on a core no other process wants)."""
    if nice == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(int(nice))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--visitors", type=int, default=8, help="browser contexts (default 8)")
    ap.add_argument("--answers", type=int, default=5, help="answers per visitor (default 5)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the answer patterns")
    ap.add_argument(
        "--processes",
        type=int,
        default=1,
        help="dashboard processes sharing one store, behind a sticky proxy (default 1)",
    )
    ap.add_argument(
        "--open-at-once",
        type=int,
        default=4,
        help="visitors opening the page at the same time before all answer at once (default 4)",
    )
    ap.add_argument(
        "--proxy",
        choices=("python", "nginx"),
        default="python",
        help="the proxy with --processes > 1: tests/benchmarks/sticky_proxy.py or nginx",
    )
    ap.add_argument(
        "--screen-polling",
        choices=("raf", "mutation"),
        default="raf",
        help="how the page notes the new answer count: a check every animation frame "
        "(default) or an observer of the page's changes",
    )
    ap.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        help="the servers' thread switch interval in seconds (DTPBO_SWITCH_INTERVAL_S; "
        "default: the launcher's own, dashboard/__main__.py)",
    )
    ap.add_argument(
        "--clients-nice",
        type=_nice_arg,
        default=CLIENTS_NICE,
        help="niceness of the simulated visitors (Playwright, Chromium) against the servers "
        "(a niceness 0-19, or 'idle': Linux's idle scheduling class, a core only when no "
        f"other process wants it; default {CLIENTS_NICE}; 0: the same priority, the "
        "protocol before 2026-12-05)",
    )
    ap.add_argument(
        "--answer-log",
        type=Path,
        default=None,
        help="keep the servers' answer log (one JSON line per answer) in this file",
    )
    ap.add_argument(
        "--shared",
        action="store_true",
        help="start the servers in shared mode (DTPBO_SHARED_SERVER=1, as make serve)",
    )
    ap.add_argument("--json", default="-", help="write the figures here ('-' = stdout)")
    args = ap.parse_args(argv)
    res = asyncio.run(
        run(
            args.visitors,
            args.answers,
            args.seed,
            args.processes,
            args.proxy,
            args.open_at_once,
            args.screen_polling,
            args.switch_interval,
            args.clients_nice,
            args.answer_log,
            args.shared,
        )
    )
    text = json.dumps(res, indent=1)
    if args.json == "-":
        print(text)
    else:
        Path(args.json).write_text(text)
    return 0 if checks_hold(res) else 1


if __name__ == "__main__":
    raise SystemExit(main())
