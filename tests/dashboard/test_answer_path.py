"""The answer path of Live elicitation: the server's own clock of an answer, the per-session
display memo and the pooled connections of the session store."""

from __future__ import annotations

import json
import sqlite3
import time
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg

from dashboard._services import elicitation as el
from dashboard._services import sessions as store

ITEMS = ("items", "electricity", "dt", 0, None)


def _click(key: str) -> BackMsg:
    msg = BackMsg()
    w = msg.rerun_script.widget_states.widgets.add()
    w.id = f"$$ID-0123abcd-{key}"
    w.trigger_value = True
    return msg


def test_only_an_answer_button_counts_as_an_answer_click() -> None:
    assert el._is_answer_click(_click("el_pick_A_3"))
    assert el._is_answer_click(_click("el_tie_0")) and el._is_answer_click(_click("el_skip_7"))
    assert not el._is_answer_click(_click("el_undo"))
    assert not el._is_answer_click(_click("el_restart"))
    heartbeat = BackMsg()
    heartbeat.app_heartbeat = True
    assert not el._is_answer_click(heartbeat)


def test_the_clock_notes_when_a_click_reaches_the_server(monkeypatch) -> None:
    from streamlit.runtime.app_session import AppSession

    assert el.install_arrival_clock() and el.install_arrival_clock()  # once, idempotent
    seen = []
    fake = SimpleNamespace(id="browser-1", _handle_rerun_script_request=seen.append)
    before = time.monotonic()
    AppSession.handle_backmsg(fake, _click("el_pick_B_0"))
    assert len(seen) == 1  # Streamlit's own handling still runs
    assert before <= el._arrivals["browser-1"] <= time.monotonic()
    AppSession.handle_backmsg(fake, _click("el_undo"))  # not an answer: no new stamp
    monkeypatch.setattr(el, "_browser_session_id", lambda: "browser-1")
    clock = el.start_answer_clock()
    assert clock["arrived"] <= clock["started"] and "browser-1" not in el._arrivals


def test_an_answer_is_logged_with_its_queue_wait_and_server_time(monkeypatch, tmp_path) -> None:
    log = tmp_path / "answers.jsonl"
    monkeypatch.setenv(el.ANSWER_LOG_ENV, str(log))
    now = time.monotonic()
    clock = {"arrived": now - 0.5, "started": now - 0.3, "shown": now - 0.1}
    row = el.finish_answer_clock(clock, session="s", seq=2, action="A")
    assert row["queue_s"] == pytest.approx(0.2, abs=1e-3)
    assert row["shown_s"] == pytest.approx(0.4, abs=1e-3)
    assert 0.5 <= row["server_s"] < 5
    assert json.loads(log.read_text()) == row and row["session"] == "s" and row["seq"] == 2
    monkeypatch.delenv(el.ANSWER_LOG_ENV)
    el.finish_answer_clock(el.start_answer_clock(), session="t")  # no file: nothing written
    assert len(log.read_text().splitlines()) == 1


def test_the_display_memo_gives_what_computing_gives() -> None:
    sess = el.new_elicitation(*ITEMS)
    for k in range(len(sess.X)):
        x = sess.X[k]
        fresh = el.option_table(sess, x)  # no index: computed
        assert el.option_table(sess, x, k).equals(fresh)
        assert el.option_table(sess, x, k).equals(fresh)  # memo hit, a copy
        assert el.option_arrow(sess, x, k).to_pandas().equals(fresh)
        assert el.item_name(sess, k) == el._item_name(sess, None, x, 90)
        fav = el.favourite_arrow(sess, k).to_pandas()
        assert fav.columns.tolist() == fresh["attribute"].tolist()
        assert fav.iloc[0].tolist() == fresh["value"].tolist()
    mine = el.option_table(sess, sess.X[0], 0)
    mine.loc[0, "value"] = "changed"  # callers get their own table
    assert el.option_table(sess, sess.X[0], 0).loc[0, "value"] != "changed"


def test_continuous_sessions_are_not_memoised() -> None:
    sess = el.new_elicitation("benchmark", "branin", "dt", 0, None)
    q = sess.next_query()
    assert el.option_table(sess, q.a).shape == (2, 2)
    assert el._memo(sess, 0) is None


def test_store_connections_are_reused_and_a_failure_is_not() -> None:
    store.set_setting("a", 1)
    pool = store._POOL[store.db_path()]
    assert len(pool) == 1
    con = pool[0]
    assert store.get_setting("a") == 1 and store._POOL[store.db_path()] == [con]
    with pytest.raises(sqlite3.OperationalError), store._connect() as c:
        c.execute("SELECT * FROM no_such_table")
    assert con not in store._POOL[store.db_path()]  # closed, not given back
    assert store.get_setting("a") == 1  # a fresh connection


def test_a_removed_store_is_created_again() -> None:
    store.set_setting("a", 1)
    path = store.db_path()
    for p in path.parent.glob(path.name + "*"):
        p.unlink()
    assert store.get_setting("a") is None
    store.set_setting("a", 2)
    assert store.get_setting("a") == 2 and path.exists()


def test_concurrent_answers_through_the_pool_are_all_stored() -> None:
    from concurrent.futures import ThreadPoolExecutor

    sids = [store.create_session(ITEMS) for _ in range(6)]

    def answer(sid: str) -> None:
        for seq in range(10):
            store.record_action(sid, seq, "AB"[seq % 2], seq + 1)

    with ThreadPoolExecutor(6) as ex:
        list(ex.map(answer, sids))
    counts = store.answer_counts().groupby("session_id").size()
    assert sorted(counts.tolist()) == [10] * 6
    assert len(store._POOL[store.db_path()]) <= store.POOL_SIZE
    assert np.all([store.load_session(s).n_answers == 10 for s in sids])


def test_an_answer_on_the_page_logs_its_phases_in_order(app, monkeypatch, tmp_path) -> None:
    """The page marks where each answer is (stored, refit, asked, drawn, summary, shown):
    one log row per answer, each mark after the one before, all within the answer's time;
    a rerun that answers nothing (a tab switch) logs nothing."""
    from tests.dashboard._answers import answer_button

    log = tmp_path / "answers.jsonl"
    monkeypatch.setenv(el.ANSWER_LOG_ENV, str(log))
    at = app("elicitation")
    for side in "AB":
        answer_button(at, side).click().run()
        assert not at.exception, [e.value for e in at.exception]
    at.session_state["el_view"] = "Answers"
    at.run()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["seq"], r["action"]) for r in rows] == [(0, "A"), (1, "B")]
    marks = ["queue", "stored", "refit", "asked", "drawn", "summary", "shown", "server"]
    for r in rows:
        times = [r[f"{m}_s"] for m in marks]
        assert times == sorted(times) and times[0] >= 0, r
