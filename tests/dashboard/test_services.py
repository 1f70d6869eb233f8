"""Tests of the dashboard's small helpers (no Streamlit session needed)."""

from __future__ import annotations

import socket

import numpy as np
import pandas as pd
import pytest

from dashboard import _charts as charts
from dashboard import _services as svc
from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.session import ElicitationSession


def _study(names: list[str]) -> Study:
    schema = Schema(tuple(Feature(n, "numeric", bounds=(0.0, 1.0)) for n in names))
    data = PreferenceData(np.zeros((2, len(names))), np.zeros((0, 2), int), schema=schema)
    return Study("x", "X", schema, data)


def test_default_sensitive_matches_words_not_substrings() -> None:
    names = [
        "gender",
        "age",
        "race",
        "religion",
        "religious_activity",
        "gay_marriage",
        "message_actionability",
        "education",
    ]
    assert svc.default_sensitive(_study(names)) == [
        "gender",
        "age",
        "race",
        "religion",
        "religious_activity",
    ]


def test_endpoint_probe_reports_closed_ports_and_bad_urls() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ok, why = svc.endpoint_reachable(f"http://127.0.0.1:{port}/v1", timeout=1.0)
    assert not ok and "no endpoint reachable" in why
    ok, why = svc.endpoint_reachable("ftp://example.org")
    assert not ok and "not an http(s) URL" in why
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        ok, _ = svc.endpoint_reachable(f"http://127.0.0.1:{srv.getsockname()[1]}/v1")
        assert ok


def test_pmr_services_read_score_and_rank_without_an_endpoint() -> None:
    from data_loaders.registry import load_study
    from feature_extraction.propose import ProposalRecord

    study = load_study("pmr-demo")
    spec = study.extras["spec"]
    truth = study.extras["truth"][["message_id", *spec.names]]
    mid = str(truth["message_id"].iloc[0])
    side = svc.message_features(study, truth, mid)
    assert list(side.columns) == ["ground truth", "extracted"] and len(side) == len(spec)
    assert svc.proposal_features(study, None).equals(truth)
    assert (svc.score_extraction(study, truth)["accuracy"] == 1.0).all()
    back = svc.read_extracted_table(svc.extracted_csv(truth).encode(), spec, "t.csv")
    assert len(back) == len(truth)
    recs = [ProposalRecord(round=0, status="failed", error="gone")]
    assert [r.error for r in svc.read_proposals(svc.proposals_json(recs))] == ["gone"]
    assert len(svc.accepted_spec(spec, recs)) == len(spec)
    model = svc.urgency_tree(study, "truth")
    ranked = svc.ranked_messages(model, study, study)
    assert {"inbox", "message", "true urgency"} <= set(ranked.columns)
    assert len(ranked) == len(svc.message_texts(study)) == 60


def test_mean_se_and_result_kinds() -> None:
    df = pd.DataFrame(
        {"method": ["a", "a", "b", "b"], "step": [0, 0, 0, 0], "regret": [1.0, 3.0, 2.0, 2.0]}
    )
    out = svc.mean_se(df, ["method", "step"], "regret").set_index("method")
    assert out.loc["a", "mean"] == 2.0 and out.loc["a", "se"] == pytest.approx(1.0)
    assert out.loc["b", "lo"] == out.loc["b", "hi"] == 2.0
    assert svc.result_kind(df.assign(function="f", seed=0)) == "bench"
    assert (
        svc.result_kind(pd.DataFrame({"cohort": [], "variant": [], "question": [], "regret": []}))
        == "hierarchy"
    )
    assert svc.result_kind(pd.DataFrame({"x": [1]})) == "unknown"


def test_leaf_boxes_tile_the_domain_and_the_grid_covers_it() -> None:
    s = ElicitationSession.for_benchmark("branin", "dt", seed=1)
    for _ in range(12):
        s.answer(s.oracle_winner())
    boxes = svc.leaf_boxes(s.model)
    assert len(boxes) == s.model.n_leaves_
    area = ((boxes["x1_end"] - boxes["x1"]) * (boxes["x2_end"] - boxes["x2"])).sum()
    assert area == pytest.approx(15.0 * 15.0)
    grid = charts.surface_grid(lambda X: -np.sum(X**2, axis=1), np.array([[0, 1], [0, 2]]), 10)
    assert len(grid) == 100
    assert grid["x1"].min() == 0 and grid["x1_end"].max() == 1 and grid["x2_end"].max() == 2
    chart = charts.partition_chart(grid, boxes, svc.session_points(s))
    assert len(chart.to_dict()["layer"]) == 3


def test_option_table_prints_units_and_labels() -> None:
    schema = Schema(
        (
            Feature("price", "numeric", bounds=(0.0, 10.0), unit="EUR", label="Price"),
            Feature("size", "ordinal", levels=("S", "M", "L"), label="Size"),
        )
    )
    s = ElicitationSession.for_items(np.array([[1.5, 0], [2.0, 2]]), schema, "dt")
    t = svc.option_table(s, np.array([1.5, 2.0]))
    assert t.to_dict("records") == [
        {"attribute": "Price", "value": "1.5 EUR"},
        {"attribute": "Size", "value": "L"},
    ]
