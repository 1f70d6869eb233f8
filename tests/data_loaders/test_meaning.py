"""Nothing meaningless scored: every file of the meaning corpus is refused or
asked about with its columns named, and imports once the analyst answers; labelled
alternatives get constants by default, generic designs do not; a code is missing only
with evidence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from data_loaders.layout import ColumnMap, labelled_alternatives, resolve_columns
from data_loaders.selection import parse_where
from pbo_core.data import DataValidationError
from tests.fixtures.meaning import CORPUS, HERE
from tests.fixtures.meaning.generate import FILES, write


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def dry_run(path: Path, flags: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(["import-study", str(path), "--dry-run", *flags])
    out, err = capsys.readouterr()
    return code, err + out


def test_the_corpus_files_are_the_generated_ones(tmp_path: Path) -> None:
    write(tmp_path)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (HERE / name).read_bytes(), name


@pytest.mark.parametrize("key", sorted(CORPUS))
def test_each_file_is_refused_or_asked_about_naming_its_columns(
    key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CORPUS[key]
    code, text = dry_run(case.path, case.flags, capsys)
    assert code == 2, text
    assert "preview" not in text  # nothing was scored or previewed as a study
    for column in case.names:
        assert repr(column) in text or column in text, (column, text)
    for word in case.words:
        assert word in text, (word, text)
    if case.answer:  # answered, it is a study
        code, text = dry_run(case.path, [*case.flags, *case.answer], capsys)
        assert code == 0, text
        assert "preview (nothing saved)" in text


def load(path: Path, flags: list[str], capsys: pytest.CaptureFixture[str]):
    assert cli.main(["import-study", str(path), "--title", path.stem, *flags]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    return us.load_user_study(key)


def test_answers_give_the_meaning_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    coded = load(CORPUS["coded-attribute"].path, ["--categorical", "comfort"], capsys)
    assert coded.schema["comfort"].kind == "categorical"
    assert coded.schema["comfort"].levels == ("1", "2", "3", "4")
    feats = load(
        HERE / "coded_categories.csv",
        ["--numeric", "comfort,TICKET", "--categorical", "PURPOSE",
         "--respondent-features", "PURPOSE,TICKET"],
        capsys,
    )  # fmt: skip
    assert feats.schema["comfort"].kind == "numeric"
    assert feats.user_schema["PURPOSE"].kind == "categorical"
    assert feats.user_schema["PURPOSE"].levels[:3] == ("1", "2", "3")  # numeric order
    assert feats.user_schema["TICKET"].kind == "numeric"
    # the column description says what each column is
    roles = {c.column: c.role for c in feats.columns}
    assert roles["ID"] == "respondent" and roles["CHOICE"] == "choice"
    assert roles["TRAIN_TT"] == "attribute" and roles["PURPOSE"] == "respondent feature"
    by = {c.column: c for c in feats.columns}
    assert (by["CAR_CO"].attribute, by["CAR_CO"].alternative) == ("CO", "CAR")


def test_an_index_left_out_and_an_alternative_column_found(
    capsys: pytest.CaptureFixture[str],
) -> None:
    modes = load(HERE / "row_index.csv", ["--ignore", "rownames"], capsys)
    assert "rownames" not in modes.schema.names and "mode" not in modes.schema.names[:-1]
    assert modes.plan.alternative == "alternative"  # air, train, bus, car: labelled
    assert modes.schema["alternative"].levels == ("air", "train", "bus", "car")
    assert {c.column: c.role for c in modes.columns}["rownames"] == "ignored"
    cases = load(HERE / "case_numbers.csv", ["--ignore", "obs_no"], capsys)
    assert cases.extras["columns"].profile == "alt"  # the alternative id is no attribute
    assert cases.schema.names == ["price", "time"]  # numbered profiles: no constants
    assert cases.plan.alternative is None


def test_a_constant_only_alternative_imports_with_its_constant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = ["--alternatives", "PT,Car,Walk", "--choice-coding", "0"]
    study = load(HERE / "constant_only.csv", flags, capsys)
    assert study.schema["alternative"].levels == ("PT", "Car", "Walk")
    walk = study.data.X[:, study.schema.names.index("alternative")] == 2
    X = study.data.X[walk]
    assert walk.any() and np.all(X[:, [study.schema.names.index(n) for n in ("Time", "Cost")]] == 0)
    frame = pd.read_csv(HERE / "constant_only.csv")
    assert study.data.n_pairs == 2 * len(frame)  # every row a choice among three
    code, text = dry_run(HERE / "constant_only.csv", [*flags, "--constants", "no"], capsys)
    assert code == 2 and "Walk has no attribute columns" in text


def test_a_code_is_missing_only_where_the_evidence_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """99 is 'no answer' in Q1 (0-10) and a value in BUS_TT (5-300 minutes): the trips of
    99 minutes are kept, Q1's 99 is emptied."""
    frame = pd.read_csv(HERE / "code_inside_range.csv")
    study = load(HERE / "code_inside_range.csv", ["--respondent-features", "Q1",
                                                  "--numeric", "Q1"], capsys)  # fmt: skip
    cols = study.extras["columns"]
    assert cols.missing == ("Q1=99",)
    assert study.data.n_pairs == len(frame)  # no choice dropped
    tt = study.schema.names.index("TT")
    assert (study.data.X[:, tt] == 99).sum() >= 1
    assert study.users["Q1"].isna().sum() == (frame.drop_duplicates("ID")["Q1"] == 99).sum()
    # -1 in an effects-coded (-1/0/1) attribute is a value
    coded = frame.copy()
    coded["BUS_eff"] = np.resize([-1, 0, 1], len(coded))
    coded["RAIL_eff"] = np.resize([1, -1, 0], len(coded))
    resolved, _ = resolve_columns(coded, ColumnMap(format="auto"), "effects.csv")
    assert not any(m.endswith("=-1") or m == "-1" for m in resolved.missing)


