"""The answer path of Live elicitation: the server's own clock of an answer."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg

from dashboard._services import elicitation as el


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
