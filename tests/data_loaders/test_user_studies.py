"""Own studies in the per-user data folder: inference, every problem, all-or-nothing saves,
the registry and the CLI's --data path."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import user_studies as us
from data_loaders.cached import load_study_file
from data_loaders.registry import list_studies, load_study


def long_frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(1, 7):
        for t in range(1, 7):
            best = int(rng.integers(1, 3))
            for p in (1, 2):
                rows.append(
                    dict(
                        respondent=r,
                        task=t,
                        profile=p,
                        chosen=int(p == best),
                        price=int(rng.choice([10, 20, 30])),
                        speed=str(rng.choice(["slow", "medium", "fast"])),
                        wifi=str(rng.choice(["no", "yes"])),
                    )
                )
    return pd.DataFrame(rows)


def csv_bytes(df: pd.DataFrame) -> bytes:
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue().encode()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def edited_attributes(df: pd.DataFrame) -> list:
    rows = us.attribute_rows(us.infer_attributes(df, us.ColumnMap()))
    assert list(rows["kind"]) == ["numeric", "categorical", "binary"]
    rows.loc[rows["name"] == "speed", ["kind", "levels (in order)"]] = [
        "ordinal",
        "slow | medium | fast",
    ]
    rows.loc[rows["name"] == "price", ["unit", "direction"]] = ["EUR", "lower is better"]
    attrs, problems = us.attributes_from_rows(rows)
    assert problems == []
    return attrs


def test_every_bad_cell_is_reported_and_nothing_is_saved(home: Path) -> None:
    df = long_frame().astype({"price": object})
    attrs = edited_attributes(long_frame())
    df.loc[0, "price"] = "cheap"  # line 2
    df.loc[[5, 7], "speed"] = "warp"  # lines 7 and 9
    df.loc[11, "wifi"] = np.nan  # line 13
    meta, problems = us.save_study("x", csv_bytes(df), "mine.csv", attrs, us.ColumnMap())
    assert meta is None
    got = {(p.column, p.line) for p in problems}
    assert got == {("price", "2"), ("speed", "7, 9"), ("wifi", "13")}
    assert all(p.file == "mine.csv" for p in problems)
    assert not (home / "studies").exists() or not any((home / "studies").iterdir())
    # a missing column is named with the header line
    _, problems = us.check_upload(
        csv_bytes(long_frame().drop(columns="task")), "m.csv", attrs, us.ColumnMap()
    )
    assert [(p.column, p.line) for p in problems] == [("task", "1 (header)")]


def test_saved_study_is_listed_loaded_like_the_cli_and_removed(home: Path) -> None:
    df = long_frame()
    attrs = edited_attributes(df)
    users = pd.DataFrame({"respondent": range(1, 7), "age": [20, 30, 40, 50, 60, 70]})
    meta, problems = us.save_study(
        "My offers", csv_bytes(df), "../../etc/offers.csv", attrs, us.ColumnMap(),
        (csv_bytes(users), "people.csv"),
    )  # fmt: skip
    assert problems == [] and meta is not None
    assert meta.key == "my-my-offers" and meta.folder.parent == home / "studies"
    assert sorted(p.name for p in meta.folder.iterdir()) == [
        "attributes.json", "choices.csv", "respondents.csv", "study.json",
    ]  # fmt: skip
    doc = json.loads((meta.folder / "attributes.json").read_text())
    price = next(a for a in doc["attributes"] if a["name"] == "price")
    assert price["unit"] == "EUR" and price["description"] == "(lower is better)"
    assert meta.key in [s.key for s in list_studies()]
    study = load_study(meta.key)
    assert study.title == "My offers" and list(study.users.columns) == ["age"]
    assert study.schema["speed"].levels == ("slow", "medium", "fast")
    # the CLI's --data reads the same files into the same comparisons
    cli = load_study_file(
        str(meta.folder / "choices.csv"),
        str(meta.folder / "attributes.json"),
        us.ColumnMap().to_json(),
    )
    np.testing.assert_array_equal(cli.data.pairs, study.data.pairs)
    np.testing.assert_array_equal(cli.data.X, study.data.X)
    # a second import of the same title gets its own key; removal deletes the folder
    again, _ = us.save_study("My offers", csv_bytes(df), "o.csv", attrs, us.ColumnMap())
    assert again is not None and again.key == "my-my-offers-2"
    us.remove_user_study(meta.key)
    assert not meta.folder.exists()
    assert [u.key for u in us.list_user_studies()] == [again.key]
    with pytest.raises(KeyError):
        us.remove_user_study("../train")


def test_wide_layout_and_respondent_features_problems() -> None:
    long = long_frame()
    wide = long.pivot_table(
        index=["respondent", "task"], columns="profile", values=["price", "speed", "wifi"],
        aggfunc="first",
    )  # fmt: skip
    wide.columns = [f"{a}{b}" for a, b in wide.columns]
    wide = wide.reset_index()
    chosen = long[long["chosen"] == 1].set_index(["respondent", "task"])["profile"]
    wide["choice"] = chosen.loc[list(zip(wide["respondent"], wide["task"], strict=True))].values
    cols = us.ColumnMap(format="wide")
    attrs = us.infer_attributes(wide, cols)
    assert [a.name for a in attrs] == ["price", "speed", "wifi"]
    study, problems = us.check_upload(csv_bytes(wide), "w.csv", attrs, cols)
    same, _ = us.check_upload(csv_bytes(long), "l.csv", attrs, us.ColumnMap())
    assert problems == [] and study is not None and same is not None
    assert study.data.n_pairs == same.data.n_pairs > 30  # the long layout's comparisons
    users = pd.DataFrame({"respondent": [1, 2, 2], "age": [1, 2, 3]})
    _, problems = us.check_upload(
        csv_bytes(wide), "w.csv", attrs, cols, (csv_bytes(users), "u.csv")
    )
    assert problems and problems[0].line == "4" and problems[0].column == "respondent"


def test_size_limit_is_stated_and_enforced() -> None:
    big = b"x" * (us.MAX_UPLOAD_MB * 2**20 + 1)
    _, problems = us.check_upload(big, "big.csv", [], us.ColumnMap())
    assert f"{us.MAX_UPLOAD_MB} MB" in problems[0].message
