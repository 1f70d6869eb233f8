"""One truth per number, trade-offs an economist would sign, no request off the machine, and
every page at 1440x900, in a real browser.

* Live elicitation: after 10 answers the favourite card names the leaf the tree beside it
  highlights (the displayed leaf number, rank order; never the model's leaf index).
* Held-out evidence: the tab names the model shown and marks its row.
* A study whose money slope's 95 % CI includes 0 (``fares``: the fare has no effect, money
  attribute chosen at import) shows the value of time as "not identified", no number.
* A tour of every page sends no request to any host but the server (127.0.0.1).
* With ``DTPBO_UPDATE_SCREENSHOTS=1`` the tour writes every page at 1440x900 to
  ``dashboard/screenshots/`` (the README's and docs' screenshots).

Skipped without Playwright or ``/usr/bin/chromium`` (as ``test_e2e.py``).
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

from dashboard.pages import PAGES, url_titles
from tests.dashboard.test_e2e import (
    BROWSER_ARGS,
    CHROMIUM,
    DOCS,
    KEEP_ENV,
    TREE_FRAME,
    UPDATE_DOCS,
    _bench_results,
    metric,
    settle,
    snap,
)
from tests.fixtures.streamlit_server import ROOT, browser_api, streamlit_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
sync_api = browser_api()

#: The viewport of the docs' screenshots (a laptop screen).
VIEWPORT = {"width": 1440, "height": 900}
FARES_TITLE = "Fares (no fare effect)"


def fares_study(folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """A choice file where only travel time matters (the fare has no effect) and its
    attribute table: 60 respondents x 8 tasks x 2 trips; fare in CHF, time in minutes."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(1, 61):
        for t in range(1, 9):
            fares = rng.choice([5, 10, 15, 20, 25, 30], 2, replace=False)
            times = rng.choice([20, 40, 60, 80, 100, 120], 2, replace=False)
            best = int(np.argmax(-0.04 * times + rng.gumbel(size=2)))
            for k in range(2):
                rows.append((r, t, k + 1, int(k == best), int(fares[k]), int(times[k])))
    cols = ["respondent", "task", "profile", "chosen", "fare", "time"]
    choices = folder / "fares.csv"
    pd.DataFrame(rows, columns=cols).to_csv(choices, index=False)
    attrs = folder / "fares.json"
    table = [
        {"name": "fare", "kind": "numeric", "label": "Fare", "unit": "CHF"},
        {"name": "time", "kind": "numeric", "label": "Travel time", "unit": "min"},
    ]
    attrs.write_text(json.dumps({"attributes": table}))
    return choices, attrs


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A dashboard with benchmark results and the ``fares`` study (imported with
    ``--money-attribute fare --time-attribute time``: its analysis plan's roles); yields
    its URL and the study's key."""
    work = tmp_path_factory.mktemp("e2e-numbers")
    _bench_results(work / "data_home" / "results" / "bench")
    choices, attrs = fares_study(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DTPBO_")}
    env.update(
        DTPBO_DATA_HOME=str(work / "data_home"), DTPBO_DATA_ROOTS=str(work), PYTHONPATH=str(ROOT)
    )
    done = subprocess.run(
        [sys.executable, "-m", "data_loaders", "import-study", str(choices), "--title",
         FARES_TITLE, "--attributes", str(attrs), "--money-attribute", "fare",
         "--time-attribute", "time"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    key = done.stdout.strip().splitlines()[-1]
    extra = {
        "DTPBO_NO_DEFAULT_RESULTS": "1",
        "DTPBO_NO_TREE_CHOICE": "1",
        "DTPBO_DATA_ROOTS": str(work),
    }
    with streamlit_server(work, extra_env=extra, keep_env=KEEP_ENV) as url:
        yield url, key


@pytest.fixture(scope="module")
def context(served) -> Iterator[tuple[object, list[str]]]:
    """One browser context at 1440x900 for the module, and every URL it requested."""
    requested: list[str] = []
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        ctx = b.new_context(viewport=VIEWPORT)
        ctx.on("request", lambda r: requested.append(r.url))
        try:
            yield ctx, requested
        finally:
            b.close()


@pytest.fixture
def page(context) -> Iterator[object]:
    ctx, _ = context
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    try:
        yield pg
    finally:
        pg.close()


def highlighted_leaf(pg) -> str:
    """The title of the leaf the tree view draws in bold (the highlighted path's leaf)."""
    frame = pg.frame_locator(TREE_FRAME).first
    frame.locator("g.node.leaf").first.wait_for(state="visible")
    titles = frame.locator("g.node.leaf").evaluate_all(
        """nodes => nodes
            .filter(n => n.querySelector('rect').getAttribute('stroke') === '#1f4e79')
            .map(n => n.querySelector('text').textContent)"""
    )
    assert len(titles) == 1, titles
    return titles[0]


def test_the_favourite_card_names_the_leaf_the_tree_highlights(served, page) -> None:
    """After 10 answers on Electricity, "Leaf N of the tree" on the favourite card is the
    leaf the tree beside it draws highlighted, numbered as the tree numbers it."""
    url, _ = served
    expect = sync_api.expect
    page.goto(f"{url}/elicitation?study=electricity")
    settle(page)
    for k, side in enumerate("ABBABAABBA", start=1):
        page.get_by_role("button", name=f"I prefer {side}").click()
        expect(metric(page, "Answers")).to_have_text(str(k), timeout=60_000)
        settle(page)
    frame = page.frame_locator(TREE_FRAME).first
    expect(frame.locator("body")).to_contain_text("after 10 answers", timeout=60_000)
    card = page.get_by_text(re.compile(r"Leaf \d+ of the tree")).first
    expect(card).to_be_visible()
    number = re.search(r"Leaf (\d+) of the tree \(rank (\d+) of (\d+)", card.inner_text())
    assert number is not None, card.inner_text()
    leaf_title = highlighted_leaf(page)
    assert re.search(rf"\bLeaf {number.group(1)}\b", leaf_title), (card.inner_text(), leaf_title)
    assert int(metric(page, "Leaves").inner_text()) == int(number.group(3))
    page.wait_for_timeout(800)
    # the metrics, the favourite card and the trace at the top of the screenshot
    page.locator('[data-testid="stMetric"]', has_text="Answers").evaluate(
        "e => { e.scrollIntoView({block: 'start'});"
        " document.querySelector('[data-testid=\"stMain\"]').scrollBy(0, -70); }"
    )
    page.wait_for_timeout(600)
    snap(page, "elicitation", docs=True)


def test_the_evidence_tab_names_the_model_shown(served, page) -> None:
    url, key = served
    expect = sync_api.expect
    # one respondent's view (the link names the respondent): the study's table and theirs
    page.goto(f"{url}/tree_explorer?study={key}&model=dt-linear&respondent=1")
    settle(page)
    shown = "Linear-leaf tree (dt-linear)"
    expect(page.get_by_role("combobox", name="Model")).to_have_value(shown)
    page.get_by_role("tab", name="Held-out evidence").click()
    settle(page, timeout=60_000)
    heading = page.get_by_text(f"The model shown ({shown}) on respondent ")
    expect(heading).to_be_visible(timeout=60_000)
    settle(page, timeout=60_000)
    # both evidence tables mark the row of the model drawn above, and it is the model
    # shown; the conditional logit's coefficients (the plan's baseline): the Estimates tab
    tables = page.locator('[data-testid="stDataFrame"]')
    expect(tables).to_have_count(2)
    for k in (0, 1):
        expect(tables.nth(k)).to_contain_text(f"{shown}  ◀ shown above")
    assert page.locator('[data-testid="stException"]').count() == 0
    page.wait_for_timeout(800)
    snap(page, "tree_evidence")
    page.get_by_role("tab", name="Estimates").click()
    settle(page, timeout=60_000)
    # (the estimates table: cluster-robust standard errors beside the robust ones)
    expect(page.locator('[data-testid="stDataFrame"]').first).to_contain_text(
        "Clust. Std err", timeout=60_000
    )


def test_a_value_of_time_whose_money_slope_may_be_zero_is_not_identified(served, page) -> None:
    url, key = served
    expect = sync_api.expect
    page.goto(f"{url}/tree_explorer?study={key}&model=dt-linear")
    settle(page)
    # said once, in the tree's title, with its reason: no number anywhere, no box repeats it
    svg = page.frame_locator(TREE_FRAME).first.locator("#tree-svg")
    said = "overall value of time (money: Fare) not identified (Fare slope ≈ 0)"
    expect(svg).to_contain_text(said)
    words = svg.text_content() or ""
    assert words.count("not identified") == 1, words
    assert not re.search(r"value of time[^·]*\d+(\.\d+)? CHF", words)
    main = page.locator('[data-testid="stMain"]')
    assert "not identified" not in main.inner_text()  # the page does not repeat it
    page.wait_for_timeout(800)
    snap(page, "tree_explorer_not_identified", docs=True)
    # the money attribute is the one chosen at import (the sidebar's Settings)
    page.locator('[data-testid="stSidebar"]').get_by_text("Settings").click()
    money = page.get_by_role("combobox", name="Money attribute (divides every trade-off)")
    expect(money).to_have_value("Fare")


def scroll_to(pg, text: str) -> None:
    """Scroll the page so the first element with ``text`` is at the top of the view."""
    pg.get_by_text(text, exact=False).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    pg.wait_for_timeout(600)


#: Where the tour asks more of a page than its title: the page's script name -> its link
#: query, what to wait for, where the screenshot starts (``None``: the top of the page)
#: and whether it is photographed here (the live elicitation is, by its own test).
STOPS: dict[str, tuple[str, str, str | None, bool]] = {
    "case_studies": ("", "Attributes", None, True),
    "tree_explorer": ("?study=swissmetro&model=dt-linear", "Held-out", None, True),
    "sensitivity": ("?study=train", "Minimum detectable change", None, True),
    "convergence": ("", "branin: regret", None, True),
    "hierarchy": ("?study=swissmetro", "User groups", None, True),
    "elicitation": ("?study=electricity", "Question", None, False),
    "pmr": ("", "Test accuracy (inbox B)", None, True),
}


def tour() -> list[tuple[str, str | None, str, str | None]]:
    """Every page of the page table (``dashboard.pages.PAGES``), in sidebar order: its path
    with its link, its screenshot name, what to wait for and where the screenshot starts;
    a page without a stop waits for its title and is photographed from the top."""
    out = []
    for (script, title, _), path in zip(PAGES, url_titles(), strict=True):
        name = Path(script).stem
        query, marker, start, shot = STOPS.get(name, ("", title, None, True))
        out.append((f"{path}{query}", name if shot else None, marker, start))
    return out


def test_a_tour_of_every_page_requests_nothing_beyond_the_server(served, context) -> None:
    """Every page (and the Tree explorer's and Hierarchy's tabs) is drawn without one
    request to a host other than 127.0.0.1 (fonts and icons are served by the app); the
    pages are photographed at 1440x900."""
    url, _ = served
    ctx, requested = context
    expect = sync_api.expect
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    requested.clear()
    visited = set()
    for path, shot, marker, start in tour():
        pg.goto(f"{url}/{path}")
        settle(pg, timeout=60_000)
        expect(pg.locator('[data-testid="stMain"]')).to_contain_text(marker, timeout=60_000)
        settle(pg, timeout=60_000)
        assert pg.locator('[data-testid="stException"]').count() == 0, path
        visited.add(path.split("?")[0])
        if shot == "sensitivity" and UPDATE_DOCS:  # the docs show every model's bars
            main = pg.locator('[data-testid="stMain"]')
            expect(main).to_contain_text("Test accuracy with every feature", timeout=900_000)
            settle(pg, timeout=60_000)
        if shot == "tree_explorer" and UPDATE_DOCS:  # the docs show the evidence line
            pg.get_by_role("tab", name="Held-out evidence").click()  # (the comparison)
            pg.locator('[data-testid="stVegaLiteChart"]').first.wait_for(timeout=900_000)
            pg.get_by_role("tab", name="Tree").click()
            settle(pg, timeout=60_000)
        if shot in ("tree_explorer", "hierarchy", "pmr"):  # the tree view is drawn
            pg.frame_locator(TREE_FRAME).first.locator("g.node").first.wait_for(state="visible")
        if shot is not None:
            pg.wait_for_timeout(1500)  # charts and the tree view paint
            if start is not None:
                scroll_to(pg, start)
            snap(pg, shot, docs=True)
        if shot == "hierarchy":
            scroll_to(pg, "Segments with linear item models")
            snap(pg, "hierarchy_segments", docs=True)
    assert visited == set(url_titles())
    off = [
        u
        for u in requested
        if not u.startswith((url, "data:", "blob:", "about:", "chrome-extension:"))
    ]
    assert off == [], off
    assert any(u.startswith(url) for u in requested)
    pg.close()
    if UPDATE_DOCS:
        for name in ("case_studies", "tree_explorer", "sensitivity", "hierarchy", "pmr"):
            assert (DOCS / f"{name}.png").exists()
