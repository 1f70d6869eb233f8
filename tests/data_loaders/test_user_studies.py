"""Own studies in the per-user data folder: inference, every problem, all-or-nothing saves,
the registry and the CLI's --data path."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import study_store
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
    # a missing column is named with the header line and the file's columns are listed
    _, problems = us.check_upload(csv_bytes(df), "m.csv", attrs, us.ColumnMap(task="round"))
    assert [(p.column, p.line) for p in problems] == [("round", "1 (header)")]
    assert "the file has columns: 'respondent', 'task', 'profile', 'chosen'" in problems[0].message
    # without the (default) task column, six chosen rows per respondent are ambiguous
    _, problems = us.check_upload(
        csv_bytes(long_frame().drop(columns="task")), "m.csv", attrs, us.ColumnMap()
    )
    (p,) = problems
    first = int(np.flatnonzero(long_frame()["chosen"].to_numpy() == 1)[0]) + 2  # header = 1
    assert p.line == str(first) and "6 chosen rows" in p.message and "task column" in p.message


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
        "attributes.json", "choices.csv", "recipe.json", "respondents.csv", "study.json",
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
    from data_loaders.plans import edit_plan, plan_path, save_plan

    save_plan(meta.key, edit_plan(study, {"seed": "5"}))  # an edited plan goes with it
    us.remove_user_study(meta.key)
    assert not meta.folder.exists() and not plan_path(meta.key).exists()
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


def test_features_labels_money_and_alternative_attribute_are_stored(home: Path) -> None:
    df = long_frame()
    df["age"] = df["respondent"] * 10  # constant within a respondent
    cols = us.ColumnMap(
        "auto",
        respondent_features=(("age", "Age in years"),),
        alternative_attribute=True,
        money_attribute=None,  # inferred: the numeric attribute named price
    )
    meta, problems = us.save_study("Feat", csv_bytes(df), "f.csv", None, cols)
    assert problems == [] and meta is not None
    doc = json.loads((meta.folder / "study.json").read_text())
    assert doc["columns"]["money_attribute"] == "price"
    assert doc["columns"]["respondent_features"] == [["age", "Age in years"]]
    assert doc["columns"]["format"] == "long" and doc["columns"]["task"] == "task"
    assert any("money attribute" in n for n in doc["notes"])
    # the attribute table holds the file's attributes; 'alternative' comes from the flag
    table = json.loads((meta.folder / "attributes.json").read_text())["attributes"]
    assert [a["name"] for a in table] == ["price", "speed", "wifi"]
    study = load_study(meta.key)
    assert study.plan.money.attribute == "price"  # saved resolved: "chosen at import" now
    checked, _ = us.check_upload(csv_bytes(df), "f.csv", None, cols)
    assert checked is not None and "proposed at import by its name" in checked.plan.money.how
    assert study.plan.alternative == "alternative"  # the flag's constants are in the plan
    assert study.user_schema["age"].label == "Age in years"
    assert study.schema["alternative"].levels == ("1", "2")
    assert study.users.loc[3, "age"] == 30
    # '' says none; a non-numeric money attribute is a problem; nothing more is saved
    meta2, _ = us.save_study("F2", csv_bytes(df), "f.csv", None, replace_money(cols, ""))
    assert meta2 is not None and load_study(meta2.key).plan.money is None
    _, problems = us.check_upload(csv_bytes(df), "f.csv", None, replace_money(cols, "speed"))
    assert "not a numeric attribute (numeric attributes: price)" in problems[0].message
    # a feature that changes within a respondent is named with its line
    df.loc[3, "age"] = 99
    meta3, problems = us.save_study("F3", csv_bytes(df), "f.csv", None, cols)
    assert meta3 is None and "line" in problems[0].message and "age" in problems[0].message
    assert len(us.list_user_studies()) == 2


def replace_money(cols: us.ColumnMap, money: str) -> us.ColumnMap:
    from dataclasses import replace

    return replace(cols, money_attribute=money)


def test_long_without_respondent_column_and_cli_flags(home: Path, tmp_path: Path) -> None:
    import argparse

    df = long_frame().drop(columns="respondent")
    df["task"] = (np.arange(len(df)) // 2) + 1  # every task once
    study, problems = us.check_upload(csv_bytes(df), "p.csv", None, us.ColumnMap())
    assert problems == [] and study is not None
    n = df["task"].nunique() - study.extras["n_identical_skipped"]  # tasks that compare
    assert study.counts()["respondents"] == study.data.n_pairs == n
    # the shared CLI flags build the same map; the cached --data loader agrees
    p = argparse.ArgumentParser()
    us.add_column_args(p)
    flags = ["--respondent-col", "", "--opt-out", "none,other", "--alternative-attribute"]
    args = p.parse_args([*flags, "--respondent-features", "a=Alpha,b"])
    cols = us.column_map(args)
    assert cols.format == "auto" and cols.respondent == "" and cols.opt_out == ("none", "other")
    assert cols.respondent_features == (("a", "Alpha"), ("b", "")) and cols.alternative_attribute
    f = tmp_path / "p.csv"
    f.write_bytes(csv_bytes(df))
    cli = load_study_file(str(f), None, us.column_map(p.parse_args([])).to_json())
    np.testing.assert_array_equal(cli.data.pairs, study.data.pairs)


def test_wide_opt_out_values(home: Path) -> None:
    from tests.fixtures.shapes import SHAPES

    df = pd.read_csv(SHAPES["panel-wide"].file)
    df.loc[[0, 5, 9], "choice"] = 0  # "none of these"
    content = csv_bytes(df)
    _, problems = us.check_upload(content, "b.csv", None, us.ColumnMap("auto"))
    (p,) = problems
    # 0 next to choices numbered 1..3: "no choice", or an alternative without columns?
    assert "holds the numbers 0 to 3 for the 3 alternatives 1, 2, 3" in p.message
    assert "--no-choice 0" in p.message and "--opt-out 0" in p.message
    cols = us.ColumnMap("auto", opt_out=("0",), alternative_attribute=True)
    study, problems = us.check_upload(content, "b.csv", None, cols)
    assert problems == [] and study is not None
    assert study.data.n_pairs == (len(df) - 3) * 2  # opt-out tasks give no comparisons
    assert study.extras["respondent_summary"]["n_opt_out"].sum() == 3
    assert study.schema["alternative"].levels == ("1", "2", "3")


def test_a_study_belongs_to_its_owner_until_published(home: Path) -> None:
    df = long_frame()
    a, problems = us.save_study("A's", csv_bytes(df), "a.csv", None, us.ColumnMap(), owner="a" * 32)
    assert problems == [] and a is not None
    assert a.owner == "a" * 32 and not a.public
    saved = us.user_study(a.key)
    assert saved == a  # study.json keeps who sees it
    assert saved.visible_to("a" * 32) and not saved.visible_to("b" * 32)
    assert not saved.visible_to("")  # no visitor id: nothing private
    assert saved.removable_by("a" * 32) and not saved.removable_by("b" * 32)
    cli_import, _ = us.save_study("Operator's", csv_bytes(df), "o.csv", None, us.ColumnMap())
    assert cli_import.owner == "" and not cli_import.visible_to("a" * 32)
    published = us.set_public(a.key)
    assert published.public and published.visible_to("b" * 32)
    assert not published.removable_by("a" * 32)  # the operator withdraws it
    assert us.user_study(a.key).public
    assert not us.set_public(a.key, False).public
    with pytest.raises(KeyError):
        us.set_public("my-absent")
    assert us.user_study("../x") is None and us.user_study("my-absent") is None


def test_an_old_study_json_has_no_owner(home: Path) -> None:
    meta, _ = us.save_study("Old", csv_bytes(long_frame()), "o.csv", None, us.ColumnMap())
    path = meta.folder / "study.json"
    d = json.loads(path.read_text())
    del d["owner"], d["public"]
    path.write_text(json.dumps(d))
    old = us.user_study(meta.key)
    assert old is not None and old.owner == "" and not old.public
    assert [m.key for m in us.list_user_studies()] == [meta.key]


def test_a_visitor_holds_a_bounded_number_of_studies(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(us.MAX_STUDIES_ENV, "2")
    content = csv_bytes(long_frame())
    me = "c" * 32
    for k in range(2):
        meta, problems = us.save_study(
            f"S{k}", content, "s.csv", None, us.ColumnMap(), owner=me, limit_owner=True
        )
        assert meta is not None, problems
    before = sorted(p.name for p in (home / "studies").iterdir())
    meta, problems = us.save_study(
        "S3", content, "s.csv", None, us.ColumnMap(), owner=me, limit_owner=True
    )
    assert meta is None and "the most one visitor may keep" in problems[0].message
    assert sorted(p.name for p in (home / "studies").iterdir()) == before  # nothing saved
    other, _ = us.save_study(
        "T", content, "t.csv", None, us.ColumnMap(), owner="d" * 32, limit_owner=True
    )
    assert other is not None  # another visitor is not held back
    # all visitors' studies together: a byte budget (the operator's do not count)
    monkeypatch.setenv(us.MAX_OWNED_BYTES_ENV, str(3 * len(content)))
    meta, problems = us.save_study(
        "U", content, "u.csv", None, us.ColumnMap(), owner="e" * 32, limit_owner=True
    )
    assert meta is None and "space for visitors' studies is full" in problems[0].message
    assert us.owner_refusal("") is None


def _import(owner: str, title: str = "S", address: str = "", public: bool = False):
    content = csv_bytes(long_frame())
    meta, problems = us.save_study(
        title,
        content,
        "s.csv",
        None,
        us.ColumnMap(),
        owner=owner,
        public=public,
        limit_owner=bool(owner),
        address=address,
    )
    return meta, problems


def test_one_address_cannot_fill_the_space_with_new_visitors(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every new browser (a new cookie) from one address is a new visitor: the address
    holds at most its own count and bytes, so a crowd of them leaves room for others."""
    monkeypatch.setenv(us.MAX_ADDRESS_STUDIES_ENV, "3")
    crowd = "1" * 32
    for k in range(3):
        meta, problems = _import(f"{k:x}" * 32, address=crowd)
        assert meta is not None and meta.address == crowd, problems
    meta, problems = _import("f" * 32, address=crowd)  # a fourth new cookie, same address
    assert meta is None
    assert "your network address already" in problems[0].message
    assert us.MAX_ADDRESS_STUDIES_ENV in problems[0].message
    other, problems = _import("e" * 32, address="2" * 32)  # another address may import
    assert other is not None, problems
    # the bytes of one address: a quarter of the visitors' space unless set
    size = study_store._folder_bytes(other.folder)
    monkeypatch.delenv(us.MAX_ADDRESS_STUDIES_ENV)
    monkeypatch.setenv(us.MAX_OWNED_BYTES_ENV, str(40 * size))
    assert us.max_address_bytes() == 10 * size
    # three studies fit; a fourth upload of any size does not (whatever study.json holds)
    monkeypatch.setenv(us.MAX_ADDRESS_BYTES_ENV, str(3 * size + 1))
    meta, problems = _import("d" * 32, address=crowd)
    assert meta is None and "already use" in problems[0].message
    assert us.owner_refusal("d" * 32, 0, "3" * 32) is None


