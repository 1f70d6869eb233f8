"""The shapes corpus: the committed files are what the generator writes, and every shape
imports through the command line and through save_study/check_upload to the manifest's
counts and to the same comparisons."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from tests.fixtures.shapes import SHAPES, Shape
from tests.fixtures.shapes.generate import write_all


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_files_are_what_the_generator_writes(tmp_path: Path) -> None:
    counts = write_all(tmp_path)
    for shape in SHAPES.values():
        assert (tmp_path / shape.file.name).read_bytes() == shape.file.read_bytes(), shape.file
    assert counts["f"]["comparisons"] == SHAPES["rankings"].comparisons
    assert counts["g"]["comparisons"] == SHAPES["opt-out"].comparisons
    assert 60 <= min(c["rows"] for c in counts.values())
    assert max(c["rows"] for c in counts.values()) <= 600


def columns_of(shape: Shape) -> us.ColumnMap:
    p = argparse.ArgumentParser()
    us.add_column_args(p)
    return us.column_map(p.parse_args(shape.args))


@pytest.mark.parametrize("key", list(SHAPES))
def test_every_shape_imports_by_cli_and_by_save_study_alike(
    key: str, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    shape = SHAPES[key]
    code = cli.main(["import-study", str(shape.file), "--title", shape.title, *shape.args])
    out, err = capsys.readouterr()
    assert code == 0, err
    study_key = out.strip().splitlines()[-1]
    assert out.strip() == study_key and study_key.startswith(us.KEY_PREFIX)
    assert all(line.startswith(("inferred: ", "saved ")) for line in err.splitlines()), err
    study = us.load_user_study(study_key)
    counts = study.counts()
    assert (counts["respondents"], counts["comparisons"]) == (shape.respondents, shape.comparisons)
    assert (study.users is not None) == shape.has_users
    if shape.has_users:  # every respondent-feature has a readable label
        assert all(f.label for f in study.user_schema.features)
    # the form's path: check_upload / save_study with the same column map
    content = shape.file.read_bytes()
    checked, problems = us.check_upload(content, shape.file.name, None, columns_of(shape))
    assert problems == [] and checked is not None
    np.testing.assert_array_equal(checked.data.pairs, study.data.pairs)
    np.testing.assert_array_equal(checked.data.X, study.data.X)
    np.testing.assert_array_equal(checked.data.respondent, study.data.respondent)
    meta, problems = us.save_study("again", content, shape.file.name, None, columns_of(shape))
    assert meta is not None and meta.counts == counts
    again = us.load_user_study(meta.key)
    np.testing.assert_array_equal(again.data.pairs, study.data.pairs)
    # the saved mapping is fully resolved: reloading infers nothing
    cols, notes = study.extras["columns"], study.extras["import_notes"]
    assert cols.format in ("long", "wide") and cols.money_attribute is not None
    assert not any(n.startswith("layout:") for n in notes)


def test_tasks_are_typed_and_counted() -> None:
    shape = SHAPES["one-choice-wide"]
    study = us.load_choice_file(shape.file, None, columns_of(shape))
    assert study.data.task is not None and study.data.n_tasks() == shape.respondents
    assert study.plan.money.attribute == "price"  # the plan holds the role, not extras
    assert "money_attribute" not in study.extras
    assert study.user_schema["coml5"].label == "Short commute"
