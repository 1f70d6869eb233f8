import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders.conjoint import (
    Attribute,
    DropRespondents,
    MaxOptOutShare,
    MinAnsweredTasks,
    load_conjoint_long,
    load_conjoint_wide,
    load_preset,
    normalize_value,
    read_attribute_table,
    write_attribute_table,
)
from pbo_core.data import DataValidationError

ATTRS = [
    Attribute("price", "numeric", label="Price", unit="EUR", values=(10, 20, 30)),
    Attribute("size", "ordinal", levels=("small", "medium", "large"), label="Size"),
    Attribute("colour", "categorical", levels=("red", "green", "blue")),
    Attribute("eco", "binary", label="Eco label"),
]


def long_frame() -> pd.DataFrame:
    # respondent 1: task 1 three profiles (a chosen), task 2 two profiles + opt-out chosen
    # respondent 2: task 1 shares profile (10, small, red, no) with respondent 1
    rows = [
        (1, 1, "a", 1, 10, "small", "red", "no"),
        (1, 1, "b", 0, 20, "medium", "green", "yes"),
        (1, 1, "c", 0, 30, "large", "blue", "no"),
        (1, 2, "a", 0, 10, "large", "red", "yes"),
        (1, 2, "b", 0, 20, "small", "blue", "no"),
        (1, 2, "none", 1, None, None, None, None),
        (2, 1, "a", 0, 10, "small", "red", "no"),
        (2, 1, "b", 1, 30, "small", "green", "yes"),
    ]
    cols = ["resp", "task", "alt", "chosen", "price", "size", "colour", "eco"]
    return pd.DataFrame(rows, columns=cols)


def load(frame: pd.DataFrame | Path, **kw):
    opts = dict(
        respondent="resp", task="task", alternative="alt", chosen="chosen",
        opt_out_alternatives=("none",),
    )  # fmt: skip
    opts.update(kw)
    return load_conjoint_long(frame, ATTRS, **opts)


def write(frame: pd.DataFrame, tmp_path: Path, name: str = "data.csv") -> Path:
    p = tmp_path / name
    frame.to_csv(p, index=False)
    return p


# ---------------------------------------------------------------------------- pairs, items
def test_long_pairs_k_minus_one_and_shared_items() -> None:
    study = load(long_frame())
    d = study.data
    # 3 alternatives -> 2 pairs; opt-out task -> 0; respondent 2: 1 pair
    assert d.n_pairs == 3
    # distinct profiles: 4 in tasks 1 of both respondents; the opt-out task of respondent
    # 1 gives no pairs, so its profiles are not items
    assert d.n_items == 4
    items = d.items
    winner = items.iloc[d.pairs[0, 0]]
    assert (winner["price"], winner["size"], winner["colour"], winner["eco"]) == (
        10.0,
        "small",
        "red",
        "no",
    )
    # the same profile is one item: resp 1's winner is resp 2's loser
    assert d.pairs[0, 0] == d.pairs[2, 1]
    assert d.respondent.tolist() == [1, 1, 2]
    assert study.extras["pair_task"].tolist() == [1, 1, 1]
    summary = study.extras["respondent_summary"]
    assert summary.loc[1, "n_opt_out"] == 1 and summary.loc[1, "n_answered"] == 1
    assert summary.loc[1, "opt_out_share"] == 0.5


def test_schema_encoding_and_bounds() -> None:
    study = load(long_frame())
    sch = study.schema
    assert sch.names == ["price", "size", "colour", "eco"]
    assert sch["price"].bounds == (10.0, 30.0)  # from the allowed values
    assert sch["price"].unit == "EUR" and sch["price"].label == "Price"
    assert sch["size"].kind == "ordinal" and sch["size"].levels == ("small", "medium", "large")
    items = study.data.items
    row = items.index[(items["colour"] == "green") & (items["price"] == 30)][0]
    np.testing.assert_array_equal(study.data.X[row], [30.0, 0.0, 1.0, 1.0])


def test_identical_profiles_in_a_task_are_skipped() -> None:
    f = long_frame()
    f.loc[7, ["price", "size", "colour", "eco"]] = [10, "small", "red", "no"]
    study = load(f)
    assert study.data.n_pairs == 2
    assert study.extras["n_identical_skipped"] == 1


def test_codes_aliases_and_units_are_read() -> None:
    f = long_frame()
    f["size"] = f["size"].astype(object)
    f.loc[0, "size"] = 0  # 0-based code -> small
    f.loc[1, "size"] = " MEDIUM "  # case and spaces
    f["price"] = f["price"].astype(object)
    f.loc[2, "price"] = "30 EUR"  # number with unit
    f.loc[6, "price"] = 0  # code 0 of values -> 10
    study = load(f)
    assert set(study.data.items["size"]) == {"small", "medium", "large"}
    assert study.data.n_items == 4


