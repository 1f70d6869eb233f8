"""The Add-a-study form's Text encoding (as ``import-study --encoding``): a cp1252 file
the detection reads wrongly (its bytes are valid UTF-8 too) imports correctly with the
choice set, to the command's study and the study of its UTF-8 copy, and the recipe keeps
the encoding; left at "detect", the caption says the encoding detected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data_loaders import cli
from data_loaders import user_studies as us
from tests.dashboard._shown import shown
from tests.fixtures.formats import HERE

#: "Fuß" and a non-breaking space: cp1252 bytes DF A0, which UTF-8 reads as one letter.
WALK = "Fuß\xa0Tempo"


def ambiguous() -> pd.DataFrame:
    """The long fixture with a speed level whose cp1252 bytes are valid UTF-8."""
    frame = pd.read_csv(HERE / "long.csv")
    frame["speed"] = frame["speed"].map({"slow": WALK, "medium": "mittel", "fast": "schnell"})
    return frame


def caption(at: Any) -> str:
    return " ".join(" ".join(shown(c.value).split()) for c in at.caption)


def no_problem(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [shown(e.value) for e in at.error]


def command_study(path: Path, capsys: Any, *flags: str) -> str:
    assert cli.main(["import-study", str(path), "--title", path.stem, *flags]) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_a_wrongly_detected_cp1252_file_imports_with_the_forms_encoding(
    app: Any, capsys: Any
) -> None:
    frame = ambiguous()
    data = frame.to_csv(index=False).encode("cp1252")
    assert WALK not in data.decode("utf-8")  # the detection's reading: valid, and wrong
    path = Path.cwd() / "walk.csv"  # the test's only data root (conftest)
    path.write_bytes(data)
    utf8 = Path.cwd() / "walk_utf8.csv"
    utf8.write_bytes(frame.to_csv(index=False).encode("utf-8"))

    at = app("case_studies")
    at.file_uploader(key="add_choices").upload("walk.csv", data, "text/csv").run()
    no_problem(at)
    assert at.selectbox(key="add_encoding").value == "detect"
    assert "Text encoding: UTF-8 (detected; the Text encoding choice names another)" in (
        caption(at)
    )
    at.selectbox(key="add_encoding").set_value("cp1252").run()
    no_problem(at)
    assert "encoding cp1252 (given)" in caption(at)
    assert "UTF-8 (detected" not in caption(at)
    at.text_input(key="add_title::walk.csv").input("Walk").run()
    at.button(key="add_import").click().run()
    no_problem(at)
    key = at.session_state["sel_study"]
    form = us.load_user_study(key)
    speed = form.schema.names.index("speed")
    levels = form.schema.features[speed].levels
    assert WALK in levels, levels
    recipe = json.loads((us.studies_dir() / key / us.RECIPE_FILE).read_text())
    assert recipe["encoding"] == "cp1252"

    by_cli = us.load_user_study(command_study(path, capsys, "--encoding", "cp1252"))
    copy = us.load_user_study(command_study(utf8, capsys))
    wrong = us.load_user_study(command_study(path, capsys))  # detected: UTF-8
    for other in (by_cli, copy):
        np.testing.assert_array_equal(form.data.pairs, other.data.pairs)
        np.testing.assert_array_equal(form.data.X, other.data.X)
        assert form.schema.features[speed].levels == other.schema.features[speed].levels
    assert wrong.schema.features[speed].levels != levels


def test_left_at_detect_the_detected_code_page_is_said(app: Any) -> None:
    frame = ambiguous().assign(note="5 €")  # no UTF-8: detected as cp1252
    data = frame.to_csv(index=False).encode("cp1252")
    at = app("case_studies")
    at.file_uploader(key="add_choices").upload("euro.csv", data, "text/csv").run()
    no_problem(at)
    assert "encoding cp1252 (not UTF-8; read as cp1252)" in caption(at)
    assert "UTF-8 (detected)" not in caption(at)
