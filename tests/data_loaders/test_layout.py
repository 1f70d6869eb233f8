"""Inference of a choice file's shape: layout, alternatives, choice column, separators,
partial stems, attribute kinds, respondent-feature candidates; ambiguity errors that
list the file's columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from data_loaders.layout import (
    ColumnMap,
    feature_candidates,
    infer_attributes,
    resolve_columns,
)
from pbo_core.data import DataValidationError

AUTO = ColumnMap(format="auto")


def car_like(n: int = 40, alts: int = 6, seed: int = 0) -> pd.DataFrame:
    """Wide, choice1..choiceK, no task/respondent column; fuel1/fuel2 take two values."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"choice": [f"choice{int(k)}" for k in rng.integers(1, alts + 1, n)]})
    df["college"] = rng.integers(0, 2, n)
    for k in range(1, alts + 1):
        fuels = ["cng", "methanol"] if k <= 2 else ["cng", "methanol", "electric", "gasoline"]
        df[f"type{k}"] = rng.choice(["van", "regcar", "truck"], n)
        df[f"fuel{k}"] = rng.choice(fuels, n)
        df[f"price{k}"] = rng.uniform(2, 8, n).round(2)
    return df


def test_car_like_alternatives_from_choice_values_and_suffixes() -> None:
    df = car_like()
    cols, notes = resolve_columns(df, AUTO, "car.csv")
    assert cols.format == "wide" and cols.alternatives == ("1", "2", "3", "4", "5", "6")
    assert (cols.chosen, cols.separator, cols.respondent, cols.task) == ("choice", "", "", "")
    assert any("layout: wide" in n for n in notes)
    assert any("respondent column: none" in n for n in notes)
    attrs = {a.name: a for a in infer_attributes(df, cols)}
    assert list(attrs) == ["type", "fuel", "price"]
    # every alternative's cells count: fuel has four values, not the two of fuel1/fuel2
    assert attrs["fuel"].kind == "categorical" and len(attrs["fuel"].levels) == 4
    assert attrs["price"].kind == "numeric"
    # looking at alternatives 1 and 2 only (the old default) would call it binary
    two = infer_attributes(df, ColumnMap("wide", alternatives=("1", "2"), separator=""))
    assert next(a for a in two if a.name == "fuel").kind == "binary"
    assert feature_candidates(df, cols, list(attrs.values())) == ["college"]


@pytest.mark.parametrize("sep", [".", "_"])
def test_labelled_alternatives_with_a_separator_and_an_inferred_choice_column(sep: str) -> None:
    rng = np.random.default_rng(1)
    alts = ["gc", "gr", "ec", "er", "hp"]
    df = pd.DataFrame({"idcase": range(1, 31), "depvar": rng.choice(alts, 30)})
    for stem in ("ic", "oc"):
        for a in alts:
            df[f"{stem}{sep}{a}"] = rng.uniform(100, 900, 30).round(1)
    df["income"] = rng.integers(1, 8, 30)
    df["region"] = rng.choice(["north", "south"], 30)
    cols, notes = resolve_columns(df, AUTO, "heating.csv")
    assert cols.alternatives == tuple(alts) and cols.separator == sep
    assert cols.chosen == "depvar" and any("choice column: 'depvar'" in n for n in notes)
    assert [a.name for a in infer_attributes(df, cols)] == ["ic", "oc"]
    # idcase numbers the rows 1..n: an identifier, not a feature
    assert feature_candidates(df, cols, infer_attributes(df, cols)) == ["income", "region"]


def test_prefix_stems_without_separator_like_fishing() -> None:
    rng = np.random.default_rng(2)
    modes = ["beach", "pier", "boat", "charter"]
    df = pd.DataFrame({"mode": rng.choice(modes, 25), "price": rng.uniform(1, 9, 25)})
    for stem in ("p", "c"):
        for m in modes:
            df[f"{stem}{m}"] = rng.uniform(0, 1, 25).round(3)
    df["income"] = rng.uniform(1000, 9000, 25).round(1)
    cols, _ = resolve_columns(df, AUTO, "fishing.csv")
    assert cols.alternatives == tuple(modes) and cols.separator == "" and cols.chosen == "mode"
    assert [a.name for a in infer_attributes(df, cols)] == ["p", "c"]


