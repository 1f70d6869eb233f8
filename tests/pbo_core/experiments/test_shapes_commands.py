"""Every command on every shape of study (tests/fixtures/shapes): imported with
``python -m data_loaders import-study``, then ``conjoint-accuracy``, ``sensitivity``,
``report`` and, where respondents have features, ``hierarchy``: a result whose JSON names
the split it used and why, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_loaders.cached import load_study_cached
from pbo_core.experiments import cli
from tests.fixtures.shapes import SHAPES, import_shape

pytestmark = pytest.mark.slow


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DTPBO_DATA_ROOTS", str(tmp_path))
    load_study_cached.cache_clear()
    yield tmp_path
    load_study_cached.cache_clear()


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    assert cli.main([*args, "--json", "-", "--quiet"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_command_on_every_shape(home: Path, capsys, name: str) -> None:
    key = import_shape(name, home)
    shape = SHAPES[name]
    acc = _json(capsys, "conjoint-accuracy", "--study", key)
    assert acc["split"] in ("tasks", "respondents", "pooled") and acc["split_reason"]
    s = acc["summary"]
    assert any(v["family"] == "tree" for v in s.values()) and "logit-pooled" in s
    assert acc["plan"]["baseline"] == "mnl" and "mnl" in s  # the econometrician's baseline
    for v in s.values():
        lo, hi = v["test_acc_ci95"]
        assert 0.0 <= lo <= v["test_acc_mean"] <= hi <= 1.0  # inside the metric's range
        d = v["paired_diff_vs_best_baseline"]
        assert d is None or -1.0 <= d["ci95"][0] <= d["mean_diff"] <= d["ci95"][1] <= 1.0
    if shape.respondents > 1 and shape.comparisons / shape.respondents < 3:
        assert acc["split"] == "respondents" and "dt" in acc["skipped"]
    sens = _json(capsys, "sensitivity", "--study", key)["summary"]
    assert sens["tables"] and sens["split_reason"] == acc["split_reason"]
    report = home / f"{name}.html"
    assert cli.main(["report", "--study", key, "--out", str(report)]) == 0
    html = report.read_text(encoding="utf-8")
    assert shape.title in html and "Held-out evidence" in html and "<svg" in html
    if shape.has_users:
        h = _json(capsys, "hierarchy", "--study", key)["summary"]
        assert h["respondents"] > 0 and "logit-pooled-update" in h["variants"]
        for v in h["variants"].values():  # no interval leaves [0, 1]
            assert all(0.0 <= lo <= hi <= 1.0 for lo, hi in v["test_acc_ci95"])
    else:
        capsys.readouterr()
        assert cli.main(["hierarchy", "--study", key, "--quiet"]) == 2
        assert "respondent features" in capsys.readouterr().err
