"""Warm page switches of the dashboard in Streamlit's AppTest (no browser).

Every page is visited once (its caches warmed), then each switch is timed ``--rounds``
times. Bundled data only, a throw-away data folder, no default result grids (as in
``tests/dashboard``). Target: every warm switch under 2 s (about 0.05-0.2 s on a quiet
machine); ``browser_latency.py`` measures the same in a real browser.

    python tests/benchmarks/apptest_switches.py --rounds 2 --json -

Exits 1 when ``--check`` is given and the slowest switch exceeds the target.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the dashboard package importable
    sys.path.insert(0, str(ROOT))

import dashboard.pages  # noqa: E402

APP = ROOT / "dashboard" / "app.py"
TARGET_S = 2.0
USER_DATA_ENV = ("DTPBO_SUSHI_DIR", "DTPBO_BELA_PATH", "DTPBO_PRESIDENTIAL_PATH", "DTPBO_PMR_DIR")
PAGES = tuple(Path(script).stem for script, _, _ in dashboard.pages.PAGES)


def switch_times(rounds: int) -> dict[str, list[float]]:
    """Seconds of each warm switch to each page, ``rounds`` per page."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=300)
    at.run()
    for page in PAGES:  # warm every cache
        at.switch_page(f"views/{page}.py").run()
    times: dict[str, list[float]] = {page: [] for page in PAGES}
    for _ in range(rounds):
        for page in PAGES:
            t0 = time.perf_counter()
            at.switch_page(f"views/{page}.py").run()
            times[page].append(time.perf_counter() - t0)
            if at.exception:
                raise RuntimeError(f"{page}: {[e.value for e in at.exception]}")
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", metavar="PATH|-", help="write the figures as JSON")
    ap.add_argument("--check", action="store_true", help=f"exit 1 above {TARGET_S} s")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for name in USER_DATA_ENV:
            os.environ.pop(name, None)
        os.environ.update(DTPBO_DATA_HOME=str(Path(tmp) / "data_home"))
        os.environ.update(DTPBO_NO_DEFAULT_RESULTS="1")
        os.chdir(tmp)
        times = switch_times(args.rounds)
    out = {
        "rounds": args.rounds,
        "median_s": {p: round(statistics.median(t), 3) for p, t in times.items()},
        "max_s": {p: round(max(t), 3) for p, t in times.items()},
        "target_s": TARGET_S,
    }
    slowest = max(out["max_s"].values())
    if args.json:
        text = json.dumps(out, indent=2)
        print(text) if args.json == "-" else Path(args.json).write_text(text + "\n")
    for page in PAGES:
        print(f"{page:16s} median {out['median_s'][page]:.3f} s  max {out['max_s'][page]:.3f} s")
    return 1 if args.check and slowest > TARGET_S else 0


if __name__ == "__main__":
    raise SystemExit(main())
