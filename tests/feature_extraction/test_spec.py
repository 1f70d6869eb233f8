"""Feature specs: the Table 9 spec, conversion to the core schema, prompts, validation."""

from __future__ import annotations

import json

import jsonschema
import pytest

from feature_extraction.spec import (
    PROMPT_VERSION,
    AnswerValidationError,
    FeatureSpec,
    Spec,
    SpecError,
    build_messages,
    default_spec_path,
    load_spec,
    parse_json_content,
    schema_hint,
    system_prompt,
    table9_spec,
    text_hash,
)

TABLE9 = {
    "symptom_trajectory": ("categorical", 7),
    "red_flag_syndrome": ("multi_hot", 12),
    "vascular_thrombotic_risk_context": ("multi_hot", 8),
    "infection_risk_context": ("multi_hot", 8),
    "medication_complication_context": ("multi_hot", 10),
    "frailty_or_fall_harm_risk": ("ordinal", 4),
    "diagnostic_uncertainty": ("ordinal", 3),
    "patient_requested_action": ("categorical", 7),
    "message_actionability": ("ordinal", 5),
    "symptom_distribution_or_spread": ("categorical", 5),
    "acuity_conflict": ("categorical", 4),
}


def valid_answer(spec: Spec) -> dict:
    """The first allowed value of every feature (multi-hot: the first value)."""
    out = {}
    for f in spec.features:
        if f.type == "multi_hot":
            out[f.name] = [f.values[0]]
        elif f.type == "numeric":
            out[f.name] = f.bounds[0] if f.bounds else 0.0
        else:
            out[f.name] = f.values[0]
    return out


def test_bundled_spec_is_table9() -> None:
    spec = table9_spec()
    assert default_spec_path().is_file()
    assert spec.names == list(TABLE9)
    for f in spec.features:
        typ, n = TABLE9[f.name]
        assert (f.type, len(f.values)) == (typ, n), f.name
        assert f.instruction
    assert spec["message_actionability"].values == (
        "none_or_fyi",
        "asynchronous_advice",
        "schedule_routine_visit_or_labs",
        "same_day_triage_or_call",
        "emergency_or_immediate_evaluation",
    )
    assert spec["frailty_or_fall_harm_risk"].values == ("none", "mild", "moderate", "high")


def test_to_schema_kinds_and_ordinal_codes() -> None:
    schema = table9_spec().to_schema()
    kinds = {f.name: f.kind for f in schema.features}
    assert kinds["message_actionability"] == "ordinal"
    assert kinds["red_flag_syndrome"] == "multi_hot"
    assert kinds["acuity_conflict"] == "categorical"
    # 4 categorical + 3 ordinal + 12 + 8 + 8 + 10 multi-hot columns
    assert schema.n_columns == 4 + 3 + 12 + 8 + 8 + 10
    import pandas as pd

    X = schema.encode(pd.DataFrame([valid_answer(table9_spec())]))
    j = schema.column_names.index("message_actionability")
    assert X[0, j] == 0.0
    row = valid_answer(table9_spec())
    row["message_actionability"] = "same_day_triage_or_call"
    assert schema.encode(pd.DataFrame([row]))[0, j] == 3.0


def test_numeric_feature_schema_and_bounds() -> None:
    f = FeatureSpec("heart_rate", "numeric", "Heart rate in beats per minute.", bounds=(20, 250))
    feat = f.to_feature()
    assert feat.kind == "numeric" and feat.bounds == (20.0, 250.0)
    assert f.validate_value(80) == (80.0, None)
    assert f.validate_value(300)[1] and "outside the bounds" in f.validate_value(300)[1]
    assert "expected a number" in f.validate_value(True)[1]
    assert "expected a number" in f.validate_value("80")[1]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_dump_and_load_roundtrip(tmp_path, suffix) -> None:
    spec = table9_spec()
    path = spec.dump(tmp_path / f"spec{suffix}")
    again = load_spec(path)
    assert again == spec
    assert again.spec_hash() == spec.spec_hash()


def test_spec_hash_changes_with_content_not_display() -> None:
    spec = table9_spec()
    sub = spec.subset(["message_actionability"])
    assert sub.spec_hash() != spec.spec_hash()
    from dataclasses import replace

    relabelled = replace(spec, name="renamed")
    assert relabelled.spec_hash() == spec.spec_hash()
    f = replace(spec["acuity_conflict"], instruction="Something else entirely.")
    changed = replace(spec, features=(*spec.features[:-1], f))
    assert changed.spec_hash() != spec.spec_hash()


