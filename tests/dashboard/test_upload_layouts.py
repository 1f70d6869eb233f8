"""The Add-a-study form on the wide and long layouts: a Biogeme-style wide ``.dat`` (``*_AV``
availability, a numbered choice, a cost for two of three modes), a long file with
varying choice sets, a file with -1/-2 missing codes and a weight column. The form shows
the preview (``import-study --dry-run``'s lines, counts asserted), takes the same answers
as the command's flags and imports to the study the command makes; the recipe the study
keeps replays it by the command to the same study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from tests.dashboard._shown import shown
from tests.fixtures.formats import HERE

#: file -> (the form's text answers by widget key, the command's flags, preview lines)
CASES: dict[str, tuple[dict[str, str], list[str], list[str]]] = {
    "biogeme.dat": (
        {"add_fill": "CO"},
        ["--fill-attributes", "CO"],
        [
            "alternative SLOW: TT (SLOW_TT), CO (SLOW_CO, else 0); available when SLOW_AV = 1",
            "dropped: 2 choice situations with no or an unknown choice (lines 19, 32); 2 choice "
            "situations with fewer than two alternatives available (lines 11, 35)",
            "respondents: 10 (column ID)",
        ],
    ),
    "long_sets.csv": (
        {},
        [],
        [
            "choice situations: 23 with comparisons; alternatives per choice situation: 2 to 5",
            "dropped: 1 choice situation with fewer than two alternatives (line 35)",
        ],
    ),
    "missing_weight.csv": (
        {},
        [],
        [
            "dropped: 3 choice situations with a missing-value code in an attribute of an "
            "available alternative (lines 7, 13, 26)",
            "study: 27 respondents, 81 items, 54 comparisons",
        ],
    ),
}


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


def same(a: Any, b: Any) -> None:
    np.testing.assert_array_equal(a.data.pairs, b.data.pairs)
    np.testing.assert_array_equal(a.data.X, b.data.X)
    np.testing.assert_array_equal(a.data.respondent, b.data.respondent)
    np.testing.assert_array_equal(a.data.task, b.data.task)
    assert a.schema.names == b.schema.names


@pytest.mark.parametrize("file", list(CASES))
def test_the_form_previews_and_imports_as_the_command_does(app, capsys, file: str) -> None:
    answers, flags, expected = CASES[file]
    at = app("case_studies")
    blob = (HERE / file).read_bytes()
    at.file_uploader(key="add_choices").upload(file, blob, "text/plain").run()
    no_exception(at)
    for key, value in answers.items():
        at.text_input(key=key).input(value).run()
        no_exception(at)
    assert not at.error, [shown(e.value) for e in at.error]
    preview = [
        " ".join(shown(line).split()).removeprefix("- ")
        for m in at.markdown
        for line in str(m.value).splitlines()
    ]
    for line in expected:
        assert line in preview, (line, preview)
    at.text_input(key=f"add_title::{file}").input("From the form").run()
    at.button(key="add_import").click().run()
    no_exception(at)
    assert not at.error, [shown(e.value) for e in at.error]
    key = at.session_state["sel_study"]
    assert key.startswith(us.KEY_PREFIX), key
    copy = Path.cwd() / file  # the test's only data root (tests/dashboard/conftest.py)
    copy.write_bytes(blob)
    assert cli.main(["import-study", str(copy), "--title", "From the command", *flags]) == 0
    by_cli = capsys.readouterr().out.strip().splitlines()[-1]
    form = us.load_user_study(key)
    same(form, us.load_user_study(by_cli))
    # the form's study keeps its recipe: the command replays it to the same study
    recipe = us.studies_dir() / key / us.RECIPE_FILE
    assert cli.main(["import-study", str(copy), "--title", "Replay", "--recipe", str(recipe)]) == 0
    same(form, us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1]))
