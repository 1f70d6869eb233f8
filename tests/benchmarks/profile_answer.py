"""Where a Live elicitation answer's server time goes: cProfile of the answers' reruns.

Starts the dashboard as ``python -m dashboard`` does, but through this file, which first
wraps Streamlit's ``ScriptRunner._run_script`` (the script thread's run of one rerun) in
:mod:`cProfile` for the reruns an answer button started (the keys of
:data:`dashboard._services.elicitation.ANSWER_KEYS`); other reruns (opening the page,
the idle tab switches) are not profiled. One Chromium page opens Live elicitation
(electricity, default options) and answers ``--answers`` questions one after the other
(A, B, A, ...), waiting until the page is idle between two. Reported:

* per answer: the rerun's wall time and its thread's CPU time, the whole process's CPU
  over the same interval (the event loop's serialising and sending included), and the
  server's own answer clock (``DTPBO_ANSWER_LOG``: click reached the server -> rerun done);
* the functions taking most of the profiled reruns' time (cumulative and own), summed over
  the answers (the first answer is left out: it fills the per-session caches).

    python tests/benchmarks/profile_answer.py --answers 10 --json -

The profiler slows Python code down (each call is counted): read the shares, not the
absolute times; those are ``concurrent_visitors.py``'s. Needs ``pip install playwright``
and ``/usr/bin/chromium``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the tests package importable
    sys.path.insert(0, str(ROOT))

#: Set (to a folder) in the server process this file starts: profile there.
PROFILE_ENV = "DTPBO_PROFILE_DIR"
#: ``cpu`` (default), ``wall`` or ``off``: the profiler's clock in that process (``--clock``).
CLOCK_ENV = "DTPBO_PROFILE_CLOCK"
#: Comma-separated ``module:attribute`` (or ``module:Class.method``) callables timed per
#: answer (``--section``): the script thread's CPU time inside them, without cProfile's
#: per-call cost (which inflates code of many small calls).
SECTIONS_ENV = "DTPBO_PROFILE_SECTIONS"
_tls = threading.local()


def _wrap_section(spec: str) -> None:
    """Replace ``module:attr`` by a wrapper adding its thread CPU time to the answer's."""
    import functools
    import importlib

    mod_name, _, path = spec.partition(":")
    owner: Any = importlib.import_module(mod_name)
    *parents, attr = path.split(".")
    for name in parents:
        owner = getattr(owner, name)
    inner = getattr(owner, attr)

    @functools.wraps(inner)
    def timed(*args: Any, **kwargs: Any) -> Any:
        acc = getattr(_tls, "sections", None)
        depth = getattr(_tls, "depth", {})
        _tls.depth = depth
        if acc is None or depth.get(spec):  # not in an answer, or nested in itself
            return inner(*args, **kwargs)
        depth[spec] = True
        c0 = time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            acc[spec] = acc.get(spec, 0.0) + time.thread_time() - c0
            depth[spec] = False

    setattr(owner, attr, timed)


# ----------------------------------------------------------------------------- server side
def _is_answer_rerun(rerun_data: Any) -> bool:
    from dashboard._services.elicitation import ANSWER_KEYS

    states = getattr(rerun_data, "widget_states", None)
    if states is None:
        return False
    for w in states.widgets:
        if w.WhichOneof("value") == "trigger_value" and w.trigger_value:
            if w.id.rsplit("-", 1)[-1].startswith(ANSWER_KEYS):
                return True
    return False


