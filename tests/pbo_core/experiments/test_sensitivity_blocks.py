"""Leave-one-out blocks for any accuracy method (pbo_core.experiments.sensitivity)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pbo_core.experiments.sensitivity import (
    BASELINE_ROW,
    ablation_rows,
    best_baseline,
    fraction_split,
    summarize_ablation,
)
from tests.pbo_core.study_fixtures import toy_study


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    split = fraction_split(toy_study(n_resp=6), test_fraction=0.34, seed=0, n_respondents=6)
    return ablation_rows(split, ["dt", "logit-shrink", "logit-pooled"])


def test_fraction_split_holds_out_whole_tasks_of_the_first_respondents() -> None:
    study = toy_study(n_resp=6)
    split = fraction_split(study, test_fraction=0.34, seed=0, n_respondents=4)
    assert len(split.respondents) == 4
    later = np.isin(study.data.respondent, [4, 5])
    assert not (split.train | split.test)[later].any()  # only the first 4 respondents
    assert not (split.train & split.test).any()
    task = study.data.task
    for r_rows in split.rows:
        assert split.test[r_rows].sum() == 2  # 2 of 6 tasks, one comparison each
        held = set(task[r_rows[split.test[r_rows]]])
        assert not held & set(task[r_rows[split.train[r_rows]]])
    with pytest.raises(ValueError, match="test_fraction"):
        fraction_split(study, test_fraction=1.0)


def test_one_block_per_method_with_paired_deltas(rows) -> None:
    blocks = summarize_ablation(rows)
    assert list(blocks) == ["dt", "logit-shrink", "logit-pooled"]
    for name, table in blocks.items():
        assert table["feature removed"].iloc[0] == BASELINE_ROW
        assert set(table["feature removed"].iloc[1:]) == {"price", "size", "colour"}
        assert (table["method"] == name).all() and int(table["respondents"].iloc[0]) == 6
        # sorted by the test change, largest drop first
        d = table["delta test (pp)"].iloc[1:].to_numpy()
        assert (np.diff(d) >= 0).all()
    # the change is paired per respondent: mean of (without - with) over respondents
    g = rows[rows["method"] == "logit-shrink"].set_index(["feature removed", "respondent"])
    diff = (g.loc["price", "test_acc"] - g.loc[BASELINE_ROW, "test_acc"]).mean() * 100
    price = blocks["logit-shrink"].set_index("feature removed").loc["price"]
    assert price["delta test (pp)"] == pytest.approx(diff)
    lo, hi = price["delta test CI low (pp)"], price["delta test CI high (pp)"]
    assert lo <= diff <= hi
    # price decides the toy utility: the logit drops without it, beyond the noise
    assert hi < 0 and price["within noise"] is False


def test_best_baseline_is_the_most_accurate_baseline(rows) -> None:
    base = rows[rows["feature removed"] == BASELINE_ROW]
    means = base[base["family"] == "baseline"].groupby("method")["test_acc"].mean()
    assert means[best_baseline(base)] == means.max()
    assert best_baseline(base[base["family"] == "tree"]) is None