def test_partial_stems_are_named_and_not_attributes() -> None:
    df = car_like(alts=4)
    df["promo1"], df["promo2"] = 1, 0
    cols, notes = resolve_columns(df, AUTO, "c.csv")
    assert any("given for some alternatives only): promo1, promo2" in n for n in notes)
    assert "promo" not in [a.name for a in infer_attributes(df, cols)]


def test_explicit_alternatives_and_separator_inference() -> None:
    df = pd.DataFrame(
        {
            "choice": ["a", "b", "c"],
            "price_a": [1, 2, 3],
            "price_b": [2, 3, 4],
            "price_c": [5, 6, 7],
        }
    )
    cols, _ = resolve_columns(df, ColumnMap("wide", alternatives=("a", "b", "c")), "f.csv")
    assert cols.separator == "_" and [a.name for a in infer_attributes(df, cols)] == ["price"]


def test_ambiguities_and_errors_list_the_columns() -> None:
    df = car_like()
    # a named column that is absent: the error lists the file's columns
    with pytest.raises(DataValidationError) as exc:
        resolve_columns(df, ColumnMap("wide", respondent="id"), "car.csv")
    msg = str(exc.value)
    assert msg.startswith("car.csv, line 1 (header): missing column 'id'")
    assert "the file has columns: 'choice', 'college', 'type1'" in msg
    # choice values that name no alternative: say so and point at --opt-out
    bad = df.copy()
    bad.loc[3, "choice"] = "none"
    with pytest.raises(DataValidationError, match=r"values none name no alternative.*--opt-out"):
        resolve_columns(bad, AUTO, "car.csv")
    cols, _ = resolve_columns(bad, ColumnMap("auto", opt_out=("none",)), "car.csv")
    assert cols.alternatives == ("1", "2", "3", "4", "5", "6")
    # two columns could be the choice: ask which
    two = pd.DataFrame({"pick": [1, 2, 1], "other": [2, 2, 1], "x1": [1, 2, 3], "x2": [3, 2, 1]})
    two["y1"], two["y2"] = two["x1"], two["x2"]
    with pytest.raises(DataValidationError, match=r"several columns .*pick, other.*--chosen-col"):
        resolve_columns(two, AUTO, "two.csv")
    cols, _ = resolve_columns(two, ColumnMap("auto", chosen="pick"), "two.csv")
    assert cols.format == "wide" and cols.alternatives == ("1", "2")
    # neither long nor wide
    with pytest.raises(DataValidationError, match=r"cannot tell the layout.*the file has columns"):
        resolve_columns(pd.DataFrame({"a": [1], "b": [2]}), AUTO, "x.csv")
    # long without respondent and task columns
    long = pd.DataFrame({"profile": [1, 2], "chosen": [1, 0], "price": [1, 2]})
    with pytest.raises(DataValidationError, match="no respondent column and no task column"):
        resolve_columns(long, AUTO, "l.csv")


def test_long_defaults_absent_and_explicit_none() -> None:
    df = pd.DataFrame(
        {"respondent": [1, 1, 2, 2], "profile": [1, 2, 1, 2], "chosen": [1, 0, 0, 1],
         "price": [1, 2, 3, 4], "age": [30, 30, 40, 40]}
    )  # fmt: skip
    cols, notes = resolve_columns(df, AUTO, "l.csv")
    assert (cols.format, cols.task, cols.respondent) == ("long", "", "respondent")
    assert any("task column: none" in n for n in notes)
    # an explicit "" means none even when the column exists
    cols, _ = resolve_columns(df, ColumnMap("long", respondent="", task="profile"), "l.csv")
    assert cols.respondent == ""
    # age is constant within every task: not an attribute, a feature candidate
    cols, _ = resolve_columns(df, AUTO, "l.csv")
    notes = []
    attrs = infer_attributes(df, cols, notes)
    assert [a.name for a in attrs] == ["price"] and any("age" in n for n in notes)
    assert feature_candidates(df, cols, attrs) == ["age"]
    # a long file with ranks and no chosen flag: the 'rank' column is taken
    ranks = df.drop(columns="chosen").assign(rank=[1, 2, 2, 1])
    cols, notes = resolve_columns(ranks, AUTO, "r.csv")
    assert cols.rank == "rank" and cols.chosen_column == ""


