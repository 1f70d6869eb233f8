"""``python -m data_loaders import-study``: the key alone on stdout's last line, what was
inferred on stderr; problems one line each on stderr, exit status 2, nothing saved, no
traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from tests.fixtures.shapes import SHAPES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), DTPBO_DATA_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "data_loaders", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )


def saved(home: Path) -> list[str]:
    studies = home / "studies"
    return sorted(p.name for p in studies.iterdir()) if studies.exists() else []


def test_shape_c_with_no_flags(home: Path) -> None:
    r = run("import-study", "tests/fixtures/shapes/shape_c.csv", "--title", "Shape C", home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "my-shape-c\n"
    err = r.stderr.splitlines()
    assert (
        "inferred: layout: wide (column 'choice' names the alternatives; no profile column)" in err
    )
    assert any(line.startswith("inferred: alternatives: 1, 2, 3, 4, 5, 6") for line in err)
    assert any("promo1, promo2, promo3" in line for line in err)  # partial stems named
    assert any("fuel (categorical: 4 levels)" in line for line in err)
    assert (
        err[-1].startswith("saved 'Shape C' (wide; 300 respondents")
        and "1,500 comparisons" in err[-1]
    )
    assert saved(home) == ["my-shape-c"]
    doc = json.loads((home / "studies" / "my-shape-c" / "study.json").read_text())
    assert doc["columns"]["alternatives"] == ["1", "2", "3", "4", "5", "6"]
    assert doc["columns"]["money_attribute"] == "price" and doc["counts"]["comparisons"] == 1500


@pytest.mark.parametrize(
    ("args", "needle", "lines"),
    [
        (
            ["--task-col", "round"],
            "missing column 'round' (the task, --task-col); the file has columns: 'respondent'",
            1,
        ),
        (["--task-col", ""], "has 6 chosen rows (lines", 1),
        (["--format", "wide"], "no attribute columns of the wide layout", 1),
        (["--money-attribute", "speed"], "money attribute 'speed' is not a numeric attribute", 1),
        (["--respondent-features", "wifi"], "respondent columns ['wifi'] differ", 1),
        (["--attributes", "no/such.json"], "no/such.json", 1),
    ],
)
def test_problems_are_one_line_each_and_nothing_is_saved(
    args: list[str], needle: str, lines: int, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    code = cli.main(["import-study", str(SHAPES["panel-long"].file), "--title", "A", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (out, err)
    assert len(err.strip().splitlines()) == lines and needle in err, err
    assert err.startswith("error: ") and "Traceback" not in err
    assert saved(home) == []


def test_every_bad_cell_is_a_line_and_the_process_has_no_traceback(
    tmp_path: Path, home: Path
) -> None:
    text = SHAPES["panel-wide"].file.read_text().splitlines()
    head = text[0].split(",")
    for k, col, value in [(3, "price3", ""), (7, "price2", "cheap")]:
        row = text[k].split(",")
        row[head.index(col)] = value
        text[k] = ",".join(row)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(text) + "\n")
    r = run("import-study", str(bad), "--title", "Bad", home=home)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 2, err
    assert any(
        "bad.csv, line 8, column 'price2'" in e and "'cheap' is not a number" in e for e in err
    )
    assert any("line 4, column 'price3'" in e and "the cell is empty" in e for e in err)
    assert saved(home) == []
    r = run("import-study", str(tmp_path / "absent.csv"), "--title", "x", home=home)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such file" in r.stderr


def test_gzip_and_an_explicit_attribute_table(tmp_path: Path, home: Path) -> None:
    import gzip

    src = SHAPES["panel-long"].file
    gz = tmp_path / "a.csv.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    table = tmp_path / "attrs.json"
    table.write_text(
        json.dumps(
            {"attributes": [
                {"name": "price", "kind": "numeric", "unit": "EUR"},
                {"name": "speed", "kind": "ordinal", "levels": ["slow", "medium", "fast"]},
            ]}
        )
    )  # fmt: skip
    code = cli.main(["import-study", str(gz), "--title", "Gz", "--attributes", str(table)])
    assert code == 0
    study = us.load_user_study("my-gz")
    assert study.schema.names == ["price", "speed"] and study.schema["speed"].kind == "ordinal"
    assert (home / "studies" / "my-gz" / "choices.csv").read_bytes() == src.read_bytes()


def test_the_operator_publishes_lists_and_removes(home: Path, capsys) -> None:
    shape = str(SHAPES["panel-long"].file)
    assert cli.main(["import-study", shape, "--title", "Mine"]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    assert not us.user_study(key).public  # the command line's import: seen by no visitor
    assert cli.main(["publish-study", key]) == 0
    assert us.user_study(key).public
    assert cli.main(["list-studies"]) == 0
    assert f"{key}\tpublished\tMine" in capsys.readouterr().out
    assert cli.main(["publish-study", key, "--withdraw"]) == 0
    assert not us.user_study(key).public
    assert cli.main(["import-study", shape, "--title", "Everyone's", "--public"]) == 0
    key2 = capsys.readouterr().out.strip().splitlines()[-1]
    assert us.user_study(key2).public
    assert cli.main(["remove-study", key]) == 0
    assert saved(home) == [key2]
    assert cli.main(["publish-study", "my-absent"]) == 2
    assert cli.main(["remove-study", "my-absent"]) == 2
    assert "no imported study" in capsys.readouterr().err
