"""How soon each page answers on a fresh install's first visit, with the machine busy.

Starts CPU-bound processes beside everything else (``--busy``, default twice the cores)
and waits until the 1-minute load average reaches ``--load`` (default 4), then starts
``python -m dashboard`` (as ``make run`` does) on an empty data folder, waits for its
ready line (``--at-once``: visits as soon as it answers) and, in Chromium
(Playwright; Debian's ``/usr/bin/chromium``, never ``playwright install``), opens the
first page by its address and every other page by a click in the sidebar, as a visitor
does. For each page it records the seconds from the navigation to its first chart, tree
or table, or its progress bar, whichever comes first (the page is answering, not
blank), which of the two it was, when the page's title was shown, for the first page when
Streamlit's frontend had loaded (its app element in the page, before the page's script
has sent anything), and the load average then. The
target: every page within :data:`TARGET_S` (2 s); the exit status is 1 when a page
misses it.

    python tests/benchmarks/first_paint.py --json -
    python tests/benchmarks/first_paint.py --at-once --json -   # before the ready line
    python tests/benchmarks/first_paint.py --busy 0 --load 0 --json -   # a quiet machine
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Seconds within which a page shows its content or a progress bar.
TARGET_S = 2.0


def _spin() -> None:  # pragma: no cover - a separate process
    while True:
        pass


def busy(n: int) -> list[mp.Process]:
    """``n`` processes that keep a core each busy until terminated."""
    procs = [mp.Process(target=_spin, daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    return procs


def wait_for_load(target: float, timeout: float = 180.0) -> float:
    """Wait until the 1-minute load average is at least ``target`` (at most ``timeout``
    seconds: the run goes on and records the load it found); the load average reached."""
    t0 = time.monotonic()
    while os.getloadavg()[0] < target and time.monotonic() - t0 < timeout:
        time.sleep(2)
    return os.getloadavg()[0]


def visit(url: str) -> list[dict]:
    """Every page of the dashboard once, in one browser session; a row per page."""
    from playwright.sync_api import sync_playwright

    from dashboard.pages import url_titles
    from tests.fixtures.streamlit_server import (
        BROWSER_ARGS,
        CHROMIUM,
        first_paint,
        wait_until_idle,
    )

    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        pg = browser.new_context(viewport={"width": 1400, "height": 1600}).new_page()
        pg.set_default_timeout(120_000)
        for i, title in enumerate(url_titles().values()):
            t0 = time.perf_counter()
            frontend = None
            if i == 0:
                pg.goto(url, wait_until="commit")
                pg.locator('[data-testid="stApp"]').wait_for(state="attached")
                frontend = round(time.perf_counter() - t0, 2)
            else:
                nav = pg.locator('[data-testid="stSidebarNav"]')
                nav.get_by_text(title, exact=True).click()
            pg.locator("h1", has_text=title).wait_for()
            titled = time.perf_counter() - t0
            first = first_paint(pg, timeout_ms=120_000)
            seconds = time.perf_counter() - t0
            rows.append(
                {
                    "page": title,
                    "by": "address" if i == 0 else "sidebar",
                    "seconds": round(seconds, 2),
                    "title_s": round(titled, 2),
                    "frontend_s": frontend,
                    "first": first,
                    "load_avg": round(os.getloadavg()[0], 2),
                    "within_target": seconds <= TARGET_S,
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            wait_until_idle(pg, timeout=600_000)  # the page's run ends before the next
        browser.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--busy", type=int, default=2 * (os.cpu_count() or 1), help="CPU-bound processes"
    )
    p.add_argument("--load", type=float, default=4.0, help="load average to wait for")
    p.add_argument(
        "--at-once",
        action="store_true",
        help="visit as soon as the server answers, before its ready line (its preload then "
        "competes with the first page)",
    )
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON ('-': stdout)")
    args = p.parse_args(argv)
    from tests.fixtures.server_visits import wait_ready
    from tests.fixtures.streamlit_server import streamlit_server

    procs = busy(args.busy)
    try:
        reached = wait_for_load(args.load) if args.load > 0 else os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="dtpbo-paint-") as work:
            t0 = time.perf_counter()
            with streamlit_server(Path(work), timeout=600) as url:
                answering = time.perf_counter() - t0
                ready = None
                if not args.at_once:
                    ready = answering + wait_ready(Path(work) / "streamlit.log", timeout=600)
                rows = visit(url)
    finally:
        for proc in procs:
            proc.terminate()
    result = {
        "busy_processes": args.busy,
        "cores": os.cpu_count(),
        "load_avg_at_start": round(reached, 2),
        "server_answering_s": round(answering, 1),
        "server_ready_s": None if ready is None else round(ready, 1),
        "visited": "as soon as the server answered" if args.at_once else "after its ready line",
        "target_s": TARGET_S,
        "pages": rows,
        "slowest_s": max(r["seconds"] for r in rows),
        "all_within_target": all(r["within_target"] for r in rows),
    }
    text = json.dumps(result, indent=1)
    if args.json == "-":
        print(text)
    elif args.json:
        Path(args.json).write_text(text)
    else:
        for r in rows:
            print(f"{r['page']:<22} {r['seconds']:>6.2f} s  {r['first']:<12} load {r['load_avg']}")
    return 0 if result["all_within_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
