"""The Add-a-study form takes a recipe (``import-study --recipe``'s JSON): the file is
imported exactly with its choices, to the study the command makes; a broken recipe is one
sentence naming its field; an old ``.xls`` says to save it as ``.xlsx``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from data_loaders import cli
from data_loaders import user_studies as us
from tests.dashboard._shown import shown
from tests.fixtures.formats import HERE


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


def test_the_form_replays_a_recipe_to_the_commands_study(app: Any, capsys: Any) -> None:
    copy = Path.cwd() / "biogeme.dat"  # the test's only data root (conftest)
    copy.write_bytes((HERE / "biogeme.dat").read_bytes())
    assert cli.main(["import-study", str(copy), "--title", "Cmd", "--fill-attributes", "CO"]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    recipe = (us.studies_dir() / key / us.RECIPE_FILE).read_bytes()

    at = app("case_studies")
    at.file_uploader(key="add_choices").upload("biogeme.dat", copy.read_bytes(), "text/plain")
    at.file_uploader(key="add_recipe_up").upload("recipe.json", recipe, "application/json").run()
    no_exception(at)
    assert "Replaying the recipe" in "\n".join(i.value for i in at.info)
    assert not [s for s in at.selectbox if s.key == "add_col_resp"]  # no choices to make
    preview = [
        " ".join(shown(line).split()).removeprefix("- ")
        for m in at.markdown
        for line in str(m.value).splitlines()
    ]
    line = "alternative SLOW: TT (SLOW_TT), CO (SLOW_CO, else 0); available when SLOW_AV = 1"
    assert line in preview, preview
    at.text_input(key="add_title::biogeme.dat").input("Form").run()
    at.button(key="add_import").click().run()
    no_exception(at)
    assert not at.error, [shown(e.value) for e in at.error]
    form, cmd = us.load_user_study(at.session_state["sel_study"]), us.load_user_study(key)
    np.testing.assert_array_equal(form.data.pairs, cmd.data.pairs)
    np.testing.assert_array_equal(form.data.X, cmd.data.X)
    np.testing.assert_array_equal(form.data.respondent, cmd.data.respondent)
    assert form.schema.names == cmd.schema.names
    assert form.extras["columns"] == cmd.extras["columns"]


def test_a_broken_recipe_and_an_old_workbook_are_one_sentence(app: Any) -> None:
    at = app("case_studies")
    at.file_uploader(key="add_choices").upload(
        "long.csv", (HERE / "long.csv").read_bytes(), "text/csv"
    )
    bad = b'{"recipe": 1, "columns": {"colour": "red"}}'
    at.file_uploader(key="add_recipe_up").upload("r.json", bad, "application/json").run()
    no_exception(at)
    (error,) = [shown(e.value) for e in at.error]
    assert "r.json: field 'columns.colour' is not a column choice" in error

    old = app("case_studies")
    old.file_uploader(key="add_choices").upload(
        "old.xls", b"a,b\n1,2\n", "application/vnd.ms-excel"
    )
    old.run()
    no_exception(old)
    said = " ".join(shown(c) for t in old.table for c in t.value["problem"])
    assert "old Excel workbooks (.xls) are not read; save it as .xlsx or CSV" in said
