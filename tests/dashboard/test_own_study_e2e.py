"""An analyst's own study in a real browser: upload, edit the attribute table, import; the
study's tree, held-out evidence and sensitivity; a malformed upload; a server restart;
the shareable report. Skipped without Playwright or /usr/bin/chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.fixtures.streamlit_server import (
    BROWSER_ARGS,
    CHROMIUM,
    attach_file,
    browser_api,
    streamlit_server,
    wait_until_idle,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

sync_api = browser_api()

TREE_FRAME = 'iframe[srcdoc*="tree-data"]'
sync_api.expect.set_options(timeout=60_000)  # a loaded CI machine
TITLE = "Broadband offers"


def choice_files(folder: Path) -> tuple[Path, Path, Path]:
    """A long-format study whose respondents prefer fast, cheap offers; a copy with three
    bad cells; respondent features."""
    rng = np.random.default_rng(7)
    speeds = ["slow", "medium", "fast"]
    rows = []
    for r in range(1, 13):
        for t in range(1, 11):
            alts = []
            for p in (1, 2):
                price, speed = int(rng.choice([20, 30, 40, 50])), str(rng.choice(speeds))
                wifi = str(rng.choice(["no", "yes"]))
                u = -0.08 * price + speeds.index(speed) + rng.normal(0, 0.5)
                alts.append((p, price, speed, wifi, u))
            best = max(alts, key=lambda a: a[4])[0]
            for p, price, speed, wifi, _ in alts:
                rows.append(
                    dict(
                        respondent=r,
                        task=t,
                        profile=p,
                        chosen=int(p == best),
                        price=price,
                        speed=speed,
                        wifi=wifi,
                    )
                )
    good = pd.DataFrame(rows)
    bad = good.astype({"price": object})
    bad.loc[4, "price"] = "cheap"  # file line 6
    bad.loc[[9, 30], "speed"] = np.nan  # lines 11 and 32: empty
    users = pd.DataFrame({"respondent": range(1, 13), "age": rng.integers(20, 70, 12)})
    paths = folder / "broadband.csv", folder / "broadband_bad.csv", folder / "people.csv"
    good.to_csv(paths[0], index=False)
    bad.to_csv(paths[1], index=False)
    users.to_csv(paths[2], index=False)
    return paths


def settle(pg, timeout: float = 60_000) -> float:
    return wait_until_idle(pg, quiet_ms=400, timeout=timeout)


def nav(pg, title: str) -> None:
    pg.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    pg.locator("h1", has_text=title).wait_for()
    settle(pg)


def open_form(pg) -> None:
    pg.get_by_text("Add a study (your own choice data)").click()
    pg.locator('[data-testid="stFileUploader"]').first.wait_for(state="visible")


def upload(pg, index: int, path: Path, tries: int = 3) -> None:
    """Upload ``path`` into the ``index``-th uploader and wait for the import form. Once in
    a CI run with two suites on the same 2 cores, the upload went through but the form did
    not come within 60 s (the same test passed alone in 39 s): the file is then set
    again, at most ``tries`` times, 30 s apart."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = pg.locator('[data-testid="stFileUploader"]').nth(index)
    for attempt in range(tries):
        attach_file(box, path)
        settle(pg)
        try:
            pg.get_by_role("button", name="Import study").wait_for(state="visible", timeout=30_000)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise


def edit_cell(pg, row: int, col: int, text: str) -> None:
    """Type into a cell of the (canvas) data editor: click it, type, Enter."""
    grid = pg.locator('[data-testid="stExpander"] [data-testid="stDataFrame"]').first
    grid.wait_for(state="visible")
    box = grid.bounding_box()
    assert box is not None
    pg.mouse.click(box["x"] + 40, box["y"] + 35 * (row + 1) + 17)  # first column of ``row``
    pg.wait_for_timeout(300)
    for _ in range(col):
        pg.keyboard.press("ArrowRight")
    pg.keyboard.press("Enter")  # open the cell's editor
    pg.wait_for_timeout(300)
    pg.keyboard.type(text, delay=50)
    pg.keyboard.press("Enter")
    settle(pg)


