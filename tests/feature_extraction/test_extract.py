"""Extraction through the real ``openai`` client against the scripted server: validation,
retries with the error fed back, recorded failures, cache hits/misses, statistics, and no
API key in logs, records or the cache."""

from __future__ import annotations

import asyncio
import json
import logging

import pandas as pd
import pytest

from feature_extraction.cache import ExtractionCache, format_stats
from feature_extraction.client import LLMConfig
from feature_extraction.extract import (
    extract_features,
    extract_features_async,
    load_table,
    save_table,
)
from feature_extraction.spec import PROMPT_VERSION, table9_spec

SECRET = "sk-live-DO-NOT-LEAK-42424242"

SPEC = table9_spec().subset(["red_flag_syndrome", "message_actionability", "acuity_conflict"])
GOOD = {
    "red_flag_syndrome": ["syncope_or_near_syncope"],
    "message_actionability": "same_day_triage_or_call",
    "acuity_conflict": "none",
}


def items(*keys: str) -> dict[str, str]:
    return {k: f"ITEM-{k} I fainted this morning." for k in keys}


def config(server, **kw) -> LLMConfig:
    base = {
        "base_url": server.base_url,
        "model": "scripted",
        "backoff_base": 0.01,
        "timeout": 5.0,
        "api_key": SECRET,
    }
    base.update(kw)
    return LLMConfig(**base)


@pytest.fixture
def server(llm_server):
    llm_server.state.default_answer = GOOD
    llm_server.state.bad_answer = {**GOOD, "message_actionability": "call_911_now"}
    return llm_server


def test_valid_answers_become_rows(server) -> None:
    res = extract_features(items("a", "b"), SPEC, config(server))
    assert [r.status for r in res.records] == ["ok", "ok"]
    table = res.table()
    assert list(table.columns) == ["message_id", "status", "error", *SPEC.names]
    assert table.loc[0, "red_flag_syndrome"] == ["syncope_or_near_syncope"]
    assert res.counts() == {"ok": 2, "invalid": 0, "error": 0, "requested": 2, "cached": 0}
    rec = res.records[0]
    assert rec.prompt_tokens == 11 and rec.completion_tokens == 7 and rec.latency_s > 0


def test_invalid_answer_is_retried_with_the_error_fed_back(server) -> None:
    st = server.state
    st.script("b", "invalid", "valid")
    res = extract_features(items("b"), SPEC, config(server))
    rec = res.records[0]
    assert rec.status == "ok" and rec.attempts == 2
    assert rec.values == GOOD
    retry = st.requests[-1]["body"]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert "call_911_now" in retry[2]["content"]  # the invalid answer is shown back
    assert "unknown value 'call_911_now'" in retry[3]["content"]  # with the validation error
    assert "same_day_triage_or_call" in retry[3]["content"]  # and the allowed values


@pytest.mark.parametrize(
    ("actions", "reason"),
    [
        (["invalid"] * 3, "message_actionability: unknown value 'call_911_now'"),
        (["garbage"] * 3, "not valid JSON"),
        (["empty"] * 3, "answer is empty"),
    ],
)
def test_persistently_invalid_answers_are_recorded_not_coerced(server, actions, reason) -> None:
    server.state.script("c", *actions)
    res = extract_features(items("c"), SPEC, config(server, max_validation_retries=2))
    rec = res.records[0]
    assert rec.status == "invalid" and rec.values is None
    assert reason in rec.error and "after 3 attempt(s)" in rec.error
    assert rec.attempts == 3 and len(server.state.requests) == 3
    assert res.failures().to_dict(orient="records") == [
        {"message_id": "c", "status": "invalid", "error": rec.error}
    ]
    row = res.table().iloc[0]
    assert row["status"] == "invalid" and row["message_actionability"] is None


def test_missing_and_wrongly_typed_fields_are_invalid(server) -> None:
    st = server.state
    st.answers["d"] = {"red_flag_syndrome": "syncope_or_near_syncope", "message_actionability": 3}
    res = extract_features(items("d"), SPEC, config(server, max_validation_retries=0))
    err = res.records[0].error
    assert "missing field(s) ['acuity_conflict']" in err
    assert "red_flag_syndrome: expected a list" in err
    assert "message_actionability: expected one string" in err


