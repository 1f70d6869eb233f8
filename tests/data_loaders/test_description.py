"""The study description: every bundled loader and the importer say what each
column of the data means (role, type, unit), the registry entries say how a study is
asked about and where its data lie, and the plan holds the roles: nothing in extras."""

from __future__ import annotations

from data_loaders.registry import list_studies, load_study, study_info
from pbo_core.data import COLUMN_ROLES, columns_table


def test_bundled_studies_describe_every_column() -> None:
    for key in ("train", "electricity", "swissmetro", "pmr-demo"):
        study = load_study(key)
        assert study.columns, key
        assert {c.role for c in study.columns} <= set(COLUMN_ROLES)
        for name in ("money_attribute", "time_attribute", "alternative_attribute"):
            assert name not in study.extras, (key, name)
    swiss = {c.column: c for c in load_study("swissmetro").columns}
    tt = swiss["TRAIN_TT"]
    assert (tt.role, tt.kind, tt.unit, tt.attribute, tt.alternative) == (
        "attribute", "numeric", "min", "time", "Train",
    )  # fmt: skip
    assert swiss["CAR_AV"].role == "availability" and swiss["ID"].role == "respondent"
    assert swiss["PURPOSE"].role == "respondent feature" and swiss["SURVEY"].role == "ignored"
    train = {c.column: c for c in load_study("train").columns}
    assert (train["price2"].unit, train["price2"].alternative) == ("guilders", "2")
    assert train["choiceid"].role == "task"
    table = columns_table(load_study("electricity").columns)
    assert list(table.columns)[:4] == ["column", "role", "type", "unit"]
    assert table.set_index("column").loc["alt", "role"] == "alternative"


def test_registry_entries_declare_wording_and_data_location() -> None:
    infos = {i.key: i for i in list_studies()}
    assert infos["train"].wording.question == "Which train trip would you choose?"
    assert infos["train"].location is None  # bundled
    sushi = study_info("sushi-a")
    assert sushi.wording.noun == "sushi" and sushi.location.env == "DTPBO_SUSHI_DIR"
    assert infos["electricity"].wording.noun == "offer"


def test_the_kind_is_a_typed_field() -> None:
    assert load_study("train").kind == "conjoint"
    assert load_study("pmr-demo").kind == "text"
