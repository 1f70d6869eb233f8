"""Answer -> next question latency per query rule, in the session and in a real browser.

Two measurements per method (default ``dt``, ``dt-linear``, ``linear-eubo``):

``session``
    In process: :class:`~pbo_core.session.ElicitationSession` on the Electricity items
    (with the study's respondents as prior for the linear methods, as the Live
    elicitation page builds it) and on Branin; seconds of ``answer()`` (refit) plus
    ``next_query()`` (qEUBO) per answer, answers by the true utility (Branin) or
    alternating A/B (Electricity, which has no known truth).
``browser``
    The Live elicitation page in Debian's Chromium (Playwright): the method is chosen in
    the page's "Query rule" box, then the time from the click on an answer button until
    the next question's heading is in the page (as ``browser_latency.py``).

Target: ``dt-linear`` answer -> next question p50 <= 0.3 s in the browser.

    python tests/benchmarks/elicitation_latency.py --answers 15 --json -
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, ROOT / "tests" / "benchmarks"):
    if str(p) not in sys.path:  # run as a script
        sys.path.insert(0, str(p))

from browser_latency import (  # noqa: E402
    BROWSER_ARGS,
    CHROMIUM,
    answer_latencies,
    reference_seconds,
    settle,
    summary,
)

from tests.fixtures.streamlit_server import streamlit_server  # noqa: E402

METHODS = ("dt", "dt-linear", "linear-eubo")


def session_latencies(method: str, answers: int) -> dict[str, Any]:
    """In-process answer + next question seconds on Electricity items and on Branin."""

    from data_loaders.cached import load_study_cached
    from pbo_core.registry import get
    from pbo_core.session import ElicitationSession, study_item_set
    from pbo_core.strategies.linear_leaves import pooled_slope_prior

    study = load_study_cached("electricity")
    options: dict[str, Any] = {}
    if get(method).takes_prior:  # as dashboard._services.elicitation.study_prior
        options["slope_prior"] = pooled_slope_prior(study.data)
    out: dict[str, Any] = {}
    for name in ("electricity", "branin"):
        if name == "electricity":
            s = ElicitationSession.for_items(
                **study_item_set(study, seed=0), strategy=method, strategy_options=options
            )
        else:
            s = ElicitationSession.for_benchmark("branin", method)
        times = []
        for k in range(answers):
            q = s.next_query()
            side = s.oracle_winner(q) if s.has_truth else "AB"[k % 2]
            t0 = time.perf_counter()
            s.answer(side)
            s.next_query()
            times.append(time.perf_counter() - t0)
        out[name] = summary(times)
    return out


def browser_latencies(methods: list[str], answers: int) -> dict[str, Any]:
    """Answer -> next question in Chromium, per method, on the Electricity items."""
    from playwright.sync_api import sync_playwright

    from dashboard._services.elicitation import rule_label

    out: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        streamlit_server(Path(tmp), ROOT, launcher="module") as url,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        pg = browser.new_context(viewport={"width": 1400, "height": 1600}).new_page()
        pg.set_default_timeout(120_000)
        pg.goto(f"{url}/elicitation?study=electricity")
        settle(pg)
        for method in methods:
            pg.locator('[data-testid="stSelectbox"]', has_text="Query rule").first.click()
            pg.get_by_role("option", name=rule_label(method)).click()
            settle(pg)
            pg.locator("h3", has_text="Question 1:").first.wait_for(state="visible")
            out[method] = summary(answer_latencies(pg, answers))
        browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--answers", type=int, default=15, help="answers per method (default 15)")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods")
    ap.add_argument("--no-browser", action="store_true", help="session timings only")
    ap.add_argument("--json", default="-", help="write the figures here ('-' = stdout)")
    args = ap.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    ref0 = reference_seconds()
    res: dict[str, Any] = {
        "session": {m: session_latencies(m, args.answers) for m in methods},
    }
    if not args.no_browser:
        res["browser_electricity"] = browser_latencies(methods, args.answers)
    res["reference_workload_s"] = [round(ref0, 3), round(reference_seconds(), 3)]
    res["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    res["cpus"] = os.cpu_count()
    res["target_answer_p50_s"] = 0.3
    text = json.dumps(res, indent=1)
    if args.json == "-":
        print(text)
    else:
        Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
