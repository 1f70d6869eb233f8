"""Live elicitation with several visitors (AppTest): links, per-browser session lists,
failed writes, the note after a server restart, the participant name."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import pytest

from dashboard._services import sessions as store
from tests.dashboard._answers import answer_button
from tests.dashboard._shown import shown


def metrics(at: Any) -> dict[str, str]:
    return {shown(m.label): shown(m.value) for m in at.metric}


def texts(at: Any) -> str:
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "code"):
        parts += [shown(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


def answer(at: Any, keys: str) -> None:
    for k in keys:
        answer_button(at, k).click().run()
        no_exception(at)


def test_two_visitors_keep_their_own_sessions(app) -> None:
    a = app("elicitation")
    answer(a, "ABA")
    b = app("elicitation")  # another browser, no link: a new session
    assert metrics(b)["Answers"] == "0"
    answer(b, "BB")
    a_sid, b_sid = str(a.query_params["session"]), str(b.query_params["session"])
    assert a_sid != b_sid
    assert store.load_session(a_sid).actions == ["A", "B", "A"]
    assert store.load_session(b_sid).actions == ["B", "B"]
    # A's session list holds A's session only
    a.session_state["el_view"] = "Sessions"
    a.run()
    assert a.selectbox(key="el_pick_session").options == [
        store.load_session(a_sid).title() + "  (this one)"
    ]
    assert f"?session={a_sid}" in texts(a)
    # a third browser opening A's link resumes A's session, and B's does not list it
    c = app("elicitation", query={"session": a_sid})
    assert metrics(c)["Answers"] == "3"
    assert a_sid not in {r.id for r in store.list_sessions(owner=store.owner_of("x" * 20))}


def test_a_failed_write_is_shown_and_not_counted(app, monkeypatch) -> None:
    at = app("elicitation")
    answer(at, "A")

    def locked(*args: Any, **kwargs: Any) -> bool:
        raise sqlite3.OperationalError("database is locked")

    real = store.record_action
    monkeypatch.setattr(store, "record_action", locked)
    answer_button(at, "B").click().run()
    no_exception(at)
    assert "not saved" in "\n".join(e.value for e in at.error)
    assert metrics(at)["Answers"] == "1"  # the page never shows an unsaved answer
    monkeypatch.setattr(store, "record_action", real)
    answer_button(at, "B").click().run()  # retried: now stored
    sid = str(at.query_params["session"])
    assert metrics(at)["Answers"] == "2" and store.load_session(sid).actions == ["A", "B"]


def test_a_session_resumed_after_a_restart_says_an_answer_may_be_missing(app) -> None:
    at = app("elicitation")
    answer(at, "AB")
    sid = str(at.query_params["session"])
    with sqlite3.connect(store.db_path()) as con:  # as written by an earlier server process
        con.execute(
            "UPDATE sessions SET server = 'earlier', updated = ? WHERE id = ?",
            (time.time() - 5, sid),
        )
    again = app("elicitation", query={"session": sid})
    no_exception(again)
    warning = "\n".join(w.value for w in again.warning)
    assert "server was restarted" in warning and "2 answers saved" in warning
    assert metrics(again)["Answers"] == "2"
    assert store.load_session(sid).server == store.SERVER_ID  # said once
    assert "restarted" not in texts(app("elicitation", query={"session": sid}))


def test_an_unknown_link_starts_a_new_session(app) -> None:
    at = app("elicitation", query={"session": "no-such-session"})
    no_exception(at)
    assert "a new session was started" in texts(at)
    assert metrics(at)["Answers"] == "0"
    assert "session" not in at.query_params  # dropped: a new session has no link yet
    answer(at, "A")
    assert str(at.query_params["session"]) != "no-such-session"


@pytest.mark.parametrize("name", ["Ada L."])
def test_the_participant_name_is_stored_and_exported(app, name: str) -> None:
    at = app("elicitation")
    at.text_input(key="el_participant").input(name).run()
    answer(at, "A=")
    sid = str(at.query_params["session"])
    assert store.load_session(sid).participant == name
    at.session_state["el_view"] = "Answers"
    at.run()
    (table,) = [d.value for d in at.dataframe if "winner_side" in d.value.columns]
    assert list(table["participant"]) == [name, name]
    again = app("elicitation", query={"session": sid})
    assert again.text_input(key="el_participant").value == name


def test_a_visit_without_answers_stores_no_session_and_no_server_path(app) -> None:
    at = app("elicitation")
    no_exception(at)
    at.session_state["el_view"] = "Sessions"
    at.run()
    assert store.list_sessions() == [] and "session" not in at.query_params
    shown = texts(at)
    assert "saved with its first answer" in shown
    assert str(store.db_path()) not in shown and "sqlite" not in shown.lower()
    answer(at, "A")  # the first answer stores the session, with its owner
    sid = str(at.query_params["session"])
    (rec,) = store.list_sessions()
    assert rec.id == sid and rec.actions == ["A"] and rec.owner
    assert f"?session={sid}" in texts(at) and str(store.db_path()) not in texts(at)
    at.button(key="el_undo").click().run()  # back to no answer: no row, no link
    no_exception(at)
    assert store.list_sessions() == [] and "session" not in at.query_params
    answer(at, "B")
    assert store.load_session(sid).actions == ["B"]  # the same session, stored again
    at.button(key="el_restart").click().run()
    assert [r.id for r in store.list_sessions()] == [sid]  # Start over stores nothing yet


def test_a_session_written_by_another_running_process_has_no_restart_note(app) -> None:
    """Several server processes behind a proxy share the store: a link opened on another
    process (still running) is not a restart."""
    import os
    import socket

    at = app("elicitation")
    answer(at, "AB")
    sid = str(at.query_params["session"])
    parent = os.getppid()
    other = f"{socket.gethostname()}/{parent}/{store._started(parent)}/feedbeef"
    with sqlite3.connect(store.db_path()) as con:
        con.execute("UPDATE sessions SET server = ? WHERE id = ?", (other, sid))
    again = app("elicitation", query={"session": sid})
    no_exception(again)
    assert "restarted" not in texts(again) and metrics(again)["Answers"] == "2"
    assert store.load_session(sid).server == other  # still that process's session
