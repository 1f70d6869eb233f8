"""Wide layouts by name pattern (prefix or suffix, with or without a
separator), availability columns, numbered choices, attributes of some alternatives,
missing-value codes, text with many levels, single-alternative choice situations, a
weight column; the preview (``import-study --dry-run``) and the recipe that replays an
import exactly; Biogeme's SwissMetro file to the bundled loader's comparisons."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import cli
from data_loaders import user_studies as us
from data_loaders.layout import ColumnMap, infer_attributes, resolve_columns
from data_loaders.recipes import parse_recipe, preview_lines, read_recipe
from data_loaders.swissmetro import SWISSMETRO_FILE, load_swissmetro
from pbo_core.data import DataValidationError, Study
from tests.fixtures.formats import HERE

AUTO = ColumnMap(format="auto")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def command(capsys, *args: str) -> tuple[int, str, list[str]]:
    """``python -m data_loaders`` in process: exit status, stdout, stderr lines."""
    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err.splitlines()


def comparisons(study: Study, rename: dict[str, str] | None = None) -> Counter:
    """Every comparison as (respondent, task, winner's attributes, loser's attributes),
    the attributes as text in the study's column order (``rename`` maps values)."""
    items = study.data.items.astype(object).map(lambda v: (rename or {}).get(str(v), str(v)))
    rows = [tuple(r) for r in items.itertuples(index=False)]
    return Counter(
        (str(r), str(t), rows[w], rows[lo])
        for (w, lo), r, t in zip(
            study.data.pairs, study.data.respondent, study.data.task, strict=True
        )
    )


def same_study(a: Study, b: Study) -> None:
    np.testing.assert_array_equal(a.data.pairs, b.data.pairs)
    np.testing.assert_array_equal(a.data.X, b.data.X)
    np.testing.assert_array_equal(a.data.respondent, b.data.respondent)
    np.testing.assert_array_equal(a.data.task, b.data.task)
    assert a.schema.names == b.schema.names


# ----------------------------------------------------------------------------- patterns
@pytest.mark.parametrize(
    ("template", "sep", "position"),
    [
        ("{stem}{alt}", "", "suffix"),  # TimePT, TimeCar
        ("{stem}.{alt}", ".", "suffix"),  # time.car
        ("{alt}_{stem}", "_", "prefix"),  # TRAIN_TT
    ],
)
def test_alternatives_by_name_pattern_with_a_numbered_choice(
    template: str, sep: str, position: str
) -> None:
    rng = np.random.default_rng(0)
    alts = ("PT", "Car", "Bike")
    df = pd.DataFrame({"ID": np.repeat(np.arange(1, 11), 3)})
    for stem in ("Time", "Cost"):
        for a in alts:
            df[template.format(stem=stem, alt=a)] = rng.integers(5, 90, len(df))
    df["Choice"] = rng.integers(0, 3, len(df))  # 0..2 in the order of the columns
    cols, notes = resolve_columns(df, AUTO, "modes.csv")
    assert (cols.format, cols.alternatives, cols.separator) == ("wide", alts, sep)
    assert (cols.position, cols.chosen, cols.choice_coding) == (position, "Choice", "0")
    assert any("numbers 0 = PT, 1 = Car, 2 = Bike" in n for n in notes), notes
    assert [a.name for a in infer_attributes(df, cols)] == ["Time", "Cost"]


def test_availability_and_an_attribute_of_some_alternatives() -> None:
    df = pd.read_csv(HERE / "biogeme.dat", sep="\t")
    cols, notes = resolve_columns(df, AUTO, "biogeme.dat")
    assert cols.availability == ("PT_AV", "CAR_AV", "SLOW_AV")
    assert cols.respondent == "ID"  # not the household that groups them, said why
    assert any("'HOUSEHOLD' (5 values) groups its 10 values" in n for n in notes)
    assert any("--fill-attributes CO" in n for n in notes)
    filled, notes = resolve_columns(df, ColumnMap("auto", fill_attributes=("CO",)), "b.dat")
    assert any("'CO' given for 2 of 3 alternatives: 0 for SLOW" in n for n in notes)
    assert [a.name for a in infer_attributes(df, filled)] == ["TT", "CO"]
    with pytest.raises(DataValidationError, match="--fill-attributes XX: no such attribute"):
        resolve_columns(df, ColumnMap("auto", fill_attributes=("XX",)), "b.dat")


