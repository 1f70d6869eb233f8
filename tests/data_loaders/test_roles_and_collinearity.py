"""Import: attribute roles are the analyst's (never a travel time from a unit), exact
collinearity is refused naming its columns, constant attributes are left out with a note."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import user_studies as us
from data_loaders.conjoint import Attribute
from data_loaders.layout import ColumnMap
from pbo_core.data import DataValidationError
from pbo_core.explain import labels
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
from pbo_core.plan import plan_of


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _trips(tmp_path: Path, *, total: bool = False, constant: bool = False) -> Path:
    """Long file: 60 respondents x 6 choices among 3 trips (price, in-vehicle and
    out-of-vehicle time, an acceleration in seconds), optionally total time and a constant."""
    rng = np.random.default_rng(4)
    rows = []
    for r in range(60):
        for t in range(6):
            ivt = rng.uniform(10, 60, 3)
            ovt = rng.uniform(5, 30, 3)
            price = rng.uniform(1, 20, 3)
            accel = rng.uniform(4, 12, 3)
            u = -0.2 * price - 0.05 * ivt - 0.08 * ovt - 0.1 * accel + rng.gumbel(size=3)
            for a in range(3):
                row = {
                    "respondent": r,
                    "task": t,
                    "profile": a + 1,
                    "chosen": int(a == int(np.argmax(u))),
                    "price": round(price[a], 2),
                    "ivt": round(ivt[a], 1),
                    "ovt": round(ovt[a], 1),
                    "accel": round(accel[a], 2),
                }
                if total:
                    row["total_time"] = row["ivt"] + row["ovt"]
                if constant:
                    row["seats"] = 4
                rows.append(row)
    path = tmp_path / "trips.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _attrs(study_file: Path) -> list:
    frame = pd.read_csv(study_file)
    ins = us.inspect_upload(frame, study_file.name, ColumnMap(format="long"))
    units = {"price": "EUR", "ivt": "min", "ovt": "min", "accel": "s", "total_time": "min"}
    return [
        a.__class__(**{**a.__dict__, "unit": units.get(a.name, a.unit)}) for a in ins.attributes
    ]


def test_exactly_collinear_attributes_are_refused_naming_the_three(tmp_path: Path) -> None:
    path = _trips(tmp_path, total=True)
    with pytest.raises(DataValidationError) as e:
        us.load_choice_file(path, None, columns=ColumnMap(format="long"))
    msg = str(e.value)
    assert "ivt, ovt and total_time are exactly collinear" in msg
    assert "total_time = ivt + ovt" in msg and "--drop-attributes" in msg
    # leaving one out is the analyst's choice, and then the import goes through
    study = us.load_choice_file(
        path, None, ColumnMap(format="long", drop_attributes=("total_time",))
    )
    assert "total_time" not in study.schema.names and {"ivt", "ovt"} <= set(study.schema.names)


def test_constant_attributes_are_left_out_with_a_note(tmp_path: Path) -> None:
    path = _trips(tmp_path, constant=True)
    inferred = us.load_choice_file(path, None, ColumnMap(format="long"))
    assert "seats" not in inferred.schema.names  # inference never takes it
    assert any("constant within every task): seats" in n for n in inferred.extras["import_notes"])
    # an attribute table that names it: the import leaves it out and says why
    attrs = [*_attrs(path), Attribute("seats", "numeric", column="seats")]
    study = us.load_choice_file(path, attrs, ColumnMap(format="long"))
    assert "seats" not in study.schema.names
    assert any(n.startswith("left out: seats") for n in study.extras["import_notes"])


def test_a_duration_in_seconds_is_no_travel_time_until_named(tmp_path: Path) -> None:
    path = _trips(tmp_path)
    attrs = _attrs(path)
    study = us.load_choice_file(path, attrs, columns=ColumnMap(format="long"))
    plan = plan_of(study)
    assert plan.time is None and plan.money is not None and plan.money.attribute == "price"
    model = LinearLeafDTSurrogate(linear_features="all", max_depth=0).fit(study.data)
    money, time = labels.money_attribute(study)[0], labels.time_attribute(study)[0]
    assert labels.value_of_time(model, money, time) == {}  # accel (s) is not a travel time
    kinds = {t.kind for t in labels.tradeoffs(model, money=money, time=time)}
    assert kinds == {"willingness to pay"}
    named = us.load_choice_file(path, attrs, columns=ColumnMap(format="long", time_attribute="ivt"))
    assert plan_of(named).time.attribute == "ivt" and plan_of(named).time.unit == "min"
    vot = labels.value_of_time(model, "price", labels.time_attribute(named)[0])
    assert vot and vot[None].attribute == "Ivt" and vot[None].unit == "EUR per hour"
    with pytest.raises(DataValidationError, match="not a numeric attribute"):
        us.load_choice_file(path, attrs, columns=ColumnMap(format="long", time_attribute="nope"))
