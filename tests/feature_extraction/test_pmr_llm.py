"""``python -m feature_extraction pmr-llm-vs-tree`` against the project's scripted
OpenAI-compatible test server.

Plumbing only: the server's answers are schema-valid but content-free (derived from a
hash of the request), so the LLM accuracy is not meaningful here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from feature_extraction import cli, pmr_llm
from tests.fixtures.fault_server import FaultConfig, FaultServer


@pytest.fixture
def server():
    with FaultServer(FaultConfig()) as s:
        yield s


def test_help_exists(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["pmr-llm-vs-tree", "--help"])
    assert exc.value.code == 0
    assert "more urgent" in capsys.readouterr().out


def test_runs_against_the_scripted_server(server, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows_csv = tmp_path / "rows.csv"
    args = [
        "pmr-llm-vs-tree",
        "--base-url",
        server.base_url,
        "--model",
        "test-model",
        "--features",
        "extract",
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--max-pairs",
        "12",
        "--rows",
        str(rows_csv),
        "--json",
        "-",
        "--quiet",
    ]
    assert cli.main(args) == 0
    s = json.loads(capsys.readouterr().out)["summary"]
    assert s["pairs"] == 12 and s["llm_answers_ok"] == 12
    assert s["llm_requests"] >= 12 and s["llm_failed_requests"] == 0
    assert 0.0 <= s["llm_accuracy"] <= 1.0 and 0.0 <= s["tree_accuracy"] <= 1.0
    lo, hi = s["llm_accuracy_ci95"]
    assert lo <= s["llm_accuracy"] <= hi
    assert "extracted by test-model" in s["features"]
    assert s["llm_latency_per_pair_mean_s"] > 0
    import pandas as pd

    rows = pd.read_csv(rows_csv)
    # the answer is scored against the shown order: "A" is right iff the winner came first
    expect = np.where(rows["llm_answer"] == np.where(rows["winner_shown_second"], "B", "A"), 1, 0)
    np.testing.assert_array_equal(rows["llm_correct"], expect)
    assert rows["winner_shown_second"].any() and not rows["winner_shown_second"].all()
    assert not rows["cached"].any()

    # a rerun (an interrupted one, too) answers from the cache: no new pair requests
    n_before = server.state.requests
    assert cli.main([*args[:-3], "--json", "-", "--quiet"]) == 0
    again = json.loads(capsys.readouterr().out)["summary"]
    assert again["llm_answers_cached"] == 12 and again["llm_requests"] == 0
    assert again["llm_accuracy"] == s["llm_accuracy"]
    assert server.state.requests == n_before  # extraction and pairs both from the cache


def test_tree_on_known_features_beats_chance() -> None:
    from data_loaders import pmr

    correct = pmr_llm.tree_correct(pmr.load_pmr_demo())
    assert len(correct) == 435 and correct.mean() > 0.8


def test_invalid_answers_are_reasked_then_count_as_coin_flips() -> None:
    with pytest.raises(ValueError, match="more_urgent"):
        pmr_llm._parse('{"more_urgent": "C"}')
    with pytest.raises(ValueError, match="not JSON"):
        pmr_llm._parse("B is more urgent")
    assert pmr_llm._parse('{"more_urgent": "B"}') == "B"


def test_an_endpoint_that_answers_nothing_gives_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(FaultConfig(rates={"500": 1.0})) as s:
        args = [
            "pmr-llm-vs-tree",
            "--base-url",
            s.base_url,
            "--model",
            "broken-model",
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--max-retries",
            "0",
            "--quiet",
        ]
        with pytest.raises(SystemExit) as exc:
            cli.main(args)
    msg = str(exc.value.code)
    assert "broken-model" in msg and "no usable features" in msg
    assert "of the 60 messages" in msg and "error 60" in msg
