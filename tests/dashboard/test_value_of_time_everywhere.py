"""Units never assumed, one value of time everywhere.

Biogeme's SwissMetro ``.dat`` (the vendored file written tab-separated, as Biogeme ships
it) imported with 01logit's selection and roles:

* with ``--time-attribute TT --money-attribute CO`` and no units, no output says "per
  hour": ``conjoint-accuracy --json``, the report, the Tree explorer (AppTest), the
  hierarchy command's JSON and the Hierarchy page; the value of time reads "units of CO
  per unit of TT";
* with ``--units TT=min,CO=CHF`` the value of time is one number (within 1 %) in all of
  them, in CHF per hour.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from data_loaders import cli
from data_loaders.swissmetro import SWISSMETRO_FILE
from pbo_core.experiments import cli as experiments
from tests.dashboard._shown import shown

pytestmark = pytest.mark.slow

ROLES = [
    "--where", "PURPOSE in (1, 3)", "--zero-when", "CO for TRAIN,SM when GA=1",
    "--money-attribute", "CO", "--time-attribute", "TT", "--reference", "SM",
    "--respondent-features", "GA,MALE",
]  # fmt: skip


def import_dat(tmp: Path, capsys: Any, *flags: str) -> str:
    dat = tmp / "swissmetro.dat"
    if not dat.exists():
        pd.read_csv(SWISSMETRO_FILE).to_csv(dat, sep="\t", index=False)
    title = "units" if flags else "no units"
    assert cli.main(["import-study", str(dat), "--title", title, *ROLES, *flags]) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


def outputs(key: str, tmp: Path, capsys: Any, app: Any) -> dict[str, str]:
    """The text of every output that shows the study's value of time."""
    out: dict[str, str] = {}
    acc = tmp / f"{key}-accuracy.json"
    assert experiments.main(["conjoint-accuracy", "--study", key, "--methods", "mnl",
                             "--json", str(acc), "--quiet"]) == 0  # fmt: skip
    out["conjoint-accuracy"] = acc.read_text()
    report = tmp / f"{key}.html"
    assert experiments.main(["report", "--study", key, "--out", str(report)]) == 0
    out["report"] = report.read_text()
    hier = tmp / f"{key}-hierarchy.json"
    assert experiments.main(["hierarchy", "--study", key, "--users", "40", "--refit-every",
                             "20", "--json", str(hier), "--quiet", "--out",
                             str(tmp / f"{key}-cells")]) == 0  # fmt: skip
    out["hierarchy"] = hier.read_text()
    capsys.readouterr()
    for page, view in (("tree_explorer", {"te_view": "Estimates"}), ("hierarchy", {})):
        at = app(page, sel_study=key, **view)
        assert not at.exception, [e.value for e in at.exception]
        parts = [shown(m.value) for m in (*at.markdown, *at.caption, *at.info, *at.title)]
        parts += [f.value.to_string() for f in at.dataframe]
        out[f"{page} page"] = "\n".join(parts)
    return out


def numbers(text: str) -> list[float]:
    """Every 'N CHF per hour' in a text."""
    return [float(m.replace(",", "")) for m in re.findall(r"([\d.,]+) CHF per hour", text)]


def test_no_unit_no_per_hour_and_one_value_of_time_with_units(
    tmp_path: Path, capsys: Any, app: Any
) -> None:
    bare = import_dat(tmp_path, capsys)
    got = outputs(bare, tmp_path, capsys, app)
    for where, text in got.items():
        assert "per hour" not in text, where
    fit = json.loads(got["conjoint-accuracy"])["baseline_fit"]["value_of_time"]
    assert "units of CO per unit of TT" in fit["text"]
    assert json.loads(got["hierarchy"])["summary"]["study_value_of_time"]["text"] == fit["text"]
    assert fit["text"].split(": ", 1)[1] in got["report"]

    key = import_dat(tmp_path, capsys, "--units", "TT=min,CO=CHF")
    got = outputs(key, tmp_path, capsys, app)
    fit = json.loads(got["conjoint-accuracy"])["baseline_fit"]["value_of_time"]
    assert fit["unit"] == "CHF per hour"
    vot = float(fit["estimate"])
    assert 60 < vot < 80  # 01logit: 60 x 1.278 / 1.084 = 70.7 CHF per hour
    hier = json.loads(got["hierarchy"])["summary"]["study_value_of_time"]
    assert abs(hier["estimate"] / vot - 1) < 0.01
    for where in ("report", "tree_explorer page", "hierarchy page"):
        shown_here = numbers(got[where])
        assert any(abs(x / vot - 1) < 0.01 for x in shown_here), (where, shown_here, vot)
