"""Accuracy experiments: default models, cells over the evaluation core, the CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders.cached import load_study_cached
from data_loaders.conjoint import Attribute, write_attribute_table
from pbo_core.data import PreferenceData
from pbo_core.experiments import accuracy as acc
from pbo_core.experiments import cli
from pbo_core.experiments.accuracy import cell_split
from pbo_core.metrics import accuracy as pair_accuracy
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.linear import LogitSurrogate
from pbo_core.registry import MODELS, ModelSpec, make_model, register
from pbo_core.splits import respondent_holdout


def run(capsys, *args: str) -> dict:
    assert cli.main([*args, "--json", "-", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


# ----------------------------------------------------------------------------- defaults
def test_default_models_follow_the_study_and_the_split() -> None:
    conj = cell_split({"study": "electricity", "respondents": 5}, load_study=load_study_cached)
    models, skipped = acc.parse_methods(None, conj)
    assert "bt-offsets" not in models and "copeland" not in models and "gp" in models
    assert "gp" not in acc.parse_methods(None, conj, "straddler-ablation")[0]
    held = cell_split(
        {"study": "electricity", "respondents": 10, "split": "respondents"},
        load_study=load_study_cached,
    )
    models, skipped = acc.parse_methods(None, held)
    # every model that cannot predict a respondent it never saw is skipped alike
    unseen = {"dt", "dt-keep", "gp", "logit-respondent", "probit-respondent"}
    assert unseen <= set(skipped) and not unseen & set(models)
    assert all("never saw" in skipped[m] for m in unseen) and "mnl" in models
    with pytest.raises(SystemExit, match="unknown models"):
        acc.parse_methods("dt,magic", conj)
    with pytest.raises(SystemExit, match="finite item set"):
        acc.parse_methods("bt-offsets", conj)
    with pytest.raises(SystemExit, match="never saw"):
        acc.parse_methods("dt", held)
    assert acc.parse_methods(" gp, dt ,gp", conj)[0] == ["gp", "dt"]


def test_adding_a_model_is_one_registry_entry(capsys) -> None:
    name = "dt-depth1-test"
    register(
        ModelSpec(
            name,
            "DT of depth 1",
            "test entry",
            "tree",
            scope="pooled",
            estimator=lambda **kw: DTSurrogate(max_depth=1, **kw),
        )
    )
    try:
        doc = run(
            capsys,
            "conjoint-accuracy",
            "--study",
            "electricity",
            "--respondents",
            "6",
            "--methods",
            f"{name},logit-pooled",
        )
        s = doc["summary"][name]
        assert s["n"] == 6 and s["mean_leaves"] <= 2 and s["mean_depth"] <= 1
    finally:
        del MODELS[name]


def test_straddler_rule_discard_unrestricted_keep_capped_at_4() -> None:
    # a chain on one numeric attribute: item i+1 beats item i; the discard tree grows
    # one split per separable pair and so goes deeper than 4 without a cap
    x = np.arange(40, dtype=float)[:, None]
    pairs = np.array([[i + 1, i] for i in range(39)] + [[i + 2, i] for i in range(38)])
    data = PreferenceData(x, pairs)
    discard = make_model("dt").fit(data)
    keep = make_model("dt-keep").fit(data)
    assert discard.straddlers == "discard" and discard.max_depth is None
    assert keep.straddlers == "keep" and keep.max_depth == 4
    assert discard.tree_.max_depth > 4
    assert keep.tree_.max_depth <= 4


# ----------------------------------------------------------------------------- cells
def test_cells_reproduce_the_per_respondent_split_and_pooled_fit() -> None:
    cell = {"study": "electricity", "split": "tasks", "seed": 0, "test_tasks": 2, "respondents": 5}
    split = cell_split(cell, load_study=load_study_cached)
    study = load_study_cached("electricity")
    dt = acc.accuracy_cell(dict(cell, method="dt"), load_study=load_study_cached)
    for i, r in enumerate(split.respondents):
        data, mask = respondent_holdout(study, r, 2, 0)
        tr, te = data.select_pairs(~mask), data.select_pairs(mask)
        m = DTSurrogate().fit(tr)
        row = dt.iloc[i]
        assert row["respondent"] == str(r)
        assert row["test_acc"] == pytest.approx(pair_accuracy(m, te))
        assert row["train_acc"] == pytest.approx(pair_accuracy(m, tr))
        assert row["leaves"] == m.n_leaves_
    # the pooled fit uses every training comparison of the evaluated respondents
    pooled = acc.accuracy_cell(dict(cell, method="logit-pooled"), load_study=load_study_cached)
    train_rows = np.isin(study.data.respondent, split.respondents)
    assert np.array_equal(split.train | split.test, train_rows)
    ref = LogitSurrogate().fit(study.data.select_pairs(split.train))
    u = ref.predict(study.data.X)
    for i, r_rows in enumerate(split.rows):
        test_pairs = study.data.pairs[r_rows[split.test[r_rows]]]
        want = np.mean(np.where(u[test_pairs[:, 0]] > u[test_pairs[:, 1]], 1.0, 0.0))
        assert pooled.iloc[i]["test_acc"] == pytest.approx(want)


def test_methods_flag_filters_and_json_shape(capsys, tmp_path: Path) -> None:
    doc = run(
        capsys,
        "conjoint-accuracy",
        "--study",
        "train",
        "--respondents",
        "8",
        "--methods",
        "dt,logit-shrink",
        "--out",
        str(tmp_path),
    )
    assert doc["study"] == "train" and doc["split"] == "tasks" and doc["skipped"] == {}
    assert doc["split_reason"].startswith("some of every respondent's choice tasks held out")
    s = doc["summary"]
    assert list(s) == ["dt", "logit-shrink"]
    keys = {
        "n",
        "train_acc_mean",
        "test_acc_mean",
        "test_acc_sd",
        "test_acc_median",
        "test_acc_ci95",
        "mean_leaves",
        "paired_diff_vs_best_baseline",
    }
    assert keys <= set(s["dt"])
    assert s["dt"]["paired_diff_vs_best_baseline"]["baseline"] == "logit-shrink"
    assert s["logit-shrink"]["paired_diff_vs_best_baseline"]["mean_diff"] == 0.0
    assert len(list(tmp_path.glob("cell-*.parquet"))) == 2


# ----------------------------------------------------------------------------- own data
def _write_study(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    brands = ["alpha", "beta", "gamma"]
    rows = []
    for r in range(30):
        slope = -1.0 + 0.3 * rng.normal()
        for t in range(8):
            price = rng.uniform(1, 10, size=2)
            brand = rng.integers(0, 3, size=2)
            u = slope * price + (brand == 0) * 1.5
            win = int(rng.random() < 1 / (1 + np.exp(-(u[0] - u[1]))))
            for k in range(2):
                rows.append(
                    {
                        "respondent": f"r{r}",
                        "task": t + 1,
                        "profile": k + 1,
                        "chosen": int(k == 1 - win),
                        "price": round(float(price[k]), 2),
                        "brand": brands[brand[k]],
                    }
                )
    csv = tmp_path / "choices.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    table = tmp_path / "attributes.json"
    write_attribute_table(
        [
            Attribute("price", "numeric", unit="EUR"),
            Attribute("brand", "categorical", levels=tuple(brands)),
        ],
        table,
    )
    return csv, table


def test_conjoint_accuracy_on_own_long_data_with_respondent_split(tmp_path: Path, capsys) -> None:
    csv, table = _write_study(tmp_path)
    out = tmp_path / "acc.json"
    args = ["conjoint-accuracy", "--data", str(csv), "--format", "long"]
    args += ["--attributes", str(table), "--split", "respondents", "--json", str(out)]
    assert cli.main(args) == 0
    err = capsys.readouterr().err
    assert "skipped models: dt: a per-respondent model" in err
    doc = json.loads(out.read_text())
    assert doc["split"] == "respondents"
    assert {"dt", "dt-keep", "gp", "logit-respondent", "probit-respondent"} <= set(doc["skipped"])
    s = doc["summary"]
    assert {"logit-pooled", "logit-shrink", "mnl"} <= set(s) and "logit-respondent" not in s
    assert not {"dt", "gp"} & set(s)
    for m in s.values():
        assert m["n"] == 6  # 20 % of 30 respondents held out
        lo, hi = m["test_acc_ci95"]
        assert lo <= m["test_acc_mean"] <= hi
    # the price effect is strong: the pooled logit ranks held-out people's choices well
    assert s["logit-pooled"]["test_acc_mean"] > 0.7
    # the task split on the same file runs every method
    doc2 = run(capsys, *args[:7], "--methods", "dt,logit-respondent")
    assert doc2["split"] == "tasks" and set(doc2["summary"]) == {"dt", "logit-respondent"}
    assert doc2["summary"]["dt"]["n"] == 30


def test_own_data_infers_the_attribute_table(tmp_path: Path, capsys) -> None:
    csv, _ = _write_study(tmp_path)
    doc = run(capsys, "conjoint-accuracy", "--data", str(csv), "--methods", "logit-pooled")
    assert doc["summary"]["logit-pooled"]["test_acc_mean"] > 0.7  # price and brand inferred
    with pytest.raises(SystemExit, match="--study KEY or --data"):
        cli.main(["conjoint-accuracy", "--quiet"])


def test_sushi_generalization_help_names_the_pair_split(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["sushi-generalization", "--help"])
    sub = " ".join(capsys.readouterr().out.split())
    assert "pairs: random 80/20 split of each user's 45 comparisons (default)" in sub
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = " ".join(capsys.readouterr().out.split())
    line = top[top.index("sushi-generalization held-out") :][:120]
    assert "held-out pair accuracy" in line and "--split items: item hold-out" in line
