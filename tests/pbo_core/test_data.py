import numpy as np
import pandas as pd
import pytest

from pbo_core.data import DataValidationError, Feature, PreferenceData, Schema, Study
from pbo_core.explain import labels


@pytest.fixture
def schema() -> Schema:
    return Schema(
        (
            Feature("price", "numeric", bounds=(0, 40), unit="BRB", label="cost"),
            Feature("sensitivity", "ordinal", levels=("60%", "70%", "80%", "90%")),
            Feature("party", "categorical", levels=("Democrat", "Republican", "Independent")),
            Feature("phone", "binary", levels=("postal letter", "telephone call")),
            Feature("flags", "multi_hot", levels=("chest_pain", "fever", "syncope")),
        )
    )


def items_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "price": [0, 20, 40],
            "sensitivity": ["60%", "90%", 2],
            "party": ["Democrat", "Independent", "Republican"],
            "phone": ["telephone call", 0, True],
            "flags": [["fever"], "chest_pain;syncope", None],
        }
    )


def test_encode_mixed_features(schema: Schema) -> None:
    X = schema.encode(items_frame())
    assert schema.column_names == [
        "price",
        "sensitivity",
        "party",
        "phone",
        "flags=chest_pain",
        "flags=fever",
        "flags=syncope",
    ]
    expected = np.array(
        [
            [0, 0, 0, 1, 0, 1, 0],
            [20, 3, 2, 0, 1, 0, 1],
            [40, 2, 1, 1, 0, 0, 0],
        ],
        dtype=float,
    )
    np.testing.assert_array_equal(X, expected)
    assert schema.is_categorical.tolist() == [False, False, True, False, False, False, False]
    assert schema.is_integer.tolist() == [False, True, True, True, True, True, True]
    back = schema.decode(X)
    assert back["sensitivity"].tolist() == ["60%", "90%", "80%"]
    assert back["flags"].tolist() == [["fever"], ["chest_pain", "syncope"], []]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("price", "cheap", "row 1, field 'price': 'cheap' is not a number"),
        ("sensitivity", "95%", "row 1, field 'sensitivity': '95%' is not one of the levels"),
        ("party", 7, "row 1, field 'party': 7 is not one of the levels"),
        ("flags", "fever;rash", "row 1, field 'flags': 'rash' is not one of the values"),
        ("price", float("inf"), "is not a finite number"),
    ],
)
def test_encode_names_bad_row_and_field(schema, column, value, message) -> None:
    df = items_frame()
    df[column] = df[column].astype(object)
    df.loc[1, column] = value
    with pytest.raises(DataValidationError, match=message.replace("(", r"\(")):
        schema.encode(df, source="items.csv")


def test_missing_field_is_named(schema) -> None:
    with pytest.raises(DataValidationError, match=r"missing field\(s\) \['party'\]"):
        schema.encode(items_frame().drop(columns="party"))


def test_rules_are_readable(schema) -> None:
    assert labels.describe_threshold(schema, 0, 12.5, right=True) == "cost >= 12.5 BRB"
    assert labels.describe_threshold(schema, 0, 12.5, right=False) == "cost < 12.5 BRB"
    # ordinal rules name both ends of their range, so the scale's direction shows
    assert labels.describe_threshold(schema, 1, 1.5, right=True) == "sensitivity: 80% .. 90%"
    assert labels.describe_threshold(schema, 1, 1.5, right=False) == "sensitivity: 60% .. 70%"
    assert labels.describe_threshold(schema, 1, 2.5, right=True) == "sensitivity = 90%"
    assert labels.describe_threshold(schema, 3, 0.5, right=True) == "phone = telephone call"
    assert labels.describe_categories(schema, 2, [0]) == "party = Democrat"
    assert labels.describe_categories(schema, 2, [2, 0]) == "party in {Democrat, Independent}"
    assert labels.describe_threshold(schema, 4, 0.5, right=True) == "flags includes chest pain"


def test_schema_roundtrip_and_without(schema) -> None:
    again = Schema.from_dict(schema.to_dict())
    assert again == schema
    smaller = schema.without(["flags", "party"])
    assert smaller.names == ["price", "sensitivity", "phone"]
    assert schema.column_indices(["flags"]).tolist() == [4, 5, 6]
    with pytest.raises(KeyError, match="nope"):
        schema.without(["nope"])


def test_feature_validation() -> None:
    with pytest.raises(DataValidationError, match="kind 'text'"):
        Feature("a", "text")  # type: ignore[arg-type]
    with pytest.raises(DataValidationError, match="needs levels"):
        Feature("a", "categorical")
    with pytest.raises(DataValidationError, match="invalid bounds"):
        Feature("a", "numeric", bounds=(2, 1))
    with pytest.raises(DataValidationError, match="duplicate feature names"):
        Schema((Feature("a", "binary"), Feature("a", "binary")))


def test_preference_data_validation_names_the_row() -> None:
    X = np.zeros((3, 2))
    with pytest.raises(DataValidationError, match="row 1: loser index 3 out of range"):
        PreferenceData(X, np.array([[0, 1], [2, 3]]), source="pairs.csv")
    with pytest.raises(DataValidationError, match="row 0: item 2 is compared with itself"):
        PreferenceData(X, np.array([[2, 2]]))
    with pytest.raises(DataValidationError, match=r"row 1, column 0: value nan is not finite"):
        PreferenceData(np.array([[0.0, 1.0], [np.nan, 0.0]]), np.zeros((0, 2)))
    with pytest.raises(DataValidationError, match="not integer indices"):
        PreferenceData(X, np.array([[0.5, 1.0]]))
    with pytest.raises(DataValidationError, match="2 respondent ids for 1 pairs"):
        PreferenceData(X, np.array([[0, 1]]), respondent=np.array([1, 2]))


def test_for_respondent_keeps_only_their_items(schema) -> None:
    items = items_frame()
    data = PreferenceData.from_frame(
        items, [[0, 2], [1, 2], [2, 0]], schema, respondent=np.array(["a", "b", "a"])
    )
    a = data.for_respondent("a")
    assert a.n_pairs == 2 and a.n_items == 2
    np.testing.assert_array_equal(a.X[a.pairs[:, 0]], data.X[[0, 2]])
    assert a.ids().tolist() == [0, 2]
    assert data.respondents().tolist() == ["a", "b"]
    study = Study("demo", "Demo", schema, data, license="MIT")
    assert study.counts() == {"respondents": 2, "items": 3, "comparisons": 3}
    assert list(labels.attribute_table(study.schema)["feature"]) == schema.names
    with pytest.raises(KeyError, match="no pairs for respondent 'z'"):
        data.for_respondent("z")


def test_infer_schema() -> None:
    df = pd.DataFrame({"x": [0.5, 2.0], "flag": [0, 1], "colour": ["red", "blue"]})
    s = Schema.infer(df)
    assert [f.kind for f in s.features] == ["numeric", "binary", "categorical"]
    assert s["x"].bounds == (0.5, 2.0)
    assert s["colour"].levels == ("blue", "red")


def test_from_validated_arrays_equals_validated_constructor():
    import dataclasses

    rng = np.random.default_rng(0)
    X = rng.random((6, 3))
    pairs = np.array([[0, 1], [2, 3], [5, 4]], dtype=np.int64)
    a = PreferenceData(X, pairs)
    b = PreferenceData.from_validated_arrays(X, pairs)
    for f in dataclasses.fields(PreferenceData):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        if isinstance(va, np.ndarray):
            np.testing.assert_array_equal(va, vb)
        else:
            assert va == vb
