"""Many visitors on one dashboard server: each keeps its own elicitation, under load.

Starts the dashboard (``python -m dashboard``, as ``make run`` does) on a free port with a
throw-away data folder and opens N Chromium contexts at once (N people: separate cookies,
separate tabs). Each opens Live elicitation (electricity study, default options), answers
K questions with its own seeded A/B pattern, all visitors concurrently, then reloads its
page. Checked and reported:

* every visitor sees exactly its own K answers and the same favourite after the reload;
* the store holds N x K answers; ``mixed``: sessions whose stored actions are not exactly
  their visitor's pattern; ``duplicated``: answers stored more than once (same session and
  sequence number, or more than K in a session);
* ``server_p50`` / ``server_p95``: the server's own time of each answer, from the click
  reaching the server (its websocket message handled) to the answer's rerun done (the
  next question and everything the answer redraws sent), queue wait included; read from
  the log the server writes when ``DTPBO_ANSWER_LOG`` is set
  (:func:`dashboard._services.elicitation.finish_answer_clock`); ``server`` also gives the
  queue wait alone and the time until the next question and the new count were sent;
* ``click_to_screen_p50`` / ``_p95`` beside it: the browser's own clock, from the click
  event on the answer button to the new answer count in the page (checked every frame);
  the N browsers run on the same machine, so this also measures them (``driver_s``: the
  same seen from this script, Playwright's click included).

    python tests/benchmarks/concurrent_visitors.py --visitors 16 --answers 5 --json -

The load average before and after is reported: on a shared machine every latency scales
with it. Needs ``pip install playwright`` and ``/usr/bin/chromium`` (never ``playwright
install``). Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the tests package importable
    sys.path.insert(0, str(ROOT))

from tests.fixtures.streamlit_server import streamlit_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
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


async def visitor(browser: Any, url: str, pattern: list[str], start: asyncio.Barrier) -> dict:
    """One person: open, answer ``pattern``, reload; what they saw and the latencies."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1400})
    ctx.set_default_timeout(180_000)
    try:
        await ctx.add_init_script(_CLICK_CLOCK_JS)
        pg = await ctx.new_page()
        await pg.goto(f"{url}/elicitation?study=electricity")
        await _idle(pg)
        await _wait_metric(pg, "Answers", "0")
        await start.wait()  # everyone has the page open before anyone answers
        latencies, on_screen = [], []
        for k, side in enumerate(pattern, start=1):
            t0 = time.perf_counter()
            await pg.get_by_role("button", name=f"I prefer {side}").click()
            shown = await pg.wait_for_function(
                _SHOWN_SINCE_CLICK_JS, arg=["Answers", str(k)], polling="raf", timeout=180_000
            )
            latencies.append(time.perf_counter() - t0)
            ms = (await shown.json_value())["ms"]
            on_screen.append(None if ms is None else ms / 1000)
            await _idle(pg)
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
        return {
            "session": sid,
            "pattern": pattern,
            "latencies": latencies,
            "on_screen": on_screen,
            "favourite": favourite,
            "after_reload": after,
            "own_after_reload": after["answers"] == str(len(pattern))
            and after["favourite"] == favourite,
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
    ``queue``: click reached the server -> its callback started; ``shown``: click reached
    the server -> the next question and the new count sent."""
    ours = {r["session"] for r in runs}
    rows = []
    if log.exists():
        for line in log.read_text().splitlines():
            row = json.loads(line)
            if row.get("session") in ours:
                rows.append(row)
    return {
        "server_s": _pcts([r["server_s"] for r in rows]),
        "queue_s": _pcts([r["queue_s"] for r in rows]),
        "shown_s": _pcts([r["shown_s"] for r in rows if "shown_s" in r]),
        "processes": len({r["pid"] for r in rows}),
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


async def run(n: int, k: int, seed: int) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dtpbo-visitors-") as tmp:
        work = Path(tmp)
        log = work / "answers.jsonl"
        env = {"DTPBO_NO_DEFAULT_RESULTS": "1", "DTPBO_ANSWER_LOG": str(log)}
        with streamlit_server(work, extra_env=env) as url:
            async with async_playwright() as p:
                browser = await p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
                start = asyncio.Barrier(n)
                t0 = time.perf_counter()
                runs = await asyncio.gather(
                    *(visitor(browser, url, q, start) for q in patterns(n, k, seed))
                )
                wall = time.perf_counter() - t0
                await browser.close()
            checks = audit(work / "data_home" / "dashboard" / "sessions.sqlite", runs, k)
            server = server_times(log, runs)
    screen = _pcts([x for r in runs for x in r["on_screen"] if x is not None])
    driver = _pcts([x for r in runs for x in r["latencies"]])
    return {
        "visitors": n,
        "answers_each": k,
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
        "wall_s": round(wall, 1),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "runs": [
            {k_: v for k_, v in r.items() if k_ not in ("latencies", "on_screen")} for r in runs
        ],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--visitors", type=int, default=8, help="browser contexts (default 8)")
    ap.add_argument("--answers", type=int, default=5, help="answers per visitor (default 5)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the answer patterns")
    ap.add_argument("--json", default="-", help="write the figures here ('-' = stdout)")
    args = ap.parse_args(argv)
    res = asyncio.run(run(args.visitors, args.answers, args.seed))
    text = json.dumps(res, indent=1)
    if args.json == "-":
        print(text)
    else:
        Path(args.json).write_text(text)
    ok = (
        res["stored_answers"] == res["expected_answers"]
        and res["mixed"] == 0
        and res["duplicated"] == 0
        and res["visitors_seeing_own_answers_after_reload"] == res["visitors"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
