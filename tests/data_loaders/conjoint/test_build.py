"""build_from_long: pairs and items, opt-outs, user columns, errors naming file and line."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders.registry import load_preset
from pbo_core.data import DataValidationError
from tests.data_loaders.conjoint.helpers import load, long_frame, write


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
    assert study.data.task.tolist() == [1, 1, 1]
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


def test_fast_encoding_agrees_with_schema_encode() -> None:
    for study in (load(long_frame()), load_preset("train"), load_preset("electricity")):
        np.testing.assert_array_equal(study.data.X, study.schema.encode(study.data.items))


# ---------------------------------------------------------------------------- rankings
def _ranked(ranks: list[object], alts: str = "abcd") -> pd.DataFrame:
    """One respondent's one task: distinct profiles (price, colour) and their ranks."""
    profiles = [(10, "red"), (20, "green"), (30, "blue"), (10, "green")]
    rows = [
        dict(resp=1, task=1, alt=alts[k] if k < len(alts) else f"x{k}", price=p, size="small",
             colour=c, eco="no", rank=r)
        for k, ((p, c), r) in enumerate(zip(profiles, ranks, strict=False))
    ]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("ranks", "n_pairs"),
    [
        ([1, 2, 3], 3),  # every pair ordered
        ([1, 2, 2], 2),  # equal ranks: no comparison
        ([2, 1, None], 3),  # an empty rank is below the given ones
        ([1, None, None], 2),  # a choice written as a rank; two empty ranks: no comparison
        ([3, 1, 2, 4], 6),
    ],
)
def test_full_rankings_order_every_pair(ranks: list[object], n_pairs: int) -> None:
    study = load(_ranked(ranks), chosen=None, rank="rank")
    d = study.data
    assert d.n_pairs == n_pairs
    key = list(zip(d.items["price"], d.items["colour"], strict=True))
    profiles = [(10.0, "red"), (20.0, "green"), (30.0, "blue"), (10.0, "green")]
    rank = {p: (np.inf if r is None else r) for p, r in zip(profiles, ranks, strict=False)}
    for w, lo in d.pairs:  # every winner is ranked better than its loser
        assert rank[key[w]] < rank[key[lo]]


def test_rankings_with_an_opt_out_and_bad_ranks(tmp_path: Path) -> None:
    f = _ranked([2, 3, 1], alts="abnone")  # the third row is the opt-out, ranked best
    f.loc[2, "alt"] = "none"
    f.loc[2, ["price", "size", "colour", "eco"]] = [None, None, None, None]
    study = load(f, chosen=None, rank="rank")
    assert study.data.n_pairs == 0
    assert study.extras["respondent_summary"].loc[1, "n_opt_out"] == 1
    f["rank"] = [1, 3, 2]  # the opt-out ranked between: the real pair stays
    assert load(f, chosen=None, rank="rank").data.n_pairs == 1
    f["rank"] = [1, "first", 2]
    with pytest.raises(DataValidationError, match=r"line 3: column 'rank': 'first' is not a rank"):
        load(write(f, tmp_path), chosen=None, rank="rank")
