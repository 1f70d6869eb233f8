"""The published SwissMetro protocol (pbo_core.experiments.published and the
``published-swissmetro`` command): its splits, its held-out scores and a reduced run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from data_loaders.swissmetro import load_swissmetro
from pbo_core.experiments.cli import main
from pbo_core.experiments.published import (
    PUBLISHED,
    heldout_scores,
    method_rows,
    probability_kind,
    protocol_split,
    validation_scale,
)
from pbo_core.registry import make_for


@pytest.fixture(scope="module")
def small():  # 150 respondents of the bundled study, every trip purpose
    full = load_swissmetro()
    return load_swissmetro(respondents=full.respondents()[:150].tolist())


def test_row_splits_share_respondents_respondent_splits_do_not(small) -> None:
    data = small.data
    n_tasks = data.n_tasks()
    parts = protocol_split(data, "rows", 0, 0)
    keys = [set(map(tuple, np.c_[p.respondent, p.task].tolist())) for p in parts]
    assert sum(len(k) for k in keys) == n_tasks
    assert not (keys[0] & keys[1]) and not (keys[0] & keys[2]) and not (keys[1] & keys[2])
    assert [len(k) for k in keys[1:]] == [int(0.125 * n_tasks)] * 2
    # the paper's row splits put a respondent's answers on both sides
    assert set(parts[0].respondent) & set(parts[2].respondent)
    people = [set(p.respondent.tolist()) for p in protocol_split(data, "respondents", 0, 0)]
    assert not (people[0] & people[2]) and not (people[1] & people[2])
    assert [len(p) for p in people] == [114, 18, 18]
    # seeded: the same split again, another for the next split index
    again = protocol_split(data, "rows", 0, 0)[2]
    assert np.array_equal(again.pairs, parts[2].pairs)
    assert not np.array_equal(protocol_split(data, "rows", 1, 0)[2].pairs, parts[2].pairs)
    with pytest.raises(ValueError, match="protocol"):
        protocol_split(data, "tasks", 0, 0)


def test_heldout_scores_are_the_logits_likelihood(small) -> None:
    """Eq. 1 on the training data is the conditional logit's own log-likelihood."""
    model = make_for("mnl", small, case_specific=(), alpha=0.0).fit(small.data)
    scores = heldout_scores(model, small.data)
    assert len(scores) == small.data.n_tasks()
    assert scores["log_p"].sum() == pytest.approx(model.loglik_, rel=1e-9)
    assert ((scores["top1"] >= 0) & (scores["top1"] <= 1)).all()
    assert 0.5 < scores["top1"].mean() < 0.9


def test_a_scale_fitted_on_validation_makes_utilities_probabilities(small) -> None:
    """Eq. 2: the pairwise logit's utilities, scaled to the validation choices' best
    likelihood; a logit keeps its own scale."""
    train, val, _ = protocol_split(small.data, "rows", 0, 0)
    pooled = make_for("logit-pooled", small).fit(train)
    assert probability_kind(pooled) == "fitted"
    kappa = validation_scale(pooled, val, personal=False)
    assert kappa > 0
    best = heldout_scores(pooled, val, personal=False, scale=kappa)["log_p"].sum()
    for k in (0.8 * kappa, 1.25 * kappa):  # the maximum of the validation likelihood
        assert heldout_scores(pooled, val, personal=False, scale=k)["log_p"].sum() < best
    mnl = make_for("mnl", small, case_specific=()).fit(train)
    assert probability_kind(mnl) == "logit" and validation_scale(mnl, val, False) == 1.0


def test_method_rows() -> None:
    rows = method_rows(["mnl", "mnl-tree", "dt-linear"], ["published", "features"])
    assert rows == [
        ("mnl", "published"),
        ("mnl", "features"),
        ("mnl-tree", "published"),
        ("mnl-tree", "features"),
        ("dt-linear", "plan"),
    ]
    with pytest.raises(KeyError):
        method_rows(["no-such-model"], ["published"])
    with pytest.raises(ValueError, match="utilities"):
        method_rows(["mnl"], ["mine"])


def test_a_reduced_run_of_the_command(tmp_path: Path, capsys) -> None:
    """2 splits of 150 respondents: both protocols, the four rows with the published
    figures beside the rows protocol's, a model without its own probabilities scored
    with a scale fitted on the validation part, and a per-respondent model skipped with
    its reason."""
    out = tmp_path / "run.json"
    argv = [
        "published-swissmetro",
        "--splits",
        "2",
        "--respondents",
        "150",
        "--max-depth",
        "3",
        "--methods",
        "mnl,mnl-tree,logit-pooled,dt",
        "--json",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    table = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["protocols"] == ["rows", "respondents"] and doc["splits"] == 2
    assert "per-respondent" in doc["skipped"]["dt"] and list(doc["skipped"]) == ["dt"]
    assert "skipped dt" in table and "0.799 MNL" in table
    rows = {(r["protocol"], r["label"]): r for r in doc["summary"]}
    labels = ["mnl", "mnl + respondent features", "mnl-tree"]
    labels += ["mnl-tree + respondent features in leaves", "logit-pooled"]
    assert set(rows) == {(p, lab) for p in ("rows", "respondents") for lab in labels}
    for r in doc["summary"]:
        assert r["splits"] == 2 and 0.3 < r["nll"] < 1.5 and 0.4 < r["top1"] < 0.95
        lo, hi = r["nll_ci95"]
        assert lo <= r["nll"] <= hi
        assert r["nll_clipped"] <= r["nll"] + 1e-12  # flooring P at 0.01 only helps
        assert r["max_depth"] <= 3
        if r["label"] != "mnl":
            assert r["minus_mnl"]["splits"] == 2
    assert rows[("rows", "mnl")]["published"]["nll"] == 0.799
    assert rows[("rows", "mnl-tree")]["published"]["nll"] == 0.613
    assert "published" not in rows[("respondents", "mnl")]
    assert len(doc["cells"]) == 2 * 2 * 5
    kinds = {(c["method"], c["probabilities"]) for c in doc["cells"]}
    assert kinds == {("mnl", "logit"), ("mnl-tree", "logit"), ("logit-pooled", "fitted")}
    assert all(c["scale"] > 0 for c in doc["cells"])
    # the published records the command prints
    assert {r.nll for r in PUBLISHED} >= {0.799, 0.613, 0.628, 0.56, 0.604, 0.647}
