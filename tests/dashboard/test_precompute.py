"""The background walk of the bundled studies' first-visit jobs (dashboard._services.precompute)."""

from __future__ import annotations

import pytest

from dashboard._services import precompute


@pytest.fixture(autouse=True)
def _no_focus():
    precompute._FOCUS.clear()
    yield
    precompute._FOCUS.clear()


def _todo():
    names = ["a1", "a2", "b1", "a3", "b2", None]
    keys = ["a", "a", "b", "a", "b", None]
    return [(k, (lambda n=n: n)) for k, n in zip(keys, names, strict=True)]


def _order(todo):
    return [precompute._pop_next(todo)() for _ in range(len(todo))]


def test_the_walk_keeps_its_order_until_a_visitor_looks_at_a_study():
    assert _order(_todo()) == ["a1", "a2", "b1", "a3", "b2", None]


def test_the_study_looked_at_goes_first_its_jobs_in_their_order():
    todo = _todo()
    first = precompute._pop_next(todo)()  # a1: before anyone looked
    precompute.focus("b")
    assert [first, *_order(todo)] == ["a1", "b1", "b2", "a2", "a3", None]


def test_the_last_study_looked_at_wins_and_an_empty_pick_changes_nothing():
    todo = _todo()
    precompute.focus("b")
    precompute.focus(None)
    assert precompute._pop_next(todo)() == "b1"
    precompute.focus("a")
    assert precompute._pop_next(todo)() == "a1"
    precompute.focus("unknown")  # a study the walk has no job of: the default order
    assert precompute._pop_next(todo)() == "a2"


def test_walk_steps_tag_swissmetro_jobs_and_keep_tree_explorer_first(monkeypatch):
    monkeypatch.setattr(precompute, "_steps", lambda s: [f"{s}-{i}" for i in range(5)])
    monkeypatch.setattr(precompute.results, "is_default_root", lambda root: False)

    class Swiss:
        def respondents(self):
            return list(range(1000))

    swiss = Swiss()
    out = precompute._walk_steps([("train", "T"), ("swissmetro", swiss)])
    keys = [k for k, _ in out]
    assert keys[:6] == ["train"] * 3 + ["swissmetro"] * 3
    assert keys[6:] == ["train"] * 2 + ["swissmetro"] * 4  # + hierarchy and segments
    assert [s for _, s in out[:3]] == ["T-0", "T-1", "T-2"]
