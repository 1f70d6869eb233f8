from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders._common import DataNotAvailableError
from data_loaders.bela import BELA_ATTRIBUTES, bela_status, load_bela
from data_loaders.conjoint import write_attribute_table
from pbo_core.data import DataValidationError
from tests.fixtures.synthetic import BELA_LEVELS, bela_frame


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DTPBO_BELA_PATH", raising=False)


def write(frame: pd.DataFrame, tmp_path: Path, name: str = "bela.csv") -> Path:
    p = tmp_path / name
    frame.to_csv(p, index=False)
    return p


def test_schema_matches_table_11() -> None:
    names = [a.name for a in BELA_ATTRIBUTES]
    assert names == list(BELA_LEVELS)
    by = {a.name: a for a in BELA_ATTRIBUTES}
    assert by["travel_time"].values == (20, 40, 60, 90) and by["travel_time"].unit == "min"
    assert by["waiting_time"].values == (20, 40, 60)
    assert by["sensitivity"].values == (60, 70, 80, 90) and by["sensitivity"].unit == "%"
    assert by["cost"].values == (0, 20, 40) and by["cost"].unit == "BRB"
    assert by["modality"].levels == ("manual", "mammography", "both")
    assert by["invitation"].levels == ("postal letter", "telephone call")


def test_labels_opt_out_and_exclusion(tmp_path: Path) -> None:
    # 18 tasks: respondent 2 opts out in 15 (83% > 80%: excluded), respondent 3 in 14
    # (78%: kept)
    f = bela_frame(5, 18, seed=3, opt_outs={2: 15, 3: 14})
    s = load_bela(write(f, tmp_path))
    assert s.key == "bela"
    assert s.extras["excluded"] == {2: "opted out in more than 80% of tasks"}
    summary = s.extras["respondent_summary"]
    assert summary.loc[3, "n_opt_out"] == 14 and summary.loc[3, "n_answered"] == 4
    # one pair per answered A/B task of kept respondents: 18 + 4 + 18 + 18
    assert s.data.n_pairs == 18 + 4 + 18 + 18 - s.extras["n_identical_skipped"]
    assert set(s.respondents()) == {1, 3, 4, 5}
    assert s.schema["sensitivity"].bounds == (60.0, 90.0)
    assert "CC BY 4.0" in s.license and "Mandrik" in s.citation
    # the winner of respondent 1, task 1 is the profile marked chosen
    first = f[(f["id"] == 1) & (f["task"] == 1) & (f["choice"] == 1)].iloc[0]
    w = s.data.items.iloc[s.data.pairs[0, 0]]
    for name in BELA_LEVELS:
        want = first[name]
        assert w[name] == (float(want) if isinstance(BELA_LEVELS[name][0], int) else want)


def test_codes_and_labels_give_the_same_study(tmp_path: Path) -> None:
    labels = load_bela(write(bela_frame(3, 18, seed=5), tmp_path, "labels.csv"))
    codes = load_bela(write(bela_frame(3, 18, seed=5, codes=True), tmp_path, "codes.csv"))
    np.testing.assert_array_equal(labels.data.X, codes.data.X)
    np.testing.assert_array_equal(labels.data.pairs, codes.data.pairs)


def test_no_opt_out_rows(tmp_path: Path) -> None:
    # without C rows, a task where neither A nor B is chosen is an opt-out
    f = bela_frame(2, 18, seed=1, opt_outs={1: 16}, opt_out_row=False)
    s = load_bela(write(f, tmp_path))
    assert s.extras["excluded"] == {1: "opted out in more than 80% of tasks"}
    assert s.extras["respondent_summary"].loc[1, "n_opt_out"] == 16


def test_configurable_columns_and_codes(tmp_path: Path) -> None:
    f = bela_frame(2, 18, seed=2).rename(
        columns={"id": "RespID", "alt": "Alternative", "choice": "Chosen", "cost": "COST_BRB"}
    )
    f["appointment"] = f["appointment"].map({"yes": 1, "no": 2})  # 1 = yes, 2 = no
    p = write(f, tmp_path)
    with pytest.raises(DataValidationError, match=r"line 1 \(header\): missing column.*columns="):
        load_bela(p)
    s = load_bela(
        p,
        columns={"respondent": "RespID", "alternative": "Alternative", "chosen": "Chosen",
                 "cost": "COST_BRB"},
        codes={"appointment": {1: "yes", 2: "no"}},
    )  # fmt: skip
    assert s.counts()["respondents"] == 2
    ref = load_bela(write(bela_frame(2, 18, seed=2), tmp_path, "ref.csv"))
    np.testing.assert_array_equal(s.data.X, ref.data.X)
    with pytest.raises(KeyError, match="unknown BELA attribute"):
        load_bela(p, columns={"colour": "x"})


def test_one_based_codes(tmp_path: Path) -> None:
    f = bela_frame(2, 18, seed=4, codes=True)
    for name, levels in BELA_LEVELS.items():
        if not isinstance(levels[0], int):
            f[name] = f[name] + 1
    s = load_bela(write(f, tmp_path), code_base=1)
    ref = load_bela(write(bela_frame(2, 18, seed=4), tmp_path, "ref.csv"))
    np.testing.assert_array_equal(s.data.X, ref.data.X)


def test_custom_attribute_table(tmp_path: Path) -> None:
    table = tmp_path / "attrs.json"
    write_attribute_table(BELA_ATTRIBUTES, table)
    s = load_bela(write(bela_frame(2, 18), tmp_path), attributes=table, max_opt_out_share=None)
    assert s.schema.names == [a.name for a in BELA_ATTRIBUTES]


def test_malformed_values_name_line(tmp_path: Path) -> None:
    f = bela_frame(2, 18, seed=0)
    f["sensitivity"] = f["sensitivity"].astype(object)
    f.loc[10, "sensitivity"] = 85
    p = write(f, tmp_path)
    with pytest.raises(DataValidationError, match=r"bela.csv, line 12: column 'sensitivity'"):
        load_bela(p)
    f = bela_frame(2, 18, seed=0)
    f.loc[4, "modality"] = "ultrasound"
    with pytest.raises(DataValidationError, match=r"line 6: column 'modality'.*'ultrasound'"):
        load_bela(write(f, tmp_path, "b2.csv"))
    f = bela_frame(2, 18, seed=0)
    f.loc[2, "choice"] = 1  # opt-out row chosen as well as A or B
    with pytest.raises(DataValidationError, match=r"line 2: respondent 1, task 1 .*2 alternatives"):
        load_bela(write(f, tmp_path, "b3.csv"))


def test_path_from_env_and_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert bela_status()[0] is False
    with pytest.raises(DataNotAvailableError, match="DTPBO_BELA_PATH is not set") as err:
        load_bela()
    assert "e0224667" in str(err.value)
    with pytest.raises(DataNotAvailableError, match="does not exist"):
        load_bela(tmp_path / "missing.csv")
    p = write(bela_frame(2, 18), tmp_path)
    monkeypatch.setenv("DTPBO_BELA_PATH", str(p))
    assert bela_status()[0] is True
    s = load_bela()
    assert s is load_bela()  # cached for default options
    assert s.counts()["respondents"] == 2
