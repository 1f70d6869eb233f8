"""The formats corpus through the Add-a-study form in a real browser: every format the
import reads (comma, semicolon and tab text, ``.dat``, gzip, bzip2, zip, Parquet, Excel)
and the wide and long layouts (a Biogeme-style wide ``.dat`` with ``*_AV`` availability, a long
file with varying choice sets, missing codes and a weight) import through the form to
the study ``python -m data_loaders import-study`` makes of the same file. Skipped without
Playwright or /usr/bin/chromium."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.formats import corpus_file
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
sync_api.expect.set_options(timeout=60_000)  # a loaded CI machine

#: file -> (the form's text answers by label, the command's flags)
FILES: dict[str, tuple[dict[str, str], list[str]]] = {
    "wide.dat": ({}, []),
    "wide.csv.gz": ({}, []),
    "wide.zip": ({}, []),
    "wide.xlsx": ({}, []),
    "wide_semicolon.csv": ({}, []),
    "long.parquet": ({}, []),
    "long.tsv": ({}, []),
    "biogeme.dat": ({"Attributes of some alternatives": "CO"}, ["--fill-attributes", "CO"]),
    "long_sets.csv": ({}, []),
    "missing_weight.csv": ({}, []),
}


def settle(pg) -> float:
    return wait_until_idle(pg, quiet_ms=400, timeout=60_000)


@contextlib.contextmanager
def _home(home: Path):
    """``DTPBO_DATA_HOME`` set to ``home`` inside the block (the form's server has its own)."""
    old = os.environ.get("DTPBO_DATA_HOME")
    os.environ["DTPBO_DATA_HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DTPBO_DATA_HOME", None)
        else:
            os.environ["DTPBO_DATA_HOME"] = old


def _import_by_command(file: Path, flags: list[str], home: Path) -> str:
    from data_loaders import cli

    out = io.StringIO()
    with _home(home), contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["import-study", str(file), "--title", "cmd", *flags]) == 0
    return out.getvalue().strip().splitlines()[-1]


def _study(home: Path, title: str | None = None, key: str | None = None):
    from data_loaders import user_studies as us

    with _home(home):
        if key is None:
            key = next(m.key for m in us.list_user_studies() if m.title == title)
        return us.load_user_study(key)


def test_every_format_imports_through_the_form_as_by_the_command(tmp_path: Path) -> None:
    expect = sync_api.expect
    work = tmp_path / "work"
    work.mkdir()
    for name in FILES:
        shutil.copy(corpus_file(name), work / name)
    form_home = work / "data_home"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1600})
            pg.set_default_timeout(60_000)
            with streamlit_server(work) as url:
                for k, (name, (answers, flags)) in enumerate(FILES.items()):
                    pg.goto(url)
                    settle(pg)
                    pg.get_by_text("Add a study (your own choice data)").click()
                    box = pg.locator('[data-testid="stFileUploader"]').first
                    box.wait_for(state="visible")
                    attach_file(box, work / name)
                    settle(pg)
                    pg.get_by_role("button", name="Import study").wait_for(state="visible")
                    for label, value in answers.items():
                        field = pg.get_by_role("textbox", name=label)
                        field.fill(value)
                        field.press("Enter")
                        settle(pg)
                    title = pg.get_by_label("Study title")
                    title.fill(f"Form {k}")
                    title.press("Enter")
                    settle(pg)
                    pg.get_by_role("button", name="Import study").click()
                    settle(pg)
                    expect(pg.get_by_text(f"Imported Form {k}")).to_be_visible()
                    assert pg.locator('[data-testid="stException"]').count() == 0
                    key = _import_by_command(work / name, flags, tmp_path / f"cmd{k}")
                    a = _study(form_home, title=f"Form {k}")
                    b = _study(tmp_path / f"cmd{k}", key=key)
                    np.testing.assert_array_equal(a.data.pairs, b.data.pairs, err_msg=name)
                    np.testing.assert_array_equal(a.data.X, b.data.X, err_msg=name)
                    np.testing.assert_array_equal(a.data.respondent, b.data.respondent)
                    assert a.schema.names == b.schema.names, name
        finally:
            browser.close()
