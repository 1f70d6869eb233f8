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
* answer latency under that load: click -> the page shows the new answer count (the
  write, the refit and the redraw of the answer's fragment), p50 / p95 / mean over all
  N x K answers.

    python tests/benchmarks/concurrent_visitors.py --visitors 8 --answers 5 --json -

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
    await pg.wait_for_selector('[data-testid="stAppViewContainer"]', timeout=timeout_s * 1000)
    start = last = time.perf_counter()
    while True:
        now = time.perf_counter()
        if await pg.evaluate(_BUSY_JS):
            last = now
        elif now - last >= quiet_ms / 1000:
            return
        if now - start > timeout_s:
            raise TimeoutError("the page was still running")
        await asyncio.sleep(0.025)


async def _metric(pg: Any, label: str) -> str | None:
    return await pg.evaluate(_METRIC_JS, [label])


async def _wait_metric(pg: Any, label: str, value: str, timeout_s: float = 180.0) -> None:
    deadline = time.perf_counter() + timeout_s
    while await _metric(pg, label) != value:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{label} did not become {value!r}")
        await asyncio.sleep(0.01)


async def visitor(browser: Any, url: str, pattern: list[str], start: asyncio.Barrier) -> dict:
    """One person: open, answer ``pattern``, reload; what they saw and the latencies."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1400})
    ctx.set_default_timeout(180_000)
    try:
        pg = await ctx.new_page()
        await pg.goto(f"{url}/elicitation?study=electricity")
        await _idle(pg)
        await _wait_metric(pg, "Answers", "0")
        await start.wait()  # everyone has the page open before anyone answers
        latencies = []
        for k, side in enumerate(pattern, start=1):
            t0 = time.perf_counter()
            await pg.get_by_role("button", name=f"I prefer {side}").click()
            await _wait_metric(pg, "Answers", str(k))
            latencies.append(time.perf_counter() - t0)
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
            "favourite": favourite,
            "after_reload": after,
            "own_after_reload": after["answers"] == str(len(pattern))
            and after["favourite"] == favourite,
        }
    finally:
        await ctx.close()


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
        with streamlit_server(work, extra_env={"DTPBO_NO_DEFAULT_RESULTS": "1"}) as url:
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
    lat = np.array([x for r in runs for x in r["latencies"]])
    return {
        "visitors": n,
        "answers_each": k,
        "expected_answers": n * k,
        **checks,
        "visitors_seeing_own_answers_after_reload": int(sum(r["own_after_reload"] for r in runs)),
        "latency_s": {
            "p50": round(float(np.percentile(lat, 50)), 3),
            "p95": round(float(np.percentile(lat, 95)), 3),
            "mean": round(float(lat.mean()), 3),
            "n": int(lat.size),
        },
        "wall_s": round(wall, 1),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "runs": [{k_: v for k_, v in r.items() if k_ != "latencies"} for r in runs],
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
