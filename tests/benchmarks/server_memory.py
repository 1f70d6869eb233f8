"""What the server process holds: its resident size before, during and after N large
imports, against its documented bound.

Drives the dashboard's pages in one process with Streamlit's ``AppTest`` (the page
scripts, the process-wide caches and the job service exactly as a server runs them; no
browser is needed), in shared mode with an empty data folder: N visitors, each a new
visitor token (a new browser), import a generated long choice file of about ``--mb`` MB
through the Case studies page's Add-a-study form (upload, import) and then open it on
that page (the study is loaded). The baseline is the process after one visit without
an import (the pages' modules imported, the first study loaded). After every import it
records the process's resident size (``VmRSS``) and its peak so far (``VmHWM``), and the
job workers' resident sizes (they run imports and checks when the code sends them
there). The limits that would refuse the imports (per visitor, per address, the
visitors' space) are raised for the run.

**The bound** (docs/shared-server.md): after any number of imports, with no browser tab
open, the page process holds at most its size after the first visit, plus
:data:`IMPORT_PATH_MB` once (the import path's modules and buffers), plus the kept
studies' budget (``$DTPBO_OWN_STUDY_CACHE_MB``, 256 MB; each open tab adds its upload,
at most 32 MB). The run checks it after every import from the first on and exits 1
when any is over. At the end it lets go of what the process holds, one part at a time
(free heap pages, then the kept studies), and records the size after each: what is
left is what the imports did not give back.

``--shape one-task`` gives every respondent one choice of two, as many lines as the
import limits allow (1,000,000): the largest loaded study of a long file (about 70 MB
against about 20 MB for the default panel of 8 tasks).

    python tests/benchmarks/server_memory.py --imports 30 --json -
    python tests/benchmarks/server_memory.py --imports 10 --shape one-task --json -
    python tests/benchmarks/server_memory.py --root /tmp/old-checkout --imports 17 --json -

``--root`` runs another checkout's code (e.g. an older commit from ``git archive``) with
the same driver, to compare. The figures go to docs/shared-server.md with the command.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The import path's one-time cost in the page process, MB: the modules of the form, the
#: job service's transport and the first loaded own study's classes (measured 56 MB on
#: 2026-12-06: the process after the first visit 394 MB, after 30 imports with its kept
#: studies let go 450 MB).
IMPORT_PATH_MB = 100.0
#: What the kept studies may hold, MB (``$DTPBO_OWN_STUDY_CACHE_MB``'s default).
STUDY_CACHE_MB = 256.0


def rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


def children_rss_mb() -> float:
    """Resident MB of this process's children (the job workers)."""
    total = 0.0
    for task in Path("/proc/self/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for k in kids:
            try:
                total += rss_mb(k)[0]
            except OSError:
                pass
    return total


def big_csv(path: Path, mb: float, seed: int = 0, shape: str = "panel") -> Path:
    """A long choice file of about ``mb`` MB: respondents x 8 tasks x 2 profiles
    (``panel``), or one task of 2 profiles per respondent with as many lines as the import
    limits allow (``one-task``: 1,000,000 lines; ``mb`` is then not used)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    if shape == "one-task":
        n_resp = 499_999  # 999,998 lines and the header: the limit is 1,000,000
        rows_per_resp, n_tasks = 2, 1
    else:
        rows_per_resp, n_tasks = 16, 8
        bytes_per_row = 36
        n_resp = max(int(mb * 2**20 / bytes_per_row / rows_per_resp), 10)
    n = n_resp * rows_per_resp
    resp = np.repeat(np.arange(1, n_resp + 1), rows_per_resp)
    task = np.tile(np.repeat(np.arange(1, n_tasks + 1), 2), n_resp)
    profile = np.tile([1, 2], n // 2)
    best = rng.integers(1, 3, size=n // 2)
    chosen = (profile == np.repeat(best, 2)).astype(int)
    columns = {
        "respondent": resp,
        "task": task,
        "profile": profile,
        "chosen": chosen,
        "price": rng.choice([10, 20, 30, 40], size=n),
    }
    if shape != "one-task":  # within the 20 MB file limit at 1,000,000 lines
        columns.update(
            time=rng.choice([15, 30, 45, 60], size=n),
            speed=rng.choice(["slow", "medium", "fast"], size=n),
            wifi=rng.choice(["no", "yes"], size=n),
            seat=rng.choice(["standard", "comfort"], size=n),
        )
    pd.DataFrame(columns).to_csv(path, index=False)
    return path


def child(args: argparse.Namespace) -> dict:
    from streamlit.testing.v1 import AppTest

    app = Path(args.root) / "dashboard" / "app.py"

    def upload(k: int) -> bytes:
        """The k-th visitor's file (written by the parent before this process started,
        so making it costs this process nothing): its own, or the same (``--same-file``)."""
        return (Path(args.work) / f"big-{0 if args.same_file else k}.csv").read_bytes()

    content = upload(0)
    out: dict = {
        "root": str(args.root),
        "file_mb": round(len(content) / 2**20, 1),
        "distinct_files": not args.same_file,
        "imports": [],
    }
    # the server's preload: the job workers start before any visitor
    try:
        from dashboard._services import jobs

        if not jobs.inline():
            jobs.service().start_workers(wait=True)
    except Exception as exc:  # an older checkout
        out["workers"] = f"not started: {exc}"
    # one visit first (the pages' modules imported, the first study loaded): the server
    # before any import, as a visitor finds it
    warm = AppTest.from_file(str(app), default_timeout=600)
    warm.session_state["dtpbo_visitor"] = secrets.token_urlsafe(24)
    warm.run()
    del warm
    gc.collect()
    before = rss_mb()[0]
    t_all = time.perf_counter()
    for k in range(args.imports):
        content = upload(k)
        at = AppTest.from_file(str(app), default_timeout=600)
        at.session_state["dtpbo_visitor"] = secrets.token_urlsafe(24)
        at.run()
        t0 = time.perf_counter()
        at.file_uploader(key="add_choices").upload("big.csv", content, "text/csv").run()
        at.text_input(key="add_title::big.csv").input(f"Big {k}").run()
        at.button(key="add_import").click().run()
        seconds = time.perf_counter() - t0
        errors = [e.value for e in at.exception] + [e.value for e in at.error]
        key = at.session_state["sel_study"] if "sel_study" in at.session_state else None
        del at
        gc.collect()
        rss, hwm = rss_mb()
        out["imports"].append(
            {
                "n": k + 1,
                "study": key,
                "seconds": round(seconds, 1),
                "rss_mb": round(rss, 1),
                "peak_mb": round(hwm, 1),
                "workers_rss_mb": round(children_rss_mb(), 1),
                "errors": [str(e)[:200] for e in errors],
            }
        )
        print(json.dumps(out["imports"][-1]), file=sys.stderr, flush=True)
    gc.collect()
    rss, hwm = rss_mb()
    out["released"] = let_go()
    out.update(
        rss_before_mb=round(before, 1),
        rss_after_mb=round(rss, 1),
        peak_mb=round(hwm, 1),
        held_mb=round(rss - before, 1),
        workers_rss_mb=round(children_rss_mb(), 1),
        seconds=round(time.perf_counter() - t_all, 1),
        studies=len(list((Path(args.work) / "data_home" / "studies").glob("my-*"))),
    )
    return out


def let_go() -> list[dict]:
    """The process's resident size as it lets go of what it holds, one part at a time:
    the heap's free pages (glibc's ``malloc_trim``), then the kept studies (how many and
    their :func:`dashboard._memory.footprint` first). What is left is the import path's
    one-time cost and anything the imports did not give back."""
    try:
        from dashboard import _memory
        from dashboard._services import studies

        cache = studies._OWN_STUDIES
    except (ImportError, AttributeError) as exc:  # an older checkout
        return [{"step": f"not measured: {exc}"}]
    steps = [{"step": "after the imports", "rss_mb": round(rss_mb()[0], 1)}]
    _memory.trim(collect=True)
    steps.append({"step": "free heap pages given back", "rss_mb": round(rss_mb()[0], 1)})
    kept, kept_mb = len(cache), cache.nbytes / 2**20
    cache.clear()
    _memory.trim(collect=True)
    steps.append(
        {
            "step": f"the {kept} kept studies ({kept_mb:.1f} MB) let go",
            "rss_mb": round(rss_mb()[0], 1),
            "kept_studies": kept,
            "kept_mb": round(kept_mb, 1),
        }
    )
    return steps


def check_bound(result: dict) -> dict:
    """The documented bound (module docstring) against every import's resident size."""
    bound = result["rss_before_mb"] + IMPORT_PATH_MB + STUDY_CACHE_MB
    sizes = [i["rss_mb"] for i in result.get("imports", [])]
    over = [i["n"] for i in result.get("imports", []) if i["rss_mb"] > bound]
    return {
        "bound_mb": round(bound, 1),
        "bound": f"after one visit {result['rss_before_mb']:.1f} + import path "
        f"{IMPORT_PATH_MB:.0f} + kept studies {STUDY_CACHE_MB:.0f} MB",
        "max_after_an_import_mb": max(sizes, default=0.0),
        "imports_over_bound": over,
        "within_bound": not over,
    }


