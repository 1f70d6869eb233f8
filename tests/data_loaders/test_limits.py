"""Bounded input: every own-file entry point refuses oversized input before
parsing it, in one sentence naming the file and the limit."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from data_loaders import limits
from data_loaders import user_studies as us
from data_loaders.conjoint import read_attribute_table
from pbo_core.data import DataValidationError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _nothing_saved(home: Path) -> bool:
    studies = home / "studies"
    return not studies.exists() or not any(studies.iterdir())


def _one_sentence(msg: str, name: str, limit: str) -> None:
    assert msg.startswith(name) and limit in msg and msg.count(". ") == 0, msg
    assert msg.endswith(".") and "\n" not in msg


def wide_header(path: Path, n_cols: int) -> Path:
    """A CSV with ``n_cols`` columns and one data line, written without holding it whole."""
    with open(path, "w") as fh:
        fh.write(",".join(f"c{i}" for i in range(n_cols)) + "\n")
        fh.write(",".join("1" for _ in range(n_cols)) + "\n")
    return path


#: ``python -m data_loaders ARGS`` that writes its own peak memory (KiB) to ``argv[1]`` at exit:
#: VmHWM of /proc/self/status, the high-water mark of this process's own address space.
#: (Not ru_maxrss: Linux folds the parent's peak into it across fork and exec, so under a
#: pytest process that had grown to 1.2 GB the command "peaked" at 1.2 GB; seen in CI.)
_MEASURED = """
import atexit, re, runpy, sys
out = sys.argv.pop(1)
def peak():
    status = open("/proc/self/status").read()
    return re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)
atexit.register(lambda: open(out, "w").write(peak()))
sys.argv[0] = "data_loaders"
runpy.run_module("data_loaders", run_name="__main__", alter_sys=True)
"""


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_a_million_columns_are_refused_fast_and_small(tmp_path: Path, home: Path) -> None:
    """The command line refuses a 1,000,000-column CSV from its header (read with a byte
    cap, never by pandas) in < 10 s of CPU and < 1 GB of peak memory; nothing is saved.
    (CPU time, not wall time: a loaded machine must not fail it.)"""
    f = wide_header(tmp_path / "wide.csv", 1_000_000)
    assert f.stat().st_size < limits.MAX_FILE_BYTES  # the size alone does not refuse it
    env = dict(os.environ, PYTHONPATH=str(ROOT), DTPBO_DATA_HOME=str(home))
    peak_file = tmp_path / "peak_kib"
    t0 = _children_cpu()
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEASURED,
            str(peak_file),
            "import-study",
            str(f),
            "--title",
            "Wide",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    took = _children_cpu() - t0
    assert r.returncode == 2 and r.stdout == "", r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "wide.csv" in line and "MAX_HEADER_BYTES" in line and "Traceback" not in r.stderr
    assert took < 10, took
    # the command's own peak (VmHWM, KiB), not the test process's
    peak_kib = int(peak_file.read_text())
    assert peak_kib < 2**20, peak_kib
    assert _nothing_saved(home)
    # the in-process paths refuse it the same way
    with pytest.raises(limits.LimitError, match="MAX_HEADER_BYTES"):
        us.load_choice_file(f, None)
    _, problems = us.check_upload(f.read_bytes(), "wide.csv", None, us.ColumnMap())
    (p,) = problems
    _one_sentence(p.message, "wide.csv", "MAX_HEADER_BYTES")


def test_column_count_rows_cells_and_size(tmp_path: Path) -> None:
    cols = wide_header(tmp_path / "cols.csv", limits.MAX_COLUMNS + 1)
    with pytest.raises(limits.LimitError, match="MAX_COLUMNS") as exc:
        limits.check_csv_file(cols)
    _one_sentence(str(exc.value), str(cols), "2,001 columns")
    rows = tmp_path / "rows.csv"
    rows.write_bytes(b"a\n" + b"1\n" * (limits.MAX_ROWS + 1))
    with pytest.raises(limits.LimitError, match="MAX_ROWS"):
        limits.check_csv_file(rows)
    cells = b"a,b,c,d,e,f\n" + b"1,2,3,4,5,6\n" * (limits.MAX_CELLS // 6 + 1)
    with pytest.raises(limits.LimitError, match="MAX_CELLS"):
        limits.check_csv_bytes(cells, "cells.csv")
    big = b"a\n" + b"x" * limits.MAX_FILE_BYTES
    with pytest.raises(limits.LimitError, match="MAX_FILE_MB") as exc:
        limits.check_csv_bytes(big, "big.csv")
    _one_sentence(str(exc.value), "big.csv", "20 MB")
    # a gzip bomb is stopped while streaming, at the limit of the decompressed text
    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb") as fh:
        fh.write(b"a\n")
        for _ in range(limits.MAX_FILE_BYTES // 2**20 + 2):
            fh.write(b"0" * 2**20)
    assert bomb.stat().st_size < 2**20
    with pytest.raises(limits.LimitError, match="decompressed"):
        limits.check_csv_file(bomb)
    # a normal file passes
    ok = tmp_path / "ok.csv"
    ok.write_text("a,b\n1,2\n")
    limits.check_csv_file(ok)


def test_a_200000_deep_json_is_refused_without_recursion(tmp_path: Path, home: Path) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    assert limits.json_depth_over(deep)
    assert not limits.json_depth_over(b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}')
    with pytest.raises(limits.LimitError, match="MAX_JSON_DEPTH") as exc:
        limits.check_json_bytes(deep, "attributes.json")
    _one_sentence(str(exc.value), "attributes.json", "32 levels")
    table = tmp_path / "deep.json"
    table.write_bytes(b'{"attributes": ' + deep + b"}")
    with pytest.raises(DataValidationError, match="MAX_JSON_DEPTH"):  # not RecursionError
        read_attribute_table(table)
    _, problems = us.attributes_from_json(table.read_bytes(), "deep.json")
    assert "MAX_JSON_DEPTH" in problems[0].message
    # the command line: one line, exit status 2, nothing saved
    choices = tmp_path / "c.csv"
    choices.write_text("respondent,task,profile,chosen,price\n1,1,1,1,10\n1,1,2,0,20\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), DTPBO_DATA_HOME=str(home))
    r = subprocess.run(
        [sys.executable, "-m", "data_loaders", "import-study", str(choices), "--title", "x",
         "--attributes", str(table)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "MAX_JSON_DEPTH" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and _nothing_saved(home)
    # a normal table still reads
    normal = tmp_path / "ok.json"
    normal.write_text(json.dumps({"attributes": [{"name": "price", "kind": "numeric"}]}))
    assert read_attribute_table(normal)[0].name == "price"


def test_json_size_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"attributes": [], "pad": "x" * limits.MAX_JSON_BYTES}))
    with pytest.raises(limits.LimitError, match="over the limit"):
        read_attribute_table(big)
