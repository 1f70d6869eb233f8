"""Units from column names at import: a file that states no unit gets the one
its column names state (``time_min`` -> min, ``cost_chf`` -> CHF), shown in the preview
and written to the attribute table, where the analyst may change it; a unit never names
the travel-time role."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from pbo_core.plan import plan_of
from pbo_core.units import unit_in_name
from tests.fixtures.formats import HERE


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("time_min", "min"),
        ("TT_minutes", "min"),
        ("cost_chf", "CHF"),
        ("price_eur", "EUR"),
        ("duration_h", "h"),
        ("walk_time_s", "s"),
        ("priceEUR", "EUR"),
        ("time (min)", "min"),
        ("price [€]", "EUR"),
        ("share_pct", "%"),
        ("TimePT", ""),  # Biogeme's alternative suffix is no unit
        ("TRAIN_TT", ""),
        ("hours", ""),  # a unit alone names no stem
        ("trains", ""),
        ("cost", ""),
    ],
)
def test_the_unit_a_column_name_states(name: str, unit: str) -> None:
    assert unit_in_name(name) == unit


def with_unit_names(tmp_path: Path) -> Path:
    """The long fixture with a cost in CHF and a time in minutes named by their columns."""
    frame = pd.read_csv(HERE / "long.csv").rename(columns={"price": "cost_chf"})
    rng = np.random.default_rng(0)
    frame["time_min"] = rng.integers(10, 90, len(frame))
    path = tmp_path / "units.csv"
    frame.to_csv(path, index=False)
    return path


def test_an_import_takes_units_from_column_names_and_guesses_no_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = with_unit_names(tmp_path)
    assert cli.main(["import-study", str(path), "--dry-run"]) == 0
    said = capsys.readouterr()
    assert "units: cost_chf CHF, time_min min (a unit names no role" in said.out
    assert "units from the column names: cost_chf CHF, time_min min;" in said.err
    assert cli.main(["import-study", str(path), "--title", "Units"]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    study = us.load_user_study(key)
    assert study.schema["cost_chf"].unit == "CHF" and study.schema["time_min"].unit == "min"
    plan = plan_of(study)
    assert plan.money is not None and plan.money.attribute == "cost_chf"
    assert plan.time is None  # minutes name no travel time: the plan asks for one


def test_a_stated_unit_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = with_unit_names(tmp_path)
    table = tmp_path / "attrs.json"
    table.write_text(
        '{"attributes": [{"name": "cost_chf", "kind": "numeric", "unit": "Rappen"},'
        ' {"name": "time_min", "kind": "numeric", "unit": "s"}]}',
        encoding="utf-8",
    )
    assert cli.main(["import-study", str(path), "--title", "T", "--attributes", str(table)]) == 0
    study = us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])
    assert study.schema["cost_chf"].unit == "Rappen" and study.schema["time_min"].unit == "s"
