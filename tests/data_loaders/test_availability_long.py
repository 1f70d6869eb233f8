"""Availability by a condition in a long file: ``--available-when
'CAR: license == 1'`` removes the rows of CAR where the condition is false, so a long file
gives the same study (choice situations, their alternatives, choices, what was dropped)
as the same data in wide layout with the same condition; the checks and messages are the
wide file's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from tests.data_loaders.test_availability_rules import licence_frame
from tests.fixtures.shapes import SHAPES


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def to_long(
    wide: pd.DataFrame,
    alternatives: list[str],
    column: str,
    stems: list[str],
    keep: list[str],
    choice: str,
) -> pd.DataFrame:
    """``wide`` as one row per alternative (``column.format(stem=, alt=)`` names a wide
    column), every alternative listed, a 1/0 ``chosen`` flag from the numbered ``choice``
    (1..J); ``keep``: the columns repeated on every row."""
    rows = []
    for _, r in wide.iterrows():
        for k, alt in enumerate(alternatives):
            row = {c: r[c] for c in keep}
            row["alt"] = alt
            row.update({s: r[column.format(stem=s, alt=alt)] for s in stems})
            row["chosen"] = int(r[choice] == k + 1)
            rows.append(row)
    return pd.DataFrame(rows)


def import_file(path: Path, flags: list[str], capsys: pytest.CaptureFixture[str]):
    assert cli.main(["import-study", str(path), "--title", path.stem, *flags]) == 0
    out, err = capsys.readouterr()
    return us.load_user_study(out.strip().splitlines()[-1]), err


def assert_same_study(a, b) -> None:
    for field in ("pairs", "X", "respondent", "task"):  # choices, items, whose, which task
        np.testing.assert_array_equal(getattr(a.data, field), getattr(b.data, field))
    assert a.counts() == b.counts()
    assert a.extras["dropped"] == b.extras["dropped"]


def licence_task_frame(seed: int) -> pd.DataFrame:
    wide = licence_frame(seed=seed)
    wide.insert(1, "task", wide.groupby("ID").cumcount() + 1)
    return wide


@pytest.mark.parametrize("seed", [0, 1])
def test_a_long_file_with_a_condition_is_the_wide_files_study(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wide = licence_task_frame(seed)
    long = to_long(wide, ["TRAIN", "BUS", "CAR"], "{alt}_{stem}", ["TT", "CO"],
                   ["ID", "task", "license"], "CHOICE")  # fmt: skip
    wide_path, long_path = tmp_path / "wide.csv", tmp_path / "long.csv"
    wide.to_csv(wide_path, index=False)
    long.to_csv(long_path, index=False)
    rule = ["--available-when", "CAR: license == 1"]
    common = ["--respondent-col", "ID", "--task-col", "task", *rule]
    w, _ = import_file(wide_path, ["--choice-coding", "1", *common], capsys)
    lo, said = import_file(long_path, ["--format", "long", "--profile-col", "alt", *common],
                           capsys)  # fmt: skip
    assert_same_study(lo, w)
    n_off = int((wide["license"] != 1).sum())
    assert n_off > 0
    assert f"available when CAR: license == 1 (unavailable on {n_off} rows)" in said
    # a CAR choice without a licence: its choice situation is dropped and counted (seed 1)
    chosen_off = int(((wide["license"] != 1) & (wide["CHOICE"] == 3)).sum())
    assert lo.extras["dropped"].get("whose chosen alternative is marked unavailable", 0) == (
        chosen_off
    )
    if seed == 1:
        assert chosen_off > 0
    assert lo.extras["columns"].available_when == ("CAR: license == 1",)


def test_numbered_alternatives_of_a_shape(tmp_path: Path, capsys) -> None:
    """Shape B (panel, wide, alternatives 1..3) and its long copy: alternative 3 only in
    the first three tasks of every respondent."""
    wide = pd.read_csv(SHAPES["panel-wide"].file)
    long = to_long(wide, ["1", "2", "3"], "{stem}{alt}", ["price", "speed", "wifi"],
                   ["respondent", "task"], "choice")  # fmt: skip
    wide_path, long_path = tmp_path / "b_wide.csv", tmp_path / "b_long.csv"
    wide.to_csv(wide_path, index=False)
    long.to_csv(long_path, index=False)
    rule = ["--available-when", "3: task <= 3"]
    w, _ = import_file(wide_path, rule, capsys)
    lo, said = import_file(long_path, ["--profile-col", "alt", *rule], capsys)
    assert_same_study(lo, w)
    late = wide["task"] > 3
    assert f"(unavailable on {int(late.sum())} rows)" in said
    assert lo.extras["dropped"]["whose chosen alternative is marked unavailable"] == int(
        (late & (wide["choice"] == 3)).sum()
    )


def test_an_unavailable_alternatives_empty_cells_are_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No cost for a car without a licence: empty cells there are fine in both layouts
    (never read), and an error naming the file, line and column without the condition."""
    wide = licence_task_frame(0)
    wide["CAR_CO"] = wide["CAR_CO"].astype(float).where(wide["license"] == 1)
    long = to_long(wide, ["TRAIN", "BUS", "CAR"], "{alt}_{stem}", ["TT", "CO"],
                   ["ID", "task", "license"], "CHOICE")  # fmt: skip
    wide_path, long_path = tmp_path / "wide.csv", tmp_path / "long.csv"
    wide.to_csv(wide_path, index=False)
    long.to_csv(long_path, index=False)
    common = ["--respondent-col", "ID", "--task-col", "task", "--missing", ""]
    rule = ["--available-when", "CAR: license == 1"]
    w, _ = import_file(wide_path, ["--choice-coding", "1", *common, *rule], capsys)
    lo, _ = import_file(long_path, ["--profile-col", "alt", *common, *rule], capsys)
    assert_same_study(lo, w)
    code = cli.main(["import-study", str(long_path), "--title", "no rule", "--profile-col",
                     "alt", *common])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    first = int(np.flatnonzero(long["CO"].isna().to_numpy())[0]) + 2  # header = line 1
    assert f"long.csv, lines {first}," in err and "column 'CO'" in err and "empty" in err
