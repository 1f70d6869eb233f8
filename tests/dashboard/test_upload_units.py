"""The Add-a-study form takes units from column names (``time_min`` -> min, ``cost_chf``
-> CHF) when the file states none: the preview says them, the attribute table holds them
(editable) and the imported study has them; a unit names no travel time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from data_loaders import user_studies as us
from pbo_core.plan import plan_of
from tests.dashboard._shown import shown
from tests.data_loaders.test_units_from_names import with_unit_names


def test_the_form_shows_units_from_column_names(app: Any, tmp_path: Path) -> None:
    blob = with_unit_names(tmp_path).read_bytes()
    at = app("case_studies")
    at.file_uploader(key="add_choices").upload("units.csv", blob, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    preview = " ".join(shown(m.value) for m in at.markdown)
    assert "units: cost_chf CHF, time_min min (a unit names no role" in " ".join(preview.split())
    (table,) = [d.value for d in at.dataframe if str(d.key).startswith("add_attr_table::")]
    units = dict(zip(table["name"], table["unit"], strict=True))  # the editable table
    assert units["cost_chf"] == "CHF" and units["time_min"] == "min" and units["speed"] == ""
    at.text_input(key="add_title::units.csv").input("Units").run()
    at.button(key="add_import").click().run()
    assert not at.exception and not at.error, [shown(e.value) for e in at.error]
    study = us.load_user_study(at.session_state["sel_study"])
    assert study.schema["cost_chf"].unit == "CHF" and study.schema["time_min"].unit == "min"
    assert plan_of(study).time is None
