"""Leave-one-out feature sensitivity for studies (pbo_core.explain.sensitivity)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pbo_core.data import PreferenceData, Study
from pbo_core.explain.sensitivity import holdout_split, leave_one_out_study
from tests.pbo_core.study_fixtures import small_items, toy_study


def test_holdout_split_keeps_groups_together() -> None:
    study = toy_study()
    d = study.data
    groups = np.repeat(np.arange(12), 2)
    train, test = holdout_split(d, 0.25, np.random.default_rng(0), groups)
    assert train.n_pairs + test.n_pairs == d.n_pairs
    assert test.n_pairs == 6  # 3 of 12 groups, 2 pairs each
    assert holdout_split(d.select_pairs(np.array([0])), 0.5, np.random.default_rng(0)) is None
    with pytest.raises(ValueError, match="test_fraction"):
        holdout_split(d, 1.0, np.random.default_rng(0))


def test_leave_one_out_study_averages_respondents() -> None:
    study = toy_study(n_resp=4)
    table = leave_one_out_study(study, test_fraction=0.34, seed=0, n_respondents=3)
    assert table["feature removed"].iloc[0] == "None (baseline)"
    assert set(table["feature removed"].iloc[1:]) == {"price", "size", "colour"}
    assert int(table["respondents"].iloc[0]) == 3
    again = leave_one_out_study(study, test_fraction=0.34, seed=0, n_respondents=3)
    pd.testing.assert_frame_equal(table, again)


def test_leave_one_out_study_uses_a_pooled_split() -> None:
    X, schema, u = small_items()
    i, j = np.triu_indices(12, k=1)
    w = np.where(u[i] > u[j], i, j)
    lo = np.where(u[i] > u[j], j, i)
    data = PreferenceData(X, np.column_stack([w, lo]), schema=schema)
    split = np.where(np.arange(len(w)) % 3 == 0, "test", "train")
    study = Study("pooled", "Pooled", schema, data, extras={"split": split})
    table = leave_one_out_study(study)
    assert int(table["respondents"].iloc[0]) == 1
    assert table["test acc (%)"].iloc[0] > 60
