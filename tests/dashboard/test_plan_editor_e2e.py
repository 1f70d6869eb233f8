"""The Case studies page's Analysis plan panel in a real browser (Chromium): open it,
change the evaluation sample, save; the page then states the new plan and the file is the
command's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.streamlit_server import (
    BROWSER_ARGS,
    CHROMIUM,
    streamlit_server,
    wait_until_idle,
)

pytestmark = pytest.mark.e2e

ARTIFACTS = Path(__file__).resolve().parents[2] / "tests" / "artifacts"

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (pip install playwright)"
)
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    work = tmp_path_factory.mktemp("e2e-plan")
    env = {"DTPBO_NO_DEFAULT_RESULTS": "1", "DTPBO_NO_TREE_CHOICE": "1"}
    with streamlit_server(work, extra_env=env) as url:
        yield url, work


def test_the_plan_panel_saves_an_edit_in_the_browser(server) -> None:
    url, work = server
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            pg = browser.new_context(viewport={"width": 1440, "height": 1800}).new_page()
            pg.set_default_timeout(60_000)
            pg.goto(f"{url}/?study=train")  # Case studies: the default page
            wait_until_idle(pg)
            panel = pg.get_by_text("Analysis plan: the choices behind every figure")
            panel.wait_for()
            wait_until_idle(pg, quiet_ms=1000)
            panel.click()
            wait_until_idle(pg)
            box = pg.get_by_role("textbox", name="Evaluation sample")
            box.fill("40")
            box.press("Enter")
            wait_until_idle(pg)
            pg.get_by_text("--set respondents=40").wait_for()
            pg.get_by_role("button", name="Save plan").click()
            wait_until_idle(pg)
            pg.get_by_text("Saved: every page now shows").wait_for()
            pg.get_by_text("the first 40 respondents").first.wait_for()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(ARTIFACTS / "plan_editor.png"), full_page=True)
        finally:
            browser.close()
    saved = json.loads((work / "data_home" / "plans" / "train.json").read_text())
    assert saved["respondents"] == 40 and saved["time"]["attribute"] == "time"
