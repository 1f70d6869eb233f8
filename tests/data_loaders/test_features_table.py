"""Feature tables (extracted or ground truth): errors name the file, line and column."""

from __future__ import annotations

import pandas as pd
import pytest

from data_loaders.pmr import DEMO_DIR, load_pmr_demo
from feature_extraction.extract import load_table
from feature_extraction.spec import table9_spec
from pbo_core.data import DataValidationError

SPEC = table9_spec()
TRUTH = (DEMO_DIR / "truth.csv").read_text(encoding="utf-8").splitlines()


def _write(tmp_path, lines, name="features.csv"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_duplicate_message_id_names_the_id_and_both_lines(tmp_path) -> None:
    # header = line 1, A01 on line 2, a blank line 4, the repeat of A01 on line 6
    lines = [TRUTH[0], TRUTH[1], TRUTH[2], "", TRUTH[3], TRUTH[1]]
    with pytest.raises(DataValidationError) as e:
        load_table(_write(tmp_path, lines), SPEC)
    msg = str(e.value)
    assert "features.csv, line 6, column 'message_id'" in msg
    assert "'A01' repeats line 2" in msg


def test_duplicate_message_id_in_a_dataframe_is_an_error() -> None:
    table = load_table(DEMO_DIR / "truth.csv", SPEC)
    dup = pd.concat([table, table.iloc[[3]]], ignore_index=True)
    with pytest.raises(DataValidationError, match=r"row 61.*'A04'.*row 4"):
        load_pmr_demo(features=dup)


def test_value_outside_the_spec_names_line_and_column(tmp_path) -> None:
    bad = TRUTH[2].replace("none_or_fyi", "whenever", 1)
    with pytest.raises(DataValidationError) as e:
        load_table(_write(tmp_path, [TRUTH[0], TRUTH[1], bad]), SPEC)
    assert "line 3, column 'message_actionability'" in str(e.value)
    assert "'whenever'" in str(e.value)


def test_multi_line_quoted_field_keeps_the_line_numbers(tmp_path) -> None:
    header = TRUTH[0] + ",error"
    lines = [header, TRUTH[1] + ',"two\nlines"', TRUTH[1].replace("A01", "A09") + ","]
    lines.append(TRUTH[1] + ",")  # a repeat of A01 on physical line 5
    with pytest.raises(DataValidationError, match=r"line 5, column 'message_id'.*line 2"):
        load_table(_write(tmp_path, lines), SPEC)


def test_in_memory_table_uses_the_base_name_only() -> None:
    blob = (DEMO_DIR / "truth.csv").read_bytes()
    table = load_table(blob, SPEC, name="../../x.csv")
    assert len(table) == 60
    with pytest.raises(DataValidationError) as e:
        load_table(b"", SPEC, name="/abs/dir/x.csv")
    assert str(e.value).startswith("x.csv: the file is empty")
