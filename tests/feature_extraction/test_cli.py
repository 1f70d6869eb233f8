"""``python -m feature_extraction``: help texts, extract / stats / score / propose."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from data_loaders.pmr import load_pmr_demo
from feature_extraction.cli import main
from feature_extraction.extract import load_table
from feature_extraction.spec import table9_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", [[], ["extract"], ["stats"], ["score"], ["propose"]])
def test_help(command, capsys) -> None:
    with pytest.raises(SystemExit) as ei:
        main([*command, "--help"])
    assert ei.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out
    if command == ["extract"]:
        for opt in ("--study", "--spec", "--base-url", "--model", "--out", "--cache"):
            assert opt in out
        assert "pmr_table9.yaml" in out  # the default spec is named


def test_module_entry_point_help() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "feature_extraction", "stats", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0 and "--cache" in r.stdout


def _truth_answers(state, spec) -> None:
    demo = load_pmr_demo()
    truth = demo.extras["truth"].set_index("message_id")
    texts = demo.extras["texts"]
    by_text = {t.strip(): m for m, t in zip(texts["message_id"], texts["text"], strict=True)}

    def fallback(body) -> str:
        user = body["messages"][1]["content"]
        inner = user.split("<<<\n", 1)[1].rsplit("\n>>>", 1)[0].strip()
        row = truth.loc[by_text[inner]]
        return "json:" + json.dumps({n: row[n] for n in spec.names})

    state.fallback = fallback


def test_extract_stats_and_score(llm_server, tmp_path, capsys, monkeypatch) -> None:
    spec = table9_spec().subset(["red_flag_syndrome", "message_actionability"])
    spec_path = spec.dump(tmp_path / "spec.json")
    _truth_answers(llm_server.state, spec)
    out = tmp_path / "features.csv"
    cache = tmp_path / "cache.sqlite"
    monkeypatch.setenv("DTPBO_LLM_API_KEY", "sk-cli-secret-777")
    args = [
        "extract",
        "--study",
        "pmr-demo",
        "--spec",
        str(spec_path),
        "--base-url",
        llm_server.base_url,
        "--model",
        "scripted",
        "--out",
        str(out),
        "--cache",
        str(cache),
        "--limit",
        "6",
        "--records",
        str(tmp_path / "records.jsonl"),
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "6 ok, 0 invalid, 0 error (6 requested, 0 from cache)" in err
    assert "agreement with the demo ground truth" in err
    assert "sk-cli-secret-777" not in err
    table = load_table(out, spec)
    assert len(table) == 6 and (table["status"] == "ok").all()
    assert len((tmp_path / "records.jsonl").read_text().splitlines()) == 6
    # a rerun is served from the cache
    n = len(llm_server.state.requests)
    assert main(args) == 0
    assert "(0 requested, 6 from cache)" in capsys.readouterr().err
    assert len(llm_server.state.requests) == n
    # stats and score
    assert main(["stats", "--cache", str(cache)]) == 0
    so = capsys.readouterr().out
    assert "extraction (per item)" in so and "±" in so and "6 extraction row(s)" in so
    assert main(["stats", "--cache", str(cache), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["kind"] for r in rows} == {"extract call", "extraction (per item)"}
    assert main(["score", str(out), "--spec", str(spec_path)]) == 0
    score = capsys.readouterr().out
    assert "message_actionability" in score and "1.0" in score


def test_extract_requires_a_model(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("DTPBO_LLM_MODEL", raising=False)
    with pytest.raises(SystemExit, match="no model"):
        main(["extract", "--study", "pmr-demo", "--out", str(tmp_path / "x.csv")])


def test_stats_without_cache(tmp_path, capsys) -> None:
    assert main(["stats", "--cache", str(tmp_path / "none.sqlite")]) == 1


def test_propose_command(llm_server, tmp_path, capsys) -> None:
    st = llm_server.state
    proposal = {
        "name": "mentions_weekday",
        "type": "categorical",
        "values": ["yes", "no"],
        "bounds": [],
        "instruction": "Does the message mention a day of the week?",
        "rationale": "test",
    }

    def fallback(body) -> str:
        system = body["messages"][0]["content"]
        if system.startswith("You help clinicians"):
            return "text:A is more urgent."
        if system.startswith("You design features"):
            return "json:" + json.dumps(proposal)
        return "json:" + json.dumps({"mentions_weekday": "no"})

    st.fallback = fallback
    out = tmp_path / "proposals.json"
    rc = main(
        [
            "propose",
            "--study",
            "pmr-demo",
            "--base-url",
            llm_server.base_url,
            "--model",
            "scripted",
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "c.sqlite"),
            "--pairs",
            "2",
        ]
    )
    assert rc == 0
    recs = json.loads(out.read_text())
    assert len(recs) == 1 and recs[0]["status"] == "pruned"
    assert recs[0]["proposal"]["name"] == "mentions_weekday"
    assert "round 0: pruned mentions_weekday" in capsys.readouterr().err
    assert isinstance(pd.DataFrame(recs[0]["hard_pairs"]), pd.DataFrame)


def _extract_args(server, tmp_path, spec_path, *extra: str, limit: int = 3) -> list[str]:
    return [
        "extract",
        "--study",
        "pmr-demo",
        "--spec",
        str(spec_path),
        "--base-url",
        server.base_url,
        "--model",
        "scripted",
        "--out",
        str(tmp_path / "features.csv"),
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--limit",
        str(limit),
        "--no-progress",
        *extra,
    ]


def test_retry_failed_re_asks_invalid_rows(llm_server, tmp_path) -> None:
    spec = table9_spec().subset(["red_flag_syndrome", "message_actionability"])
    spec_path = spec.dump(tmp_path / "spec.json")
    st = llm_server.state
    st.fallback = lambda body: "invalid"
    main(_extract_args(llm_server, tmp_path, spec_path))
    assert (load_table(tmp_path / "features.csv", spec)["status"] == "invalid").all()
    n = len(st.requests)
    main(_extract_args(llm_server, tmp_path, spec_path))  # invalid rows are kept...
    assert len(st.requests) == n
    _truth_answers(st, spec)
    main(_extract_args(llm_server, tmp_path, spec_path, "--retry-failed"))  # ...unless asked
    assert len(st.requests) == n + 3
    assert (load_table(tmp_path / "features.csv", spec)["status"] == "ok").all()


def test_key_echoed_in_a_200_answer_is_stored_and_printed_nowhere(
    llm_server, tmp_path, capsys, caplog, monkeypatch
) -> None:
    secret = "sk-echo-CANARY-5150"
    monkeypatch.setenv("DTPBO_LLM_API_KEY", secret)
    spec = table9_spec().subset(["red_flag_syndrome", "message_actionability"])
    spec_path = spec.dump(tmp_path / "spec.json")
    echo = {"red_flag_syndrome": [], "message_actionability": f"{secret} / Bearer {secret}"}
    llm_server.state.fallback = lambda body: "json:" + json.dumps(echo)
    records = tmp_path / "records.jsonl"
    caplog.set_level(logging.INFO)
    main(["-v", *_extract_args(llm_server, tmp_path, spec_path, "--records", str(records))])
    assert llm_server.state.requests[0]["auth"] == f"Bearer {secret}"
    table = load_table(tmp_path / "features.csv", spec)
    assert (table["status"] == "invalid").all() and table["error"].str.contains(r"\*\*\*").all()
    out = capsys.readouterr()
    for text in (out.out, out.err, caplog.text, records.read_text()):
        assert secret not in text
    for f in tmp_path.iterdir():  # cache (and its WAL), table, records
        assert secret.encode() not in f.read_bytes(), f.name


def test_extract_exit_status_summary_and_stats_count_invalid_items(
    llm_server, tmp_path, capsys
) -> None:
    spec = table9_spec().subset(["red_flag_syndrome", "message_actionability"])
    spec_path = spec.dump(tmp_path / "spec.json")
    st = llm_server.state
    _truth_answers(st, spec)
    good = st.fallback
    first = {"id": None}

    def one_invalid(body) -> str:  # the first message answers invalid JSON values
        user = body["messages"][1]["content"]
        first["id"] = first["id"] or user
        return "invalid" if user == first["id"] else good(body)

    st.fallback = one_invalid
    assert main(_extract_args(llm_server, tmp_path, spec_path, "--max-retries", "0")) == 3
    err = capsys.readouterr().err
    assert "summary: 3 message(s): 2 ok, 1 invalid, 0 error; 5 request(s) this run" in err
    assert "exit 3" in err
    assert main(["stats", "--cache", str(tmp_path / "cache.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "failed items 1 (1 invalid, 0 error)" in out
    rows = {r["kind"]: r for r in _stats_json(tmp_path, capsys)}
    assert rows["extraction (per item)"]["invalid_items"] == 1
    # a request that fails for good: exit 2 (and it wins over invalid rows)
    st.fallback = lambda body: "503"
    args = _extract_args(
        llm_server, tmp_path, spec_path, "--max-retries", "0", "--retry-failed", limit=4
    )
    assert main(args) == 2
    assert "exit 2" in capsys.readouterr().err
    _truth_answers(st, spec)
    assert main(args) == 0
    assert "summary: 4 message(s): 4 ok, 0 invalid, 0 error; 2 request(s)" in (
        capsys.readouterr().err
    )


def _stats_json(tmp_path, capsys) -> list[dict]:
    assert main(["stats", "--cache", str(tmp_path / "cache.sqlite"), "--json"]) == 0
    return json.loads(capsys.readouterr().out)
