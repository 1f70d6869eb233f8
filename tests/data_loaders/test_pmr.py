"""PMR loaders: the bundled demo inbox (ground truth, split, dominance of the top feature),
PMR-Synth-Inboxes on generated fixtures in the published parquet format and packed-text
parsing (scoring against the truth: tests/feature_extraction/test_evaluate.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders._common import DataNotAvailableError
from data_loaders.pmr import (
    DEMO_DIR,
    DEMO_URGENCY_WEIGHTS,
    PMR_DIR_ENV,
    demo_true_urgency,
    inbox_urgency,
    load_pmr_demo,
    load_pmr_synth,
    pack_text,
    parse_packed_text,
    pmr_synth_status,
    pmr_texts,
)
from feature_extraction.extract import save_table
from feature_extraction.spec import table9_spec
from pbo_core.data import TRUE_UTILITY, DataValidationError, PreferenceData
from pbo_core.metrics import pairwise_accuracy

SPEC = table9_spec()


@pytest.fixture(scope="module")
def demo():
    return load_pmr_demo()


# ---------------------------------------------------------------------- demo inbox
def test_demo_study_shape(demo) -> None:
    assert demo.key == "pmr-demo"
    assert demo.counts() == {"respondents": 1, "items": 60, "comparisons": 870}
    assert demo.schema == SPEC.to_schema()
    items = demo.data.items
    for col in ("message_id", "patient_id", "inbox", "text", "message", "ehr", *SPEC.names):
        assert col in items.columns
    assert items["patient_id"].nunique() == 20
    assert (items.groupby("patient_id").size() == 3).all()
    assert items.groupby("inbox")["patient_id"].nunique().to_dict() == {"A": 10, "B": 10}
    assert list(demo.data.item_ids) == list(items["message_id"])
    assert "Patient Message" in items.loc[0, "text"] and items.loc[0, "message"]
    texts = pmr_texts(demo)
    assert list(texts.columns) == ["message_id", "text"] and len(texts) == 60


def test_demo_split_is_by_inbox(demo) -> None:
    split = demo.extras["split"]
    assert len(split) == demo.data.n_pairs
    assert (split == "train").sum() == 435 and (split == "test").sum() == 435
    inbox = demo.data.items["inbox"].to_numpy()
    tr, te = demo.extras["train"], demo.extras["test"]
    assert isinstance(tr, PreferenceData) and isinstance(te, PreferenceData)
    assert set(inbox[tr.pairs.ravel()]) == {"A"} and set(inbox[te.pairs.ravel()]) == {"B"}
    # the two inboxes share no patient and no scenario (test = unseen messages)
    msgs = pd.read_csv(DEMO_DIR / "messages.csv")
    by_inbox = msgs.groupby("inbox")["scenario"].apply(set)
    assert not (by_inbox["A"] & by_inbox["B"])


def test_inbox_urgency_gives_each_inbox_its_messages_and_true_urgency(demo) -> None:
    items = demo.data.items
    truth = demo.extras["truth"].set_index("message_id")["true_urgency"]
    for inbox in ("A", "B"):
        rows, urgency = inbox_urgency(demo, inbox)
        assert len(rows) == len(urgency) == 30
        assert (items["inbox"].to_numpy()[rows] == inbox).all()
        ids = items["message_id"].to_numpy()[rows]
        np.testing.assert_array_equal(urgency, truth.loc[ids].to_numpy(float))
    rows, urgency = inbox_urgency(demo, "C")
    assert len(rows) == len(urgency) == 0


def test_demo_truth_is_spec_valid_and_labels_follow_the_model(demo) -> None:
    truth = demo.extras["truth"]
    assert len(truth) == 60
    for row in truth[SPEC.names].to_dict(orient="records"):
        SPEC.validate_answer(row)
    # every actionability level occurs in both inboxes
    t = truth.merge(demo.data.items[["message_id", "inbox"]], on="message_id")
    counts = t.groupby("inbox")["message_actionability"].nunique()
    assert (counts == 5).all()
    u = demo_true_urgency(truth)
    assert np.allclose(u, truth["true_urgency"], atol=1e-3)
    # live sessions score against the true urgency the loader supplies per message id
    true_u = demo.extras[TRUE_UTILITY]
    assert [true_u[m] for m in truth["message_id"].astype(str)] == list(truth["true_urgency"])
    uw = u[demo.data.pairs[:, 0]]
    ul = u[demo.data.pairs[:, 1]]
    agree = np.mean(uw > ul)
    assert 0.9 < agree < 1.0  # seeded noise flips some close pairs
    pairs = pd.read_csv(DEMO_DIR / "pairs.csv")
    assert pairs["noisy"].sum() == int(np.sum(uw < ul))
    assert DEMO_URGENCY_WEIGHTS["message_actionability"] > 2 * max(
        v for k, v in DEMO_URGENCY_WEIGHTS.items() if isinstance(v, float) and k != "noise_sd"
        and k != "message_actionability"
    )  # fmt: skip


def test_demo_files_are_reproducible() -> None:
    path = DEMO_DIR / "generate.py"
    spec = importlib.util.spec_from_file_location("pmr_demo_generate", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
        assert mod.main(["--check"]) == 0
    finally:
        del sys.modules[spec.name]


def test_generator_writes_the_committed_files_byte_for_byte(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, str(DEMO_DIR / "generate.py"), "--out", str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrote 60 messages, 870 pairs" in out.stdout
    for name in ("messages.csv", "pairs.csv", "truth.csv"):
        assert (tmp_path / name).read_bytes() == (DEMO_DIR / name).read_bytes(), name


def test_scenario_file_errors_name_the_entry(tmp_path: Path) -> None:
    path = DEMO_DIR / "generate.py"
    spec = importlib.util.spec_from_file_location("pmr_demo_generate", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
        doc = json.loads((DEMO_DIR / "scenarios.json").read_text(encoding="utf-8"))
        assert len(mod.SCENARIOS) == 30 and len(mod.PATIENTS) == 20
        doc["scenarios"][1]["fevr"] = True
        bad = tmp_path / "scenarios.json"
        bad.write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(ValueError, match=r"scenarios\[1\] \('stroke_signs'\): unknown key"):
            mod.load_catalogue(bad)
        del doc["scenarios"][1]["fevr"]
        doc["patients"][0]["meds"].append("aspirin")
        bad.write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(ValueError, match=r"patients\[0\] \(P01\): meds: .*'aspirin'"):
            mod.load_catalogue(bad)
    finally:
        del sys.modules[spec.name]


def _acc(model, data: PreferenceData) -> float:
    return pairwise_accuracy(model.predict(data.X), data.pairs)


@pytest.mark.slow
def test_leave_one_out_drop_is_largest_for_message_actionability(demo) -> None:
    from pbo_core.models.dt import DTSurrogate

    tr, te = demo.extras["train"], demo.extras["test"]
    base = _acc(DTSurrogate().fit(tr), te)
    drops = {}
    schema = demo.schema
    for name in schema.names:
        keep = np.setdiff1d(np.arange(schema.n_columns), schema.column_indices([name]))
        sub = schema.without([name])
        d_tr = PreferenceData(X=tr.X[:, keep], pairs=tr.pairs, schema=sub)
        d_te = PreferenceData(X=te.X[:, keep], pairs=te.pairs, schema=sub)
        drops[name] = base - _acc(DTSurrogate().fit(d_tr), d_te)
    order = sorted(drops, key=drops.get, reverse=True)
    print(f"\nbaseline test accuracy {base:.3f}; LOO drops (pp):")
    for n in order:
        print(f"  {n:<36} {100 * drops[n]:+.1f}")
    assert order[0] == "message_actionability"
    assert drops["message_actionability"] > 0.10
    assert drops["message_actionability"] > 3 * max(drops[n] for n in order[1:])
    assert base > 0.85


def test_demo_with_an_extracted_table(demo, tmp_path) -> None:
    truth = demo.extras["truth"][["message_id", *SPEC.names]].copy()
    ext = truth.copy()
    ext.insert(1, "status", "ok")
    ext.insert(2, "error", "")
    ext.loc[ext["message_id"] == "A01", ["status", "error"]] = ["invalid", "bad answer"]
    ext.loc[ext["message_id"] == "B02", "symptom_trajectory"] = "stable"
    path = save_table(ext, tmp_path / "extracted.csv")
    with pytest.warns(UserWarning, match="A01"):
        st = load_pmr_demo(features=path)
    assert st.extras["dropped_items"] == ["A01"]
    assert st.data.n_items == 59
    assert st.extras["dropped_pairs"] == 29  # every pair of A01 in inbox A
    assert st.data.n_pairs == 870 - 29
    b02 = st.data.items.set_index("message_id").loc["B02", "symptom_trajectory"]
    assert b02 == "stable"
    # a DataFrame works too; missing columns are named
    with pytest.raises(DataValidationError, match="acuity_conflict"):
        load_pmr_demo(features=ext.drop(columns="acuity_conflict"))


# ---------------------------------------------------------------------- packed text
def test_pack_and_parse_roundtrip() -> None:
    text = pack_text(
        "My leg is swollen - and warm.",
        age=71,
        gender="Female",
        problems=["COPD", "Essential hypertension"],
        diagnoses_past_year=["Acute bronchitis"],
        diagnoses_older=["Pulmonary embolism (2021)"],
        medications=["warfarin 5 mg tablet, daily", "albuterol inhaler"],
    )
    p = parse_packed_text(text)
    assert p["message"] == "My leg is swollen - and warm."
    assert (p["age"], p["gender"]) == ("71", "Female")
    assert p["problems"] == ["COPD", "Essential hypertension"]
    assert p["diagnoses_past_year"] == ["Acute bronchitis"]
    assert p["diagnoses_older"] == ["Pulmonary embolism (2021)"]
    assert p["medications"] == ["warfarin 5 mg tablet, daily", "albuterol inhaler"]
    assert "Demographics" in p["ehr"] and "Patient Message" not in p["ehr"]


def test_parse_tolerates_missing_parts() -> None:
    p = parse_packed_text("Just a message without EHR.")
    assert p["message"] == "Just a message without EHR." and p["ehr"] == ""
    ehr_only = "### EHR: ###Demographics###\nAge: 50\nGender: Male\n"
    p = parse_packed_text(ehr_only)
    assert p["message"] == "" and p["age"] == "50" and p["problems"] == []
    meds = (
        "###Medications (Outpatient)###\n\nActive (Start Date Before Message, Not Yet Ended):\n"
        "-drug a\n\nRecently Ended Within 30-Days of Message:\n-drug b\n"
        "### Patient Message: hi"
    )
    p = parse_packed_text(meds)
    assert p["medications"] == ["drug a"] and p["medications_other"] == ["drug b"]
    assert parse_packed_text(None)["message"] == ""


# ---------------------------------------------------------------------- PMR-Synth fixtures
def _inbox(letter: str, n: int, rng: np.random.Generator) -> pd.DataFrame:
    texts = [
        pack_text(
            f"Inbox {letter} message {i}: symptom report number {i}.",
            age=int(rng.integers(20, 90)),
            gender="Female" if i % 2 else "Male",
            problems=["Essential hypertension"],
            medications=["lisinopril 10 mg tablet, daily"],
        )
        for i in range(n)
    ]
    return pd.DataFrame(
        {
            "text": pd.Series(texts, dtype="string"),
            "level": pd.Series(rng.integers(1, 7, size=n), dtype="int64"),
            "relevancy": pd.Series(rng.integers(0, 2, size=n), dtype="int64"),
        }
    )


@pytest.fixture
def synth_dir(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    data = tmp_path / "PMR-Synth-Inboxes" / "data"
    data.mkdir(parents=True)
    _inbox("A", 30, rng).to_parquet(data / "INBOX_A-00000-of-00001.parquet", index=False)
    _inbox("B", 30, rng).to_parquet(data / "INBOX_B-00000-of-00001.parquet", index=False)
    return tmp_path / "PMR-Synth-Inboxes"


def _expected_level_pairs(df: pd.DataFrame) -> int:
    lv = df["level"].to_numpy()
    return int(sum(lv[i] != lv[j] for i in range(len(lv)) for j in range(i + 1, len(lv))))


def test_synth_fixture_has_the_published_format(synth_dir) -> None:
    df = pd.read_parquet(next((synth_dir / "data").glob("INBOX_A-*.parquet")))
    assert list(df.columns) == ["text", "level", "relevancy"]
    assert str(df["level"].dtype) == "int64" and str(df["relevancy"].dtype) == "int64"
    assert len(df) == 30


def test_load_synth_derives_pairs_from_level(synth_dir) -> None:
    st = load_pmr_synth(synth_dir)
    assert st.key == "pmr" and st.data.n_items == 60
    items = st.data.items
    assert (
        list(items["message_id"][:2]) == ["A-00", "A-01"] and items["message_id"].iloc[-1] == "B-29"
    )
    a = pd.read_parquet(next((synth_dir / "data").glob("INBOX_A-*.parquet")))
    b = pd.read_parquet(next((synth_dir / "data").glob("INBOX_B-*.parquet")))
    split = st.extras["split"]
    assert (split == "train").sum() == _expected_level_pairs(a)
    assert (split == "test").sum() == _expected_level_pairs(b)
    lv = items["level"].to_numpy()
    assert (lv[st.data.pairs[:, 0]] > lv[st.data.pairs[:, 1]]).all()
    assert st.extras["needs_extraction"] and len(st.schema) == 0
    assert items.loc[0, "message"] == "Inbox A message 0: symptom report number 0."
    assert items.loc[0, "medications"] == "lisinopril 10 mg tablet, daily"
    assert "CC BY-NC" in st.license and "derived from level" in st.extras["pair_source"]


def test_load_synth_from_env_and_status(synth_dir, monkeypatch) -> None:
    monkeypatch.delenv(PMR_DIR_ENV, raising=False)
    ok, why = pmr_synth_status()
    assert not ok and PMR_DIR_ENV in why
    monkeypatch.setenv(PMR_DIR_ENV, str(synth_dir))
    assert pmr_synth_status()[0]
    assert load_pmr_synth().data.n_items == 60


def test_missing_data_error_says_how_to_get_it(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(PMR_DIR_ENV, raising=False)
    with pytest.raises(DataNotAvailableError, match=r"huggingface\.co/datasets/PortalPal-AI"):
        load_pmr_synth()
    with pytest.raises(DataNotAvailableError, match=PMR_DIR_ENV):
        load_pmr_synth()
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotAvailableError, match="INBOX_A"):
        load_pmr_synth(tmp_path / "empty")


def test_malformed_inbox_is_named(synth_dir) -> None:
    f = next((synth_dir / "data").glob("INBOX_B-*.parquet"))
    pd.read_parquet(f).drop(columns="relevancy").to_parquet(f, index=False)
    with pytest.raises(DataValidationError, match=r"INBOX_B.*relevancy"):
        load_pmr_synth(synth_dir)


def test_annotations_by_text_and_by_id(synth_dir) -> None:
    st0 = load_pmr_synth(synth_dir)
    items = st0.data.items
    text = dict(zip(items["message_id"], items["text"], strict=True))
    ann = pd.DataFrame(
        {
            "chosen": [text["A-03"], text["B-05"], text["A-01"], "unknown message"],
            "rejected": [text["A-00"], text["B-01"], text["B-02"], text["A-00"]],
        }
    )
    ann.to_parquet(synth_dir / "PMP-Synth-AllPairs-Annotated.parquet", index=False)
    with pytest.warns(UserWarning, match="2 annotated pair"):
        st = load_pmr_synth(synth_dir)
    pid = st.extras["pair_ids"]
    assert pid[["winner", "loser", "split"]].values.tolist() == [
        ["A-03", "A-00", "train"],
        ["B-05", "B-01", "test"],
    ]
    assert st.extras["annotation_unmatched"] == 2
    by_id = pd.DataFrame({"winner_id": ["B-00"], "loser_id": ["B-09"]})
    by_id.to_csv(synth_dir / "ann.csv", index=False)
    st2 = load_pmr_synth(synth_dir, annotations=synth_dir / "ann.csv")
    assert st2.data.n_pairs == 1 and list(st2.extras["split"]) == ["test"]


def test_synth_with_extracted_features(synth_dir) -> None:
    ids = [f"A-{i:02d}" for i in range(30)] + [f"B-{i:02d}" for i in range(30)]
    rng = np.random.default_rng(1)
    rows = []
    for m in ids:
        row = {"message_id": m, "status": "ok"}
        for f in SPEC.features:
            if f.type == "multi_hot":
                row[f.name] = ";".join(v for v in f.values if rng.random() < 0.1)
            else:
                row[f.name] = f.values[int(rng.integers(len(f.values)))]
        rows.append(row)
    table = pd.DataFrame(rows)
    st = load_pmr_synth(synth_dir, features=table)
    assert st.schema == SPEC.to_schema()
    assert st.data.X.shape == (60, SPEC.to_schema().n_columns)
    assert not st.extras["needs_extraction"]


def test_registry_loads_the_demo() -> None:
    from data_loaders.registry import load_study, study_info

    assert study_info("pmr-demo").available
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_study("pmr-demo").counts()["items"] == 60
