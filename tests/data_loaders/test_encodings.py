"""Text files as spreadsheets write them: latin-1/cp1252 instead of UTF-8 and
numbers with decimal commas (``12,5``) in semicolon- or tab-separated text are read,
said, and import to the study their UTF-8, decimal-point copy makes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli, readers
from data_loaders import user_studies as us
from pbo_core.data import DataValidationError
from tests.fixtures.formats import HERE


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def european() -> pd.DataFrame:
    """The long fixture with accented levels (é, ü) and a price with decimals."""
    frame = pd.read_csv(HERE / "long.csv")
    frame["speed"] = frame["speed"].map({"slow": "lént", "medium": "mittel", "fast": "schnüll"})
    return frame


@pytest.mark.parametrize(
    ("encoding", "extra"),
    [("cp1252", "€"), ("latin-1", "\x81")],  # 0x81 is no cp1252 character: latin-1
)
def test_a_text_that_is_not_utf8_is_read_in_its_code_page(encoding: str, extra: str) -> None:
    frame = european().assign(note=f"x{extra}")
    data = frame.to_csv(index=False).encode(encoding)
    table = readers.read_table(data, "eu.csv")
    assert table.frame["speed"].tolist() == frame["speed"].tolist()
    assert table.frame["note"].iloc[0] == f"x{extra}"
    assert f"encoding {encoding} (not UTF-8; read as {encoding})" in table.describe()
    assert table.text.decode("utf-8")  # what a saved study keeps is UTF-8


@pytest.mark.parametrize("sep", [";", "\t"])
def test_decimal_commas_are_numbers(sep: str) -> None:
    frame = european()
    data = frame.to_csv(index=False, sep=sep, decimal=",").encode("utf-8")
    assert b"34,75" in data
    table = readers.read_table(data, "eu.csv")
    np.testing.assert_allclose(table.frame["price"].to_numpy(), frame["price"].to_numpy())
    assert "decimal commas (12,5 read as 12.5)" in table.describe()
    assert b"34.75" in table.text and b"34,75" not in table.text
    # a comma-separated file has no decimal commas; a text with decimal points neither
    dots = frame.to_csv(index=False, sep=sep).encode("utf-8")
    assert "decimal" not in readers.read_table(dots, "eu.csv").describe()


def test_a_spreadsheet_export_imports_as_its_utf8_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = european()
    texts = {
        "plain.csv": frame.to_csv(index=False).encode("utf-8"),
        # what Excel's "CSV" writes in a German Windows
        "excel.csv": frame.to_csv(index=False, sep=";", decimal=",").encode("cp1252"),
    }
    keys = []
    for file, text in texts.items():
        path = tmp_path / file
        path.write_bytes(text)
        assert cli.main(["import-study", str(path), "--title", path.stem]) == 0
        out, err = capsys.readouterr()
        keys.append(out.strip().splitlines()[-1])
    assert "semicolon-separated text (separator detected" in err
    assert "encoding cp1252 (not UTF-8; read as cp1252), decimal commas" in err
    a, b = (us.load_user_study(k) for k in keys)
    np.testing.assert_array_equal(a.data.pairs, b.data.pairs)
    np.testing.assert_array_equal(a.data.X, b.data.X)
    assert a.schema["speed"].levels == b.schema["speed"].levels
    assert "schnüll" in b.schema["speed"].levels and b.schema["price"].kind == "numeric"


def test_utf16_with_its_mark_is_read_and_without_it_is_refused_in_words() -> None:
    frame = european()
    data = frame.to_csv(index=False, sep="\t").encode("utf-16")  # Excel's "Unicode text"
    table = readers.read_table(data, "unicode.txt")
    assert table.frame["speed"].tolist() == frame["speed"].tolist()
    assert "encoding UTF-16 (not UTF-8; read as UTF-16)" in table.describe()
    with pytest.raises(DataValidationError, match=r"holds NUL bytes .* save it as CSV"):
        readers.read_table(data[2:], "unmarked.txt")


def test_encoding_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = european()
    path = tmp_path / "latin.csv"
    path.write_bytes(frame.to_csv(index=False).encode("latin-1"))
    assert cli.main(["import-study", str(path), "--encoding", "latin-1", "--dry-run"]) == 0
    assert "latin.csv: comma-separated text" in (err := capsys.readouterr().err)
    assert "encoding latin-1 (given)" in err
    for enc, words in (
        ("utf-8", "latin.csv: not utf-8 text (byte "),
        ("nope", "latin.csv: --encoding 'nope' is not an encoding"),
    ):
        assert cli.main(["import-study", str(path), "--title", "x", "--encoding", enc]) == 2
        said = capsys.readouterr().err
        assert said.startswith("error: ") and words in said and said.count("\n") == 1
    assert cli.main(["import-study", str(path), "--title", "L", "--encoding", "latin-1"]) == 0
    study = us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])
    assert "schnüll" in study.schema["speed"].levels


def test_a_recipe_keeps_the_encoding_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cp1252 file whose bytes are valid UTF-8 too ("Fuß" and a non-breaking space:
    DF A0) is read wrongly by the detection; ``--encoding cp1252`` reads it, the recipe
    written (and the saved study's) says so, and ``--recipe`` alone replays it."""
    import json

    walk = "Fuß\xa0Tempo"
    frame = european()
    frame["speed"] = frame["speed"].map({"lént": walk, "mittel": "mittel", "schnüll": "x"})
    path = tmp_path / "walk.csv"
    path.write_bytes(frame.to_csv(index=False).encode("cp1252"))
    recipe = tmp_path / "walk.recipe.json"

    def levels(*flags: str) -> tuple[str, ...]:
        assert cli.main(["import-study", str(path), "--title", "W", *flags]) == 0
        study = us.load_user_study(capsys.readouterr().out.strip().splitlines()[-1])
        return study.schema.features[study.schema.names.index("speed")].levels

    assert walk not in levels()  # detected as UTF-8
    given = levels("--encoding", "cp1252", "--write-recipe", str(recipe))
    assert walk in given
    assert json.loads(recipe.read_text())["encoding"] == "cp1252"
    assert levels("--recipe", str(recipe)) == given
    bad = tmp_path / "bad.recipe.json"
    bad.write_text('{"recipe": 1, "encoding": 1252}')
    assert cli.main(["import-study", str(path), "--title", "W", "--recipe", str(bad)]) == 2
    assert "field 'encoding': a text such as 'cp1252'" in capsys.readouterr().err
