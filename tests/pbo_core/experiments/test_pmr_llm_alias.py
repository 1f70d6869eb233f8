"""``python -m pbo_core.experiments pmr-llm-vs-tree``: the old command, an alias that hands
off to ``python -m feature_extraction pmr-llm-vs-tree`` (same flags, same output)."""

from __future__ import annotations

import json

import pytest

from feature_extraction import cli as feature_cli
from pbo_core.experiments import cli
from tests.fixtures.fault_server import FaultConfig, FaultServer

#: Summary fields that do not depend on timing.
STABLE = (
    "pairs",
    "llm_accuracy",
    "llm_accuracy_ci95",
    "tree_accuracy",
    "tree_accuracy_ci95",
    "llm_minus_tree",
    "llm_answers_ok",
    "llm_position_a_share",
    "features",
    "study",
    "model",
    "seed",
)


def test_alias_help_is_the_new_commands(capsys) -> None:
    assert cli.main(["pmr-llm-vs-tree", "--help"]) == 0
    out = capsys.readouterr().out
    assert "more urgent" in out and "--base-url" in out and "--max-pairs" in out


def test_alias_gives_the_new_commands_output(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(FaultConfig()) as server:

        def args(cache: str) -> list[str]:
            return [
                "pmr-llm-vs-tree",
                "--base-url",
                server.base_url,
                "--model",
                "test-model",
                "--features",
                "truth",
                "--cache",
                str(tmp_path / cache),
                "--max-pairs",
                "6",
                "--json",
                "-",
                "--quiet",
            ]

        assert cli.main(args("old.sqlite")) == 0
        old = json.loads(capsys.readouterr().out)
        assert feature_cli.main(args("new.sqlite")) == 0
        new = json.loads(capsys.readouterr().out)
    assert old["command"] == new["command"] == "pmr-llm-vs-tree"
    assert {k: old["summary"][k] for k in STABLE} == {k: new["summary"][k] for k in STABLE}
    assert old["summary"]["pairs"] == 6


def test_alias_exits_like_the_new_command(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # a usage error: the new command's parser, its exit status
    assert cli.main(["pmr-llm-vs-tree", "--study", "nope"]) == 2
    # an error message propagates as the SystemExit it was
    argv = ["pmr-llm-vs-tree", "--study", "pmr", "--features", "truth"]
    argv += ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    with pytest.raises(SystemExit, match="exists only for pmr-demo"):
        cli.main(argv)
