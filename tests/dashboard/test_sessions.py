"""The SQLite session store: where it lives, replay, JSON/CSV export round trips."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from dashboard._services import sessions as store
from dashboard._services.elicitation import new_elicitation
from pbo_core.session import ElicitationSession

CONFIG = ("benchmark", "branin", "dt", 3, None)
ITEMS = ("items", "electricity", "dt", 0, None)


def _played(config, actions):
    sid = store.create_session(config)
    sess = new_elicitation(*config)
    for a in actions:
        sess.apply(a)
    store.save_session(sid, sess, "fav")
    return sid, sess


def test_the_store_lives_in_the_data_home_not_the_checkout(isolated_env) -> None:
    assert store.db_path().is_relative_to(isolated_env / "data_home")
    store.set_setting("x", {"a": 1})
    assert store.db_path().exists() and store.get_setting("x") == {"a": 1}


@pytest.mark.parametrize("config", [CONFIG, ITEMS])
def test_a_stored_session_replays_to_the_same_state(config) -> None:
    sid, sess = _played(config, ["A", "tie", "skip", "B", "A", "tie"])
    rec = store.load_session(sid)
    assert rec is not None and rec.n_answers == 5 and rec.favourite == "fav"
    back = store.replay(new_elicitation(*rec.config), rec)
    assert back.pairs.tolist() == sess.pairs.tolist()
    assert back.favourite == sess.favourite and back.actions == sess.actions
    assert store.latest_session(config).id == sid
    assert [r.id for r in store.list_sessions()] == [sid]


def test_json_export_round_trip() -> None:
    sid, sess = _played(ITEMS, ["B", "tie", "A", "skip", "A"])
    text = store.export_json(sess, store.load_session(sid))
    doc = json.loads(text)
    assert doc["actions"] == ["B", "tie", "A", "skip", "A"] and len(doc["answers"]) == 4
    new = store.import_json(text)
    assert new != sid
    rec = store.load_session(new)
    back = store.replay(new_elicitation(*rec.config), rec)
    assert back.pairs.tolist() == sess.pairs.tolist() and back.favourite == sess.favourite
    for bad in ("{", json.dumps({"format": "other"})):
        with pytest.raises(ValueError):
            store.import_json(bad)


def test_csv_export_round_trip_as_a_loaded_base() -> None:
    _, sess = _played(ITEMS, ["A", "tie", "B"])
    csv = sess.to_frame().to_csv(index=False)
    loaded = ElicitationSession.from_frame(pd.read_csv(io.StringIO(csv)), **sess.config())
    sid = store.create_session(ITEMS, loaded.to_frame())
    loaded.answer("A")
    store.save_session(sid, loaded)
    rec = store.load_session(sid)
    assert len(rec.base) == 3 and rec.actions == ["A"]
    back = store.replay(new_elicitation(*rec.config), rec)
    assert back.pairs.tolist() == loaded.pairs.tolist()
    # loaded rows put the winner on side A; the tie stays a tie
    assert back.to_frame()["winner_side"].tolist()[:3] == ["A", "tie", "A"]


def test_sidebar_paths_are_stored_without_empty_entries() -> None:
    store.store_paths({"sushi": " /data/sushi ", "bela": ""})
    assert store.stored_paths() == {"sushi": "/data/sushi"}


# ----------------------------------------------------------------------------- many visitors
def test_each_action_is_stored_once_with_its_sequence_number() -> None:
    sid = store.create_session(CONFIG, owner="a")
    assert store.record_action(sid, 0, "A", 1) is True
    assert store.record_action(sid, 0, "A", 1) is False  # a double click / retry
    with pytest.raises(store.AnswerConflict, match="already answered 'A'"):
        store.record_action(sid, 0, "B", 1)  # another tab answered first
    with pytest.raises(store.AnswerConflict, match="arrived before"):
        store.record_action(sid, 2, "B", 3)  # a gap
    assert store.record_action(sid, 1, "tie", 2)
    rec = store.load_session(sid)
    assert rec.actions == ["A", "tie"] and rec.n_answers == 2 and rec.server == store.SERVER_ID
    assert store.undo_action(sid, 1, 1) and not store.undo_action(sid, 1, 1)
    assert store.load_session(sid).actions == ["A"]
    with pytest.raises(KeyError):
        store.record_action("no-such-session", 0, "A", 1)


def test_wal_and_busy_timeout() -> None:
    import sqlite3

    store.create_session(CONFIG)
    con = sqlite3.connect(store.db_path())
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        con.close()
    assert store.BUSY_TIMEOUT_S >= 5


def test_concurrent_writers_keep_their_own_answers() -> None:
    """8 threads, each its own session and pattern, 25 actions each, all at once."""
    import threading

    patterns = {k: [*["A", "B", "tie", "skip"][k % 4 :], "A", "B"] for k in range(8)}
    sids = {k: store.create_session(CONFIG, owner=f"o{k}") for k in patterns}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(patterns))

    def work(k: int) -> None:
        try:
            barrier.wait()
            for i in range(25):
                action = patterns[k][i % len(patterns[k])]
                assert store.record_action(sids[k], i, action, i + 1)
                assert store.record_action(sids[k], i, action, i + 1) is False
        except BaseException as exc:  # collected for the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in patterns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = store.answer_counts()
    assert len(rows) == 8 * 25 and not rows.duplicated(["session_id", "seq"]).any()
    for k, sid in sids.items():
        want = [patterns[k][i % len(patterns[k])] for i in range(25)]
        assert store.load_session(sid).actions == want
        assert [r.id for r in store.list_sessions(owner=f"o{k}")] == [sid]


def test_a_process_queues_its_writes_and_never_its_reads() -> None:
    """A write waits at the process's write lock (not at SQLite's, whose busy handler
    sleeps before it looks again) while another of this process's writes holds it; a
    read never waits for it."""
    import threading

    sid = store.create_session(CONFIG)
    assert store.record_action(sid, 0, "A", 1)
    wrote = threading.Event()

    def write() -> None:
        store.record_action(sid, 1, "B", 2)
        wrote.set()

    with store._WRITE_LOCK:  # as a writing transaction of this process holds it
        t = threading.Thread(target=write)
        t.start()
        assert not wrote.wait(0.3)  # queued: SQLite itself is not locked
        assert store.load_session(sid).actions == ["A"]  # a reader does not wait
    assert wrote.wait(10)
    t.join()
    assert store.load_session(sid).actions == ["A", "B"]


def test_an_old_store_is_migrated(isolated_env) -> None:
    import sqlite3

    path = store.db_path()
    path.parent.mkdir(parents=True)
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT "
        "NULL, kind TEXT NOT NULL, source TEXT NOT NULL, method TEXT NOT NULL, seed INTEGER "
        "NOT NULL, max_items INTEGER, base TEXT NOT NULL DEFAULT '[]', actions TEXT NOT NULL "
        "DEFAULT '[]', n_answers INTEGER NOT NULL DEFAULT 0, favourite TEXT NOT NULL "
        "DEFAULT '');"
        "INSERT INTO sessions VALUES ('old1', 1, 2, 'benchmark', 'branin', 'dt', 3, NULL, "
        "'[]', '[\"A\", \"skip\", \"B\"]', 2, 'x');"
    )
    con.commit()
    con.close()
    store._READY.discard(path)
    rec = store.load_session("old1")
    assert rec.actions == ["A", "skip", "B"] and rec.owner == "" and rec.participant == ""
    assert store.record_action("old1", 3, "A", 3)
    assert store.load_session("old1").actions == ["A", "skip", "B", "A"]


def test_participant_in_the_json_export_and_owner_on_import() -> None:
    sid, sess = _played(ITEMS, ["A"])
    store.set_participant(sid, " Dr. Ada ")
    doc = json.loads(store.export_json(sess, store.load_session(sid)))
    assert doc["participant"] == "Dr. Ada" and doc["session"] == sid
    new = store.import_json(json.dumps(doc), owner="me")
    rec = store.load_session(new)
    assert rec.participant == "Dr. Ada" and rec.owner == "me" and rec.actions == ["A"]
    assert [r.id for r in store.list_sessions(owner="me")] == [new]


def test_sidebar_paths_are_kept_per_owner() -> None:
    store.store_paths({"bela": "/a.csv"}, "alice")
    store.store_paths({"bela": "/b.csv"}, "bob")
    assert store.stored_paths("alice") == {"bela": "/a.csv"}
    assert store.stored_paths("bob") == {"bela": "/b.csv"}
    assert store.stored_paths("carol") == {}


def test_a_draft_is_stored_with_its_first_action_only() -> None:
    sid = store.new_session_id()
    assert store.load_session(sid) is None
    with pytest.raises(KeyError):  # without a draft, an unknown session is refused
        store.record_action(sid, 0, "A", 1)
    draft = store.Draft(ITEMS, owner="me", participant=" Ada ")
    assert store.record_action(sid, 0, "A", 1, draft=draft)
    assert store.record_action(sid, 1, "B", 2, draft=draft)  # the row exists: kept as is
    rec = store.load_session(sid)
    assert rec.config == ITEMS and rec.owner == "me" and rec.participant == "Ada"
    assert rec.actions == ["A", "B"] and rec.n_answers == 2
    assert store.undo_action(sid, 1, 1) and store.load_session(sid).actions == ["A"]
    assert store.undo_action(sid, 0, 0)
    assert store.load_session(sid) is None  # no answers left: no row
    loaded, _ = _played(ITEMS, [])  # a session from a loaded table has its table: kept
    assert store.load_session(loaded) is not None


def _age(sid: str, days: float) -> None:
    import sqlite3
    import time

    with sqlite3.connect(store.db_path()) as con:
        con.execute(
            "UPDATE sessions SET updated = ? WHERE id = ?", (time.time() - days * 86400, sid)
        )


def test_the_sweep_drops_empty_rows_and_with_the_setting_old_sessions(monkeypatch) -> None:
    import sqlite3
    import time

    monkeypatch.delenv(store.EXPIRY_ENV, raising=False)
    empty_old, empty_new = store.create_session(CONFIG), store.create_session(CONFIG)
    _age(empty_old, 1)  # a row of an older version, for a visit that never answered
    answered, _ = _played(CONFIG, ["A", "B"])
    old_answered, _ = _played(CONFIG, ["A"])
    _age(old_answered, 40)
    store.store_paths({"bela": "/a.csv"}, "old-owner")
    with sqlite3.connect(store.db_path()) as con:
        con.execute(
            "UPDATE settings SET updated = ? WHERE key = 'data_paths:old-owner'",
            (time.time() - 40 * 86400,),
        )
    store.store_paths({"bela": "/b.csv"}, "new-owner")
    with store._connect() as con:
        gone = store.sweep_store(con)
    assert gone == {"empty_sessions": 1, "expired_sessions": 0, "expired_settings": 0}
    left = {r.id for r in store.list_sessions()}
    assert left == {empty_new, answered, old_answered}  # no expiry without the setting
    for bad in ("soon", "-3", "0", "nan"):
        monkeypatch.setenv(store.EXPIRY_ENV, bad)
        assert store.expiry_days() is None
    monkeypatch.setenv(store.EXPIRY_ENV, "30")
    assert store.expiry_days() == 30
    with store._connect() as con:
        gone = store.sweep_store(con)
    assert gone == {"empty_sessions": 0, "expired_sessions": 1, "expired_settings": 1}
    assert {r.id for r in store.list_sessions()} == {empty_new, answered}
    assert set(store.answer_counts()["session_id"]) == {answered}
    assert store.stored_paths("old-owner") == {} and store.stored_paths("new-owner")


def test_a_process_sweeps_at_first_use_then_hourly(monkeypatch) -> None:
    monkeypatch.delenv(store.EXPIRY_ENV, raising=False)
    sid = store.create_session(CONFIG)
    _age(sid, 1)
    monkeypatch.setattr(store, "_next_sweep", 0.0)  # a fresh process
    store.list_sessions()
    assert store.load_session(sid) is None
    sid = store.create_session(CONFIG)
    _age(sid, 1)
    store.list_sessions()  # within the hour: not again
    assert store.load_session(sid) is not None


def test_empty_sidebar_paths_keep_no_row_and_old_settings_are_migrated(
    isolated_env, monkeypatch
) -> None:
    import sqlite3

    store.store_paths({"bela": "  "}, "visitor")  # every first visit saved this
    with sqlite3.connect(store.db_path()) as con:
        assert con.execute("SELECT COUNT(*) FROM settings").fetchone()[0] == 0
    store.store_paths({"bela": "/a.csv"}, "visitor")
    store.store_paths({}, "visitor")
    assert store.stored_paths("visitor") == {}
    path = isolated_env / "old" / "sessions.sqlite"
    path.parent.mkdir()
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        con.execute("INSERT INTO settings VALUES ('data_paths:x', '{\"bela\": \"/x.csv\"}')")
    monkeypatch.setattr(store, "db_path", lambda: path)
    assert store.stored_paths("x") == {"bela": "/x.csv"}
    with sqlite3.connect(path) as con:
        (updated,) = con.execute("SELECT updated FROM settings").fetchone()
    assert updated > 0  # dated at the migration, so expiry counts from then


def test_a_server_counts_as_stopped_only_when_its_process_is_gone() -> None:
    import socket
    import subprocess
    import sys

    assert not store.server_stopped(store.SERVER_ID) and not store.server_stopped("")
    assert store.server_stopped("0123456789abcdef0123456789abcdef")  # an older version's id
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host, pid = socket.gethostname(), other.pid
        alive = f"{host}/{pid}/{store._started(pid)}/abcd1234"
        assert not store.server_stopped(alive)  # another process serving the same store
        assert store.server_stopped(f"{host}/{pid}/1/abcd1234")  # that pid, a later process
        assert not store.server_stopped(f"elsewhere/{pid}/1/abcd1234")  # cannot tell
    finally:
        other.kill()
        other.wait()
    assert store.server_stopped(alive)


@pytest.mark.parametrize("old", [False, True])
def test_first_visitors_at_once_set_up_the_store_once(isolated_env, monkeypatch, old) -> None:
    """Sixteen first visits at once (threads) on a new or an older store: every one gets a
    working store (it used to fail with 'duplicate column name: owner')."""
    import sqlite3
    import threading
    import time

    migrate = store._migrate

    def slow_migrate(con: sqlite3.Connection) -> None:  # widen the race
        time.sleep(0.05)
        migrate(con)

    monkeypatch.setattr(store, "_migrate", slow_migrate)

    path = store.db_path()
    if old:
        path.parent.mkdir(parents=True)
        with sqlite3.connect(path) as con:
            con.execute(
                "CREATE TABLE sessions (id TEXT PRIMARY KEY, created REAL NOT NULL, updated "
                "REAL NOT NULL, kind TEXT NOT NULL, source TEXT NOT NULL, method TEXT NOT "
                "NULL, seed INTEGER NOT NULL, max_items INTEGER, base TEXT NOT NULL DEFAULT "
                "'[]', actions TEXT NOT NULL DEFAULT '[]', n_answers INTEGER NOT NULL DEFAULT "
                "0, favourite TEXT NOT NULL DEFAULT '')"
            )
            con.execute("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    store._READY.discard(path)
    errors: list[BaseException] = []
    barrier = threading.Barrier(16)

    def visit(k: int) -> None:
        try:
            barrier.wait()
            store.stored_paths(f"visitor{k}")
            store.record_action(store.new_session_id(), 0, "A", 1, draft=store.Draft(ITEMS))
        except BaseException as exc:  # collected for the main thread
            errors.append(exc)

    threads = [threading.Thread(target=visit, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]
    assert len(store.list_sessions()) == 16
