import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders._common import DataNotAvailableError
from data_loaders.presidential import (
    MAPPING_FILE,
    load_presidential,
    presidential_status,
    read_mapping,
)
from pbo_core.data import DataValidationError
from tests.fixtures.synthetic import presidential_frame

# DT-PBO Table 13, in the table's order
TABLE_13 = {
    "Gender": ["Male", "Female"],
    "Age": ["36", "45", "54", "63", "72"],
    "Race/Ethnicity": ["Asian American", "Black", "Hispanic", "White"],
    "Religion": ["Catholic", "Evangelical Protestant", "Mainline Protestant", "None"],
    "Highest education": ["Graduated from high school", "Graduated from college"],
    "Profession": ["Business owner", "Farmer", "Fire fighter", "Lawyer"],
    "Annual income": ["$32k", "$75k", "$180k", "$5.1m"],
    "Marital status": ["Single", "Married", "Divorced"],
    "Party affiliation": ["Democrat", "Republican"],
    "Prior elected office": ["None", "State attorney general", "Governor", "U.S. senator"],
    "Military service": ["No military service", "Served in U.S. military"],
    "Largest campaign contributor": [
        "Auto workers' unions", "Oil companies", "Teachers' unions", "Wall Street firms",
    ],
    "Position on abortion": ["Pro-choice", "Neutral", "Pro-life"],
    "Position on gay marriage": ["Favors gay marriage", "Opposes gay marriage"],
    "Position on health care": ["Government should do more", "Government should do less"],
    "Religious activity": [
        "Never attends church", "Occasionally attends church", "Attends church weekly",
        "Prays daily",
    ],
    "Favorite music": ["Classical", "Country", "Hip hop", "Rock"],
    "Favorite professional sport": ["Baseball", "Basketball", "Football", "Soccer"],
    "State of residence": ["Alabama", "Colorado", "Massachusetts", "Ohio"],
    "Car": ["Ford Sedan", "Ford pick-up truck", "Toyota Sedan", "Toyota pick-up truck"],
}  # fmt: skip
CORE = {"cage", "cparty", "chealthcare", "cmarriage"}


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DTPBO_PRESIDENTIAL_PATH", raising=False)


@pytest.fixture
def doc() -> dict:
    return json.loads(MAPPING_FILE.read_text(encoding="utf-8"))


def write(frame: pd.DataFrame, tmp_path: Path, name: str = "cand_s2_MTurk.csv") -> Path:
    p = tmp_path / name
    frame.to_csv(p, index=False)
    return p


# ---------------------------------------------------------------------------- mapping file
def test_mapping_file_matches_table_13(doc: dict) -> None:
    attrs = doc["attributes"]
    assert [a["label"] for a in attrs] == list(TABLE_13)
    for a in attrs:
        codes = a["codes"]
        # codes 1..L in the order of Table 13
        assert sorted(codes, key=int) == [str(k) for k in range(1, len(codes) + 1)]
        assert [codes[str(k)] for k in range(1, len(codes) + 1)] == TABLE_13[a["label"]]
    assert {a["column"] for a in attrs if a["core"]} == CORE
    assert all(a["column"].startswith("c") and a["column"].endswith("m")
               for a in attrs if not a["core"])  # fmt: skip
    assert doc["verified"] is False and "NOT VERIFIED" in doc["note"]


def test_read_mapping_builds_not_shown_levels() -> None:
    m = read_mapping()
    by = {a.name: a for a in m.attributes}
    assert len(m.attributes) == 20 and len(m.fillers) == 16
    assert by["gender"].levels == ("not shown", "Male", "Female")
    assert by["gender"].parse(0) == "not shown" and by["gender"].parse(np.nan) == "not shown"
    assert by["gender"].parse(2) == "Female" and by["gender"].parse("female") == "Female"
    assert by["age"].kind == "ordinal" and by["age"].levels == ("36", "45", "54", "63", "72")
    assert by["age"].parse(3) == "54" and by["age"].parse(54) == "54"
    with pytest.raises(ValueError):
        by["party"].parse(0)  # core attributes are always shown
    with pytest.raises(ValueError):
        by["gender"].parse(3)


def test_read_mapping_errors(tmp_path: Path, doc: dict) -> None:
    p = tmp_path / "m.json"
    p.write_text('{\n "attributes": [\n  {"name": "x",,}\n ]\n}')
    with pytest.raises(DataValidationError, match=r"m.json, line 3: invalid JSON"):
        read_mapping(p)
    doc["attributes"][2]["colour"] = "red"
    p.write_text(json.dumps(doc))
    with pytest.raises(DataValidationError, match=r"attribute #3: unknown keys \['colour'\]"):
        read_mapping(p)


