"""The answer first, in a real browser at 1440x900: one tour of every page on
each bundled study and an imported one.

* Every page's main picture (the tree, the segment tree, the sensitivity chart, the
  curves, the question, the studies' table) starts on the first screen: its top edge is
  measured (pixels from the top of the viewport, nothing scrolled) and must leave at least
  :data:`MIN_VISIBLE` pixels of it on the screen. The offsets are printed and written to
  ``tests/artifacts/first_screen.json``.
* The Tree explorer's default view is the whole study: its title names no single
  respondent; no leaf box of a default view (nor of the linear-leaf tree's) has more than
  four lines of text; "not identified" is said at most once.
* ``?present=1`` shows the tree, its caption and the held-out evidence line, and no input
  widget.

One browser session and one server for the whole tour (CI time). Skipped without
Playwright or ``/usr/bin/chromium`` (as ``test_e2e.py``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.dashboard.test_e2e import ARTIFACTS, BROWSER_ARGS, CHROMIUM, TREE_FRAME, _bench_results
from tests.dashboard.test_e2e import settle as _settle
from tests.fixtures.streamlit_server import ROOT, browser_api, streamlit_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
sync_api = browser_api()

VIEWPORT = {"width": 1440, "height": 900}
#: At least this much of the main picture is on the first screen (px).
MIN_VISIBLE = 200
#: The bundled studies (every page that takes a study is toured on each).
BUNDLED = ("train", "electricity", "swissmetro", "pmr-demo")
IMPORTED_TITLE = "Commuter trips (imported)"

#: Streamlit's input widgets (none may be drawn in the presentation view).
INPUTS = (
    "stSelectbox",
    "stMultiSelect",
    "stSlider",
    "stSelectSlider",
    "stTextInput",
    "stTextArea",
    "stNumberInput",
    "stCheckbox",
    "stToggle",
    "stRadio",
    "stButton",
    "stDownloadButton",
    "stButtonGroup",
    "stFileUploader",
    "stTabs",
)


def commuter_study(folder: Path, seed: int = 0) -> Path:
    """A choice file as an analyst brings one: 90 respondents x 8 tasks x 2 trips, a fare
    in CHF and a travel time in minutes, and two respondent features (age group, whether
    they commute); older respondents mind the time more."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(1, 91):
        age = "over 50" if r % 3 == 0 else "under 50"
        commuter = "yes" if r % 2 else "no"
        b_time = -0.06 if age == "over 50" else -0.03
        for t in range(1, 9):
            fares = rng.choice([4, 8, 12, 16, 20, 24], 2, replace=False)
            times = rng.choice([15, 30, 45, 60, 75, 90], 2, replace=False)
            u = -0.15 * fares + b_time * times + rng.gumbel(size=2)
            best = int(np.argmax(u))
            for k in range(2):
                rows.append(
                    (r, t, k + 1, int(k == best), int(fares[k]), int(times[k]), age, commuter)
                )
    cols = ["respondent", "task", "profile", "chosen", "fare", "time", "age_group", "commuter"]
    path = folder / "commuters.csv"
    pd.DataFrame(rows, columns=cols).to_csv(path, index=False)
    attrs = folder / "commuters.json"
    table = [
        {"name": "fare", "kind": "numeric", "label": "Fare", "unit": "CHF"},
        {"name": "time", "kind": "numeric", "label": "Travel time", "unit": "min"},
    ]
    attrs.write_text(json.dumps({"attributes": table}))
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A dashboard with benchmark results (the Convergence page's curves) and the imported
    commuter study (money, time and respondent features named at import); yields its URL
    and the study's key."""
    work = tmp_path_factory.mktemp("e2e-first-screen")
    _bench_results(work / "data_home" / "results" / "bench")
    choices = commuter_study(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DTPBO_")}
    env.update(
        DTPBO_DATA_HOME=str(work / "data_home"), DTPBO_DATA_ROOTS=str(work), PYTHONPATH=str(ROOT)
    )
    done = subprocess.run(
        [sys.executable, "-m", "data_loaders", "import-study", str(choices), "--title",
         IMPORTED_TITLE, "--attributes", str(work / "commuters.json"), "--money-attribute",
         "fare", "--time-attribute", "time", "--respondent-features", "age_group,commuter"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    key = done.stdout.strip().splitlines()[-1]
    # SwissMetro's sensitivity sample: 200 of its 1,191 respondents (an analyst's plan
    # edit; the whole sample takes minutes on a 2-core machine, and the tour measures
    # where the bars are drawn, not what they say)
    subprocess.run(
        [sys.executable, "-m", "data_loaders", "plan", "--study", "swissmetro", "--set",
         "sensitivity_respondents=200"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    extra = {
        "DTPBO_NO_DEFAULT_RESULTS": "1",  # the bench results above are the curves
        "DTPBO_NO_TREE_CHOICE": "1",  # the opening tree needs no comparison (timed CI)
        "DTPBO_NO_PRECOMPUTE": "1",  # the cores for the pages toured
        "DTPBO_DATA_ROOTS": str(work),
    }
    with streamlit_server(work, extra_env=extra) as url:
        yield url, key


def settle(pg) -> None:
    _settle(pg, timeout=120_000)


def top_of(pg, selector: str, timeout: float = 120_000) -> float:
    """The top edge (px from the top of the viewport, the page not scrolled) of the first
    visible element matching ``selector`` in the page's main area."""
    el = pg.locator(f'[data-testid="stMain"] {selector}').first
    try:
        el.wait_for(state="visible", timeout=timeout)
    except sync_api.TimeoutError:  # what the page showed instead, for the CI log
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "first_screen_missing.png"))
        shown = " | ".join(pg.locator('[data-testid="stMain"]').inner_text().split("\n"))
        raise AssertionError(f"{pg.url}: no {selector}; the page showed: {shown[:1500]}") from None
    pg.wait_for_timeout(300)  # the layout of what is drawn below settles
    assert pg.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0
    return float(el.evaluate("e => e.getBoundingClientRect().top"))


def leaf_lines(pg) -> list[int]:
    """The number of text lines of every leaf box the tree view draws."""
    frame = pg.frame_locator(TREE_FRAME).first
    frame.locator("g.node").first.wait_for(state="visible", timeout=120_000)
    return frame.locator("g.node.leaf").evaluate_all(
        "nodes => nodes.map(n => n.querySelectorAll(':scope > text').length)"
    )


def tree_title(pg) -> str:
    frame = pg.frame_locator(TREE_FRAME).first
    return frame.locator("#viewport > text").first.text_content() or ""


def test_every_page_opens_on_its_picture(served) -> None:
    url, imported = served
    studies = (*BUNDLED, imported)
    offsets: dict[str, dict[str, float]] = {}
    lines: dict[str, int] = {}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        pg = browser.new_context(viewport=VIEWPORT).new_page()
        pg.set_default_timeout(120_000)

        def visit(path: str) -> None:
            pg.goto(f"{url}/{path}")
            settle(pg)

        def record(page: str, study: str, top: float) -> None:
            offsets.setdefault(page, {})[study] = round(top)
            assert 0 <= top <= VIEWPORT["height"] - MIN_VISIBLE, (page, study, top)

        for study in studies:
            # Case studies: the studies' table
            visit(f"?study={study}")
            record("case_studies", study, top_of(pg, "table"))
            # Tree explorer: the study-level tree, compact leaves, no respondent named
            visit(f"tree_explorer?study={study}")
            record("tree_explorer", study, top_of(pg, TREE_FRAME))
            counts = leaf_lines(pg)
            lines[f"tree_explorer {study}"] = max(counts)
            assert counts and max(counts) <= 4, (study, counts)
            title = tree_title(pg)
            assert "whole study" in title and not re.search(r"respondent \S+'s", title), title
            # Feature sensitivity: the first model's bars
            visit(f"sensitivity?study={study}")
            record("sensitivity", study, top_of(pg, '[data-testid="stVegaLiteChart"]'))
            # Live elicitation: the question
            visit(f"elicitation?study={study}")
            record("elicitation", study, top_of(pg, "h3"))
        for study in ("swissmetro", imported):  # the studies with respondent features
            visit(f"hierarchy?study={study}")
            record("hierarchy", study, top_of(pg, TREE_FRAME))
            assert max(leaf_lines(pg)) <= 4
        visit("convergence")
        record("convergence", "bench", top_of(pg, '[data-testid="stVegaLiteChart"]'))
        visit("pmr")
        record("pmr", "pmr-demo", top_of(pg, TREE_FRAME))

        # the linear-leaf tree: compact boxes, confident numbers, said-once trade-offs
        for study in ("swissmetro", imported):
            visit(f"tree_explorer?study={study}&model=dt-linear")
            record("tree_explorer dt-linear", study, top_of(pg, TREE_FRAME))
            counts = leaf_lines(pg)
            lines[f"dt-linear {study}"] = max(counts)
            assert max(counts) <= 4, (study, counts)
            frame = pg.frame_locator(TREE_FRAME).first
            svg = frame.locator("#tree-svg").text_content() or ""
            assert "value of time" in tree_title(pg)
            assert svg.count("not identified") <= 1
        pg.screenshot(path=str(ARTIFACTS / "first_screen_linear.png"))

        # the presentation view: the picture, its caption, the evidence line; no control
        visit("tree_explorer?study=swissmetro&model=dt-linear&present=1")
        record("tree_explorer present", "swissmetro", top_of(pg, TREE_FRAME))
        widgets = pg.evaluate(
            """ids => ids.flatMap(id => Array.from(document.querySelectorAll(
                   `[data-testid="${id}"]`)).filter(e => e.offsetParent !== null).map(() => id))""",
            list(INPUTS),
        )
        assert widgets == [], widgets
        assert pg.locator('[data-testid="stSidebar"]').is_hidden()
        main = pg.locator('[data-testid="stMain"]')
        sync_api.expect(main).to_contain_text("Held-out accuracy")
        assert max(leaf_lines(pg)) <= 4
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "first_screen_present.png"))
        browser.close()
    report = {"viewport": VIEWPORT, "top_px": offsets, "most_leaf_lines": lines}
    (ARTIFACTS / "first_screen.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
