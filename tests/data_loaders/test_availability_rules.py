"""Availability given by a condition on a column: ``--available-when 'CAR:
license == 1'`` (and the form's field) makes the same study as a ``CAR_AV`` column
holding the condition; the rule's operators, its rows counted, and its errors in words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from data_loaders.prepare import availability_rule, parse_availability_rule
from pbo_core.data import DataValidationError


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def licence_frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """Wide choices of TRAIN, BUS and CAR; CAR only for licence holders."""
    rng = np.random.default_rng(seed)
    licence = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "ID": np.repeat(np.arange(1, n // 3 + 1), 3),
            "license": np.repeat(licence[: n // 3], 3),
            "TRAIN_TT": rng.integers(20, 90, n),
            "TRAIN_CO": rng.integers(2, 20, n),
            "BUS_TT": rng.integers(20, 90, n),
            "BUS_CO": rng.integers(2, 20, n),
            "CAR_TT": rng.integers(20, 90, n),
            "CAR_CO": rng.integers(2, 20, n),
        }
    )
    choice = rng.integers(1, 4, n)
    choice[(frame["license"] == 0).to_numpy() & (choice == 3)] = 1
    choice[:2] = 3  # the first respondent's CAR choices: kept or dropped with the licence
    frame["CHOICE"] = choice
    return frame


def import_file(path: Path, *flags: str, capsys: pytest.CaptureFixture[str]):
    assert cli.main(["import-study", str(path), "--title", path.stem, *flags]) == 0
    return us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_condition_is_the_same_study_as_its_availability_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = licence_frame()
    by_rule = tmp_path / "rule.csv"
    frame.to_csv(by_rule, index=False)
    by_column = tmp_path / "column.csv"
    frame.assign(CAR_AV=frame["license"]).to_csv(by_column, index=False)
    flags = ("--choice-coding", "1", "--respondent-col", "ID")
    assert cli.main(["import-study", str(by_rule), *flags, "--dry-run",
                     "--available-when", "CAR: license == 1"]) == 0  # fmt: skip
    said = capsys.readouterr()
    assert "alternative CAR: TT (CAR_TT), CO (CAR_CO); available when license == 1" in said.out
    n_off = int((frame["license"] != 1).sum())
    assert f"available when CAR: license == 1 (unavailable on {n_off} rows)" in said.err
    a = import_file(by_rule, *flags, "--available-when", "CAR: license == 1", capsys=capsys)
    b = import_file(by_column, *flags, capsys=capsys)
    np.testing.assert_array_equal(a.data.pairs, b.data.pairs)
    np.testing.assert_array_equal(a.data.X, b.data.X)
    np.testing.assert_array_equal(a.data.respondent, b.data.respondent)
    assert a.extras["dropped"] == b.extras["dropped"]
    # a rule is kept in the recipe and the study's column map
    assert a.extras["columns"].available_when == ("CAR: license == 1",)


@pytest.mark.parametrize(
    ("rule", "rows"),
    [
        ("CAR: license == 1", [True, False, True, False]),
        ("CAR: license = 1.0", [True, False, True, False]),
        ("CAR: license != 1", [False, True, False, False]),  # an empty cell meets nothing
        ("CAR: age >= 18", [True, False, True, False]),
        ("CAR: age < 18", [False, True, False, False]),
        ("CAR: kind == 'own car'", [True, False, False, False]),
    ],
)
def test_a_rule_reads_its_condition(rule: str, rows: list[bool]) -> None:
    frame = pd.DataFrame(
        {
            "license": [1, 0, 1, None],
            "age": [30, 16, 18, None],
            "kind": ["own car", "none", "shared", None],
        }
    )
    alt, ok = availability_rule(rule, frame, ("TRAIN", "CAR"), "f.csv")
    assert alt == "CAR" and ok.tolist() == rows


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("CAR license == 1", "write ALTERNATIVE: COLUMN == VALUE"),
        ("PLANE: license == 1", "'PLANE' is no alternative (alternatives: TRAIN, CAR)"),
        ("CAR: licence == 1", "the file has no column 'licence'"),
        ("CAR: kind > own", "> needs a number, not 'own'"),
    ],
)
def test_a_wrong_rule_is_said_in_words(rule: str, words: str) -> None:
    frame = pd.DataFrame({"license": [1, 0], "kind": ["a", "b"]})
    with pytest.raises(DataValidationError, match=words.replace("(", r"\(").replace(")", r"\)")):
        availability_rule(rule, frame, ("TRAIN", "CAR"), "f.csv")
    assert parse_availability_rule("car : license>=1") == ("car", "license", ">=", "1")


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        ("PLANE: price > 0", "long.csv: availability rule 'PLANE: price > 0': 'PLANE' is no "
         "alternative (alternatives: 1, 2, 3)"),
        ("1: prize > 0", "long.csv: availability rule '1: prize > 0': the file has no column "
         "'prize'"),
        ("1: speed > fast", "long.csv: availability rule '1: speed > fast': > needs a number, "
         "not 'fast'"),
        # a rule that does not parse is the flag's error, said before the file is read
        ("1 price", "--available-when: availability rule '1 price': write ALTERNATIVE: "
         "COLUMN == VALUE"),
    ],
)  # fmt: skip
def test_a_long_files_rule_is_checked_as_a_wide_files(
    rule: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fixtures.formats import HERE

    code = cli.main(["import-study", str(HERE / "long.csv"), "--title", "L",
                     "--available-when", rule])  # fmt: skip
    assert code == 2
    assert words in capsys.readouterr().err


def test_a_long_files_rule_removes_its_alternatives_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.fixtures.formats import HERE

    long = pd.read_csv(HERE / "long.csv")
    off = (long["profile"] == 1) & (long["price"] <= 30)
    chosen_off = int((off & (long["chosen"] == 1)).sum())
    assert 0 < chosen_off < int(off.sum())
    code = cli.main(["import-study", str(HERE / "long.csv"), "--dry-run",
                     "--available-when", "1: price > 30"])  # fmt: skip
    assert code == 0
    out, err = capsys.readouterr()
    assert "alternative 1: available when price > 30" in out
    assert f"available when 1: price > 30 (unavailable on {int(off.sum())} rows)" in err
    assert f"dropped: {chosen_off} choice situations whose chosen alternative is marked" in out
    tasks = long.groupby(["respondent", "task"]).ngroups
    assert (
        f"choice situations: {tasks - chosen_off:,} with comparisons; alternatives per "
        "choice situation: 2 to 3" in out
    )