def browser_run(args: argparse.Namespace, work: Path, env: dict[str, str]) -> dict:
    """The same visitors in Chromium against a real ``python -m dashboard`` (``--browser``):
    each a new browser context that opens the Case studies page, imports its own file
    through the form, sees its study and closes; the server process's resident size after
    each, its peak, the job workers', and the server idle after the sessions of the
    closed tabs have expired (Streamlit keeps a closed tab's session, with its upload,
    ``server.disconnectedSessionTTL`` seconds)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from playwright.sync_api import expect, sync_playwright

    from tests.fixtures.streamlit_server import (
        BROWSER_ARGS,
        CHROMIUM,
        attach_file,
        streamlit_server,
        wait_until_idle,
    )

    def workers_mb(pid: int) -> float:
        total = 0.0
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    parent = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    if parent == pid:
                        total += rss_mb(d.name)[0]
                except (OSError, IndexError, ValueError):
                    pass
        return total

    extra = {k: v for k, v in env.items() if k.startswith("DTPBO_") and k != "DTPBO_DATA_HOME"}
    out: dict = {"root": str(args.root), "browser": True, "distinct_files": not args.same_file}
    out["imports"] = []
    ttl = 120  # Streamlit's server.disconnectedSessionTTL (the dashboard keeps its default)
    with (
        streamlit_server(
            work,
            root=Path(args.root),
            extra_env=extra,
            data_home=Path(env["DTPBO_DATA_HOME"]),
            timeout=180,
            launcher=os.environ.get("DTPBO_MEMORY_LAUNCHER", "module"),
        ) as url,
        sync_playwright() as p,
    ):
        pid = int((work / "streamlit.pid").read_text())
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        expect.set_options(timeout=600_000)
        time.sleep(5)  # the launcher's preload (modules, the first study, the workers)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
        pg = ctx.new_page()
        pg.goto(url)
        wait_until_idle(pg, timeout=600_000)
        ctx.close()
        time.sleep(2)
        out["rss_before_mb"] = round(rss_mb(pid)[0], 1)
        t_all = time.perf_counter()
        for k in range(args.imports):
            path = work / f"big-{0 if args.same_file else k}.csv"
            ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
            pg = ctx.new_page()
            pg.set_default_timeout(600_000)
            t0 = time.perf_counter()
            pg.goto(url)
            wait_until_idle(pg, timeout=600_000)
            pg.get_by_text("Add a study (your own choice data)").click()
            box = pg.locator('[data-testid="stFileUploader"]').first
            box.wait_for(state="visible")
            attach_file(box, path, wait_ms=120_000)
            wait_until_idle(pg, timeout=600_000)
            title = pg.get_by_label("Study title")
            title.fill(f"Big {k}")
            title.press("Enter")
            wait_until_idle(pg, timeout=600_000)
            pg.get_by_role("button", name="Import study").click()
            expect(pg.get_by_text("it is selected below")).to_be_visible()
            wait_until_idle(pg, timeout=600_000)
            seconds = time.perf_counter() - t0
            ctx.close()  # the visitor leaves
            time.sleep(1)
            rss, hwm = rss_mb(pid)
            out["imports"].append(
                {
                    "n": k + 1,
                    "seconds": round(seconds, 1),
                    "rss_mb": round(rss, 1),
                    "peak_mb": round(hwm, 1),
                    "workers_rss_mb": round(workers_mb(pid), 1),
                }
            )
            print(json.dumps(out["imports"][-1]), file=sys.stderr, flush=True)
        # the closed tabs' sessions expire (and the server's sweep, every 30 s, frees them)
        time.sleep(ttl + 60)
        rss, hwm = rss_mb(pid)
        out.update(
            rss_after_mb=round(out["imports"][-1]["rss_mb"], 1) if out["imports"] else rss,
            rss_idle_mb=round(rss, 1),
            peak_mb=round(hwm, 1),
            held_mb=round(rss - out["rss_before_mb"], 1),
            workers_rss_mb=round(workers_mb(pid), 1),
            seconds=round(time.perf_counter() - t_all, 1),
            session_ttl_s=ttl,
        )
        browser.close()
    out["studies"] = len(list((Path(env["DTPBO_DATA_HOME"]) / "studies").glob("my-*")))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--imports", type=int, default=17, help="visitors importing (default 17)")
    p.add_argument("--mb", type=float, default=18.0, help="size of each file (default 18)")
    p.add_argument("--root", default=str(ROOT), help="the checkout to run (default this one)")
    p.add_argument(
        "--shape",
        choices=("panel", "one-task"),
        default="panel",
        help="the files: respondents x 8 tasks of about --mb MB (default), or one task per "
        "respondent at the import's line limit",
    )
    p.add_argument(
        "--browser",
        action="store_true",
        help="drive a real python -m dashboard in Chromium (Playwright, /usr/bin/chromium) "
        "instead of AppTest in one process",
    )
    p.add_argument(
        "--same-file",
        action="store_true",
        help="every visitor imports the same file (default: each its own, as visitors do)",
    )
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON ('-': stdout)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        result = child(args)
        Path(args.work, "result.json").write_text(json.dumps(result))
        return 0
    with tempfile.TemporaryDirectory(prefix="dtpbo-mem-") as work:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DTPBO_")}
        env.update(
            PYTHONPATH=str(Path(args.root).resolve()),
            DTPBO_DATA_HOME=str(Path(work) / "data_home"),
            DTPBO_SHARED_SERVER="1",
            DTPBO_NO_PRECOMPUTE="1",
            DTPBO_NO_TREE_CHOICE="1",
            DTPBO_NO_DEFAULT_RESULTS="1",
            DTPBO_MAX_STUDIES_PER_ADDRESS="1000",
            DTPBO_MAX_VISITOR_STUDY_BYTES=str(64 * 2**30),
            DTPBO_MAX_ADDRESS_STUDY_BYTES=str(64 * 2**30),
        )
        for k in range(1 if args.same_file else max(args.imports, 1)):
            big_csv(Path(work) / f"big-{k}.csv", args.mb, seed=k, shape=args.shape)
        if args.browser:
            result = browser_run(args, Path(work), env)
            return _report(result, args)
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            "--work",
            work,
            "--imports",
            str(args.imports),
            "--mb",
            str(args.mb),
            "--root",
            str(Path(args.root).resolve()),
            *(["--same-file"] if args.same_file else []),
        ]
        subprocess.run(cmd, cwd=args.root, env=env, check=True)
        result = json.loads(Path(work, "result.json").read_text())
    return _report(result, args)


def _report(result: dict, args: argparse.Namespace) -> int:
    result["load_avg"] = os.getloadavg()[0]
    result["shape"] = args.shape
    if result.get("browser"):  # tabs open until their sessions expire: the idle size
        result.update(
            check_bound({**result, "imports": [{"n": 0, "rss_mb": result["rss_idle_mb"]}]})
        )
    else:
        result.update(check_bound(result))
    text = json.dumps(result, indent=1)
    if args.json == "-":
        print(text)
    elif args.json:
        Path(args.json).write_text(text)
    else:
        keys = ("rss_before_mb", "rss_after_mb", "peak_mb", "held_mb", "workers_rss_mb")
        print({k: result[k] for k in (*keys, "bound_mb", "within_bound")})
    return 0 if result["within_bound"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
