"""tests/benchmarks/server_memory.py: the documented bound is checked after every import,
and the one-task file is the largest the import limits allow."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd

from data_loaders import limits

SCRIPT = Path(__file__).resolve().parent / "benchmarks" / "server_memory.py"


def _load():
    spec = importlib.util.spec_from_file_location("server_memory", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


sm = _load()


def test_the_bound_is_checked_after_every_import() -> None:
    result = {"rss_before_mb": 400.0, "imports": [{"n": 1, "rss_mb": 500.0}]}
    ok = sm.check_bound(result)
    assert ok["within_bound"] and ok["imports_over_bound"] == []
    assert ok["bound_mb"] == 400.0 + sm.IMPORT_PATH_MB + sm.STUDY_CACHE_MB
    over = ok["bound_mb"] + 0.1
    result["imports"] += [{"n": 2, "rss_mb": over}, {"n": 3, "rss_mb": 450.0}]
    bad = sm.check_bound(result)
    assert not bad["within_bound"] and bad["imports_over_bound"] == [2]
    assert bad["max_after_an_import_mb"] == over


def test_the_budget_it_checks_is_the_servers_default() -> None:
    from dashboard._services import studies

    assert sm.STUDY_CACHE_MB == studies.OWN_STUDY_CACHE_MB


def test_the_one_task_file_is_at_the_import_limits(tmp_path: Path) -> None:
    path = sm.big_csv(tmp_path / "one.csv", 0, shape="one-task")
    frame = pd.read_csv(path)
    assert len(frame) + 1 <= limits.MAX_ROWS and len(frame) > 0.99 * limits.MAX_ROWS
    assert path.stat().st_size <= limits.MAX_FILE_MB * 2**20
    assert frame.groupby("respondent").size().eq(2).all()  # one task of two each
    panel = sm.big_csv(tmp_path / "panel.csv", 1)
    assert pd.read_csv(panel).groupby("respondent").size().eq(16).all()