def test_the_sentence_when_the_space_is_full(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = _import("a" * 32)
    monkeypatch.setenv(us.MAX_OWNED_BYTES_ENV, str(study_store._folder_bytes(first.folder) - 1))
    refused = us.owner_refusal("b" * 32)
    assert refused is not None
    assert "space for visitors' studies is full" in refused
    assert "no visitor can import until studies are removed or expire" in refused
    assert "after 7 days without use" in refused and us.MAX_OWNED_BYTES_ENV in refused


def test_visitors_studies_expire_after_the_idle_time(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, _ = _import("a" * 32)
    published, _ = _import("b" * 32, public=True)
    operators, _ = _import("")
    day = 86400.0
    now = us.last_used(mine)
    assert us.expires_at(mine) == pytest.approx(now + 7 * day)
    assert us.expires_at(published) is None and us.expires_at(operators) is None
    assert us.expire_visitor_studies(now + 6 * day) == []
    us.touch_study(mine.key, now + 6 * day)  # its owner used it: another 7 days
    assert us.expires_at(mine) == pytest.approx(now + 13 * day)
    assert us.expire_visitor_studies(now + 12 * day) == []
    assert us.expire_visitor_studies(now + 13.5 * day) == [mine.key]
    assert not mine.folder.exists()
    assert {m.key for m in us.list_user_studies()} == {published.key, operators.key}
    monkeypatch.setenv(us.IDLE_DAYS_ENV, "0.5")
    again, _ = _import("a" * 32)
    assert us.expires_at(again) == pytest.approx(us.last_used(again) + 0.5 * day)
    monkeypatch.setenv(us.IDLE_DAYS_ENV, "0")  # kept until removed
    assert us.expires_at(again) is None
    assert us.expire_visitor_studies(now + 1000 * day) == []
    us.touch_study("../etc")  # not a key: nothing
    # the staging folder of an import stopped mid-save goes an hour later
    stale = us.studies_dir() / ".import-stopped"
    stale.mkdir()
    assert us.expire_visitor_studies(time.time() + 1800) == [] and stale.exists()
    us.expire_visitor_studies(time.time() + 3700)
    assert not stale.exists()


def test_a_visitors_key_says_nothing_about_other_visitors_titles(home: Path) -> None:
    a, _ = _import("a" * 32, "mem0")
    b, _ = _import("b" * 32, "mem0")
    c, _ = _import("a" * 32, "mem0")
    keys = {a.key, b.key, c.key}
    assert len(keys) == 3
    for key in keys:  # my-mem0-<8 random letters and digits>, never my-mem0-2
        assert key.startswith("my-mem0-") and len(key) == len("my-mem0-") + 8, key
        assert not key.endswith(("-2", "-3"))
    operator, _ = _import("", "mem0")
    assert operator.key == "my-mem0"  # the command line's keys stay readable
