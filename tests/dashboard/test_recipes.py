"""CONTRIBUTING's recipes followed from outside the package, as a contributor would:
a new file format (one reader registered with ``data_loaders.readers.register``) is read
by the command and the Add-a-study form, and a new page (one row of the page table and
its script) is in the navigation and runs, with no other file changed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from data_loaders import cli, readers
from data_loaders import user_studies as us
from tests.dashboard._shown import shown
from tests.fixtures.formats import HERE

TOY = ".toy"
LABEL = "JSON lines (a toy format)"


def read_toy(data: bytes, name: str, sep: str | None) -> readers.Read:
    """One JSON object per line, every line with the same keys: the table as CSV text."""
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return readers.Read(out.getvalue().encode("utf-8"), details=[f"{len(rows)} JSON lines"])


@pytest.fixture
def toy_format() -> Iterator[str]:
    """The recipe's one step: the reader registered under its suffix (after the module's
    own readers, as a contributor's would be), removed again afterwards."""
    readers.register(TOY, LABEL, text=False, note="a .toy file holds one JSON object a line")(
        read_toy
    )
    yield TOY
    readers.READERS.pop(TOY, None)


def toy_bytes(csv_path: Path) -> bytes:
    with csv_path.open(encoding="utf-8", newline="") as fh:
        return "".join(json.dumps(row) + "\n" for row in csv.DictReader(fh)).encode("utf-8")


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


# ----------------------------------------------------------------------------- a format
def test_every_list_of_formats_has_the_new_one(toy_format: str) -> None:
    assert toy_format in readers.accepted_suffixes()
    assert toy_format in readers.ACCEPTED_SUFFIXES  # the former constant, read when asked
    assert "toy" in readers.uploader_types()
    assert toy_format in readers.accepted_text()
    assert LABEL in readers.format_notes() and "one JSON object a line" in readers.format_notes()
    table = readers.read_table(toy_bytes(HERE / "long.csv"), "long.toy")
    assert table.describe() == f"long.toy: {LABEL}, 90 JSON lines; 90 rows, 7 columns"
    csv_table = readers.read_table((HERE / "long.csv").read_bytes(), "long.csv")
    assert table.frame.astype(str).equals(csv_table.frame.astype(str))


def test_the_command_and_the_form_import_the_new_format(toy_format: str, app, capsys) -> None:
    blob = toy_bytes(HERE / "long.csv")
    by_file = Path.cwd() / "long.toy"  # the test's only data root (conftest.py)
    by_file.write_bytes(blob)
    assert cli.main(["import-study", str(by_file), "--title", "By the command"]) == 0
    command = us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])
    at = app("case_studies")
    (up,) = [u for u in at.get("file_uploader") if u.proto.id.endswith("add_choices")]
    assert toy_format in up.proto.type and "one JSON object a line" in up.proto.help
    at.file_uploader(key="add_choices").upload("long.toy", blob, "application/json").run()
    no_exception(at)
    assert not at.error, [shown(e.value) for e in at.error]
    captions = " ".join(" ".join(shown(c.value).split()) for c in at.caption)
    assert f"long.toy: {LABEL}" in captions
    at.text_input(key="add_title::long.toy").input("By the form").run()
    at.button(key="add_import").click().run()
    no_exception(at)
    form = us.load_user_study(at.session_state["sel_study"])
    np.testing.assert_array_equal(form.data.pairs, command.data.pairs)
    np.testing.assert_array_equal(form.data.X, command.data.X)
    assert len(command.data.pairs) > 0


# ----------------------------------------------------------------------------- a page
PAGE = '''
"""A toy page: the chosen study's first respondents, as many as the slider says."""

import streamlit as st

from dashboard import _ui as ui

st.title("Toy respondents")
key, study = ui.require_study("Toy respondents", key="toy_study")
n = st.slider("Respondents listed", 1, 5, 2, key="toy_n")
shown = [str(r) for r in study.respondents()[:n]]
st.markdown(ui.md(f"{study.title}: respondents {', '.join(shown)}"))
'''


@pytest.fixture
def toy_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The recipe's two code steps, outside the package: the page's script, and its row
    in the page table (a script path the table takes as it takes a view's name)."""
    from dashboard import pages

    script = tmp_path / "toy_respondents.py"
    script.write_text(PAGE, encoding="utf-8")
    row = (str(script), "Toy respondents", ":material/star:")
    monkeypatch.setattr(pages, "PAGES", (*pages.PAGES, row))
    return script


def test_a_new_page_is_in_the_navigation_and_runs(toy_page: Path, app) -> None:
    from dashboard.pages import url_titles

    assert url_titles()["toy_respondents"] == "Toy respondents"  # its URL path and title
    at = app()
    at.switch_page(str(toy_page)).run()
    no_exception(at)
    assert at.title[0].value == "Toy respondents"
    before = [m.value for m in at.markdown if "respondents" in m.value]
    at.slider(key="toy_n").set_value(4).run()
    no_exception(at)
    after = [m.value for m in at.markdown if "respondents" in m.value]
    assert before and after and after != before  # its widget changes what it shows
    assert after[0].count(",") == 3
