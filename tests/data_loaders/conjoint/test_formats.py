"""The wide-format reader."""

from pathlib import Path

import pandas as pd
import pytest

from data_loaders.conjoint import load_conjoint_wide
from pbo_core.data import DataValidationError
from tests.data_loaders.conjoint.helpers import ATTRS, write


# ---------------------------------------------------------------------------- wide format
def wide_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [1, 1, 2, 2],
            "choice": ["choice1", "choice2", "1", "none"],
            "price1": [10, 20, 10, 30], "size1": ["small", "large", "small", "medium"],
            "colour1": ["red", "red", "red", "blue"], "eco1": [0, 1, 0, 0],
            "price2": [30, 10, 20, 20], "size2": ["small", "small", "medium", "large"],
            "colour2": ["blue", "green", "green", "green"], "eco2": [1, 1, 0, 1],
        }
    )  # fmt: skip


def test_wide_format(tmp_path: Path) -> None:
    p = write(wide_frame(), tmp_path, "wide.csv")
    s = load_conjoint_wide(
        p, ATTRS, respondent="id", task=None, choice="choice", opt_out_values=("none",)
    )
    d = s.data
    assert d.n_pairs == 3  # the opt-out task gives none
    # the profile (10, small, red, no) appears twice and is one item
    assert d.n_items == 5
    assert d.pairs[0, 0] == d.pairs[2, 0]
    assert s.data.task.tolist() == [1, 2, 1]  # tasks numbered per respondent
    assert s.extras["respondent_summary"].loc[2, "n_opt_out"] == 1
    assert s.extras["pair_line"].tolist() == [2, 3, 4]


def test_wide_format_errors(tmp_path: Path) -> None:
    f = wide_frame()
    f.loc[2, "choice"] = "3"
    p = write(f, tmp_path, "wide.csv")
    with pytest.raises(DataValidationError, match=r"wide.csv, line 4: column 'choice': '?3'? does"):
        load_conjoint_wide(p, ATTRS, respondent="id", task=None, opt_out_values=("none",))
    p = write(wide_frame().drop(columns="eco2"), tmp_path, "wide2.csv")
    with pytest.raises(DataValidationError, match=r"line 1 \(header\): missing .*'eco2'"):
        load_conjoint_wide(p, ATTRS, respondent="id", task=None)
    f = wide_frame()
    f.loc[1, "size2"] = "tiny"
    p = write(f, tmp_path, "wide3.csv")
    with pytest.raises(DataValidationError, match=r"line 3: column 'size2' .*'tiny'"):
        load_conjoint_wide(p, ATTRS, respondent="id", task=None, opt_out_values=("none",))
