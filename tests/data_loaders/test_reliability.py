"""Loader errors under bad input name the file, line and column."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders.conjoint import Attribute, load_conjoint_long
from data_loaders.pmr import load_pmr_synth
from data_loaders.stated_preference import TRAIN_ATTRIBUTES
from pbo_core.data import DataValidationError
from tests.data_loaders.conjoint.helpers import load, long_frame, write
from tests.data_loaders.test_pmr import _inbox


# ------------------------------------------------------------------ gzip
def test_corrupt_gzip_names_the_file(tmp_path: Path) -> None:
    p = tmp_path / "data.csv.gz"
    p.write_bytes(gzip.compress(long_frame().to_csv(index=False).encode())[:40])
    with pytest.raises(DataValidationError, match=r"data\.csv\.gz: cannot be decompressed"):
        load(p)
    p.write_bytes(b"\x1f\x8bnot really gzip")
    with pytest.raises(DataValidationError, match=r"data\.csv\.gz: cannot be decompressed"):
        load(p)


# ------------------------------------------------------------------ numeric bounds
PRICE = Attribute("price", "numeric", unit="EUR", min=0, max=100)
OTHERS = [Attribute("size", "ordinal", levels=("small", "medium", "large"))]


def _priced(tmp_path: Path, price: object) -> Path:
    f = long_frame().drop(columns=["colour", "eco"])
    f["price"] = f["price"].astype(object)
    f.loc[4, "price"] = price  # file line 6
    return write(f, tmp_path)


@pytest.mark.parametrize(
    ("price", "why"),
    [(-5, "below the attribute's minimum 0"), (1e308, "beyond the plausible magnitude"),
     (500, "above the attribute's maximum 100")],
)  # fmt: skip
def test_numeric_attribute_outside_its_range_names_line_and_column(tmp_path, price, why) -> None:
    p = _priced(tmp_path, price)
    with pytest.raises(DataValidationError) as e:
        load_conjoint_long(
            p, [PRICE, *OTHERS], respondent="resp", task="task", alternative="alt",
            chosen="chosen", opt_out_alternatives=("none",),
        )  # fmt: skip
    msg = str(e.value)
    assert f"{p}, line 6: column 'price'" in msg and why in msg


def test_huge_value_is_refused_even_without_declared_bounds(tmp_path) -> None:
    p = _priced(tmp_path, 1e308)
    plain = Attribute("price", "numeric")
    with pytest.raises(DataValidationError, match=r"line 6: column 'price'.*magnitude"):
        load_conjoint_long(
            p, [plain, *OTHERS], respondent="resp", task="task", alternative="alt",
            chosen="chosen", opt_out_alternatives=("none",),
        )  # fmt: skip


def test_min_max_round_trip_and_bundled_tables_declare_them() -> None:
    assert Attribute.from_dict(PRICE.to_dict()) == PRICE
    assert all(a.min == 0 and a.max is not None for a in TRAIN_ATTRIBUTES if a.kind == "numeric")
    with pytest.raises(DataValidationError, match="min=5 is above max=1"):
        Attribute("x", "numeric", min=5, max=1)


# ------------------------------------------------------------------ PMR-Synth
@pytest.fixture
def synth(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    data = tmp_path / "pmr" / "data"
    data.mkdir(parents=True)
    _inbox("A", 6, rng).to_parquet(data / "INBOX_A-00000-of-00001.parquet", index=False)
    _inbox("B", 6, rng).to_parquet(data / "INBOX_B-00000-of-00001.parquet", index=False)
    return tmp_path / "pmr"


def test_synth_rows_are_counted_in_the_file(synth) -> None:
    f = synth / "data" / "INBOX_B-00000-of-00001.parquet"
    df = pd.read_parquet(f)
    df["text"] = df["text"].astype(object)
    df.loc[0, "text"] = ""  # file row 1 empty
    df["level"] = df["level"].astype(str)
    df.loc[2, "level"] = "high"  # file row 3
    df.to_parquet(f, index=False)
    with pytest.warns(UserWarning, match=r"INBOX_B-00000-of-00001\.parquet row 1"):
        with pytest.raises(DataValidationError) as e:
            load_pmr_synth(synth)
    assert f"{f}, row 3, column 'level'" in str(e.value)


@pytest.mark.parametrize(
    ("content", "why"), [(b"", "the file is empty"), (b'a,"b\n1,2,3\n', "cannot be read as CSV")]
)
def test_empty_or_garbage_annotations_name_the_file(synth, content, why) -> None:
    p = synth / "ann.csv"
    p.write_bytes(content)
    with pytest.raises(DataValidationError, match=rf"ann\.csv: {why}"):
        load_pmr_synth(synth, annotations=p)


def test_annotation_errors_name_line_and_column(synth) -> None:
    p = synth / "ann.csv"
    p.write_text("winner_id,loser_id\nA-01,A-02\n\nB-03,B-03\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=r"ann\.csv, line 4, columns 'winner_id'/"):
        load_pmr_synth(synth, annotations=p)
    p.write_text("winner_id,loser_id\nA-01,A-02\nA-01,A-77\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=r"ann\.csv, line 3, column 'loser_id': 'A-77'"):
        load_pmr_synth(synth, annotations=p)


def test_unmatched_texts_warn_with_their_lines(synth) -> None:
    items = load_pmr_synth(synth).data.items
    text = dict(zip(items["message_id"], items["text"], strict=True))
    ann = pd.DataFrame(
        {"chosen": [text["A-01"], "no such text", text["A-02"]],
         "rejected": [text["A-00"], text["A-00"], text["B-00"]]}
    )  # fmt: skip
    p = synth / "ann.csv"
    ann.to_csv(p, index=False)  # multi-line quoted texts: record lines are exact
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        st = load_pmr_synth(synth, annotations=p)
    lines = st.extras["annotation_skipped"]
    raw = p.read_text(encoding="utf-8").split("\n")
    assert [raw[i - 1].startswith(('"### EHR', "no such")) for i in lines] == [True, True]
    assert st.data.n_pairs == 1 and any(
        "2 annotated pair(s) skipped" in str(w.message) for w in rec
    )
