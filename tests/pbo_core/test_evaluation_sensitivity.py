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


def _stacked(deltas: dict[str, np.ndarray]) -> pd.DataFrame:
    """Per-unit rows of one model (a baseline row and one row per feature per unit)."""
    parts = []
    n = len(next(iter(deltas.values())))
    base = pd.DataFrame(
        {
            "feature removed": BASELINE_ROW,
            "train acc (%)": 80.0,
            "delta train (pp)": np.nan,
            "test acc (%)": 75.0,
            "delta test (pp)": np.nan,
        },
        index=range(n),
    )
    parts.append(base)
    for f, d in deltas.items():
        parts.append(
            pd.DataFrame(
                {
                    "feature removed": f,
                    "train acc (%)": 80.0,
                    "delta train (pp)": 0.0,
                    "test acc (%)": 75.0 + d,
                    "delta test (pp)": d,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_underpowered_only_when_the_interval_includes_zero() -> None:
    """A large, clearly significant change on a small sample (its CI excludes 0, though its
    minimum detectable change exceeds 5 pp) is a finding, never "underpowered"; a change
    whose CI includes 0 is underpowered when the sample cannot detect 5 pp, within the
    noise when it can."""
    from pbo_core.evaluation import DETECTABLE_CHANGE_PP, sensitivity_effect, summarize_sensitivity

    rng = np.random.default_rng(3)
    big = -15 + 12 * rng.standard_normal(42)  # brand constants: -15 pp, wide
    wide = 12 * rng.standard_normal(42)
    wide -= wide.mean()  # centred: its CI includes 0
    narrow = 0.5 * rng.standard_normal(400)
    t = summarize_sensitivity(_stacked({"brand": big, "colour": wide}), seed=0).set_index(
        "feature removed"
    )
    assert t.loc["brand", "delta test CI high (pp)"] < 0
    assert t.loc["brand", "min detectable (pp)"] > DETECTABLE_CHANGE_PP
    assert not t.loc["brand", "underpowered"]
    assert bool(t.loc["colour", "underpowered"]) and bool(t.loc["colour", "within noise"])
    effect = sensitivity_effect(t.reset_index()).set_axis(t.index)
    assert effect["brand"] == "accuracy drops"
    assert effect["colour"] == "underpowered (cannot detect 5 pp)"
    t2 = summarize_sensitivity(_stacked({"size": narrow}), seed=0)
    row = t2[t2["feature removed"] == "size"].iloc[0]
    assert row["within noise"] and not row["underpowered"]
    assert sensitivity_effect(t2).iloc[1] == "within noise (CI contains 0)"


def test_one_rule_names_the_best_baseline() -> None:
    """best_baseline_of: the reference baseline with the highest mean; a tie goes to
    the first in registry order, whatever order the summary lists them in."""
    from pbo_core.evaluation import best_baseline_of

    s = {
        "probit-shrink": {"family": "baseline", "test_acc_mean": 0.825},
        "dt-linear": {"family": "tree", "test_acc_mean": 0.9},
        "logit-shrink": {"family": "baseline", "test_acc_mean": 0.825},
        "mnl": {"family": "baseline", "test_acc_mean": 0.6},
        "logit-respondent": {"family": "baseline", "test_acc_mean": float("nan")},
    }
    assert best_baseline_of(s) == "logit-shrink"
    assert best_baseline_of(dict(reversed(list(s.items())))) == "logit-shrink"
    assert best_baseline_of({"dt": {"family": "tree", "test_acc_mean": 0.7}}) is None


def test_a_sample_too_small_for_5_points_is_cautioned() -> None:
    """42 held-out respondents with intervals of about +-8 points: cautioned (the smallest
    detectable difference is about 11 points); +-1.5 points: not."""
    from pbo_core.evaluation import evidence_caution, heldout_caution, summary_caution

    text = heldout_caution([0.08, 0.079], 42)
    assert text is not None and "42 held-out respondents" in text and "5-point" in text
    assert "about 11 points" in text
    assert heldout_caution([0.015], 1191) is None
    summary = {"m": {"n": 42, "test_acc_ci95": [0.70, 0.86]}}
    assert summary_caution(summary) == heldout_caution([0.08], 42)
    ev = pd.DataFrame(
        {"heldout": [0.78, np.nan], "ci_low": [0.70, np.nan], "ci_high": [0.86, np.nan],
         "n_heldout": [42, 0]}
    )  # fmt: skip
    assert evidence_caution(ev) == heldout_caution([0.08], 42)
