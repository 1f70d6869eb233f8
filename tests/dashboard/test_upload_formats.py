"""The Add-a-study form reads every format the command line reads:
its uploader accepts :func:`data_loaders.readers.accepted_suffixes` and says them, the
caption names the separator found, the Separator choice overrides it, and a
tab-separated upload imports to the study the command line makes of the same table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from data_loaders import cli, readers
from data_loaders import user_studies as us
from tests.dashboard._shown import shown
from tests.fixtures.formats import HERE


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


def captions(at: Any) -> str:
    return " ".join(" ".join(shown(c.value).split()) for c in at.caption)


def test_the_form_accepts_the_commands_list_and_says_it(app) -> None:
    at = app("case_studies")
    (up,) = [u for u in at.get("file_uploader") if u.proto.id.endswith("add_choices")]
    from dashboard._study_import import EXPLAINED_TYPES  # taken only to say: save as .xlsx

    explained = {f".{t}" for t in EXPLAINED_TYPES}
    assert set(up.proto.type) == set(readers.accepted_suffixes()) | explained
    assert readers.accepted_text() in " ".join(up.proto.help.split())
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["import-study"]
    assert readers.accepted_text() in " ".join(sub.format_help().split())


def test_a_tab_separated_upload_imports_as_the_command_line_does(app, capsys) -> None:
    at = app("case_studies")
    blob = (HERE / "long.tsv").read_bytes()
    at.file_uploader(key="add_choices").upload("long.tsv", blob, "text/plain").run()
    no_exception(at)
    assert not at.error, [shown(e.value) for e in at.error]
    assert "long.tsv: tab-separated text (separator detected" in captions(at)
    at.text_input(key="add_title::long.tsv").input("From the form").run()
    at.button(key="add_import").click().run()
    no_exception(at)
    key = at.session_state["sel_study"]
    assert key.startswith(us.KEY_PREFIX), key
    copy = Path.cwd() / "long.csv"  # the test's only data root (tests/dashboard/conftest.py)
    copy.write_bytes((HERE / "long.csv").read_bytes())
    assert cli.main(["import-study", str(copy), "--title", "From the command"]) == 0
    by_cli = capsys.readouterr().out.strip().splitlines()[-1]
    form, command = us.load_user_study(key), us.load_user_study(by_cli)
    np.testing.assert_array_equal(form.data.pairs, command.data.pairs)
    np.testing.assert_array_equal(form.data.X, command.data.X)
    np.testing.assert_array_equal(form.data.respondent, command.data.respondent)


def test_the_separator_choice_overrides_the_detection(app) -> None:
    at = app("case_studies")
    blob = (HERE / "wide.dat").read_bytes()
    at.file_uploader(key="add_choices").upload("wide.dat", blob, "text/plain").run()
    no_exception(at)
    at.selectbox(key="add_sep").select("comma ,").run()
    no_exception(at)
    problems = " ".join(shown(str(v)) for t in at.table for v in t.value.to_numpy().ravel())
    assert "one column" in problems and "holds tabs" in problems, problems
    at.selectbox(key="add_sep").select("tab").run()
    no_exception(at)
    assert "wide.dat: tab-separated text;" in captions(at)


def test_a_one_hot_choice_upload_imports_as_the_command_line_does(app, capsys) -> None:
    """The choice as one 0/1 column per alternative (Biogeme's airline example): the form
    says how it read the choice and imports the command's study."""
    from tests.data_loaders.test_choice_indicators import flights

    df, _ = flights()
    blob = df.to_csv(sep="\t", index=False).encode()
    at = app("case_studies")
    at.file_uploader(key="add_choices").upload("airline.dat", blob, "text/plain").run()
    no_exception(at)
    assert not at.error, [shown(e.value) for e in at.error]
    text = " ".join(shown(m.value) for m in [*at.caption, *at.markdown, *at.info])
    assert "from the 0/1 columns BestAlternative_1" in " ".join(text.split()), text
    assert at.selectbox(key="add_col_chosen::wide").value == "BestAlternative"
    at.text_input(key="add_title::airline.dat").input("Flights, form").run()
    at.button(key="add_import").click().run()
    no_exception(at)
    key = at.session_state["sel_study"]
    copy = Path.cwd() / "airline.dat"  # the test's only data root
    copy.write_bytes(blob)
    assert cli.main(["import-study", str(copy), "--title", "Flights, command"]) == 0
    by_cli = capsys.readouterr().out.strip().splitlines()[-1]
    form, command = us.load_user_study(key), us.load_user_study(by_cli)
    np.testing.assert_array_equal(form.data.pairs, command.data.pairs)
    np.testing.assert_array_equal(form.data.X, command.data.X)