# ----------------------------------------------------------------------------- the corpus
def test_biogeme_dat_preview_import_and_recipe(capsys, home: Path, tmp_path: Path) -> None:
    f = HERE / "biogeme.dat"
    code, out, err = command(capsys, "import-study", f, "--dry-run", "--fill-attributes", "CO")
    assert code == 0, err
    assert not (home / "studies").exists()  # nothing saved
    assert "  alternative SLOW: TT (SLOW_TT), CO (SLOW_CO, else 0); available when SLOW_AV = 1" in (
        out.splitlines()
    )
    assert (
        "  dropped: 2 choice situations with no or an unknown choice (lines 19, 32); 2 choice "
        "situations with fewer than two alternatives available (lines 11, 35)" in out.splitlines()
    )
    assert "  respondents: 10 (column ID)" in out.splitlines()
    assert (
        "  choice situations: 36 with comparisons; alternatives per choice situation: 2 to 3"
        in (out.splitlines())
    )
    code, out, err = command(capsys, "import-study", f, "--title", "B", "--fill-attributes", "CO")
    assert code == 0, err
    key = out.strip().splitlines()[-1]
    study = us.load_user_study(key)
    assert study.counts()["respondents"] == 10
    # the saved recipe replays the import exactly
    recipe = home / "studies" / key / us.RECIPE_FILE
    code, out, err = command(capsys, "import-study", f, "--title", "B again", "--recipe", recipe)
    assert code == 0, err
    same_study(study, us.load_user_study(out.strip().splitlines()[-1]))
    assert read_recipe(recipe).columns == study.extras["columns"]


