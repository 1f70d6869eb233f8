"""``sensitivity`` and ``conjoint-accuracy`` on the same split: one best baseline (one rule,
:func:`pbo_core.evaluation.best_baseline_of`), ablated by default; a held-out sample too
small for a 5-point difference cautioned in both commands' JSON and on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pbo_core.experiments import cli


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))


def _json(capsys, *args: str) -> tuple[dict, str]:
    capsys.readouterr()
    assert cli.main([*args, "--json", "-"]) == 0
    got = capsys.readouterr()
    return json.loads(got.out), got.err


def test_sensitivity_names_the_accuracy_commands_best_baseline(capsys) -> None:
    common = ["--study", "train", "--respondents", "12"]
    acc, acc_err = _json(capsys, "conjoint-accuracy", *common)
    sens, sens_err = _json(capsys, "sensitivity", *common)
    sens = sens["summary"]
    best = acc["best_baseline"]
    assert best is not None and sens["best_baseline"] == best
    assert best in sens["methods"] and sens["plan"]["baseline"] in sens["methods"]
    for s in sens["baseline_accuracy"].values():
        assert s["paired_diff_vs_best_baseline"]["baseline"] == best
    for s in acc["summary"].values():
        assert s["paired_diff_vs_best_baseline"]["baseline"] == best
    # 12 respondents cannot detect 5 points: said in the JSON and on stderr, both commands
    for doc, err in ((acc, acc_err), (sens, sens_err)):
        assert doc["caution"] and "12 held-out respondents" in doc["caution"]
        assert doc["caution"] in err
    # a table's row is "underpowered" only when its interval includes 0
    for table in sens["tables"].values():
        for row in table[1:]:
            if row["underpowered"]:
                assert row["delta test CI low (pp)"] <= 0 <= row["delta test CI high (pp)"]