def test_transport_failure_is_recorded_with_reason(server) -> None:
    server.state.script("e", *["503"] * 5)
    res = extract_features(items("e", "f"), SPEC, config(server, max_retries=1))
    e, f = res.records
    assert e.status == "error" and "503" in e.error and "after 2 attempt(s)" in e.error
    assert f.status == "ok"


def test_cache_hit_miss_and_keys(server, tmp_path) -> None:
    st = server.state
    path = tmp_path / "cache.sqlite"
    with ExtractionCache(path) as cache:
        r1 = extract_features(items("a", "b", "c"), SPEC, config(server), cache=cache)
        assert r1.n_requested == 3 and len(st.requests) == 3
        # Rerun: everything from the cache, no request.
        r2 = extract_features(items("a", "b", "c"), SPEC, config(server), cache=cache)
        assert r2.n_requested == 0 and r2.n_cached == 3 and len(st.requests) == 3
        assert r2.table().equals(r1.table())
        # Changed text of one message: only that one is asked again.
        changed = items("a", "b", "c") | {"b": "ITEM-b now it is worse"}
        r3 = extract_features(changed, SPEC, config(server), cache=cache)
        assert r3.n_requested == 1 and st.items_requested()[-1] == "b"
        # Another model or another spec: asked again.
        extract_features(items("a"), SPEC, config(server, model="other"), cache=cache)
        extract_features(items("a"), SPEC.subset(["acuity_conflict"]), config(server), cache=cache)
        assert st.items_requested()[-2:] == ["a", "a"]
        rows = cache.extractions()
        assert set(rows["prompt_version"]) == {PROMPT_VERSION}
        assert len(rows) == 6
    # Results survive closing and reopening the database.
    with ExtractionCache(path) as cache:
        r4 = extract_features(items("a", "b", "c"), SPEC, config(server), cache=cache)
        assert r4.n_cached == 3 and r4.n_requested == 0  # both texts of "b" are cached


def test_failed_rows_on_rerun(server, tmp_path) -> None:
    st = server.state
    st.script("x", "invalid", "invalid", "invalid")
    st.script("y", *["503"] * 3)
    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        cfg = config(server, max_retries=2)
        r1 = extract_features(items("x", "y"), SPEC, cfg, cache=cache)
        assert [r.status for r in r1.records] == ["invalid", "error"]
        n = len(st.requests)
        # Transport errors are re-asked, invalid answers are kept (with their reason).
        r2 = extract_features(items("x", "y"), SPEC, cfg, cache=cache)
        assert [r.status for r in r2.records] == ["invalid", "ok"]
        assert st.items_requested()[n:] == ["y"]
        assert r2.records[0].cached and "call_911_now" in r2.records[0].error
        # retry_failed re-asks invalid rows too.
        r3 = extract_features(items("x", "y"), SPEC, cfg, cache=cache, retry_failed=True)
        assert [r.status for r in r3.records] == ["ok", "ok"]
        assert r3.n_requested == 1


def test_fallback_mode_is_remembered_in_the_cache(server, tmp_path) -> None:
    st = server.state
    st.reject_json_schema = True
    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        extract_features(items("a", "b"), SPEC, config(server), cache=cache)
        assert [r["response_format"] for r in st.requests] == [
            "json_schema",
            "json_object",
            "json_object",
        ]
        extract_features(items("c"), SPEC, config(server), cache=cache)
        assert st.requests[-1]["response_format"] == "json_object"
        assert len(st.requests) == 4  # no second probe in a new run


def test_progress_callback_and_stats(server, tmp_path) -> None:
    seen = []
    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        server.state.script("b", "invalid", "valid")
        extract_features(
            items("a", "b", "c"),
            SPEC,
            config(server),
            cache=cache,
            progress=lambda done, total, rec: seen.append((done, total, rec.message_id)),
        )
        stats = cache.stats()
    assert [(d, t) for d, t, _ in seen] == [(1, 3), (2, 3), (3, 3)]
    assert sorted(m for _, _, m in seen) == ["a", "b", "c"]
    per_item = stats.set_index("kind").loc["extraction (per item)"]
    calls = stats.set_index("kind").loc["extract call"]
    assert per_item["n"] == 3 and calls["n"] == 4
    assert per_item["latency_mean_s"] > 0 and per_item["latency_sd_s"] >= 0
    assert calls["prompt_tokens_mean"] == 11 and calls["tokens_total"] == 4 * 18
    assert "±" in format_stats(stats)