def test_long_file_with_varying_choice_sets_and_many_text_levels(capsys) -> None:
    f = HERE / "long_sets.csv"
    code, out, err = command(capsys, "import-study", f, "--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    assert "  dropped: 1 choice situation with fewer than two alternatives (line 35)" in lines
    assert (
        "  choice situations: 23 with comparisons; alternatives per choice situation: 2 to 5"
        in (lines)
    )
    assert any("'household_id' (4 values) groups its 12 values" in e for e in err)
    # levels from the whole file, not the first 30: left out and offered, or grouped
    assert any("carrier (35 levels); to keep one: --levels carrier=keep" in e for e in err)
    code, out, err = command(
        capsys, "import-study", f, "--title", "L", "--levels", "carrier=group:5"
    )
    assert code == 0, err
    study = us.load_user_study(out.strip().splitlines()[-1])
    carrier = next(a for a in study.extras["attribute_table"] if a.name == "carrier")
    assert len(carrier.levels) == 6 and carrier.levels[-1] == "other"
    code, out, err = command(capsys, "import-study", f, "--title", "K", "--levels", "carrier=keep")
    assert code == 0, err


def test_missing_codes_and_a_weight_column(capsys) -> None:
    f = HERE / "missing_weight.csv"
    code, out, err = command(
        capsys, "import-study", f, "--dry-run", "--respondent-features", "income"
    )
    assert code == 2 and "respondent feature 'income' holds the whole numbers 1-8" in err[-1]
    code, out, err = command(
        capsys, "import-study", f, "--dry-run", "--respondent-features", "income",
        "--numeric", "income",
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert (
        "  dropped: 3 choice situations with a missing-value code in an attribute of an "
        "available alternative (lines 7, 13, 26)" in lines
    )
    assert "  missing-value codes: -1 (every column); -2 (every column)" in lines
    assert any(line.startswith("  weight column: 'weight' (recorded, not used") for line in lines)
    assert any("income (2)" in e and "left empty" in e for e in err)
    assert "  study: 27 respondents, 81 items, 54 comparisons" in lines
    # no codes: the -1 times are numbers like any other, nothing is dropped
    code, out, err = command(capsys, "import-study", f, "--dry-run", "--missing", "")
    assert code == 0, err
    assert "  dropped: nothing" in out.splitlines()


def test_messages_are_words_not_python_reprs(capsys, tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "respondent": np.repeat([8, 9], 4),
            "price": [1, 2, 3, 4] * 2,
            "chosen": [1, 0, 1, 0, 1, 0, 0, 0],
        }
    )
    _, problems = us.check_upload(df.to_csv(index=False).encode(), "p.csv", None, AUTO)
    assert problems and "respondent 8 has 2 chosen rows" in problems[0].message
    assert "np." not in problems[0].message


def test_a_recipe_names_its_file_and_field() -> None:
    with pytest.raises(DataValidationError, match=re.escape("r.json: field 'columns.colour'")):
        parse_recipe(json.dumps({"columns": {"colour": 1}}).encode(), "r.json")
    with pytest.raises(DataValidationError, match=re.escape("r.json: unknown field 'extra'")):
        parse_recipe(b'{"extra": 1}', "r.json")
    with pytest.raises(DataValidationError, match=re.escape("r.json: not a JSON recipe")):
        parse_recipe(b"{", "r.json")


# ----------------------------------------------------------------------------- SwissMetro
@pytest.mark.parametrize(
    ("ga_cost", "zero"), [("file", []), ("zero", ["CO for TRAIN,SM when GA=1"])]
)
def test_swissmetro_dat_imports_with_a_recipe_to_the_bundled_comparisons(
    capsys, tmp_path: Path, ga_cost: str, zero: list[str]
) -> None:
    """Biogeme's wide file, tab-separated, and a two-line recipe: the same comparisons as
    ``load_swissmetro(ga_cost=...)`` (CHOICE 0 dropped; the car has no headway and only
    Swissmetro has airline seats: 0 elsewhere, as the bundled loader codes them; with the
    bundled default, no Train or Swissmetro fare for GA holders: Biogeme's
    ``TRAIN_CO * (GA == 0)``, a zero rule)."""
    dat = tmp_path / "swissmetro.dat"
    pd.read_csv(SWISSMETRO_FILE).to_csv(dat, sep="\t", index=False)
    recipe = tmp_path / "swissmetro.recipe.json"
    columns = {"fill_attributes": ["HE", "SEATS"], "alternative_attribute": True}
    recipe.write_text(json.dumps({"columns": columns | ({"zero_when": zero} if zero else {})}))
    code, out, err = command(capsys, "import-study", dat, "--title", "SM", "--recipe", recipe)
    assert code == 0, err
    assert "inferred: dropped 9 rows (choice situations): 9 with no or an unknown choice" in err
    if zero:
        assert "inferred: set to 0: CO for TRAIN,SM when GA=1 (1,521 rows)" in err
    mine = us.load_user_study(out.strip().splitlines()[-1])
    bundled = load_swissmetro(ga_cost=ga_cost)  # type: ignore[arg-type]
    assert mine.counts() == bundled.counts()
    # bundled: mode, time, cost, headway, airline_seats; imported: TT, CO, HE, SEATS, alternative
    names = {"TRAIN": "Train", "SM": "Swissmetro", "CAR": "Car", "no": "0.0", "yes": "1.0"}
    ours = Counter(
        {
            (r, t, (w[4], *w[:4]), (lo[4], *lo[:4])): n
            for (r, t, w, lo), n in comparisons(mine, names).items()
        }
    )
    assert ours == comparisons(bundled, names)
    assert ours.total() == 19_755
    car = (
        "alternative CAR: TT (CAR_TT), CO (CAR_CO), HE (CAR_HE, else 0), SEATS (CAR_SEATS, "
        "else 0); available when CAR_AV = 1"
    )
    assert car in preview_lines(mine)


def test_a_study_imported_with_left_out_attributes_loads_and_replays(
    capsys, home: Path, tmp_path: Path
) -> None:
    """--drop-attributes (an exactly collinear column) and a constant attribute: the saved
    study loads on every page and command, its recipe replays it, and a study saved before
    the table kept the left-out attributes loads too (it used to fail: "cannot leave out
    'TripMins': not an attribute")."""
    rng = np.random.default_rng(3)
    n = 30
    df = pd.DataFrame({"id": np.arange(1, n + 1)})
    for a in (1, 2, 3):
        df[f"Fare_{a}"] = rng.integers(90, 900, n)
        df[f"TripHours_{a}"] = rng.integers(1, 9, n)
        df[f"TripMins_{a}"] = df[f"TripHours_{a}"] * 60
        df[f"Meal_{a}"] = 1  # never differs: left out with a note
    df["choice"] = rng.integers(1, 4, n)
    f = tmp_path / "flights.csv"
    df.to_csv(f, index=False)
    code, out, err = command(
        capsys, "import-study", f, "--title", "F", "--drop-attributes", "TripMins"
    )
    assert code == 0, err
    key = out.strip().splitlines()[-1]
    study = us.load_user_study(key)
    assert study.schema.names == ["Fare", "TripHours"]
    folder = home / "studies" / key
    saved = json.loads((folder / "attributes.json").read_text())
    table = saved["attributes"]
    assert {a["name"] for a in table} == {"Fare", "TripHours", "TripMins", "Meal"}
    code, out, err = command(
        capsys, "import-study", f, "--title", "F again", "--recipe", folder / us.RECIPE_FILE
    )
    assert code == 0, err
    same_study(study, us.load_user_study(out.strip().splitlines()[-1]))
    # as saved before: the table without the left-out attributes
    saved["attributes"] = [a for a in table if a["name"] not in ("TripMins", "Meal")]
    (folder / "attributes.json").write_text(json.dumps(saved))
    same_study(study, us.load_user_study(key))
