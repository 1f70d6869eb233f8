"""The Add-a-study form asks what the file leaves open: its preview names the
columns and the form's fields that answer, the import is refused until they are
answered, and the answered form gives the command's study (units and a row selection
included)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

from data_loaders import cli
from data_loaders import user_studies as us
from tests.dashboard._shown import shown
from tests.fixtures.meaning import HERE


def preview_text(at: Any) -> str:
    return " ".join(" ".join(shown(m.value).split()) for m in at.markdown)


def test_the_form_asks_about_a_row_index_and_imports_once_answered(app: Any, capsys: Any) -> None:
    path = Path.cwd() / "row_index.csv"  # the test's only data root (conftest)
    shutil.copy(HERE / "row_index.csv", path)
    at = app("case_studies")
    at.file_uploader(key="add_choices").upload("row_index.csv", path.read_bytes(), "text/csv")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = preview_text(at)
    assert "question: column 'rownames' would be a numeric attribute" in text
    assert "'Columns to ignore' (--ignore) rownames" in text
    at.text_input(key="add_title::row_index.csv").input("Modes").run()
    at.button(key="add_import").click().run()
    assert at.error and "rownames" in shown(at.table[0].value.to_string())  # refused
    at.multiselect(key="add_ignore").set_value(["rownames"]).run()
    at.text_input(key="add_units").input("travel=min, vcost=USD").run()
    at.text_input(key="add_where").input("wait > 0").run()
    assert "question:" not in preview_text(at)
    at.button(key="add_import").click().run()
    assert not at.exception and not at.error, [shown(e.value) for e in at.error]
    form = us.load_user_study(at.session_state["sel_study"])
    flags = ["--ignore", "rownames", "--units", "travel=min,vcost=USD", "--where", "wait > 0"]
    assert cli.main(["import-study", str(path), "--title", "By command", *flags]) == 0
    by_cli = us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])
    np.testing.assert_array_equal(form.data.pairs, by_cli.data.pairs)
    np.testing.assert_array_equal(form.data.X, by_cli.data.X)
    assert form.schema["travel"].unit == "min" and form.schema["vcost"].unit == "USD"
    assert form.extras["columns"].where == "wait > 0"
    assert form.plan.alternative == "alternative"  # air, train, bus, car: labelled