# ---------------------------------------------------------------------------- loading
def test_load_fixture(tmp_path: Path, doc: dict) -> None:
    f = presidential_frame(doc, 4, seed=3)
    s = load_presidential(write(f, tmp_path))
    assert s.key == "presidential"
    assert s.counts()["respondents"] == 4
    assert s.data.n_pairs == 4 * 15 - s.extras["n_identical_skipped"]
    assert len(s.schema) == 20 and s.schema.names[0] == "gender"
    assert "not been verified" in s.description and "CC0" in s.license
    # fillers not shown are "not shown" for every profile of that respondent
    for r, shown in s.extras["fillers_shown"].items():
        rows = f[f["r_id"] == r]
        assert len(shown) == rows["condition"].iloc[0]
        items = s.for_respondent(r).items
        for a in read_mapping().attributes:
            if a.name in read_mapping().fillers and a.name not in shown:
                assert set(items[a.name]) == {"not shown"}
    # winners decoded through the mapping
    first = f[(f["r_id"] == 1000) & (f["pref"] == 1)].iloc[0]
    w = s.data.items.iloc[s.data.pairs[0, 0]]
    assert w["party"] == TABLE_13["Party affiliation"][int(first["cparty"]) - 1]
    assert w["age"] == TABLE_13["Age"][int(first["cage"]) - 1]
    # respondent features
    u = s.users
    assert list(u.index) == [1000, 1001, 1002, 1003]
    assert set(u["gender"]) <= {"male", "female"}
    assert set(u["strength"]) <= {"strong", "not very strong", "n/a"}
    s.user_schema.encode(u)


def test_pref_missing_drops_the_task(tmp_path: Path, doc: dict) -> None:
    f = presidential_frame(doc, 2, seed=1)
    f["pref"] = f["pref"].astype(float)
    f.loc[[0, 1], "pref"] = np.nan  # task A of respondent 1000 unanswered
    s = load_presidential(write(f, tmp_path))
    assert s.extras["respondent_summary"].loc[1000, "n_dropped"] == 1


def test_condition_check_catches_misnamed_fillers(tmp_path: Path, doc: dict) -> None:
    f = presidential_frame(doc, 3, seed=2)
    shown = (f[[a["column"] for a in doc["attributes"] if not a["core"]]].fillna(0) > 0).sum(axis=1)
    i = int(np.flatnonzero(shown.to_numpy() > 0)[0])
    rows = f["r_id"] == f.loc[i, "r_id"]  # first row of a respondent who saw fillers
    f.loc[rows, "condition"] = f.loc[rows, "condition"] + 1
    p = write(f, tmp_path)
    with pytest.raises(DataValidationError, match=rf"line {i + 2}: \d+ filler attributes are"):
        load_presidential(p)
    assert load_presidential(p, check_condition=False).counts()["respondents"] == 3


def test_missing_column_lists_candidates(tmp_path: Path, doc: dict) -> None:
    f = presidential_frame(doc, 2).rename(columns={"ccarm": "cautom"})
    p = write(f, tmp_path)
    with pytest.raises(DataValidationError) as err:
        load_presidential(p)
    msg = str(err.value)
    assert "line 1 (header): missing column(s) ['ccarm']" in msg
    assert "unmapped filler-like columns in the file: ['cautom']" in msg
    s = load_presidential(p, columns={"car": "cautom"})
    assert s.counts()["respondents"] == 2


@pytest.mark.parametrize(
    ("column", "value", "pattern"),
    [
        ("profile", "A3x", r"line 5: column 'profile': 'A3x' is not a profile code"),
        ("cparty", 3, r"line 5: column 'cparty' \(attribute 'party', Party affiliation\): 3"),
        ("cage", 0, r"line 5: column 'cage' \(attribute 'age', Age\): 0 is not one"),
        ("pref", 7, r"line 5: column 'pref': 7 is not a chosen flag"),
    ],
)
def test_malformed_rows_name_line(tmp_path: Path, doc: dict, column, value, pattern) -> None:
    f = presidential_frame(doc, 2, seed=0)
    f[column] = f[column].astype(object)
    f.loc[3, column] = value
    p = write(f, tmp_path)
    with pytest.raises(DataValidationError, match=pattern) as err:
        load_presidential(p)
    assert str(p) in str(err.value)


def test_env_var_and_absent(tmp_path: Path, doc: dict, monkeypatch) -> None:
    assert presidential_status()[0] is False
    with pytest.raises(DataNotAvailableError, match="JYC2TH"):
        load_presidential()
    p = write(presidential_frame(doc, 2), tmp_path)
    monkeypatch.setenv("DTPBO_PRESIDENTIAL_PATH", str(p))
    assert presidential_status() == (True, f"found at {p} ($DTPBO_PRESIDENTIAL_PATH)")
    assert load_presidential() is load_presidential()  # cached with default options


def test_text_labels_are_accepted(tmp_path: Path, doc: dict) -> None:
    f = presidential_frame(doc, 2, seed=4)
    coded = load_presidential(write(f, tmp_path, "coded.csv"))
    f["cparty"] = f["cparty"].map({1: "Democrat", 2: "Republican"})
    labelled = load_presidential(write(f, tmp_path, "labels.csv"))
    np.testing.assert_array_equal(coded.data.X, labelled.data.X)


def test_encoding_agrees_with_schema_encode(tmp_path: Path, doc: dict) -> None:
    s = load_presidential(write(presidential_frame(doc, 3, seed=6), tmp_path))
    np.testing.assert_array_equal(s.data.X, s.schema.encode(s.data.items))