def test_labelled_alternatives_get_constants_generic_designs_do_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A brand panel (Cracker-like: sunshine, kleebler, nabisco, private) and a labelled
    mode file get constants by default, the preview says so; numbered profiles do not."""
    rng = np.random.default_rng(3)
    n = 120
    brands = ["sunshine", "kleebler", "nabisco", "private"]
    df = pd.DataFrame({"id": np.repeat(np.arange(1, 31), 4)})
    for b in brands:
        df[f"price.{b}"] = rng.integers(60, 130, n)
        df[f"feat.{b}"] = rng.integers(0, 2, n)
    df["choice"] = rng.choice(brands, n)
    path = tmp_path / "crackers.csv"
    df.to_csv(path, index=False)
    code, text = dry_run(path, [], capsys)
    assert code == 0, text
    assert "alternative constants: yes, one for each of sunshine, kleebler, nabisco" in text
    assert "labelled alternatives get constants by default" in text
    study = load(path, [], capsys)
    assert study.plan.alternative == "alternative" and study.plan.reference is None
    ref = load(path, ["--reference", "private"], capsys)
    assert ref.plan.reference == "private"
    # numbered profiles (price1, price2): a generic design, no constants, said so
    generic = pd.DataFrame({"id": np.arange(1, 41)})
    for k in (1, 2):
        generic[f"price{k}"] = rng.integers(10, 90, 40)
        generic[f"time{k}"] = rng.integers(10, 60, 40)
    generic["choice"] = rng.integers(1, 3, 40)
    path2 = tmp_path / "generic.csv"
    generic.to_csv(path2, index=False)
    code, text = dry_run(path2, [], capsys)
    assert code == 0 and "alternative constants: none (unlabelled alternatives)" in text
    assert "numbered or lettered profiles: a generic design" in text


@pytest.mark.parametrize(
    ("names", "labelled"),
    [
        (["1", "2"], False), (["A", "B", "C"], False), (["option1", "option2"], False),
        (["left", "right"], False), (["choice1", "choice2"], False),
        (["TRAIN", "SM", "CAR"], True), (["gc", "gr", "ec", "er", "hp"], True),
        (["heinz41", "hunts32"], True), (["air", "train", "bus", "car"], True),
    ],
)  # fmt: skip
def test_labelled_names(names: list[str], labelled: bool) -> None:
    assert labelled_alternatives(names)[0] is labelled


def test_a_row_selection_is_read_in_one_pass_and_refuses_nonsense() -> None:
    assert [c.text() for c in parse_where("PURPOSE in (1, 3) and CHOICE != 0")] == [
        "PURPOSE in (1, 3)",
        "CHOICE != 0",
    ]
    for bad, words in [
        ("PURPOSE in 1", "takes a list"),
        ("A == 1 or B == 2", "join clauses with 'and'"),
        ("A == 1 and", "missing after 'and'"),
        ("A in (1, 2", "not closed"),
        ("x" * 501, "more than 500"),
    ]:
        with pytest.raises(DataValidationError, match=words):
            parse_where(bad)