def test_scale_and_explicit_codes() -> None:
    attrs = [
        Attribute("price", "numeric", scale=0.01, unit="EUR"),
        Attribute("plan", "categorical", levels=("basic", "premium"), codes={7: "premium"},
                  aliases={"std": "basic"}, code_base=None),
    ]  # fmt: skip
    f = pd.DataFrame(
        {"r": [1, 1], "t": [1, 1], "a": [1, 2], "c": [1, 0], "price": [250, 1000],
         "plan": ["std", 7]}
    )  # fmt: skip
    study = load_conjoint_long(f, attrs, respondent="r", task="t", alternative="a", chosen="c")
    assert study.data.items["price"].tolist() == [2.5, 10.0]
    assert study.data.items["plan"].tolist() == ["basic", "premium"]
    with pytest.raises(DataValidationError, match="not one of the levels"):
        f.loc[1, "plan"] = 1  # code_base=None: positional codes refused
        load_conjoint_long(f, attrs, respondent="r", task="t", alternative="a", chosen="c")


def test_missing_level_for_empty_cells() -> None:
    attrs = [Attribute("x", "categorical", levels=("n/a", "u", "v"), missing="n/a")]
    f = pd.DataFrame({"r": [1, 1], "t": [1, 1], "a": [1, 2], "c": [0, 1], "x": ["u", None]})
    study = load_conjoint_long(f, attrs, respondent="r", task="t", alternative="a", chosen="c")
    assert study.data.items["x"].tolist() == ["u", "n/a"]


# ---------------------------------------------------------------------------- opt-out, exclusion
def test_no_choice_policies() -> None:
    f = long_frame()
    f = f[f["alt"] != "none"]  # the opt-out task now has nothing chosen
    with pytest.raises(DataValidationError, match="no alternative is chosen"):
        load(f)
    s = load(f, no_choice="opt_out")
    assert s.extras["respondent_summary"].loc[1, "n_opt_out"] == 1
    s = load(f, no_choice="drop")
    summary = s.extras["respondent_summary"]
    assert summary.loc[1, "n_dropped"] == 1 and summary.loc[1, "opt_out_share"] == 0.0


def test_exclusion_rules() -> None:
    s = load(long_frame(), exclude=[MaxOptOutShare(0.4)])
    assert s.extras["excluded"] == {1: "opted out in more than 40% of tasks"}
    assert set(s.data.respondent) == {2}
    assert s.data.n_items == 2  # only respondent 2's profiles remain
    s = load(long_frame(), exclude=[MaxOptOutShare(0.5)])  # 0.5 is not > 0.5
    assert s.extras["excluded"] == {}
    s = load(long_frame(), exclude=[MinAnsweredTasks(2), DropRespondents((2,))])
    assert s.extras["excluded"] == {
        1: "fewer than 2 answered tasks",
        2: "fewer than 2 answered tasks",
    }
    assert s.data.n_pairs == 0

    def custom(summary: pd.DataFrame) -> pd.Series:
        return summary.index == 2

    s = load(long_frame(), exclude=[custom])
    assert s.extras["excluded"] == {2: "custom"}


def test_user_columns() -> None:
    f = long_frame()
    f["age"] = [30, 30, 30, 30, 30, 30, 41, 41]
    s = load(f, user_columns=["age"])
    assert s.users["age"].to_dict() == {1: 30, 2: 41}
    assert s.user_schema.names == ["age"]
    f.loc[4, "age"] = 31
    p = f.copy()
    with pytest.raises(DataValidationError, match=r"row 4: respondent 1: respondent columns"):
        load(p, user_columns=["age"])


# ---------------------------------------------------------------------------- errors (file, line)
@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (lambda f: f.drop(columns="colour"),
         r"line 1 \(header\): missing column\(s\) \['colour'\]"),
        (lambda f: f.assign(chosen=f["chosen"].astype(object).where(f.index != 2, "maybe")),
         r"line 4: column 'chosen': 'maybe' is not a chosen flag"),
        (lambda f: f.assign(chosen=f["chosen"].where(f.index != 1, 1)),
         r"line 2: respondent 1, task 1 \(lines/rows 2, 3, 4\): 2 alternatives are chosen"),
        (lambda f: f.assign(size=f["size"].where(f.index != 4, "huge")),
         r"line 6: column 'size' \(attribute 'size', Size\): 'huge' is not one of the levels"),
        (lambda f: f.assign(price=f["price"].where(f.index != 3, 25)),
         r"line 5: column 'price' \(attribute 'price', Price\): 25(\.0)? is not one of the values"),
        (lambda f: f.assign(eco=f["eco"].where(f.index != 6, None)),
         r"line 8: column 'eco' \(attribute 'eco', Eco label\): nan is empty"),
        (lambda f: f.assign(alt=f["alt"].where(f.index != 1, "a")),
         r"line 3: respondent 1, task 1: alternative 'a' appears more than once"),
        (lambda f: f.assign(resp=f["resp"].where(f.index != 5, None)),
         r"line 7: column 'resp' is empty"),
        (lambda f: f.drop(index=[6]),
         r"line 8: respondent 2, task 1 \(lines/rows 8\): fewer than two profiles"),
    ],
)  # fmt: skip
def test_malformed_file_names_file_and_line(tmp_path: Path, edit, pattern: str) -> None:
    p = write(edit(long_frame()), tmp_path)
    with pytest.raises(DataValidationError, match=pattern) as err:
        load(p)
    assert str(p) in str(err.value)


