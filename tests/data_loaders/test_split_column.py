"""The analyst's own split: a split column given at import
(``--split-col``) and chosen in the plan (``split=column:NAME``), and a panel's latest
tasks held out (``latest``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from data_loaders.plans import edit_plan
from data_loaders.registry import load_study
from pbo_core.splits import make_split


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def panel(tmp_path: Path, part: dict[int, str]) -> Path:
    rng = np.random.default_rng(0)
    rows = [
        {"id": r, "task": t, "price1": rng.integers(10, 90), "price2": rng.integers(10, 90),
         "time1": rng.integers(10, 60), "time2": rng.integers(10, 60),
         "choice": rng.integers(1, 3), "part": part.get(t, "train")}
        for r in range(1, 31) for t in range(1, 7)
    ]  # fmt: skip
    path = tmp_path / "panel.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_split_column_is_the_study_split(tmp_path: Path, capsys) -> None:
    path = panel(tmp_path, {5: "validation", 6: "test"})
    assert cli.main(["import-study", str(path), "--title", "P", "--respondent-col", "id",
                     "--split-col", "part"]) == 0  # fmt: skip
    key = capsys.readouterr().out.strip().splitlines()[-1]
    study = us.load_user_study(key)
    assert study.extras["split_column"] == "part"
    split = make_split(study, "study")
    tasks = study.data.task.astype(int)
    assert (tasks[split.test] == 6).all() and split.test.sum() == 30  # one pair per task
    assert split.train[tasks == 5].all()  # a validation row trains
    plan = edit_plan(load_study(key), {"split": "column:part"})
    assert plan.split == "study"
    with pytest.raises(ValueError, match="no split column 'other'"):
        edit_plan(load_study(key), {"split": "column:other"})
    bad = panel(tmp_path, {6: "later"})
    assert cli.main(["import-study", str(bad), "--dry-run", "--respondent-col", "id",
                     "--split-col", "part"]) == 2  # fmt: skip
    assert "'later' is not train, validation or test" in capsys.readouterr().err


def test_latest_tasks_are_held_out(tmp_path: Path, capsys) -> None:
    path = panel(tmp_path, {})
    assert cli.main(["import-study", str(path), "--title", "L", "--respondent-col", "id"]) == 0
    study = us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])
    split = make_split(study, "latest", test_tasks=2)
    tasks = study.data.task.astype(int)
    assert set(tasks[split.test]) == {5, 6} and set(tasks[split.train]) == {1, 2, 3, 4}
    assert "latest choice tasks" in split.reason
