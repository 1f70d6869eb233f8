"""Readers, one per format, in one registry: every file of the formats
corpus reads to the same table, the separator found is reported, the form and the
command accept the same list and say it, every compressed format stays bounded, and a
long file imports to the same study from every format through the command line."""

from __future__ import annotations

import bz2
import gzip
import io
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli, limits, readers
from data_loaders import user_studies as us
from pbo_core.data import DataValidationError
from tests.fixtures.formats import HERE, LONG, WIDE, corpus_file
from tests.fixtures.formats.generate import DETERMINISTIC, files, long_table, wide_table

#: The wide and long layouts (tests/data_loaders/test_layouts.py imports them).
LAYOUTS = ("biogeme.dat", "long_sets.csv", "missing_weight.csv")

ROOT = Path(__file__).resolve().parents[2]
#: What a message must never show: a Python representation of a value or of bytes.
_REPR = re.compile(r"np\.\w+\(|b'|b\"|\\x[0-9a-f]{2}|Traceback|Error\(")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def lined(frame: pd.DataFrame) -> pd.DataFrame:
    """A generator's table as the readers give it: index = file line (header = line 1)."""
    return frame.set_axis(pd.RangeIndex(2, 2 + len(frame)))


def refused(exc: pytest.ExceptionInfo[BaseException], name: str) -> str:
    msg = str(exc.value)
    assert msg.startswith(name), msg
    assert not _REPR.search(msg) and "\n" not in msg, msg
    return msg


# ------------------------------------------------------------------- the corpus
def test_the_files_are_what_the_generator_writes() -> None:
    written = files()
    assert set(written) == set(WIDE) | set(LONG) | set(LAYOUTS)
    for name, data in written.items():
        if name.endswith(DETERMINISTIC):
            assert (HERE / name).read_bytes() == data, name
        else:  # Parquet and Excel carry their writer's version and time: compare tables
            fresh = readers.read_table(data, name).frame
            kept = readers.read_table(corpus_file(name)).frame
            pd.testing.assert_frame_equal(kept, fresh)


@pytest.mark.parametrize(
    ("table", "name", "sep", "how"),
    [("wide", n, s, h) for n, (s, h) in WIDE.items()]
    + [("long", n, s, h) for n, (s, h) in LONG.items()],
)
def test_every_format_reads_to_the_identical_table(
    table: str, name: str, sep: str, how: str
) -> None:
    expected = lined(wide_table() if table == "wide" else long_table())
    got = readers.read_table(corpus_file(name))
    pd.testing.assert_frame_equal(got.frame, expected)  # values, dtypes, columns, lines
    assert (got.sep, got.sep_source) == (sep, how)
    # the same bytes uploaded (a base name, never a path) read the same
    up = readers.read_table(corpus_file(name).read_bytes(), name)
    pd.testing.assert_frame_equal(up.frame, expected)
    said = up.describe()
    assert said.startswith(f"{name}: ") and f"{len(expected)} rows" in said
    if how == "detected":
        assert f"{readers.separator_name(sep)}-separated text (separator detected" in said
    # what a saved study keeps: the table as comma-separated text (a sheet's 45.0 is 45)
    if name.endswith(".xlsx"):
        pd.testing.assert_frame_equal(readers.read_table(up.text, "t.csv").frame, expected)
    else:
        assert up.text == files()[f"{table}.csv"]


def test_the_detected_separator_is_said_and_a_given_one_wins(home: Path) -> None:
    dat = HERE / "wide.dat"
    assert (
        readers.read_table(dat)
        .describe()
        .startswith("wide.dat: tab-separated text (separator detected")
        or str(dat) in readers.read_table(dat).describe()
    )
    given = readers.read_table(dat, "wide.dat", sep="\t")
    assert (given.sep, given.sep_source) == ("\t", "given")
    assert "detected" not in given.describe()
    with pytest.raises(DataValidationError) as exc:
        readers.read_table(dat, "wide.dat", sep=",")
    msg = refused(exc, "wide.dat")
    assert "one column" in msg and "holds tabs" in msg and "--sep" in msg


