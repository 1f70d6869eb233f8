"""Fault injection: full demo-inbox extractions against :mod:`tests.fixtures.fault_server`
(HTTP 500, 429 with Retry-After, answers slower than the client timeout, non-JSON and
off-spec answers, answers echoing the API key, servers rejecting ``json_schema``).

Every message must end ``ok`` or failed with a reason, no off-spec value may be stored,
the negotiated format must be the best the server supports, the requests must run with
the configured concurrency, a SIGKILL mid-run followed by a rerun must lose and
duplicate nothing, and a canary API key must appear in no file, log or output.
Timeouts and backoffs are short (``--timeout``, ``DTPBO_LLM_BACKOFF_*``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from feature_extraction.cache import ExtractionCache
from feature_extraction.cli import _study_items, main
from feature_extraction.extract import load_table
from feature_extraction.spec import build_messages, load_spec
from tests.fixtures.fault_server import OFFSPEC, FaultConfig, FaultServer, item_key

ROOT = Path(__file__).resolve().parents[2]
CANARY = "sk-canary-FAULT-8d1f2e3c4b5a"
CONCURRENCY = 4
FAST_ENV = {
    "DTPBO_LLM_API_KEY": CANARY,
    "DTPBO_LLM_BACKOFF_BASE": "0.01",
    "DTPBO_LLM_BACKOFF_MAX": "0.05",
}


def _demo():
    items, _ = _study_items("pmr-demo", None)  # exactly what `extract --study pmr-demo` reads
    return items


def _keys(spec, items) -> dict[str, str]:
    """Server item key -> message id."""
    return {
        item_key(build_messages(spec, t)): m
        for m, t in zip(items["message_id"], items["text"], strict=True)
    }


def _server(**kw) -> FaultServer:
    base = {
        "rates": {"echo": 0.03},
        "slow_seconds": 0.8,
        "retry_after": 0.02,
        "delay": 0.02,
        "seed": 1,
        "lifetime": 120.0,
        "idle_timeout": 60.0,
    }
    base.update(kw)
    return FaultServer(FaultConfig.mixed(0.2, **base))


def _args(server: FaultServer, tmp: Path, *extra: str) -> list[str]:
    return [
        "extract",
        "--study",
        "pmr-demo",
        "--base-url",
        server.base_url,
        "--model",
        "fault-model",
        "--out",
        str(tmp / "features.csv"),
        "--records",
        str(tmp / "records.jsonl"),
        "--cache",
        str(tmp / "cache.sqlite"),
        "--concurrency",
        str(CONCURRENCY),
        "--timeout",
        "0.5",
        "--max-retries",
        "4",
        "--no-progress",
        *extra,
    ]


def _expected_rc(table) -> int:
    st = set(table["status"])
    return 2 if "error" in st else 3 if "invalid" in st else 0


def _check_outcomes(tmp: Path, spec, items) -> None:
    """Every message once, ok or failed with a reason; nothing off-spec stored."""
    table = load_table(tmp / "features.csv", spec)
    assert list(table["message_id"]) == list(items["message_id"])  # all, once, in order
    assert set(table["status"]) <= {"ok", "invalid", "error"}
    failed = table[table["status"] != "ok"]
    assert all(isinstance(e, str) and e.strip() for e in failed["error"]), failed
    with ExtractionCache(tmp / "cache.sqlite") as cache:
        rows = cache.extractions()
    assert sorted(rows["message_id"]) == sorted(items["message_id"])
    for r in rows.itertuples():
        assert OFFSPEC not in (r.values_json or "")
        if r.status == "ok":
            spec.validate_answer(json.loads(r.values_json))  # raises if off-spec
        else:
            assert r.values_json is None and r.error


def _assert_no_canary(tmp: Path, *texts: str) -> None:
    for text in texts:
        assert CANARY not in text
    for f in tmp.iterdir():
        assert CANARY.encode() not in f.read_bytes(), f.name


@pytest.mark.parametrize(
    ("reject_json_schema", "reject_object_schema", "best"),
    [
        ("none", False, "json_schema"),
        ("500-body", False, "json_object+schema"),  # llama.cpp-style HTTP 500 with a reason
        ("400", True, "json_object"),
    ],
)
def test_demo_extraction_under_mixed_faults(
    tmp_path, monkeypatch, capsys, caplog, reject_json_schema, reject_object_schema, best
) -> None:
    for k, v in FAST_ENV.items():
        monkeypatch.setenv(k, v)
    caplog.set_level(logging.INFO)
    spec, items = load_spec(None), _demo()
    # fail_first=1: the very first request (the format probe) gets a bare, transient 500
    with _server(
        reject_json_schema=reject_json_schema,
        reject_object_schema=reject_object_schema,
        fail_first=1,
    ) as server:
        rc = main(["-v", *_args(server, tmp_path)])
        snap, log = server.state.snapshot(), list(server.state.log)
    out = capsys.readouterr()
    _check_outcomes(tmp_path, spec, items)
    table = load_table(tmp_path / "features.csv", spec)
    assert rc == _expected_rc(table)
    assert f"summary: {len(items)} message(s)" in out.err and f"exit {rc}" in out.err
    # faults of every kind were injected
    assert set(snap["faults"]) >= {"500", "429", "slow", "garbage", "offspec", "echo"}, snap
    assert (table["status"] == "ok").mean() > 0.8
    # the best format the server supports, despite the transient 500 on the probe
    with ExtractionCache(tmp_path / "cache.sqlite") as cache:
        assert cache.get_meta(f"response_format|{server.base_url}|fault-model") == best
    # formats in arrival order: a format is left only after a clear rejection, and once the
    # best one is reached it is kept (transient faults never move it further down)
    order = ["json_schema", "json_object+schema", "json_object"]
    fmts = [f for _, _, f in log]
    assert set(fmts[fmts.index(best) :]) == {best}
    assert [order.index(f) for f in fmts] == sorted(order.index(f) for f in fmts)
    assert fmts[:2] == ["json_schema", "json_schema"]  # the transient 500 was retried as is
    rejected = sum(n for k, n in snap["outcomes"].items() if k.startswith("rejected"))
    assert rejected == order.index(best)  # one clear rejection per format given up
    # requests run concurrently (the old auto mode ran them one at a time), never above the
    # configured limit; the exact peak depends on the machine's load, so it is not pinned
    assert 2 <= snap["peak_live"] <= CONCURRENCY
    assert snap["peak_in_flight"] >= snap["peak_live"]  # (plus answers the client gave up on)
    assert snap["auth_seen"]
    _assert_no_canary(tmp_path, out.out, out.err, caplog.text)


def _rows(path: Path) -> dict[str, tuple[str, str | None, str]]:
    try:
        con = sqlite3.connect(path, timeout=5)
        try:
            rows = con.execute(
                "SELECT message_id, status, values_json, created_at FROM extractions"
            ).fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError:  # not created yet
        return {}
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _meta(path: Path) -> dict[str, str]:
    con = sqlite3.connect(path, timeout=5)
    try:
        return dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()


def _run_cli(args: list[str], tmp: Path, tag: str) -> subprocess.Popen:
    env = {**os.environ, **FAST_ENV, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "feature_extraction", "-v", *args],
        cwd=ROOT,
        env=env,
        stdout=(tmp / f"{tag}.out").open("wb"),
        stderr=(tmp / f"{tag}.err").open("wb"),
    )


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_loses_and_duplicates_nothing(tmp_path) -> None:
    spec, items = load_spec(None), _demo()
    keys = _keys(spec, items)
    cache_path = tmp_path / "cache.sqlite"
    with _server(reject_json_schema="500-body", delay=0.1) as server:
        args = _args(server, tmp_path)
        proc = _run_cli(args, tmp_path, "run1")
        try:
            deadline = time.monotonic() + 40
            while len(_rows(cache_path)) < 12:
                assert proc.poll() is None, (tmp_path / "run1.err").read_text()
                assert time.monotonic() < deadline, "the CLI made no progress"
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == -signal.SIGKILL
        before = _rows(cache_path)
        assert 12 <= len(before) < len(items)
        n1 = len(server.state.log)
        # the negotiated format was stored as soon as it was known, not at the end
        assert _meta(cache_path)[f"response_format|{server.base_url}|fault-model"] == (
            "json_object+schema"
        )
        with ExtractionCache(cache_path) as cache:
            calls1 = len(cache.calls())
        assert n1 <= calls1 <= n1 + CONCURRENCY  # each request logged before it was sent

        server.config.delay = 0.0
        proc2 = _run_cli(args, tmp_path, "run2")
        rc = proc2.wait(timeout=60)
        snap = server.state.snapshot()
        log2 = server.state.log[n1:]
    after = _rows(cache_path)
    _check_outcomes(tmp_path, spec, items)
    assert rc == _expected_rc(load_table(tmp_path / "features.csv", spec))
    # nothing lost: rows kept from the killed run are unchanged (not re-asked, not rewritten)
    kept = {m for m, (status, _, _) in before.items() if status in ("ok", "invalid")}
    for m in kept:
        assert after[m] == before[m]
    # nothing duplicated: the rerun asked only for the messages without a kept row
    asked2 = {keys[k] for k, _, _ in log2}
    assert asked2 == set(items["message_id"]) - kept
    assert {f for _, _, f in log2} == {"json_object+schema"}  # stored format reused, no probe
    with ExtractionCache(cache_path) as cache:
        calls = cache.calls()
        stats = cache.stats().set_index("kind")
    assert snap["requests"] <= len(calls) <= snap["requests"] + CONCURRENCY
    assert stats.loc["extract call", "failed_calls"] == int((calls["outcome"] != "ok").sum())
    err2 = (tmp_path / "run2.err").read_text()
    assert f"summary: {len(items)} message(s)" in err2 and f"exit {rc}" in err2
    # the canary key: sent to the server, echoed back, and nowhere on disk or in the logs
    assert snap["auth_seen"] and snap["faults"].get("echo", 0) > 0
    _assert_no_canary(tmp_path)


def test_fault_server_command_line_stops_by_itself() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fixtures.fault_server", "--port", "0", "--lifetime", "2"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:")
        url = line.split()[-1] + "/chat/completions"
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "hello"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "f",
                    "schema": {"type": "object", "properties": {"a": {"enum": ["x", "y"]}}},
                },
            },
        }
        req = urllib.request.Request(
            url, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            content = json.loads(r.read())["choices"][0]["message"]["content"]
        assert json.loads(content)["a"] in ("x", "y")
        out, _ = proc.communicate(timeout=15)  # exits by itself after --lifetime
    finally:
        if proc.poll() is None:
            proc.kill()
    snap = json.loads(out)
    assert snap["requests"] == 1 and snap["stop_reason"] == "lifetime over"
    assert proc.returncode == 0
