"""A study shaped like mlogit's Car (one choice among six unlabelled vehicles per
respondent, respondent features, whole respondents held out): the tree family stays
within 0.01 of the best baseline in pairwise accuracy and in held-out NLL per choice
(a slip seen on six vehicles was the evaluation sample, not the model)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from data_loaders.layout import ColumnMap
from data_loaders.study_files import build_study
from pbo_core.evaluation import score_models, summarize
from pbo_core.splits import make_split

pytestmark = pytest.mark.slow


def car_shaped(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Wide, choice1..choice6, price/range/speed per vehicle, a college feature; the
    truth a logit whose price slope is steeper without a college degree."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"college": rng.integers(0, 2, n)})
    util = np.zeros((n, 6))
    for k in range(1, 7):
        price = rng.uniform(2, 9, n).round(2)
        rng_km = rng.choice([125, 150, 250, 300, 400], n)
        speed = rng.choice([55, 85, 95, 110, 140], n)
        df[f"price{k}"], df[f"range{k}"], df[f"speed{k}"] = price, rng_km, speed
        slope = np.where(df["college"] == 1, -0.15, -0.3)
        util[:, k - 1] = slope * price + 0.004 * rng_km + 0.01 * speed
    util += rng.gumbel(size=util.shape)
    df["choice"] = [f"choice{k}" for k in util.argmax(1) + 1]
    return df


def test_the_tree_family_keeps_up_with_the_best_baseline_on_one_choice_each() -> None:
    frame = car_shaped()
    frame.index = pd.RangeIndex(2, len(frame) + 2)  # file lines
    study = build_study(
        frame, "car.csv", None,
        ColumnMap("auto", respondent_features=(("college", ""),), numeric=()),
    )  # fmt: skip
    split = make_split(study, "respondents", seed=0)
    models = ["dt-linear", "mnl-tree", "mnl", "logit-pooled"]
    rows, errors = score_models(split, models)
    assert not errors, errors
    s = summarize(rows, seed=0, n_boot=200)
    trees = [m for m in models if s[m]["family"] == "tree"]
    bases = [m for m in models if s[m]["family"] == "baseline"]
    best_acc = max(s[m]["test_acc_mean"] for m in bases)
    best_nll = min(s[m]["choices"]["nll_per_choice"] for m in bases)
    assert max(s[m]["test_acc_mean"] for m in trees) >= best_acc - 0.01
    assert min(s[m]["choices"]["nll_per_choice"] for m in trees) <= best_nll + 0.01
