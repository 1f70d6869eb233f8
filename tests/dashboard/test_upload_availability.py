"""The Add-a-study form's availability conditions (``car: license == 1``, as
``--available-when``): the preview says them and the form imports the command's study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from data_loaders import cli
from data_loaders import user_studies as us
from tests.dashboard._shown import shown
from tests.data_loaders.test_availability_rules import licence_frame


def test_the_form_takes_an_availability_condition(app: Any, capsys: Any) -> None:
    path = Path.cwd() / "licence.csv"  # the test's only data root (conftest)
    licence_frame().to_csv(path, index=False)
    at = app("case_studies")
    at.file_uploader(key="add_choices").upload("licence.csv", path.read_bytes(), "text/csv").run()
    at.text_input(key="add_avail_when").input("CAR: license == 1").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [shown(e.value) for e in at.error]
    preview = " ".join(" ".join(shown(m.value).split()) for m in at.markdown)
    assert "alternative CAR: TT (CAR_TT), CO (CAR_CO); available when license == 1" in preview
    at.text_input(key="add_title::licence.csv").input("Licence").run()
    at.button(key="add_import").click().run()
    assert not at.exception and not at.error, [shown(e.value) for e in at.error]
    form = us.load_user_study(at.session_state["sel_study"])
    flags = ["--available-when", "CAR: license == 1"]
    assert cli.main(["import-study", str(path), "--title", "By command", *flags]) == 0
    by_cli = us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])
    np.testing.assert_array_equal(form.data.pairs, by_cli.data.pairs)
    np.testing.assert_array_equal(form.data.X, by_cli.data.X)
    np.testing.assert_array_equal(form.data.respondent, by_cli.data.respondent)
    assert form.extras["columns"].available_when == ("CAR: license == 1",)


def test_the_form_takes_a_condition_for_a_long_file(app: Any, capsys: Any) -> None:
    """A long file (one row per alternative) with the same condition: the form's field is
    there for the long layout too and imports the command's study."""
    from tests.data_loaders.test_availability_long import licence_task_frame, to_long

    long = to_long(licence_task_frame(1), ["TRAIN", "BUS", "CAR"], "{alt}_{stem}",
                   ["TT", "CO"], ["ID", "task", "license"], "CHOICE")  # fmt: skip
    path = Path.cwd() / "licence_long.csv"
    long.to_csv(path, index=False)
    at = app("case_studies")
    at.file_uploader(key="add_choices").upload("licence_long.csv", path.read_bytes(), "text/csv")
    at.run()
    at.selectbox(key="add_col_resp").set_value("ID").run()
    at.selectbox(key="add_col_profile").set_value("alt").run()
    assert at.radio(key="add_format").value == "long"
    at.text_input(key="add_avail_when").input("CAR: license == 1").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [shown(e.value) for e in at.error]
    preview = " ".join(" ".join(shown(m.value).split()) for m in at.markdown)
    assert "alternative CAR: available when license == 1" in preview
    assert "choice situations whose chosen alternative is marked unavailable" in preview
    at.text_input(key="add_title::licence_long.csv").input("Licence long").run()
    at.button(key="add_import").click().run()
    assert not at.exception and not at.error, [shown(e.value) for e in at.error]
    form = us.load_user_study(at.session_state["sel_study"])
    flags = ["--respondent-col", "ID", "--profile-col", "alt"]
    flags += ["--available-when", "CAR: license == 1"]
    assert cli.main(["import-study", str(path), "--title", "By command", *flags]) == 0
    by_cli = us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])
    np.testing.assert_array_equal(form.data.pairs, by_cli.data.pairs)
    np.testing.assert_array_equal(form.data.X, by_cli.data.X)
    np.testing.assert_array_equal(form.data.task, by_cli.data.task)
    assert form.extras["dropped"] == by_cli.extras["dropped"]
    assert form.extras["columns"].available_when == ("CAR: license == 1",)
