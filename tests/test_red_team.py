"""tests/benchmarks/red_team.py: the fault suite's checks become rows (a failing check a
broken row naming its exception, never a traceback), the rows one Markdown table, and the
exit status says whether every row held."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "benchmarks" / "red_team.py"


def _load():
    spec = importlib.util.spec_from_file_location("red_team", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


rt = _load()


def _raises(exc: BaseException):
    def check() -> str:
        raise exc

    return check


def test_checks_become_rows_and_failures_broken_rows() -> None:
    held = rt.run_check("a check that held", lambda: "refused in 0.4 s\n  (one line)")
    assert held.held and held.detail == "refused in 0.4 s (one line)" and held.seconds >= 0
    broken = rt.run_check("a bound broken", _raises(rt.Broken("worker 1370 MB >= 500")))
    assert not broken.held and broken.detail == "worker 1370 MB >= 500"
    crashed = rt.run_check("a crash", _raises(TimeoutError("Timeout 60000ms exceeded.\nCall log:")))
    assert not crashed.held
    assert crashed.detail == "TimeoutError: Timeout 60000ms exceeded."  # first line, no traceback
    silent = rt.run_check("a bare exception", _raises(KeyError()))
    assert silent.detail == "KeyError: (no message)"
    assert len(rt.run_check("long", lambda: "x" * 500).detail) == 200


def test_one_table_and_the_exit_status() -> None:
    rows = [
        rt.Row("xlsx: shared strings", True, 1.25, "refused in 1.1 s"),
        rt.Row("SIGTERM", False, 30.0, "exit status 1 | a traceback"),
    ]
    lines = rt.table(rows).splitlines()
    assert len(lines) == 4 and len({len(line) for line in lines}) == 1  # columns line up
    assert [c.strip() for c in lines[0].strip("|").split(" | ")] == list(rt.HEADER)
    assert set(lines[1]) <= {"|", " ", "-"}
    assert "| held " in lines[2] and "| 1.2 " in lines[2]  # one decimal
    assert "| broken " in lines[3] and "exit status 1 \\| a traceback" in lines[3]  # escaped
    assert rt.exit_code(rows) == 1
    assert rt.exit_code(rows[:1]) == 0
    assert rt.exit_code([]) == 1  # nothing checked is not a pass