@pytest.mark.parametrize(
    ("typed", "sep"),
    [
        (",", ","),
        (";", ";"),
        ("\t", "\t"),
        ("\\t", "\t"),
        ("tab", "\t"),
        ("TAB", "\t"),
        ("semicolon", ";"),
        ("|", "|"),
        ("spaces", r"\s+"),
        ("auto", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_sep(typed: str | None, sep: str | None) -> None:
    assert readers.parse_sep(typed) == sep


def test_a_bad_separator_is_refused_in_words() -> None:
    for bad in ("ab", "x", "'"):
        with pytest.raises(ValueError, match="one character"):
            readers.parse_sep(bad)


def test_a_file_whose_separator_cannot_be_told_says_what_to_do() -> None:
    ragged = b"a b c\n1 2\n3 4 5 6\n"
    with pytest.raises(DataValidationError) as exc:
        readers.read_table(ragged, "x.dat")
    msg = refused(exc, "x.dat")
    assert "cannot tell the separator" in msg and "--sep" in msg and "Separator" in msg
    assert readers.refusal(ragged, "x.dat") == msg  # the same, without pandas


def test_spaces_are_a_separator_of_last_resort() -> None:
    t = readers.read_table(b"a  b c\n1  2 3\n4 5  6\n", "x.txt")
    assert t.sep == r"\s+" and list(t.frame.columns) == ["a", "b", "c"]
    assert t.frame["c"].tolist() == [3, 6]


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("x.sav", b"a,b\n1,2\n", "not a format the import reads (accepted: .csv"),
        ("x.xls", b"a,b\n1,2\n", ".xls) are not read; save it as .xlsx or CSV"),
        ("x.csv.gz", b"\x1f\x8bnot gzip at all", "gzip file is truncated or corrupt"),
        ("x.dat.bz2", b"BZh9 not bz2", "bz2 file is truncated or corrupt"),
        ("x.zip", b"PK\x03\x04 not a zip", "zip file is truncated or corrupt"),
        ("x.parquet", b"PAR1 not parquet", "cannot be read as Parquet"),
        ("x.xlsx", b"not a workbook", "cannot be read as an Excel workbook"),
        ("x.csv", b"", "the file is empty"),
    ],
)
def test_unreadable_files_name_the_file_and_what_to_do(name: str, data: bytes, words: str) -> None:
    with pytest.raises(DataValidationError) as exc:
        readers.read_table(data, name)
    assert words in refused(exc, name)


def test_a_zip_holds_one_table_and_its_member_names_stay_names(tmp_path: Path) -> None:
    tab = files()["wide.dat"]
    two = io.BytesIO()
    with zipfile.ZipFile(two, "w") as zf:
        zf.writestr("a.csv", tab)
        zf.writestr("b.csv", tab)
    with pytest.raises(DataValidationError) as exc:
        readers.read_table(two.getvalue(), "two.zip")
    assert "holds 2 files (a.csv, b.csv)" in refused(exc, "two.zip")
    hostile = io.BytesIO()
    with zipfile.ZipFile(hostile, "w") as zf:
        zf.writestr("../../outside/choices.dat", tab)
    got = readers.read_table(hostile.getvalue(), "h.zip")
    pd.testing.assert_frame_equal(got.frame, lined(wide_table()))
    assert "holding choices.dat" in got.describe() and ".." not in got.describe()
    assert not (tmp_path / "outside").exists() and not (ROOT.parent / "outside").exists()


# ------------------------------------------------------------------- bounds
def _over() -> int:
    return limits.MAX_FILE_BYTES // 2**20 + 2


def test_every_compression_is_bounded_decompressed() -> None:
    """Bombs (a few KB that decompress past MAX_FILE_MB) are stopped at the limit."""
    zeros = b"a,b\n" + b"0" * (_over() * 2**20)
    gz = gzip.compress(zeros, compresslevel=9)
    b2 = bz2.compress(zeros)
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bomb.csv", zeros)
    for name, data in (("b.csv.gz", gz), ("b.csv.bz2", b2), ("b.zip", zipped.getvalue())):
        assert len(data) < 2**20
        with pytest.raises(limits.LimitError) as exc:
            readers.read_table(data, name)
        assert "MAX_FILE_MB" in refused(exc, name)
        assert "MAX_FILE_MB" in (readers.refusal(data, name) or "")
    # a gzip named .csv is still recognised (and bounded) by its first bytes
    with pytest.raises(limits.LimitError):
        readers.read_table(gz, "plain.csv")


def test_a_zip_member_that_lies_about_its_size_is_cut_at_the_limit() -> None:
    """A member whose declared size is small but whose data decompress further is never
    read past its declared size (zipfile) nor past the limit (the reader)."""
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("t.csv", files()["long.csv"])
    with pytest.raises((DataValidationError, limits.LimitError)):
        raw = bytearray(zipped.getvalue())
        # shrink the declared size in the central directory and the local header
        i = raw.rfind(b"PK\x01\x02")
        raw[i + 24 : i + 28] = (10).to_bytes(4, "little")
        raw[22:26] = (10).to_bytes(4, "little")
        readers.read_table(bytes(raw), "lie.zip")


def test_binary_formats_are_bounded_before_they_are_read() -> None:
    wide = pd.DataFrame([range(limits.MAX_COLUMNS + 1)], columns=[f"c{i}" for i in range(2001)])
    out = io.BytesIO()
    wide.to_parquet(out)
    with pytest.raises(limits.LimitError) as exc:
        readers.read_table(out.getvalue(), "wide.parquet")
    assert "MAX_COLUMNS" in refused(exc, "wide.parquet")
    # an .xlsx whose parts decompress past XLSX_MAX_BYTES
    book = io.BytesIO()
    with zipfile.ZipFile(book, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("xl/workbook.xml", b"<workbook/>")
        zf.writestr("xl/worksheets/sheet1.xml", b" " * (readers.XLSX_MAX_BYTES + 1))
    with pytest.raises(limits.LimitError) as exc:
        readers.read_table(book.getvalue(), "bomb.xlsx")
    assert "XLSX_MAX_BYTES" in refused(exc, "bomb.xlsx")


def test_columns_are_counted_with_the_separator_found() -> None:
    header = "\t".join(f"c{i}" for i in range(limits.MAX_COLUMNS + 1))
    data = (header + "\n" + "\t".join("1" for _ in range(limits.MAX_COLUMNS + 1)) + "\n").encode()
    with pytest.raises(limits.LimitError) as exc:
        readers.read_table(data, "wide.tsv")
    assert "2,001 columns" in refused(exc, "wide.tsv")


# ------------------------------------------------------------------- one list, two doors
def test_the_command_states_the_accepted_list() -> None:
    assert readers.accepted_text() == (
        "accepted: .csv, .tsv, .dat, .txt, .parquet, .xlsx, and .gz/.bz2/.zip of those"
    )
    assert set(readers.accepted_suffixes()) == set(readers.READERS) | set(readers.COMPRESSIONS)
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["import-study"]
    help_text = " ".join(sub.format_help().split())
    assert readers.accepted_text() in help_text and "--sep" in help_text
    # the form's uploader: tests/dashboard/test_upload_formats.py (it needs the page)


# ------------------------------------------------------------------- the same study
def _import(name: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[str, str]:
    code = cli.main(["import-study", str(corpus_file(name)), "--title", name, *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.strip().splitlines()[-1], err


def test_a_long_file_imports_to_the_same_study_from_every_format(
    capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    first, err = _import("long.csv", capsys)
    assert "inferred: long.csv: comma-separated text (separator detected" in err
    base = us.load_user_study(first)
    assert base.counts()["comparisons"] == 10 * 3 * 2
    for name, (sep, how) in LONG.items():
        if name == "long.csv":
            continue
        key, err = _import(name, capsys)
        said = next(line for line in err.splitlines() if line.startswith(f"inferred: {name}: "))
        if how:
            assert f"{readers.separator_name(sep)}-separated text (separator detected" in said
        study = us.load_user_study(key)
        np.testing.assert_array_equal(study.data.pairs, base.data.pairs, err_msg=name)
        np.testing.assert_array_equal(study.data.X, base.data.X, err_msg=name)
        np.testing.assert_array_equal(study.data.respondent, base.data.respondent)
        assert study.schema.names == base.schema.names
        assert (home / "studies" / key / "choices.csv").read_bytes() == files()["long.csv"]


def test_sep_on_the_command_line(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    key, err = _import("long.tsv", capsys, "--sep", "\\t")
    assert "inferred: long.tsv: tab-separated text;" in err  # given, not detected
    code = cli.main(["import-study", str(HERE / "long.tsv"), "--title", "x", "--sep", ","])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "one column" in err and "holds tabs" in err
    code = cli.main(["import-study", str(HERE / "long.tsv"), "--title", "x", "--sep", "ab"])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: --sep: the separator must be one character")
    assert [p.name for p in (home / "studies").iterdir()] == [key]


def test_the_form_path_reads_every_format_too(home: Path) -> None:
    """check_upload/save_study (the form's path) take the upload's bytes and base name."""
    base, _ = us.check_upload(files()["long.csv"], "long.csv", None, us.ColumnMap())
    assert base is not None
    for name in LONG:
        blob = corpus_file(name).read_bytes()
        study, problems = us.check_upload(blob, name, None, us.ColumnMap())
        assert problems == [] and study is not None, problems
        np.testing.assert_array_equal(study.data.pairs, base.data.pairs, err_msg=name)
        assert study.extras["import_notes"][0].startswith(f"{name}: ")
    # the tab-separated .dat: its columns are listed by name, not as one long name
    _, problems = us.check_upload(files()["wide.dat"], "wide.dat", None, us.ColumnMap())
    assert problems and all("a name of" not in p.message for p in problems)
    assert "'TRAIN_TT'" in problems[0].message


#: Writes a hostile file (``maker path args...``) in a process of its own, so that making
#: it (a 1 GiB page, say) is not counted as reading it.
_MAKE = """
import sys
from tests.fixtures.malformed import amplify, hostile_files
make = getattr(amplify, sys.argv[1], None) or getattr(hostile_files, sys.argv[1])
with open(sys.argv[2], "wb") as fh:
    fh.write(make(*map(int, sys.argv[3:])))
"""
#: Reads a file (``path name``): its size, CPU seconds, this process's peak MB, the message.
_AMPLIFY = """
import resource, sys, time
from data_loaders import readers
from pbo_core.data import DataValidationError
blob = open(sys.argv[1], "rb").read()
t = time.process_time()
try:
    readers.read_table(blob, sys.argv[2])
    said = "read"
except DataValidationError as exc:
    said = str(exc)
print(len(blob))
print(time.process_time() - t)
# this process's own peak (ru_maxrss keeps the forking parent's across exec)
hwm = [x for x in open("/proc/self/status") if x.startswith("VmHWM:")]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((int(hwm[0].split()[1]) if hwm else peak) / 1024)
print(said)
"""


@pytest.mark.parametrize(
    ("make", "name", "words"),
    [
        ("amplifying_xlsx", "tiny.xlsx", "the sheet as text is larger than 20 MB"),
        ("amplifying_parquet", "tiny.parquet", "its text columns hold more than 20 MB of text"),
        # its footer says 1 kB for a page of 1 GiB (128 MiB here: quicker to make)
        (
            "parquet_footer_lies_about_its_sizes 128",
            "lying.parquet",
            "the uncompressed table is larger than 80 MB",
        ),
    ],
)
def test_a_tiny_file_that_expands_to_gigabytes_is_refused_before_it_expands(
    tmp_path: Path, make: str, name: str, words: str
) -> None:
    """A 19 KB workbook (one 1 MiB shared string in 2,000 cells) and a 22 KB
    Parquet file (one 1 MiB dictionary value over 8,000 rows) drove a worker to 3.9 GB,
    and a 46 KB Parquet file whose footer claims 1 kB for a page of 1 GiB to 1.2 GB (read
    whole before its text was measured);
    each is now refused in one sentence, its process under 500 MB (the imports alone
    are ~330 MB) and within 2 s of CPU."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    maker, *args = make.split()
    path = tmp_path / name
    subprocess.run([sys.executable, "-c", _MAKE, maker, path, *args], env=env, cwd=root, check=True)
    out = subprocess.run(
        [sys.executable, "-c", _AMPLIFY, path, name],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )
    size, seconds, peak_mb, said = out.stdout.strip().split("\n", 3)
    print(
        f"\n[amplify] {make}: {int(size):,} bytes, {float(seconds):.2f} s, {float(peak_mb):.0f} MB"
    )
    assert int(size) < 50_000
    assert said.startswith(f"{name}: {words}") and "\n" not in said, said
    assert float(seconds) < 2.0 and float(peak_mb) < 500, (seconds, peak_mb)


@pytest.mark.parametrize("compression", ["none", "snappy", "gzip", "zstd", "brotli", "lz4"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_parquet_pages_are_measured_from_their_headers(
    compression: str, version: str, dictionary: bool
) -> None:
    """Every page of files pyarrow writes (each codec, both data page versions, with and
    without dictionaries, several row groups and pages, a page index, nulls) is found
    from the headers: its uncompressed bytes add up to at most the footer's sizes
    (which also count the headers), and the file reads as before."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 100, 3000),
            "b": rng.normal(size=3000),
            "s": rng.choice(["x", "yy", None], 3000),
            "t": [f"v{k}" for k in range(3000)],
        }
    )
    out = io.BytesIO()
    pq.write_table(
        pa.Table.from_pandas(frame),
        out,
        compression=compression,
        data_page_version=version,
        use_dictionary=dictionary,
        write_page_index=True,
        row_group_size=1000,
        data_page_size=4096,
    )
    data = out.getvalue()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    pages = readers.parquet_page_bytes(data, meta)
    footer = sum(
        meta.row_group(g).column(c).total_uncompressed_size
        for g in range(meta.num_row_groups)
        for c in range(meta.num_columns)
    )
    assert meta.num_row_groups == 3 and 0.5 * footer < pages <= footer
    assert len(readers.read_table(data, "x.parquet").frame) == 3000


def test_a_parquet_page_header_that_does_not_parse_is_refused_in_words() -> None:
    """The first page's header cut short (the column chunk pointing past it into the
    footer's magic): one sentence, nothing decompressed."""
    from tests.fixtures.malformed.hostile_files import _parquet

    raw = bytearray(_parquet(4, 16))
    raw[4:16] = b"\xff" * 12  # varints that never end
    with pytest.raises(DataValidationError) as exc:
        readers.read_table(bytes(raw), "cut.parquet")
    assert "cannot be read as Parquet" in refused(exc, "cut.parquet")
