"""A wide file whose choice is one 0/1 column per alternative (``BestAlternative_1``,
``_2``, ``_3``, as Biogeme's airline example gives it): read as one chosen column, the
same study as the file with a choice column; named by its stem with ``--chosen-col``;
refused with a sentence when two such sets could be the choice; kept by the recipe."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from data_loaders.layout import ColumnMap, infer_attributes, resolve_columns
from data_loaders.study_files import load_choice_file
from pbo_core.data import DataValidationError
from tests.data_loaders.test_layouts import same_study

AUTO = ColumnMap(format="auto")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def flights(n: int = 40, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """An airline-like wide table (fare, trip time, legroom of three itineraries) and each
    row's chosen itinerary (0..2)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"SubjectId": np.arange(1, n + 1), "q15_Age": rng.integers(1, 7, n)})
    for stem, lo, hi in (("Fare", 90, 900), ("TripTimeHours", 1, 9), ("Legroom", 28, 36)):
        for a in (1, 2, 3):
            df[f"{stem}_{a}"] = rng.integers(lo, hi, n)
    chosen = rng.integers(0, 3, n)
    for a in (1, 2, 3):
        df[f"BestAlternative_{a}"] = (chosen == a - 1).astype(int)
    return df, chosen


def test_one_hot_choice_columns_give_the_choice_column_study(tmp_path: Path) -> None:
    df, chosen = flights()
    onehot = tmp_path / "airline.dat"
    df.to_csv(onehot, sep="\t", index=False)
    plain = df.drop(columns=[f"BestAlternative_{a}" for a in (1, 2, 3)])
    plain["choice"] = chosen + 1
    named = tmp_path / "airline-choice.csv"
    plain.to_csv(named, index=False)
    a = load_choice_file(onehot, None)
    b = load_choice_file(named, None, ColumnMap("auto", choice_coding="names"))
    same_study(a, b)
    assert a.counts()["comparisons"] == 2 * len(df)
    frame = df.copy()
    cols, notes = resolve_columns(frame, AUTO, "airline.dat")
    assert (cols.format, cols.chosen, cols.alternatives) == (
        "wide",
        "BestAlternative",
        ("1", "2", "3"),
    )
    assert notes[0] == (
        "chosen alternative: from the 0/1 columns BestAlternative_1, BestAlternative_2, "
        "BestAlternative_3 (one 1 per row), read as column 'BestAlternative' naming the "
        "alternative"
    )
    assert frame["BestAlternative"].tolist() == [str(k + 1) for k in chosen]
    assert not any(c.startswith("BestAlternative_") for c in frame.columns)


def test_the_stem_names_them_and_two_candidate_sets_are_refused(tmp_path: Path) -> None:
    df, chosen = flights()
    second = np.roll(chosen, 1)  # another one-hot set: which one is the choice?
    for a in (1, 2, 3):
        df[f"Stated_{a}"] = (second == a - 1).astype(int)
    with pytest.raises(
        DataValidationError,
        match=r"several sets of 0/1 columns .*"
        r"\(BestAlternative, Stated\); say which \(--chosen-col\)",
    ):
        resolve_columns(df.copy(), AUTO, "airline.dat")
    frame = df.copy()
    cols, _ = resolve_columns(frame, ColumnMap("auto", chosen="Stated"), "airline.dat")
    assert cols.chosen == "Stated" and frame["Stated"].tolist() == [str(k + 1) for k in second]
    # two 1s on a row: no choice indicators, so the file's choice is still unknown
    bad, _ = flights()
    bad.loc[3, ["BestAlternative_1", "BestAlternative_2", "BestAlternative_3"]] = 1
    with pytest.raises(DataValidationError, match="no column 'choice'"):
        resolve_columns(bad, AUTO, "airline.dat")


def test_the_recipe_replays_a_one_hot_import(capsys, home: Path, tmp_path: Path) -> None:
    df, _ = flights()
    f = tmp_path / "airline.dat"
    df.to_csv(f, sep="\t", index=False)
    assert cli.main(["import-study", str(f), "--title", "Flights"]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    study = us.load_user_study(key)
    recipe = home / "studies" / key / us.RECIPE_FILE
    assert cli.main(["import-study", str(f), "--title", "Again", "--recipe", str(recipe)]) == 0
    same_study(study, us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1]))


def test_codes_that_empty_the_study_point_at_missing(tmp_path: Path) -> None:
    """-1 on every row of one alternative (Biogeme's airline: no second flight) declared a
    missing-value code drops every choice situation: the error says so and names
    --missing."""
    df, _ = flights()
    df["SecondFlight_1"] = -1  # a direct flight
    df["SecondFlight_2"] = np.arange(len(df)) % 5
    df["SecondFlight_3"] = np.arange(len(df)) % 7
    f = tmp_path / "airline.dat"
    df.to_csv(f, sep="\t", index=False)
    with pytest.raises(
        DataValidationError, match=r"no choice situation is left .*if -1 are values .*--missing"
    ):
        load_choice_file(f, None, ColumnMap("auto", missing=("-1",)))
    kept = load_choice_file(f, None, ColumnMap("auto", missing=()))
    assert kept.counts()["comparisons"] == 2 * len(df)


def test_a_one_hot_attribute_beside_a_choice_column_stays_an_attribute() -> None:
    """0/1 columns with one 1 per row that are an attribute (the cheapest itinerary) are
    not taken for the choice when a column names it."""
    df, chosen = flights()
    df = df.drop(columns=[f"BestAlternative_{a}" for a in (1, 2, 3)])
    cheapest = df[["Fare_1", "Fare_2", "Fare_3"]].to_numpy().argmin(axis=1)
    for a in (1, 2, 3):
        df[f"Cheapest_{a}"] = (cheapest == a - 1).astype(int)
    df["depvar"] = chosen + 1  # a choice column not called choice (mlogit's Heating)
    frame = df.copy()
    cols, notes = resolve_columns(frame, AUTO, "airline.dat")
    assert cols.chosen == "depvar" and list(frame.columns) == list(df.columns)
    assert not any("0/1 columns" in n for n in notes)
    assert "Cheapest" in [a.name for a in infer_attributes(frame, cols)]
