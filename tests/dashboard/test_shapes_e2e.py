"""Every page on every shape of study in a real browser: the shapes corpus imported with
``python -m data_loaders import-study`` into a server's data folder, then each page opened
by its link (``/<page>?study=KEY``): no exception element, the study's title on the page.
Skipped without Playwright or /usr/bin/chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.pages import url_titles
from tests.dashboard.test_e2e import BROWSER_ARGS, CHROMIUM, snap
from tests.fixtures.shapes import SHAPES
from tests.fixtures.streamlit_server import ROOT, browser_api, streamlit_server, wait_until_idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

sync_api = browser_api()

#: Pages a study is opened on (Convergence and PMR features show no imported study).
PAGES = ("", "tree_explorer", "sensitivity", "hierarchy", "elicitation")


#: Whether ``t`` is on the page: in its text or a picker's shown value (a selectbox shows
#: its choice in an input's value, which is not part of the page's text); the pickers are
#: in the sidebar, so the whole app is searched.
_SHOWS_JS = """t => {
  const main = document.querySelector('[data-testid="stAppViewContainer"]');
  if (!main) return false;
  const vals = Array.from(main.querySelectorAll('input')).map(e => e.value || '');
  return (main.innerText + '\\n' + vals.join('\\n')).includes(t);
}"""


def _shows(page, text: str, timeout_ms: float) -> bool:
    """Wait up to ``timeout_ms`` for ``text`` on the page (a page load returns before the
    script run that draws it has begun, so "idle" alone can be an empty page)."""
    try:
        page.wait_for_function(_SHOWS_JS, arg=text, timeout=timeout_ms)
        return True
    except sync_api.TimeoutError:
        return False


def _import_all(work: Path) -> dict[str, str]:
    """Import every shape into ``work/data_home``; shape name -> study key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DTPBO_")}
    env.update(DTPBO_DATA_HOME=str(work / "data_home"), DTPBO_DATA_ROOTS=str(work))
    env["PYTHONPATH"] = str(ROOT)
    keys = {}
    for name, shape in SHAPES.items():
        file = work / shape.file.name
        shutil.copy(shape.file, file)
        cmd = [sys.executable, "-m", "data_loaders", "import-study", str(file)]
        done = subprocess.run(
            [*cmd, "--title", shape.title, *shape.args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        keys[name] = done.stdout.strip().splitlines()[-1]
    return keys


@pytest.fixture(scope="module")
def shapes_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    work = tmp_path_factory.mktemp("e2e-shapes")
    keys = _import_all(work)
    with streamlit_server(
        work,
        extra_env={"DTPBO_NO_DEFAULT_RESULTS": "1", "DTPBO_DATA_ROOTS": str(work)},
    ) as url:
        yield url, keys


def test_every_page_opens_on_every_shape_by_its_link(shapes_server) -> None:
    url, keys = shapes_server
    failures = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        ctx = browser.new_context(viewport={"width": 1440, "height": 900})
        page = ctx.new_page()
        page.set_default_timeout(60_000)
        for name, key in keys.items():
            title = SHAPES[name].title
            for path in PAGES:
                if path == "hierarchy" and not SHAPES[name].has_users:
                    continue
                page.goto(f"{url}/{path}?study={key}")
                shown = _shows(page, title, 60_000)  # a heading or the study picker
                wait_until_idle(page, quiet_ms=400, timeout=60_000)
                errors = page.locator('[data-testid="stException"]').count()
                if errors or not shown:
                    snap(page, f"shape-{name}-{path or 'case_studies'}")
                    failures.append((name, url_titles()[path], errors, shown))
        browser.close()
    assert not failures, failures
