"""The held-out comparison that picks the Tree explorer's default tree."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from data_loaders.registry import load_study
from pbo_core.data import PreferenceData
from pbo_core.experiments import tree_choice
from pbo_core.registry import get

TREES = ["dt", "dt-pooled"]
BASELINES = ("logit-shrink", "logit-pooled")


@pytest.fixture(scope="module")
def train():
    return load_study("train")


def test_compare_trees_scores_trees_and_baselines_and_picks_the_best_tree(train) -> None:
    choice = tree_choice.compare_trees(train, TREES, BASELINES, n_respondents=6)
    t = choice.table
    assert list(t["key"]) == ["dt", "dt-pooled", "logit-shrink", "logit-pooled"]
    assert list(t["method"]) == [get(k).label for k in t["key"]]
    assert choice.n_respondents == 6
    split = tree_choice.choice_split(train, 6)
    assert choice.n_comparisons == int(split.test.sum()) < train.data.n_pairs  # held out
    trees = t[t["key"].isin(TREES)]
    assert choice.best == trees.loc[trees["heldout"].idxmax(), "key"]
    assert ((t["ci_low"] <= t["heldout"]) & (t["heldout"] <= t["ci_high"])).all()
    best = t.set_index("key").loc[choice.best]
    reason = choice.reason()
    assert get(choice.best).label in reason and f"{100 * best['heldout']:.1f}%" in reason
    assert "the first 6 of 235 respondents" in reason and "2 per respondent" in reason
    assert choice.sample() == (
        f"the first 6 of 235 respondents ({choice.n_comparisons:,} held-out comparisons)"
    )
    assert choice.plan.startswith("Plan: split auto")
    # the same figures as the plan's accuracy (conjoint-accuracy, the report)
    from pbo_core.evaluation import plan_accuracy

    plan = dataclasses.replace(train.plan, respondents=6)
    summary, _, _ = plan_accuracy(train, list(t["key"]), plan)
    for key, v in summary.items():
        row = t.set_index("key").loc[key]
        assert row["heldout"] == v["test_acc_mean"]
        assert [row["ci_low"], row["ci_high"]] == v["test_acc_ci95"]


def test_a_pooled_study_drops_baselines_of_respondents_own_utilities(train) -> None:
    d = train.data  # the same comparisons without respondents
    pooled = dataclasses.replace(
        train, data=PreferenceData(d.X, d.pairs[:400], schema=d.schema), extras={}
    )
    choice = tree_choice.compare_trees(pooled, TREES, BASELINES, n_respondents=6)
    assert "logit-shrink" not in set(choice.table["key"])
    assert get("logit-shrink").respondent_predict
    assert "logit-pooled" in set(choice.table["key"]) and choice.n_respondents == 0
    assert "without respondents" in choice.split and "pooled data" in choice.sample()


def test_choose_and_fit_returns_the_winners_fit_and_pickles(train) -> None:
    choice, model = tree_choice.choose_and_fit(train, TREES, BASELINES, n_respondents=6)
    if choice.best == "dt":
        assert model is None
    else:
        assert model.predict(train.data.X[:3]).shape == (3,)
    # what crosses to and from the dashboard's worker process
    again = pickle.loads(pickle.dumps((train, TREES, BASELINES, choice, model)))
    assert again[3].best == choice.best


def test_progress_is_reported_per_fit_and_ends_at_one(train) -> None:
    seen: list[tuple[float, str]] = []
    tree_choice.compare_trees(
        train, TREES, BASELINES, n_respondents=6, progress=lambda f, s: seen.append((f, s))
    )
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert len(seen) > 4  # every fit of every model
    assert any("Pooled DT" in s for _, s in seen)


def test_a_respondents_evidence_reuses_the_comparisons_folds_and_fits(train) -> None:
    """A respondent of the comparison's sample: its split tested on them alone (same folds,
    same training comparisons), so the pooled models' fits are the comparison's; the
    evidence equals the comparison's rows for that respondent."""
    from pbo_core.evaluation import score_model

    r = train.respondents()[2]
    cs = tree_choice.choice_split(train, 6)
    split = tree_choice.evidence_split_for(train, r, 6)
    np.testing.assert_array_equal(split.fold, cs.fold)
    assert list(split.units) == [r] and "same hold-out and fits" in split.reason
    memo: dict = {}
    whole = score_model(cs, "dt-pooled", fits=memo)
    n_fits = len(memo)
    one = score_model(split, "dt-pooled", fits=memo)
    assert len(memo) == n_fits == 1  # no new fit
    row = whole[whole["respondent"] == str(r)]
    # one unit: its comparisons are the rows; their mean is the respondent's accuracy
    assert one["test_acc"].mean() == pytest.approx(float(row["test_acc"].iloc[0]))
    # a respondent outside the sample: the first other respondents train
    far = train.respondents()[100]
    assert "same hold-out" not in tree_choice.evidence_split_for(train, far, 6).reason


def test_study_fingerprint_follows_the_data(train) -> None:
    d = train.data
    fp = tree_choice.study_fingerprint(train)
    assert tree_choice.study_fingerprint(dataclasses.replace(train)) == fp
    fewer = dataclasses.replace(train, data=d.select_pairs(np.arange(d.n_pairs) > 0))
    assert tree_choice.study_fingerprint(fewer) != fp


def test_the_study_level_model_and_the_evidence_line() -> None:
    """The best of the pooled trees (the Tree explorer's study-level default) and the one
    line of held-out evidence its pages show beside the plan's baseline."""
    import pandas as pd

    from pbo_core.experiments.tree_choice import TreeChoice

    nan = float("nan")
    table = pd.DataFrame(
        {
            "key": ["dt", "dt-pooled", "dt-linear", "mnl", "gp"],
            "method": ["Paper DT", "Pooled DT", "Linear-leaf tree", "Conditional logit", "GP"],
            "family": ["tree", "tree", "tree", "baseline", "gp"],
            "train": [0.9, 0.8, 0.85, 0.8, nan],
            "heldout": [0.88, 0.81, 0.864, 0.808, nan],
            "ci_low": [0.86, 0.79, 0.852, 0.793, nan],
            "ci_high": [0.9, 0.83, 0.876, 0.822, nan],
            "n_heldout": [4390, 4390, 4390, 4390, 0],
            "error": ["", "", "", "", "too many items"],
        }
    )
    choice = TreeChoice("dt", table, 1191, 4390, "two tasks per respondent", 1191, 19755, "all")
    assert choice.best_among(["dt-pooled", "dt-linear"]) == "dt-linear"
    assert choice.best_among(["gp"]) is None and choice.best_among([]) is None
    line = choice.evidence_line("dt-linear", "mnl")
    assert line == (
        "Held-out accuracy: Linear-leaf tree 86.4% [85.2–87.6] · Conditional logit 80.8% "
        "[79.3–82.2] · on all (4,390 held-out comparisons)"
    )
    assert choice.evidence_line("gp", "mnl").startswith(
        "Held-out accuracy: GP: not scored (too many items) · Conditional logit 80.8%"
    )
    assert "study-level tree model" in choice.reason("dt-linear")
    assert "the tree model with the best" in choice.reason()