def test_dataframe_errors_name_the_row() -> None:
    f = long_frame()
    f.loc[4, "size"] = "huge"
    with pytest.raises(DataValidationError, match=r"^table, row 4: column 'size'"):
        load(f)


def test_blank_lines_keep_line_numbers(tmp_path: Path) -> None:
    p = write(long_frame(), tmp_path)
    lines = p.read_text().splitlines()
    lines.insert(3, "")  # blank line 4; old line 4 becomes line 5
    lines[5] = lines[5].replace("large", "huge")  # old line 5 (row 3) -> now line 6
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataValidationError, match=r"line 6: column 'size'"):
        load(p)


def test_unparseable_csv(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text('resp,task\n1,"unterminated\n')
    with pytest.raises(DataValidationError, match="cannot be read as CSV"):
        load(p)


# ---------------------------------------------------------------------------- wide format
def wide_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [1, 1, 2, 2],
            "choice": ["choice1", "choice2", "1", "none"],
            "price1": [10, 20, 10, 30], "size1": ["small", "large", "small", "medium"],
            "colour1": ["red", "red", "red", "blue"], "eco1": [0, 1, 0, 0],
            "price2": [30, 10, 20, 20], "size2": ["small", "small", "medium", "large"],
            "colour2": ["blue", "green", "green", "green"], "eco2": [1, 1, 0, 1],
        }
    )  # fmt: skip


def test_wide_format(tmp_path: Path) -> None:
    p = write(wide_frame(), tmp_path, "wide.csv")
    s = load_conjoint_wide(
        p, ATTRS, respondent="id", task=None, choice="choice", opt_out_values=("none",)
    )
    d = s.data
    assert d.n_pairs == 3  # the opt-out task gives none
    # the profile (10, small, red, no) appears twice and is one item
    assert d.n_items == 5
    assert d.pairs[0, 0] == d.pairs[2, 0]
    assert s.extras["pair_task"].tolist() == [1, 2, 1]  # tasks numbered per respondent
    assert s.extras["respondent_summary"].loc[2, "n_opt_out"] == 1
    assert s.extras["pair_line"].tolist() == [2, 3, 4]


def test_wide_format_errors(tmp_path: Path) -> None:
    f = wide_frame()
    f.loc[2, "choice"] = "3"
    p = write(f, tmp_path, "wide.csv")
    with pytest.raises(DataValidationError, match=r"wide.csv, line 4: column 'choice': '?3'? does"):
        load_conjoint_wide(p, ATTRS, respondent="id", task=None, opt_out_values=("none",))
    p = write(wide_frame().drop(columns="eco2"), tmp_path, "wide2.csv")
    with pytest.raises(DataValidationError, match=r"line 1 \(header\): missing .*'eco2'"):
        load_conjoint_wide(p, ATTRS, respondent="id", task=None)
    f = wide_frame()
    f.loc[1, "size2"] = "tiny"
    p = write(f, tmp_path, "wide3.csv")
    with pytest.raises(DataValidationError, match=r"line 3: column 'size' .*'tiny'"):
        load_conjoint_wide(p, ATTRS, respondent="id", task=None, opt_out_values=("none",))


# ---------------------------------------------------------------------------- attribute tables
def test_attribute_table_roundtrip(tmp_path: Path) -> None:
    p = tmp_path / "attrs.json"
    write_attribute_table(ATTRS, p)
    back = read_attribute_table(p)
    assert back == ATTRS
    study = load_conjoint_long(
        long_frame(), p, respondent="resp", task="task", alternative="alt", chosen="chosen",
        opt_out_alternatives=("none",),
    )  # fmt: skip
    assert study.schema.names == [a.name for a in ATTRS]


def test_attribute_table_errors(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{"attributes": [\n  {"name": "x", "kind": "numeric"},\n  oops\n]}')
    with pytest.raises(DataValidationError, match=r"bad.json, line 3: invalid JSON"):
        read_attribute_table(p)
    p.write_text(json.dumps([{"name": "x", "kind": "numeric", "colour": 1}]))
    with pytest.raises(DataValidationError, match=r"attribute #1: .*unknown keys \['colour'\]"):
        read_attribute_table(p)
    with pytest.raises(DataValidationError, match="not one of the levels"):
        Attribute("x", "categorical", levels=("a", "b"), codes={1: "c"})
    with pytest.raises(DataValidationError, match="binary needs exactly 2 levels"):
        Attribute("x", "binary", levels=("a", "b", "c"))


def test_normalize_value() -> None:
    assert normalize_value(1) == normalize_value(1.0) == normalize_value("1.0") == "1"
    assert normalize_value(True) == "true"
    assert normalize_value("  Postal   Letter ") == "postal letter"


def test_load_preset_unknown() -> None:
    with pytest.raises(KeyError, match="presets are"):
        load_preset("nope")
    assert load_preset("train").key == "train"


def test_fast_encoding_agrees_with_schema_encode() -> None:
    for study in (load(long_frame()), load_preset("train"), load_preset("electricity")):
        np.testing.assert_array_equal(study.data.X, study.schema.encode(study.data.items))
