"""Attributes: codes, aliases, units, scaling, missing cells, attribute tables."""

import json
from pathlib import Path

import pandas as pd
import pytest

from data_loaders.conjoint import (
    Attribute,
    load_conjoint_long,
    normalize_value,
    read_attribute_table,
    write_attribute_table,
)
from pbo_core.data import DataValidationError
from tests.data_loaders.conjoint.helpers import ATTRS, load, long_frame


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
