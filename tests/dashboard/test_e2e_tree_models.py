"""Browser test of the tree models: the Tree explorer draws the most accurate tree on Train
(the linear-leaf tree, slopes in guilders and hours, a value of time) and the Feature
sensitivity page ablates several models side by side.

Skipped without Playwright or ``/usr/bin/chromium`` (as ``test_e2e.py``). The docs'
screenshots of these pages come from ``test_e2e_numbers.py`` (1440x900).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from tests.dashboard.test_e2e import (
    BROWSER_ARGS,
    CHROMIUM,
    KEEP_ENV,
    TREE_FRAME,
    settle,
    snap,
)
from tests.fixtures.streamlit_server import streamlit_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("e2e-trees")
    with streamlit_server(
        work, extra_env={"DTPBO_NO_DEFAULT_RESULTS": "1"}, keep_env=KEEP_ENV
    ) as url:
        yield url


@pytest.fixture(scope="module")
def page(server) -> Iterator[object]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        ctx = b.new_context(viewport={"width": 1400, "height": 1700})
        pg = ctx.new_page()
        pg.set_default_timeout(60_000)
        try:
            yield pg
        finally:
            b.close()


def test_tree_explorer_defaults_to_the_linear_leaf_tree_on_train(server, page) -> None:
    expect = sync_api.expect
    page.goto(f"{server}/tree_explorer")
    settle(page)
    # Train is the first study; the held-out comparison of the tree models runs in the
    # background and the page switches to its winner
    expect(page.get_by_text("Default: Linear-leaf tree (dt-linear)")).to_be_visible(timeout=60_000)
    settle(page, timeout=60_000)
    frame = page.frame_locator(TREE_FRAME).first
    svg = frame.locator("#tree-svg")
    expect(svg).to_contain_text("overall value of time (money: Price)", timeout=60_000)
    # the whole study (no respondent named), compact leaves: a value of time or a slope
    # in guilders and hours (every slope on click); a number with its interval, or no
    # number where the price slope may be 0, said once, in the title
    title = frame.locator("#viewport > text").first.text_content() or ""
    assert "whole study" in title and not re.search(r"respondent \S+'s", title), title
    expect(svg).to_contain_text(re.compile("per guilder|per hour|guilders/hour"))
    vot = re.search(r"overall value of time \(money: Price\) (.*)$", title)
    assert vot is not None, title
    if vot.group(1).startswith("not identified"):
        assert "Price slope ≈ 0" in vot.group(1)
    else:
        assert re.match(r"[0-9.]+ guilders/hour \[[0-9.]+, [0-9.]+\]", vot.group(1)), title
    assert (svg.text_content() or "").count("not identified") <= 1
    line = page.get_by_text(re.compile(r"^Held-out accuracy: Linear-leaf tree")).inner_text()
    assert "% [" in line and "Conditional logit (MNL)" in line, line
    # the screenshot: a wide window, so the whole 8-leaf tree fits at a readable zoom
    page.set_viewport_size({"width": 2400, "height": 1500})
    settle(page)
    page.frame_locator(TREE_FRAME).first.get_by_role("button", name="Fit").click()
    page.wait_for_timeout(1000)
    snap(page, "tree_explorer_default")  # docs: test_e2e_numbers.py (1440x900)
    page.set_viewport_size({"width": 1400, "height": 1700})
    settle(page)
    # the export carries the slopes and the value of time
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download SVG").click()
    text = open(dl.value.path(), encoding="utf-8").read()
    ET.fromstring(text)
    assert "per guilder" in text and "value of time" in text.lower()
    # the Leaves tab: slopes per leaf and the trade-off table with Fieller intervals
    page.get_by_role("tab", name="Leaves").click()
    settle(page)
    expect(page.get_by_text("Trade-offs: what one unit of each attribute is worth")).to_be_visible()
    page.locator('[data-testid="stDataFrame"]').nth(1).wait_for(state="visible")
    page.wait_for_timeout(800)
    snap(page, "tree_explorer_leaves")
    # held-out evidence: dt-linear next to the baselines, with CIs
    page.get_by_role("tab", name="Held-out evidence").click()
    settle(page, timeout=60_000)
    page.locator('[data-testid="stVegaLiteChart"]').first.wait_for(state="visible")
    expect(page.get_by_text("Which tree is most accurate on this study")).to_be_visible()
    page.wait_for_timeout(800)
    snap(page, "tree_evidence_models")


def test_sensitivity_ablates_three_models_side_by_side(server, page) -> None:
    expect = sync_api.expect
    page.goto(f"{server}/sensitivity")
    settle(page, timeout=60_000)
    # the ablation is computed for this visit: wait for it (speed: tests/benchmarks/)
    expect(page.get_by_text("Test accuracy with every feature")).to_be_visible(timeout=240_000)
    settle(page, timeout=60_000)
    for label in ("Paper DT (constant leaves)", "Linear-leaf tree (dt-linear)"):
        expect(page.locator('[data-testid="stMetric"]', has_text=label).first).to_be_visible()
    expect(page.get_by_text("(the plan's baseline)").first).to_be_visible()
    # one chart per model chosen: the two trees, the plan's baseline and, where another
    # baseline is the best on the split (Train's panel: the mixed logit), that one too
    # (the metrics: one per model and the respondents)
    shown = page.locator('[data-testid="stMain"] [data-testid="stMetric"]').count() - 1
    assert shown >= 3, shown
    charts = page.locator('[data-testid="stVegaLiteChart"]')
    expect(charts).to_have_count(shown)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.wait_for_timeout(1500)
    snap(page, "sensitivity_three_models")  # docs: test_e2e_numbers.py