def install_profiler(out: Path, clock: str = "cpu", sections: list[str] | None = None) -> None:
    """Profile every answer's rerun into ``out/answer-<n>.prof`` (+ ``out/answers.jsonl``);
    ``cpu_clock``: the script thread's CPU time (what the rerun computes), else wall time
    (also the waits: the interpreter lock while the event loop sends, the store's locks);
    ``"off"``: no profile, only the times and the ``sections`` (:func:`_wrap_section`)."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    original = ScriptRunner._run_script
    for spec in sections or []:
        _wrap_section(spec)
    lock = threading.Lock()
    count = [0]

    def _run_script(self: Any, rerun_data: Any) -> None:
        if not _is_answer_rerun(rerun_data):
            return original(self, rerun_data)
        prof = None
        if clock != "off":
            prof = cProfile.Profile(time.thread_time if clock == "cpu" else time.perf_counter)
        _tls.sections = {}
        w0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        if prof is not None:
            prof.enable()
        try:
            return original(self, rerun_data)
        finally:
            if prof is not None:
                prof.disable()
            w1, c1, p1 = time.perf_counter(), time.thread_time(), time.process_time()
            spent, _tls.sections = _tls.sections, None
            with lock:
                count[0] += 1
                n = count[0]
            if prof is not None:
                prof.dump_stats(out / f"answer-{n:03d}.prof")
            row = {"n": n, "wall_s": w1 - w0, "thread_cpu_s": c1 - c0, "process_cpu_s": p1 - p0}
            row["sections_cpu_s"] = spent
            with lock, (out / "answers.jsonl").open("a") as f:
                f.write(json.dumps(row) + "\n")

    ScriptRunner._run_script = _run_script  # type: ignore[method-assign]


def serve() -> int:
    """The server: ``python -m dashboard`` with :func:`install_profiler`."""
    sections = [x for x in os.environ.get(SECTIONS_ENV, "").split(",") if x]
    install_profiler(Path(os.environ[PROFILE_ENV]), os.environ.get(CLOCK_ENV, "cpu"), sections)
    from dashboard.__main__ import main

    return main(sys.argv[1:])


# ----------------------------------------------------------------------------- driver side
def _where(func: tuple[str, int, str]) -> str:
    path, line, name = func
    for root in (str(ROOT) + "/", "site-packages/"):
        if root in path:
            path = path.split(root, 1)[1]
    return f"{path}:{line}({name})" if line else name


def top(stats: pstats.Stats, key: str, n: int, per: int) -> list[dict[str, Any]]:
    """The ``n`` functions with the largest ``key`` (``"cumulative"`` or ``"tottime"``),
    in milliseconds per answer (``per`` answers)."""
    rows = []
    for func, (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": _where(func),
                "calls_per_answer": round(nc / per, 1),
                "own_ms": round(1000 * tt / per, 2),
                "cumulative_ms": round(1000 * ct / per, 2),
            }
        )
    field = "cumulative_ms" if key == "cumulative" else "own_ms"
    return sorted(rows, key=lambda r: -r[field])[:n]


def _pct(values: list[float]) -> dict[str, float | None]:
    import numpy as np

    a = np.asarray(values, dtype=float)
    if not a.size:
        return {"p50": None, "mean": None, "n": 0}
    return {
        "p50": round(float(np.percentile(a, 50)), 4),
        "mean": round(float(a.mean()), 4),
        "n": int(a.size),
    }


def run(
    answers: int,
    n_top: int,
    save: Path | None = None,
    clock: str = "cpu",
    sections: list[str] | None = None,
) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from tests.benchmarks.concurrent_visitors import _METRIC_IS_JS, BROWSER_ARGS, CHROMIUM
    from tests.fixtures.streamlit_server import streamlit_server, wait_until_idle

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dtpbo-profile-") as tmp:
        work = Path(tmp)
        prof_dir = work / "profiles"
        prof_dir.mkdir()
        log = work / "answer_log.jsonl"
        env = {
            "DTPBO_NO_DEFAULT_RESULTS": "1",
            "DTPBO_ANSWER_LOG": str(log),
            PROFILE_ENV: str(prof_dir),
            CLOCK_ENV: clock,
            SECTIONS_ENV: ",".join(sections or []),
        }
        with (
            streamlit_server(work, extra_env=env, launcher=__file__) as url,
            sync_playwright() as p,
        ):
            browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            pg = browser.new_page(viewport={"width": 1400, "height": 1400})
            pg.set_default_timeout(180_000)
            pg.goto(f"{url}/elicitation?study=electricity")
            wait_until_idle(pg)
            for k in range(1, answers + 1):
                pg.get_by_role("button", name=f"I prefer {'AB'[(k - 1) % 2]}").click()
                pg.wait_for_function(_METRIC_IS_JS, arg=["Answers", str(k)], polling=10)
                wait_until_idle(pg, quiet_ms=300)
            browser.close()
        rows = [json.loads(x) for x in (prof_dir / "answers.jsonl").read_text().splitlines()]
        timed = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        files = sorted(prof_dir.glob("answer-*.prof"))[1:]  # the first fills the caches
        stats = pstats.Stats(*map(str, files), stream=io.StringIO()) if files else None
        if save is not None and stats is not None:  # python -m pstats <file>
            stats.dump_stats(str(save))
    steady = rows[1:]
    per = max(1, len(files))
    spent: dict[str, list[float]] = {spec: [] for spec in sections or []}
    for r in steady:
        for spec in spent:
            spent[spec].append(r["sections_cpu_s"].get(spec, 0.0))
    return {
        "answers": answers,
        "profiled_reruns": len(rows),
        "first_answer": rows[0] if rows else None,
        "rerun_wall_s": _pct([r["wall_s"] for r in steady]),
        "rerun_thread_cpu_s": _pct([r["thread_cpu_s"] for r in steady]),
        "process_cpu_during_rerun_s": _pct([r["process_cpu_s"] for r in steady]),
        "answer_clock_server_s": _pct([r["server_s"] for r in timed[1:]]),
        "answer_clock_shown_s": _pct([r["shown_s"] for r in timed[1:] if "shown_s" in r]),
        "sections_cpu_s": {spec: _pct(v) for spec, v in spent.items()},
        "top_cumulative": top(stats, "cumulative", n_top, per) if stats else [],
        "top_own": top(stats, "tottime", n_top, per) if stats else [],
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "profile_clock": clock,
        "note": "times under cProfile (slower than without); per answer, first answer left out",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--answers", type=int, default=10, help="answers to give (default 10)")
    ap.add_argument("--top", type=int, default=40, help="functions listed (default 40)")
    ap.add_argument(
        "--clock",
        choices=("cpu", "wall", "off"),
        default="cpu",
        help="the profile's clock: the script thread's CPU time (default), wall time, or "
        "off (no cProfile: the unprofiled times and --section figures)",
    )
    ap.add_argument(
        "--section",
        action="append",
        default=[],
        help="module:attribute (or module:Class.method) whose CPU time per answer is "
        "reported (repeatable), e.g. dashboard._ui:tree_with_downloads",
    )
    ap.add_argument("--save", type=Path, help="also write the summed profile here (pstats)")
    ap.add_argument("--json", default="-", help="write the figures here ('-' = stdout)")
    args = ap.parse_args(argv)
    text = json.dumps(run(args.answers, args.top, args.save, args.clock, args.section), indent=1)
    if args.json == "-":
        print(text)
    else:
        Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(serve() if os.environ.get(PROFILE_ENV) else main())
