"""Browser tests of a server opened by several visitors (Playwright + system Chromium).

* a path typed outside the allowed data roots is refused on the page and a canary file's
  content never reaches the browser; in shared-server mode the inputs are absent;
* two visitors (two browser contexts) keep their own elicitation sessions; a copied
  session link resumes that session in a third context;
* a server killed mid-answer and restarted loses at most the answer in flight.

Skipped like ``test_e2e.py`` without the ``playwright`` package or ``/usr/bin/chromium``.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.dashboard.test_e2e import BROWSER_ARGS, CHROMIUM, metric, settle, sync_api
from tests.fixtures.streamlit_server import free_port, streamlit_server

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


def _store(work: Path) -> sqlite3.Connection:
    return sqlite3.connect(work / "data_home" / "dashboard" / "sessions.sqlite")


def _actions(work: Path, sid: str) -> list[str]:
    con = _store(work)
    try:
        rows = con.execute(
            "SELECT action FROM answers WHERE session_id = ? ORDER BY seq", (sid,)
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows]


def _owners(work: Path, sids: list[str]) -> list[str]:
    con = _store(work)
    try:
        return [
            con.execute("SELECT owner FROM sessions WHERE id = ?", (s,)).fetchone()[0] for s in sids
        ]
    finally:
        con.close()


def _sid(pg) -> str:
    return parse_qs(urlparse(pg.url).query)["session"][0]


def _answer(pg, sides: str, start: int) -> None:
    for k, side in enumerate(sides, start=start + 1):
        pg.get_by_role("button", name=f"I prefer {side}").click()
        sync_api.expect(metric(pg, "Answers")).to_have_text(str(k), timeout=60_000)
        settle(pg)


def _open(ctx, url: str):
    pg = ctx.new_page()
    pg.goto(url)
    settle(pg)
    return pg


@pytest.fixture(scope="module")
def shared_work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    work = tmp_path_factory.mktemp("e2e-visitors")
    with streamlit_server(work, extra_env={"DTPBO_NO_DEFAULT_RESULTS": "1"}) as url:
        yield url, work


def test_two_visitors_keep_their_own_sessions_and_a_link_resumes(browser, shared_work) -> None:
    url, work = shared_work
    expect = sync_api.expect
    ctx_a, ctx_b, ctx_c = _context(browser), _context(browser), _context(browser)
    try:
        a = _open(ctx_a, f"{url}/elicitation?study=electricity")
        b = _open(ctx_b, f"{url}/elicitation?study=electricity")  # open, nothing answered
        _answer(a, "ABA", 0)
        b.reload()
        settle(b)
        expect(metric(b, "Answers")).to_have_text("0", timeout=60_000)
        _answer(b, "BB", 0)
        a.reload()
        settle(a)
        expect(metric(a, "Answers")).to_have_text("3", timeout=60_000)
        assert _sid(a) != _sid(b)
        assert _actions(work, _sid(a)) == ["A", "B", "A"]
        assert _actions(work, _sid(b)) == ["B", "B"]
        # a double click answers one question, not two
        b.get_by_role("button", name="I prefer A").dblclick()
        settle(b)
        expect(metric(b, "Answers")).to_have_text("3", timeout=60_000)
        b.wait_for_timeout(1500)
        settle(b)
        expect(metric(b, "Answers")).to_have_text("3")
        assert _actions(work, _sid(b)) == ["B", "B", "A"]
        # A's copied link in a third browser resumes A's session
        favourite = metric(a, "Favourite").inner_text()
        c = _open(ctx_c, a.url)
        expect(metric(c, "Answers")).to_have_text("3", timeout=60_000)
        assert metric(c, "Favourite").inner_text() == favourite
        assert _sid(c) == _sid(a)
        # the visitor cookie survives the reload: A's next session has A's owner, not B's
        tokens = [
            {k["name"]: k["value"] for k in ctx.cookies()}.get("dtpbo_visitor")
            for ctx in (ctx_a, ctx_b)
        ]
        assert all(tokens) and tokens[0] != tokens[1]
        first = _sid(a)
        a.get_by_role("button", name="Start over").click()
        expect(metric(a, "Answers")).to_have_text("0", timeout=60_000)
        settle(a)
        assert "session=" not in a.url  # stored with its first answer, not before
        _answer(a, "B", 0)
        owners = _owners(work, [first, _sid(a), _sid(b)])
        assert _sid(a) != first and owners[0] == owners[1] != owners[2]
    finally:
        for ctx in (ctx_a, ctx_b, ctx_c):
            ctx.close()


@pytest.mark.slow
def test_killing_the_server_mid_answer_loses_at_most_that_answer(
    browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path_factory.mktemp("e2e-kill")
    port = free_port()
    env = {"DTPBO_NO_DEFAULT_RESULTS": "1"}
    ctx = _context(browser)
    try:
        with streamlit_server(work, extra_env=env, port=port) as url:
            pg = _open(ctx, f"{url}/elicitation?study=electricity")
            _answer(pg, "AB", 0)
            sid = _sid(pg)
            pg.get_by_role("button", name="I prefer A").click()
            os.kill(int((work / "streamlit.pid").read_text()), signal.SIGKILL)  # mid-answer
            time.sleep(0.5)
        saved = _actions(work, sid)
        assert saved in (["A", "B"], ["A", "B", "A"])  # at most the answer in flight lost
        with streamlit_server(work, extra_env=env, port=port):
            pg.goto(f"{url}/elicitation?session={sid}")
            settle(pg)
            n = len(saved)
            sync_api.expect(metric(pg, "Answers")).to_have_text(str(n), timeout=60_000)
            note = pg.locator('[data-testid="stAlert"]', has_text="server was restarted")
            sync_api.expect(note).to_contain_text(f"{n} answers saved")
            _answer(pg, "B", n)  # and the session goes on
            assert _actions(work, sid) == [*saved, "B"]
    finally:
        ctx.close()
