"""The one evaluation core (pbo_core.evaluation): scores, splits, summaries, sensitivity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pbo_core import evaluation as ev
from pbo_core.data import PreferenceData, Study
from pbo_core.evaluation import summarize
from pbo_core.metrics import pairwise_accuracy
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.linear import LogitSurrogate
from pbo_core.registry import make_for
from pbo_core.splits import make_split
from tests.pbo_core.study_fixtures import toy_study


def test_holdout_scores_equal_hand_fits_per_respondent_and_pooled() -> None:
    study = toy_study(n_resp=5)
    split = make_split(study, "tasks", test_tasks=2, seed=0)
    rows = ev.score_model(split, "dt")
    for i, r in enumerate(split.units):
        own = study.for_respondent(r)
        test = split.test[split.rows[i]]
        m = DTSurrogate().fit(own.select_pairs(~test))
        row = rows.iloc[i]
        assert row["test_acc"] == pytest.approx(
            pairwise_accuracy(m.predict(own.X), own.pairs[test])
        )
        assert row["n_test"] == test.sum()
    pooled = ev.score_model(split, "logit-pooled")
    u = LogitSurrogate().fit(study.data.select_pairs(split.train)).predict(study.data.X)
    for i, rows_i in enumerate(split.rows):
        te = study.data.pairs[rows_i[split.test[rows_i]]]
        assert pooled.iloc[i]["test_acc"] == pytest.approx(pairwise_accuracy(u, te))


def test_personal_utilities_score_as_if_every_item_were_predicted() -> None:
    """A pooled model with personal utilities predicts, per respondent, only the items
    their comparisons name: the same scores, bit for bit, as predicting every item."""
    study = toy_study(n_resp=5)
    split = make_split(study, "tasks", test_tasks=2, seed=0)
    rows = ev.score_model(split, "logit-shrink")
    fitted = make_for("logit-shrink", study).fit(study.data.select_pairs(split.train))
    pairs = study.data.pairs
    for i, r in enumerate(split.units):
        idx = split.rows[i]
        u = fitted.predict(study.data.X, respondent=r)
        te, tr = pairs[idx[split.test[idx]]], pairs[idx[split.train[idx]]]
        assert rows.iloc[i]["test_acc"] == pairwise_accuracy(u, te)
        assert rows.iloc[i]["train_acc"] == pairwise_accuracy(u, tr)
        own = ev._personal(fitted, study.data.X, pairs[idx], r)
        named = np.unique(pairs[idx])
        assert len(named) < len(own)  # some items are not theirs
        assert np.array_equal(own[named], u[named])
        assert np.isnan(np.delete(own, named)).all()


def test_cross_validation_tests_every_comparison_once() -> None:
    study = toy_study(n_resp=4)
    split = make_split(study, "tasks", n_folds=3, seed=1)
    assert split.n_folds == 3 and split.test.all()
    rows = ev.score_model(split, "logit-pooled")
    assert rows["n_test"].sum() == study.data.n_pairs
    for f in split.test_folds:  # folds keep each respondent's tasks whole
        t = split.test_mask(f)
        assert not (
            set(zip(study.data.respondent[t], study.data.task[t], strict=True))
            & set(zip(study.data.respondent[~t], study.data.task[~t], strict=True))
        )


def test_a_single_unit_resamples_its_comparisons() -> None:
    study = toy_study(n_resp=1)
    split = make_split(study)  # one respondent: a share of the tasks of the pooled data
    assert split.kind == "pooled" and "one respondent" in split.reason
    rows = ev.score_model(split, "dt")
    s = summarize(rows)["dt"]
    assert s["n"] == int(split.test.sum())  # one test row per held-out comparison
    assert s["test_acc_ci95"][0] <= s["test_acc_mean"] <= s["test_acc_ci95"][1]


def test_auto_split_holds_out_whole_respondents_with_one_task_each() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 2))
    u = X[:, 0] - X[:, 1]
    pairs = []
    for _ in range(60):  # one task of 3 alternatives per respondent -> 2 comparisons
        i, j, k = rng.choice(60, 3, replace=False)
        best = max((i, j, k), key=lambda a: u[a])
        pairs += [(best, a) for a in (i, j, k) if a != best]
    data = PreferenceData(
        X, np.array(pairs), respondent=np.repeat(np.arange(60), 2), task=np.ones(120, dtype=int)
    )
    study = Study("one", "One choice each", data.get_schema(), data)
    split = make_split(study)
    assert split.kind == "respondents" and split.new_respondents
    assert "median respondent made 1 choice task" in split.reason
    table, best = ev.compare(split, ["dt", "dt-pooled", "logit-pooled"])
    assert best == "dt-pooled"  # the per-respondent DT cannot predict new respondents
    assert "never saw" in table.set_index("key").loc["dt", "error"]
    assert table.set_index("key").loc["logit-pooled", "heldout"] > 0.6


def test_sensitivity_pairs_changes_per_unit_and_flags_noise() -> None:
    study = toy_study(n_resp=6)
    split = make_split(study, "tasks", fraction=0.34, seed=0)
    rows = ev.ablation_rows(split, ["logit-pooled"])
    assert set(rows["feature removed"]) == {ev.BASELINE_ROW, *study.schema.names}
    table = ev.summarize_ablation(rows)["logit-pooled"]
    assert table.iloc[0]["feature removed"] == ev.BASELINE_ROW
    assert int(table["respondents"].iloc[0]) == 6
    body = table.iloc[1:]
    assert list(body["delta test (pp)"]) == sorted(body["delta test (pp)"])
    assert body["within noise"].map(lambda v: v in (True, False)).all()


def test_drop_features_keeps_tasks_and_respondents() -> None:
    study = toy_study(n_resp=2)
    d = ev.drop_features(study.data, study.schema, [study.schema.names[0]])
    assert d.X.shape[1] == study.data.X.shape[1] - 1
    assert np.array_equal(d.task, study.data.task)
    assert np.array_equal(d.respondent, study.data.respondent)


def test_score_models_says_why_a_model_failed() -> None:
    study = toy_study(n_resp=3)
    rows, errors = ev.score_models(make_split(study, "tasks", test_tasks=1), ["dt", "bt-offsets"])
    assert set(rows["method"]) == {"dt"} and "item set" in errors["bt-offsets"]


# ----------------------------------------------------------------------------- summaries
def _rows(values: dict[str, tuple[str, np.ndarray]]) -> pd.DataFrame:
    out = []
    for name, (family, v) in values.items():
        for i, x in enumerate(v):
            out.append(
                {
                    "respondent": str(i),
                    "method": name,
                    "family": family,
                    "train_acc": min(1.0, x + 0.1),
                    "test_acc": x,
                    "test_ties": 0.0,
                    "leaves": 3.0 if family == "tree" else None,
                    "depth": None,
                }
            )
    return pd.DataFrame(out)


def test_summary_has_ci_median_and_paired_difference_to_best_baseline() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.5, 0.9, size=40)
    rows = _rows(
        {
            "tree": ("tree", base - 0.2),
            "probit-pooled": ("baseline", base - 0.1),
            "logit-pooled": ("baseline", base),
        }
    )
    s = summarize(rows, seed=3)
    assert list(s) == ["tree", "probit-pooled", "logit-pooled"]
    for name, m in s.items():
        lo, hi = m["test_acc_ci95"]
        assert lo <= m["test_acc_mean"] <= hi, name
        assert m["n"] == 40
        assert m["test_acc_median"] == pytest.approx(np.median(rows[rows.method == name].test_acc))
        assert m["test_acc_sd"] > 0 and m["test_acc_se"] == pytest.approx(
            m["test_acc_sd"] / 40**0.5
        )
    d = s["tree"]["paired_diff_vs_best_baseline"]
    assert d["baseline"] == "logit-pooled" and d["mean_diff"] == pytest.approx(-0.2)
    assert d["ci95"] == pytest.approx([-0.2, -0.2])  # a constant difference: no spread
    assert s["probit-pooled"]["paired_diff_vs_best_baseline"]["mean_diff"] == pytest.approx(-0.1)
    assert s["tree"]["mean_leaves"] == 3.0 and s["logit-pooled"]["mean_leaves"] is None
    # a method's CI does not depend on which other methods ran
    alone = summarize(rows[rows.method != "probit-pooled"], seed=3)
    assert alone["tree"]["test_acc_ci95"] == s["tree"]["test_acc_ci95"]
    # the plan's baseline: a second paired difference, whichever baseline is best
    assert s["tree"]["paired_diff_vs_plan_baseline"] is None  # no reference given
    planned = summarize(rows, seed=3, reference="probit-pooled")
    d = planned["tree"]["paired_diff_vs_plan_baseline"]
    assert d["baseline"] == "probit-pooled" and d["mean_diff"] == pytest.approx(-0.1)
    assert planned["logit-pooled"]["paired_diff_vs_plan_baseline"]["mean_diff"] == pytest.approx(
        0.1
    )
    assert planned["tree"]["paired_diff_vs_best_baseline"]["baseline"] == "logit-pooled"
    assert (
        summarize(rows, seed=3, reference="absent")["tree"]["paired_diff_vs_plan_baseline"] is None
    )


def test_bootstrap_ci_covers_the_true_mean_in_simulation() -> None:
    rng = np.random.default_rng(1)
    hits = 0
    for k in range(200):
        v = rng.binomial(4, 0.7, size=60) / 4  # per-respondent accuracy on 4 test pairs
        s = summarize(_rows({"m": ("baseline", v)}), seed=k, n_boot=400)["m"]
        lo, hi = s["test_acc_ci95"]
        hits += lo <= 0.7 <= hi
    assert 0.88 <= hits / 200 <= 0.99
