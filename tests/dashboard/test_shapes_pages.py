"""Every page on every shape of study (AppTest): imported as an analyst would
(``python -m data_loaders import-study``), opened by its link (``?study=KEY``), no
exception, the study's title shown; the Tree explorer's tabs and the hierarchy too.
The Chromium tour of the same corpus is ``test_shapes_e2e.py``."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path
from typing import Any

import pytest

from data_loaders import cli as import_cli
from tests.dashboard.test_pages import no_exception, texts
from tests.fixtures.shapes import SHAPES

pytestmark = pytest.mark.slow

PAGES = ("case_studies", "tree_explorer", "sensitivity", "hierarchy", "elicitation")
TREE_TABS = ("Items", "Leaves", "Held-out evidence", "Straddlers: discard vs keep")


def import_shape(name: str, folder: Path) -> str:
    """Import a shape (copied below the test's data root, as an analyst's file would be)
    into the test's data folder with the command line; its key."""
    shape = SHAPES[name]
    file = folder / shape.file.name
    shutil.copy(shape.file, file)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = import_cli.main(["import-study", str(file), "--title", shape.title, *shape.args])
    assert code == 0
    return out.getvalue().strip().splitlines()[-1]


def shown_text(at: Any) -> str:
    heads = [str(e.value) for kind in ("title", "header", "subheader") for e in getattr(at, kind)]
    boxes = [str(s.format_func(s.value)) for s in at.selectbox if s.value is not None]
    return "\n".join([*heads, *boxes, texts(at)])


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_page_opens_on_every_shape(app, isolated_env: Path, name: str) -> None:
    key = import_shape(name, isolated_env)
    title = SHAPES[name].title
    for page in PAGES:
        at = app(page, query={"study": key})
        no_exception(at)
        if page == "hierarchy" and not SHAPES[name].has_users:
            assert "respondent features" in texts(at) or title not in shown_text(at)
            continue
        assert title in shown_text(at), (page, shown_text(at)[:500])
        assert at.query_params.get("study") in (key, [key]), page
        if page == "tree_explorer":
            for tab in TREE_TABS:
                at.session_state["te_view"] = tab
                at.run()
                no_exception(at)
