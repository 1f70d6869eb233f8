"""Resume after a killed or cancelled run: committed rows survive, a rerun asks only for
the missing messages."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from feature_extraction.cache import ExtractionCache
from feature_extraction.client import LLMConfig
from feature_extraction.extract import extract_features, extract_features_async
from feature_extraction.spec import table9_spec

SPEC = table9_spec().subset(["message_actionability", "acuity_conflict"])
GOOD = {"message_actionability": "none_or_fyi", "acuity_conflict": "none"}
N = 12
ITEMS = {f"m{i:02d}": f"ITEM-m{i:02d} thanks for the visit" for i in range(N)}

WORKER = textwrap.dedent(
    """
    import sys
    from feature_extraction.cache import ExtractionCache
    from feature_extraction.client import LLMConfig
    from feature_extraction.extract import extract_features
    from feature_extraction.spec import table9_spec

    base_url, cache_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = table9_spec().subset(["message_actionability", "acuity_conflict"])
    items = {f"m{i:02d}": f"ITEM-m{i:02d} thanks for the visit" for i in range(n)}
    cfg = LLMConfig(base_url=base_url, model="scripted", max_concurrency=1, timeout=10)
    with ExtractionCache(cache_path) as cache:
        extract_features(items, spec, cfg, cache=cache)
    print("finished")
    """
)


def _ok_rows(path: Path) -> set[str]:
    if not path.exists():
        return set()
    try:
        con = sqlite3.connect(path, timeout=5)
        try:
            rows = con.execute("SELECT message_id FROM extractions WHERE status='ok'").fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError:  # table not created yet
        return set()
    return {r[0] for r in rows}


def test_rerun_after_killed_process_asks_only_missing(llm_server, tmp_path) -> None:
    st = llm_server.state
    st.default_answer = GOOD
    st.delay = 0.25
    cache_path = tmp_path / "cache.sqlite"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, llm_server.base_url, str(cache_path), str(N)],
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_ok_rows(cache_path)) < 3:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "worker made no progress"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = proc.stdout.read().decode() if proc.stdout else ""
    assert "finished" not in out
    done = _ok_rows(cache_path)
    assert 3 <= len(done) < N
    asked_before = len(st.requests)

    st.delay = 0.0
    cfg = LLMConfig(base_url=llm_server.base_url, model="scripted", timeout=10)
    with ExtractionCache(cache_path) as cache:
        res = extract_features(ITEMS, SPEC, cfg, cache=cache)
    rerun = st.items_requested()[asked_before:]
    assert sorted(rerun) == sorted(set(ITEMS) - done)
    assert res.n_cached == len(done) and res.n_requested == N - len(done)
    assert all(r.ok for r in res.records)


def test_rerun_after_cancelled_task_asks_only_missing(llm_server, tmp_path) -> None:
    st = llm_server.state
    st.default_answer = GOOD
    st.delay = 0.1
    cfg = LLMConfig(base_url=llm_server.base_url, model="scripted", max_concurrency=2, timeout=10)
    path = tmp_path / "c.sqlite"

    async def run_and_cancel():
        with ExtractionCache(path) as cache:
            seen = []
            task = asyncio.create_task(
                extract_features_async(
                    ITEMS, SPEC, cfg, cache=cache, progress=lambda d, t, r: seen.append(r)
                )
            )
            while len(seen) < 4:
                await asyncio.sleep(0.02)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            return {r.message_id for r in seen}

    first = asyncio.run(run_and_cancel())
    done = _ok_rows(path)
    assert first <= done and len(done) < N
    n0 = len(st.requests)
    st.delay = 0.0
    with ExtractionCache(path) as cache:
        res = extract_features(ITEMS, SPEC, cfg, cache=cache)
    assert sorted(st.items_requested()[n0:]) == sorted(set(ITEMS) - done)
    assert all(r.ok for r in res.records)


def test_requests_cancelled_in_flight_are_in_the_call_log(llm_server, tmp_path) -> None:
    st = llm_server.state
    st.default_answer = GOOD
    st.delay = 2.0
    cfg = LLMConfig(
        base_url=llm_server.base_url,
        model="scripted",
        max_concurrency=3,
        timeout=10,
        response_format="json_schema",
    )
    path = tmp_path / "c.sqlite"

    async def run_and_cancel():
        with ExtractionCache(path) as cache:
            task = asyncio.create_task(extract_features_async(ITEMS, SPEC, cfg, cache=cache))
            while len(st.requests) < 3:
                await asyncio.sleep(0.02)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    asyncio.run(run_and_cancel())
    with ExtractionCache(path) as cache:
        calls = cache.calls()
        stats = cache.stats().set_index("kind")
    assert len(calls) == 3  # every request that reached the server is counted
    assert set(calls["outcome"]) == {"CancelledError"}
    assert stats.loc["extract call", "failed_calls"] == 3