def test_upload_edit_import_view_restart_remove(tmp_path: Path) -> None:
    expect = sync_api.expect
    good, bad, people = choice_files(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    studies = work / "data_home" / "studies"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            ctx = browser.new_context(
                viewport={"width": 1400, "height": 1600}, accept_downloads=True
            )
            pg = ctx.new_page()
            pg.set_default_timeout(60_000)
            with streamlit_server(work) as url:
                pg.goto(url)
                settle(pg)
                # a malformed upload: every bad cell with its line and column, nothing saved
                open_form(pg)
                upload(pg, 0, bad)
                pg.get_by_role("button", name="Import study").click()
                settle(pg)
                expect(pg.get_by_text("nothing was imported")).to_be_visible()
                table = " ".join(pg.locator('[data-testid="stTable"]').first.inner_text().split())
                assert "2 problems found" in pg.inner_text("body")
                assert re.search(r"\b6\b\s+price\s.*'cheap' is not a number", table), table
                assert re.search(r"11, 32\s+speed\s.*is empty", table), table
                shot = tmp_path / "malformed.png"
                pg.screenshot(path=str(shot), full_page=True)
                assert not studies.exists() or not any(studies.iterdir())
                # the good file: edit the inferred attribute table (price's unit), import
                upload(pg, 0, good)
                upload(pg, 1, people)
                edit_cell(pg, 0, 3, "EUR")  # row "price", column "unit"
                title = pg.get_by_label("Study title")
                title.fill(TITLE)
                title.press("Enter")
                settle(pg)
                pg.get_by_role("button", name="Import study").click()
                settle(pg)
                expect(pg.get_by_text(f"Imported {TITLE}")).to_be_visible()
                expect(pg.locator("h3", has_text=TITLE)).to_be_visible()
                (saved,) = list(studies.iterdir())
                attrs = json.loads((saved / "attributes.json").read_text())["attributes"]
                price = next(a for a in attrs if a["name"] == "price")
                assert price["kind"] == "numeric" and price["unit"] == "EUR"  # the edit
                assert (saved / "respondents.csv").is_file()
                # the report of the new study
                pg.get_by_role("button", name="Build report").click()
                settle(pg)
                with pg.expect_download() as dl:
                    pg.get_by_role("button", name="Download report").click()
                html = Path(dl.value.path()).read_text(encoding="utf-8")
                assert TITLE in html and html.count("<svg") >= 3
                # its tree, held-out evidence and sensitivity on the other pages
                nav(pg, "Tree explorer")  # same session: the study chosen stays chosen
                frame = pg.frame_locator(TREE_FRAME).first
                expect(frame.locator("#tree-svg")).to_contain_text(TITLE)
                expect(frame.locator("g.node").first).to_be_attached()
                pg.get_by_role("tab", name="Held-out evidence").click()
                settle(pg)
                pg.locator('[data-testid="stVegaLiteChart"]').first.wait_for(state="visible")
                expect(pg.get_by_text("Logit, pooled").first).to_be_visible()
                nav(pg, "Feature sensitivity")
                pg.locator('[data-testid="stVegaLiteChart"]').first.wait_for(state="visible")
                assert re.search(r"\bprice\b|Price", pg.inner_text("body"))
                assert pg.locator('[data-testid="stException"]').count() == 0
            # a restart: the study is still listed, and can be removed
            with streamlit_server(work) as url:
                pg.goto(url)
                settle(pg)
                expect(pg.locator('[data-testid="stMarkdown"] table').first).to_be_visible()
                pick = pg.locator('[data-testid="stSelectbox"]', has_text="Study").first
                pick.click()
                pg.get_by_role("option", name=TITLE).click()
                settle(pg)
                expect(pg.locator("h3", has_text=TITLE)).to_be_visible()
                pg.get_by_role("button", name=f"Remove {TITLE}").click()
                settle(pg)
                assert not any(studies.iterdir())
        finally:
            browser.close()