def test_transient_500_is_not_persisted_as_a_fallback(server, tmp_path) -> None:
    st = server.state
    st.script("a", "500")  # one bare 500 on the very first request
    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        res = extract_features(items("a", "b"), SPEC, config(server), cache=cache)
        assert all(r.ok for r in res.records)
        assert {r["response_format"] for r in st.requests} == {"json_schema"}
        key = f"response_format|{server.base_url}|scripted"
        assert cache.get_meta(key) == "json_schema"
        extract_features(items("c"), SPEC, config(server), cache=cache)
        assert st.requests[-1]["response_format"] == "json_schema"


def test_no_api_key_in_logs_records_or_cache(server, tmp_path, caplog) -> None:
    st = server.state
    st.script("a", "429", "invalid", "valid")
    st.script("b", *["500"] * 4)
    caplog.set_level(logging.DEBUG)  # every logger, including openai's and the HTTP client's
    path = tmp_path / "c.sqlite"
    with ExtractionCache(path) as cache:
        res = extract_features(items("a", "b"), SPEC, config(server, max_retries=1), cache=cache)
    assert st.requests[0]["auth"] == f"Bearer {SECRET}"  # the key is used...
    assert caplog.records, "expected log output to check"
    assert SECRET not in caplog.text  # ...but never logged
    for rec in res.records:
        assert SECRET not in json.dumps(rec.to_dict())
        assert SECRET not in repr(rec)
    assert SECRET.encode() not in path.read_bytes()
    assert SECRET not in repr(res) and SECRET not in str(config(server))


def test_sync_wrapper_works_inside_a_running_loop(server) -> None:
    async def inside():
        return extract_features(items("a"), SPEC, config(server))

    res = asyncio.run(inside())
    assert res.records[0].ok


def test_async_api_and_item_forms(server) -> None:
    df = pd.DataFrame({"message_id": ["a", "b"], "text": ["ITEM-a x", "ITEM-b y"]})
    res = asyncio.run(extract_features_async(df, SPEC, config(server)))
    assert [r.message_id for r in res.records] == ["a", "b"]
    with pytest.raises(ValueError, match="duplicate"):
        extract_features([("a", "x"), ("a", "y")], SPEC, config(server))
    with pytest.raises(ValueError, match="non-empty"):
        extract_features([("a", "  ")], SPEC, config(server))


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_table_roundtrip(server, tmp_path, suffix) -> None:
    server.state.script("b", *["invalid"] * 3)
    res = extract_features(items("a", "b"), SPEC, config(server))
    path = save_table(res.table(), tmp_path / f"t{suffix}")
    back = load_table(path, SPEC)
    assert list(back["message_id"]) == ["a", "b"]
    assert back.loc[0, "red_flag_syndrome"] == ["syncope_or_near_syncope"]
    assert back.loc[1, "red_flag_syndrome"] == []
    assert back.loc[0, "acuity_conflict"] == "none"  # the level "none" is not read as NaN
    assert back.loc[1, "status"] == "invalid"


def test_auto_mode_uses_full_concurrency_and_stores_the_format_at_once(server, tmp_path) -> None:
    st = server.state
    st.delay = 0.2
    n = 20
    key = f"response_format|{server.base_url}|scripted"
    stored_at_first_result = []
    with ExtractionCache(tmp_path / "c.sqlite") as cache:

        def progress(done, total, rec) -> None:
            if done == 1:
                stored_at_first_result.append(cache.get_meta(key))

        cfg = config(server, max_concurrency=4)
        res = extract_features(
            items(*(f"k{i}" for i in range(n))), SPEC, cfg, cache=cache, progress=progress
        )
    assert all(r.ok for r in res.records)
    assert st.max_in_flight == 4  # all tasks queued before negotiation run concurrently
    # the wall time (one probe, then 19 requests 4 at a time: ~6 x 0.2 s) is measured by
    # tests/benchmarks/extraction_concurrency.py
    assert stored_at_first_result == ["json_schema"]  # persisted before the run ends


def test_format_reached_only_by_rejections_is_not_stored(server, tmp_path) -> None:
    st = server.state
    st.script("a", "400", "400", "400")  # every format "rejected", no answer at all
    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        res = extract_features(items("a"), SPEC, config(server), cache=cache)
        assert res.records[0].status == "error"
        assert cache.get_meta(f"response_format|{server.base_url}|scripted") is None