def test_column_map_json_round_trip_and_old_mappings() -> None:
    m = ColumnMap(
        "wide", "", "", "", "choice", ("a", "b"), ".", "", ("none",), True,
        (("college", "College degree"),), "price",
    )  # fmt: skip
    assert ColumnMap.from_json(m.to_json()) == m
    old = {"format": "long", "respondent": "r", "task": "t", "profile": "p", "chosen": None,
           "alternatives": ["1", "2"]}  # fmt: skip
    assert ColumnMap.from_dict(old).alternatives == ("1", "2")
    with pytest.raises(ValueError, match="unknown keys"):
        ColumnMap.from_dict({**old, "bogus": 1})


def test_the_one_money_rule_proposes_by_unit_then_by_name() -> None:
    """pbo_core.units.money_candidate: a currency unit first, then a price/cost word;
    never a word inside another (vcost) nor a categorical attribute."""
    from data_loaders.conjoint import Attribute
    from pbo_core.units import money_candidate

    num = [Attribute("cost", "numeric"), Attribute("price", "numeric")]
    assert money_candidate(num) == ("cost", "by its name")
    with_unit = [Attribute("cost", "numeric"), Attribute("p", "numeric", unit="CHF")]
    assert money_candidate(with_unit) == ("p", "by its unit (CHF)")
    assert money_candidate([Attribute("unit_cost", "numeric")])[0] == "unit_cost"
    assert money_candidate([Attribute("vcost", "numeric")]) == ("", "")
    assert money_candidate([Attribute("price", "categorical", levels=("a", "b"))]) == ("", "")


def travel_mode_like(n: int = 40, seed: int = 3) -> pd.DataFrame:
    """Like AER's TravelMode: long, one row per individual x mode, a yes/no ``choice``
    flag, no ``respondent``/``task``/``profile``/``chosen`` columns."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(1, n + 1):
        pick = rng.integers(4)
        for k, mode in enumerate(("air", "train", "bus", "car")):
            rows.append(
                {
                    "individual": i,
                    "mode": mode,
                    "choice": "yes" if k == pick else "no",
                    "wait": int(rng.integers(0, 90)),
                    "vcost": int(rng.integers(10, 90)),
                    "income": 10 + i % 7,
                }
            )
    return pd.DataFrame(rows)


def test_a_long_file_with_a_yes_no_choice_flag_and_an_individual_column() -> None:
    df = travel_mode_like()
    cols, notes = resolve_columns(df, AUTO, "travelmode.csv")
    assert (cols.format, cols.chosen, cols.respondent, cols.task) == (
        "long",
        "choice",
        "individual",
        "",
    )
    assert any("chosen flag: 'choice'" in n for n in notes)
    assert any("respondent column: 'individual' (by its name" in n for n in notes)
    attrs = [a.name for a in infer_attributes(df, cols)]
    assert attrs == ["wait", "vcost"]  # income is constant within a task
    # 'mode' names one row of each task: the alternative column, not an attribute
    assert cols.profile == "mode"
    assert any("alternative column: 'mode' (by its name" in n for n in notes)
    # the name alone is not enough: a flag column must hold flags
    df2 = df.assign(choice=df["choice"].map({"yes": "A", "no": "B"}))
    with pytest.raises(DataValidationError, match="cannot tell the layout"):
        resolve_columns(df2, AUTO, "travelmode.csv")


def test_a_panel_id_column_is_the_respondent_and_a_row_number_is_not() -> None:
    df = car_like(n=30)
    df.insert(0, "id", np.repeat(np.arange(1, 11), 3))  # 10 households x 3 purchases
    cols, notes = resolve_columns(df, AUTO, "catsup.csv")
    assert cols.respondent == "id" and cols.task == ""
    assert any("tasks 1, 2, ..." in n for n in notes)
    # --respondent-col '' keeps every row a respondent of its own
    cols, _ = resolve_columns(df, ColumnMap("auto", respondent=""), "catsup.csv")
    assert cols.respondent == ""
    # long: an 'id' numbering the rows is no respondent column (each task has one row)
    long = travel_mode_like().drop(columns="individual")
    long.insert(0, "id", range(len(long)))
    long.insert(1, "task", np.repeat(np.arange(len(long) // 4), 4))
    cols, _ = resolve_columns(long, AUTO, "f.csv")
    assert cols.respondent == "" and cols.task == "task"
