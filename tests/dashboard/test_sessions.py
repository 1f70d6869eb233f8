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
