"""Leave-one-out blocks for any registry model: the one sensitivity engine
(pbo_core.evaluation), on the split the page, the report and the CLI use."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pbo_core.data import PreferenceData, Study
from pbo_core.evaluation import BASELINE_ROW, ablation_rows, best_baseline, summarize_ablation
from pbo_core.splits import make_split
from tests.pbo_core.study_fixtures import small_items, toy_study


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    split = make_split(toy_study(n_resp=6), "tasks", fraction=0.34, seed=0, respondents=6)
    return ablation_rows(split, ["dt", "logit-shrink", "logit-pooled"])


def test_task_fraction_split_holds_out_whole_tasks_of_the_first_respondents() -> None:
    study = toy_study(n_resp=6)
    split = make_split(study, "tasks", fraction=0.34, seed=0, respondents=4)
    assert len(split.respondents) == 4
    later = np.isin(study.data.respondent, [4, 5])
    assert not (split.train | split.test)[later].any()  # only the first 4 respondents
    assert not (split.train & split.test).any()
    task = study.data.task
    for r_rows in split.rows:
        assert split.test[r_rows].sum() == 2  # 2 of 6 tasks, one comparison each
        held = set(task[r_rows[split.test[r_rows]]])
        assert not held & set(task[r_rows[split.train[r_rows]]])
    with pytest.raises(ValueError, match="fraction"):
        make_split(study, "tasks", fraction=1.0)


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


def test_a_pooled_study_uses_its_own_split_and_its_comparisons_as_units() -> None:
    X, schema, u = small_items()
    i, j = np.triu_indices(12, k=1)
    w = np.where(u[i] > u[j], i, j)
    lo = np.where(u[i] > u[j], j, i)
    data = PreferenceData(X, np.column_stack([w, lo]), schema=schema)
    own = np.where(np.arange(len(w)) % 3 == 0, "test", "train")
    study = Study("pooled", "Pooled", schema, data, extras={"split": own})
    split = make_split(study)
    assert split.kind == "study" and split.test.sum() == (own == "test").sum()
    table = summarize_ablation(ablation_rows(split, ["dt"]))["dt"]
    assert int(table["respondents"].iloc[0]) == 1
    assert table["test acc (%)"].iloc[0] > 60
    again = summarize_ablation(ablation_rows(split, ["dt"]))["dt"]
    pd.testing.assert_frame_equal(table, again)


def test_pmr_demo_drops_most_without_actionability() -> None:
    from data_loaders.pmr import load_pmr_demo

    study = load_pmr_demo()
    table = summarize_ablation(ablation_rows(make_split(study, "study"), ["dt"]))["dt"]
    # the documented ground-truth urgency model weighs message_actionability most
    assert table.iloc[1]["feature removed"] == "message_actionability"
    assert table.iloc[1]["delta test (pp)"] < -10
    assert len(table) == 1 + len(study.schema.names) == 12


def test_each_respondent_s_data_is_built_once_per_split(monkeypatch) -> None:
    """The leave-one-out grid selects a respondent's own data once for all its models and
    left-out features (the split keeps it), with the rows of a fresh selection."""
    study = toy_study(n_resp=6)
    split = make_split(study, "tasks", fraction=0.34, seed=0, respondents=6)
    fresh = ablation_rows(make_split(study, "tasks", fraction=0.34, seed=0, respondents=6), ["dt"])
    asked: list[object] = []
    select = Study.for_respondent

    def counted(self: Study, respondent: object) -> PreferenceData:
        asked.append(respondent)
        return select(self, respondent)

    monkeypatch.setattr(Study, "for_respondent", counted)
    got = ablation_rows(split, ["dt", "logit-shrink"])
    assert sorted(asked) == sorted(split.units)  # 2 models x 4 feature sets, once each
    pd.testing.assert_frame_equal(
        got[got["method"] == "dt"].drop(columns="fit_s").reset_index(drop=True),
        fresh.drop(columns="fit_s").reset_index(drop=True),
        check_dtype=False,  # the logit's rows have no leaves: the stacked column is object
    )