def _entry(**kw) -> dict:
    base = {"name": "x_y", "type": "categorical", "instruction": "i", "values": ["a", "b"]}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (_entry(type="colour"), "type"),
        (_entry(name="BadName"), "snake"),
        (_entry(instruction=None), "instruction"),
        (_entry(values=["a", "a"]), "unique"),
        (_entry(values=["a"]), "values"),
        (_entry(type="ordinal", values={1: "a", 2: "b"}), "0..1"),
        (_entry(type="numeric", values=["a"]), "bounds"),
        (_entry(colour=1), "unknown keys"),
    ],
)
def test_malformed_entries_are_rejected(entry, message) -> None:
    with pytest.raises(SpecError, match=message):
        Spec.from_dict({"features": [entry]}, source="test.yaml")


def test_spec_file_errors_name_the_file(tmp_path) -> None:
    p = tmp_path / "broken.yaml"
    p.write_text("features: [\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"broken\.yaml"):
        load_spec(p)
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "missing.json")
    dup = {"features": [FeatureSpec("a_b", "numeric", "i").to_dict()] * 2}
    (tmp_path / "dup.json").write_text(json.dumps(dup))
    with pytest.raises(SpecError, match="duplicate"):
        load_spec(tmp_path / "dup.json")


def test_ordinal_list_values_mean_position_codes() -> None:
    spec = Spec.from_dict(
        {
            "features": [
                {"name": "sev", "type": "ordinal", "instruction": "i", "values": ["lo", "hi"]}
            ]
        }
    )
    assert spec["sev"].values == ("lo", "hi")
    assert spec.to_schema()["sev"].levels == ("lo", "hi")


def test_validate_answer_accepts_valid_and_orders_multi_hot() -> None:
    spec = table9_spec()
    ans = valid_answer(spec)
    ans["red_flag_syndrome"] = ["rapidly_spreading_rash", "new_neurologic_deficit"]
    out = spec.validate_answer(ans)
    assert out["red_flag_syndrome"] == ["new_neurologic_deficit", "rapidly_spreading_rash"]
    assert list(out) == spec.names


def test_validate_answer_lists_every_problem() -> None:
    spec = table9_spec()
    ans = valid_answer(spec)
    del ans["acuity_conflict"]
    ans["symptom_trajectory"] = "getting_worse"  # unknown value
    ans["message_actionability"] = 3  # a code instead of a label: wrong type, not coerced
    ans["red_flag_syndrome"] = "new_neurologic_deficit"  # a string instead of a list
    ans["extra_field"] = 1
    with pytest.raises(AnswerValidationError) as ei:
        spec.validate_answer(ans)
    errs = ei.value.errors
    text = " | ".join(errs)
    assert "missing field(s) ['acuity_conflict']" in text
    assert "unknown field(s) ['extra_field']" in text
    assert "symptom_trajectory: unknown value 'getting_worse'" in text
    assert "message_actionability: expected one string" in text
    assert "red_flag_syndrome: expected a list" in text
    assert len(errs) == 5


def test_validate_answer_rejects_duplicates_and_unknown_multi_hot_values() -> None:
    spec = table9_spec().subset(["red_flag_syndrome"])
    with pytest.raises(AnswerValidationError, match="repeated"):
        spec.validate_answer({"red_flag_syndrome": ["syncope_or_near_syncope"] * 2})
    with pytest.raises(AnswerValidationError, match="unknown value"):
        spec.validate_answer({"red_flag_syndrome": ["headache"]})
    with pytest.raises(AnswerValidationError, match="JSON object"):
        spec.validate_answer(["red_flag_syndrome"])


def test_parse_json_content() -> None:
    assert parse_json_content('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_content(' {"a": [1, 2]} ') == {"a": [1, 2]}
    with pytest.raises(AnswerValidationError, match="not valid JSON"):
        parse_json_content("Sure! here you go: {a: 1}")
    with pytest.raises(AnswerValidationError, match="empty"):
        parse_json_content("   ")
    with pytest.raises(AnswerValidationError, match="empty"):
        parse_json_content(None)


def test_answer_json_schema_agrees_with_validation() -> None:
    spec = table9_spec()
    schema = spec.answer_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    ans = valid_answer(spec)
    jsonschema.validate(ans, schema)
    spec.validate_answer(ans)
    bad = dict(ans, acuity_conflict="sometimes")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    with pytest.raises(AnswerValidationError):
        spec.validate_answer(bad)
    assert schema["required"] == spec.names
    assert schema["additionalProperties"] is False


def test_prompts_mention_every_feature_and_value() -> None:
    spec = table9_spec()
    sp = system_prompt(spec)
    for f in spec.features:
        assert f.name in sp
        for v in f.values:
            assert v in sp
    assert "do NOT decide" in sp
    msgs = build_messages(spec, "ITEM-x I have a cough.")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "I have a cough." in msgs[1]["content"]
    hint = schema_hint(spec.answer_json_schema())
    assert json.loads(hint.split("schema:\n", 1)[1]) == spec.answer_json_schema()
    assert PROMPT_VERSION and isinstance(PROMPT_VERSION, str)


def test_text_hash_is_stable() -> None:
    assert text_hash("abc") == text_hash("abc") != text_hash("abd")
    assert len(text_hash("abc")) == 16
