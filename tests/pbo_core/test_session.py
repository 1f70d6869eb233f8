"""Tests of pbo_core.session: live elicitation sessions and the dashboard's analyses."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest

from pbo_core.data import TRUE_UTILITY, Feature, Schema
from pbo_core.loop import run_pbo
from pbo_core.models.dt import DTSurrogate
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy
from pbo_core.session import ElicitationSession, ReplayTimeout, study_item_set
from tests.pbo_core.study_fixtures import small_items, toy_study


def answer_truthfully(s: ElicitationSession, n: int) -> None:
    for _ in range(n):
        s.answer(s.oracle_winner())


# ----------------------------------------------------------------------------- basics
def test_finite_session_finds_the_best_item() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=0)
    assert s.n_answers == 0 and not s.can_undo
    answer_truthfully(s, 25)
    assert s.n_answers == 25
    assert s.recommendation == int(np.argmax(u))
    assert s.regret() == 0.0
    # the model is the strategy's fitted DT over all items
    assert isinstance(s.model, DTSurrogate) and s.is_tree
    assert s.model.item_leaf_.shape == (12,)
    assert len(s.explanation()) >= 1  # the favourite's leaf has conditions


def test_pairs_record_winner_then_loser_and_query_sides() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=1)
    q = s.next_query()
    assert q.index_a is not None and q.index_b is not None and q.index_a != q.index_b
    assert s.next_query() is q  # pending until answered
    ans = s.answer("B")
    assert (ans.winner, ans.loser) == (q.index_b, q.index_a)
    assert s.pairs.tolist() == [[q.index_b, q.index_a]]
    assert s.history[0].winner_side == 1
    with pytest.raises(ValueError, match="'A' or 'B'"):
        s.answer("C")
    with pytest.raises(ValueError, match="0 \\(A\\) or 1 \\(B\\)"):
        s.answer(2)


def test_same_seed_and_answers_give_the_same_questions() -> None:
    X, schema, u = small_items()
    runs = []
    for _ in range(2):
        s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=7)
        asked = []
        for k in range(10):
            q = s.next_query()
            asked.append((q.index_a, q.index_b))
            s.answer(k % 2)  # answers independent of the truth
        runs.append(asked)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("kind", ["items", "branin"])
def test_session_asks_what_run_pbo_asks(kind: str) -> None:
    """With truthful answers a session is the PBO loop: same questions, same favourites."""
    if kind == "items":
        X, schema, u = small_items()
        problem = Problem.from_items("toy", X, u, schema)
        n_init = 2
    else:
        from pbo_core.benchmarks import get_benchmark

        problem = Problem.from_benchmark(get_benchmark("branin"))
        n_init = 3
    res = run_pbo(problem, make_strategy("dt"), n_init=n_init, n_iter=15, seed=3)
    s = ElicitationSession(problem, "dt", seed=3, n_init=n_init)
    recs = []
    for _ in range(n_init):
        s.answer(s.oracle_winner())
    recs.append(s.recommendation)
    for _ in range(15):
        s.answer(s.oracle_winner())
        recs.append(s.recommendation)
    np.testing.assert_array_equal(s.pairs, res.pairs)
    np.testing.assert_allclose(s.X, res.X)
    assert recs == res.recommendation.tolist()


def test_undo_restores_the_question_and_the_model() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=2)
    answer_truthfully(s, 6)
    before_pred = s.predict().copy()
    before_leaves = s.model.n_leaves_
    q = s.next_query()
    s.answer(1 - s.oracle_winner(q))  # a "wrong" answer
    assert s.n_answers == 7
    undone = s.undo()
    assert undone.query is q
    assert s.n_answers == 6
    assert s.next_query() is not None
    np.testing.assert_array_equal(s.next_query().a, q.a)
    np.testing.assert_array_equal(s.next_query().b, q.b)
    np.testing.assert_allclose(s.predict(), before_pred)
    assert s.model.n_leaves_ == before_leaves
    # answering again continues exactly as a session that never had the wrong answer
    ref = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=2)
    answer_truthfully(ref, 6)
    answer_truthfully(ref, 3)
    answer_truthfully(s, 3)
    np.testing.assert_array_equal(ref.pairs, s.pairs)


def test_undo_at_the_start_raises() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u)
    with pytest.raises(IndexError, match="nothing to undo"):
        s.undo()


def test_items_with_equal_features_keep_their_own_utilities() -> None:
    schema = Schema((Feature("x", "numeric", bounds=(0.0, 1.0)),))
    X = np.array([[0.0], [0.0], [1.0]])  # items 0 and 1 look the same
    s = ElicitationSession.for_items(X, schema, "dt", utilities=np.array([5.0, 0.0, 1.0]))
    for _ in range(3):
        q = s.next_query()
        u = s.item_utilities[[q.index_a, q.index_b]]
        assert s.oracle_winner(q) == (0 if u[0] >= u[1] else 1)
        s.answer(s.oracle_winner(q))
    assert s.regret() == 5.0 - s.item_utilities[s.recommendation]


def test_unknown_truth_refuses_simulated_answers() -> None:
    X, schema, _ = small_items()
    s = ElicitationSession.for_items(X, schema, "dt")
    assert not s.has_truth
    assert np.isnan(s.regret())
    with pytest.raises(RuntimeError, match="unknown"):
        s.oracle_winner()
    s.answer("A")
    assert s.n_answers == 1


def test_unknown_method_and_bad_inputs() -> None:
    X, schema, u = small_items()
    with pytest.raises(KeyError, match="unknown method"):
        ElicitationSession.for_items(X, schema, "nope", utilities=u)
    with pytest.raises(ValueError, match="item ids"):
        ElicitationSession.for_items(X, schema, "dt", item_ids=["a"])


# ----------------------------------------------------------------------------- continuous
def test_benchmark_session_adds_points_inside_the_box() -> None:
    s = ElicitationSession.for_benchmark("branin", "dt", seed=0)
    assert len(s.X) == 4  # initial design: 2 pairs of a Latin hypercube
    answer_truthfully(s, 20)
    b = s.schema.bounds
    assert np.all(s.X >= b[:, 0] - 1e-12) and np.all(s.X <= b[:, 1] + 1e-12)
    assert len(s.pairs) == 20
    assert s.regret() < 30.0
    assert s.model.n_leaves_ >= 2
    # leaf boxes partition the domain
    lower, upper, _ = s.model.tree_.boxes
    leaves = s.model.tree_.leaf_nodes
    area = np.prod(upper[leaves] - lower[leaves], axis=1).sum()
    assert area == pytest.approx(np.prod(b[:, 1] - b[:, 0]))


def test_gp_session_runs_on_items_and_box() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "gp", utilities=u, seed=0)
    answer_truthfully(s, 5)
    assert not s.is_tree and s.explanation() == ()
    assert s.predict().shape == (12,)
    c = ElicitationSession.for_benchmark("branin", "gp", seed=0)
    answer_truthfully(c, 3)
    assert len(c.pairs) == 3


# ----------------------------------------------------------------------------- tables
def test_to_frame_has_ids_and_readable_features() -> None:
    X, schema, u = small_items()
    ids = np.array([f"item{i}" for i in range(12)])
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, item_ids=ids, seed=5)
    answer_truthfully(s, 4)
    df = s.to_frame()
    assert list(df.columns[:4]) == ["step", "winner_side", "winner_id", "loser_id"]
    assert {"winner_price", "winner_size", "winner_colour", "loser_colour"} <= set(df.columns)
    assert len(df) == 4
    w = s.pairs[:, 0]
    assert df["winner_id"].tolist() == ids[w].tolist()
    assert set(df["winner_size"]) <= {"S", "M", "L"}  # labels, not codes


@pytest.mark.parametrize("drop_ids", [False, True])
def test_from_frame_round_trip_on_items(drop_ids: bool) -> None:
    X, schema, u = small_items()
    ids = np.arange(100, 112)
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, item_ids=ids, seed=5)
    answer_truthfully(s, 9)
    df = pd.read_csv(pd.io.common.StringIO(s.to_frame().to_csv(index=False)))
    if drop_ids:
        df = df.drop(columns=["winner_id", "loser_id"])
    t = ElicitationSession.from_frame(df, **s.config())
    np.testing.assert_array_equal(t.pairs, s.pairs)
    np.testing.assert_allclose(t.predict(), s.predict())
    assert t.recommendation == s.recommendation
    # undo works through loaded answers; the last loaded question is asked again
    t.undo()
    assert t.n_answers == 8
    q = t.next_query()
    assert {q.index_a, q.index_b} == set(s.pairs[-1].tolist())


def test_replay_stops_at_its_deadline_between_two_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=5)
    answer_truthfully(s, 6)
    table = s.to_frame()
    calls = []
    here, real = threading.get_ident(), time.monotonic

    def clock() -> float:  # the deadline passes before the fourth row
        if threading.get_ident() != here:  # the patch is process-wide: other threads
            return real()  # (e.g. a job service's watchdog) keep the real clock
        calls.append(1)
        return 0.0 if len(calls) <= 3 else 5.0

    monkeypatch.setattr("pbo_core.session.time.monotonic", clock)
    t = ElicitationSession(**s.config())
    with pytest.raises(ReplayTimeout) as info:
        t.replay(table, deadline=1.0)
    assert (info.value.done, info.value.total) == (3, 6) and t.n_answers == 3
    # no deadline: every row
    t = ElicitationSession(**s.config())
    t.replay(table)
    assert t.n_answers == 6


def test_from_frame_round_trip_on_a_benchmark() -> None:
    s = ElicitationSession.for_benchmark("levy", "dt", seed=2)
    answer_truthfully(s, 12)
    text = s.to_frame().to_csv(index=False)
    t = ElicitationSession.from_frame(pd.read_csv(pd.io.common.StringIO(text)), **s.config())
    np.testing.assert_array_equal(t.pairs, s.pairs)
    np.testing.assert_allclose(t.X, s.X, rtol=1e-12)
    np.testing.assert_allclose(t.predict(), s.predict())


def test_from_frame_rejects_foreign_tables() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u)
    with pytest.raises(ValueError, match="winner_id/loser_id or the feature columns"):
        ElicitationSession.from_frame(pd.DataFrame({"a": [1]}), **s.config())
    bad = pd.DataFrame({"winner_id": [0], "loser_id": [99]})
    with pytest.raises(ValueError, match="row 1: item 99 is not one of"):
        ElicitationSession.from_frame(bad, **s.config())
    same = pd.DataFrame({"winner_id": [3], "loser_id": [3]})
    with pytest.raises(ValueError, match="same item"):
        ElicitationSession.from_frame(same, **s.config())


def test_multi_hot_features_survive_the_csv() -> None:
    schema = Schema(
        (
            Feature("flags", "multi_hot", levels=("a", "b", "c")),
            Feature("n", "numeric", bounds=(0.0, 3.0)),
        )
    )
    X = np.array([[1, 0, 0, 0], [1, 1, 0, 1], [0, 0, 1, 2], [0, 1, 1, 3]], dtype=float)
    s = ElicitationSession.for_items(X, schema, "dt", utilities=X.sum(1), seed=0)
    answer_truthfully(s, 4)
    df = s.to_frame()
    assert all(isinstance(v, str) for v in df["winner_flags"])
    t = ElicitationSession.from_frame(
        pd.read_csv(pd.io.common.StringIO(df.drop(columns=["winner_id", "loser_id"]).to_csv())),
        **s.config(),
    )
    np.testing.assert_array_equal(t.pairs, s.pairs)


# ----------------------------------------------------------------------------- helpers


def test_study_item_set_dedupes_and_samples() -> None:
    study = toy_study()
    full = study_item_set(study)
    assert full["X"].shape == (12, 3) and full["utilities"] is None
    part = study_item_set(study, max_items=5, seed=1)
    assert part["X"].shape == (5, 3)
    assert list(part["item_ids"]) == sorted(part["item_ids"])  # original order kept


def test_study_item_set_takes_the_true_utility_the_study_supplies() -> None:
    study = toy_study()
    _, _, u = small_items()
    study.extras[TRUE_UTILITY] = {str(i): float(v) for i, v in enumerate(u)}
    part = study_item_set(study, max_items=5, seed=1)
    assert np.array_equal(part["utilities"], u[part["item_ids"]])
    study.extras[TRUE_UTILITY] = {"0": 1.0}  # not every item known: no ground truth
    assert study_item_set(study)["utilities"] is None


# ----------------------------------------------------------------------------- ties, skips
def test_no_favourite_before_the_first_answer() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=0)
    assert s.favourite is None and s.favourite_trace == []
    s.answer("A")
    assert s.favourite == s.recommendation
    assert [p.n_answers for p in s.favourite_trace] == [1]


def test_a_tie_enters_as_one_comparison_each_way() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=2)
    q = s.next_query()
    ans = s.answer("no preference")
    assert ans.is_tie and ans.action == "tie"
    a, b = q.index_a, q.index_b
    assert s.pairs.tolist() == [[a, b], [b, a]]
    assert s.n_answers == 1 and s.actions == ["tie"]
    assert s.to_frame()["winner_side"].tolist() == ["tie"]
    # a tie on a continuous problem pulls two utilities together
    t = ElicitationSession.for_benchmark("branin", "gp", seed=0)
    t.answer("A")
    q = t.next_query()
    m0 = t.predict(np.vstack([q.a, q.b]))
    t.answer("tie")
    m1 = t.predict(t.X[t.pairs[-1]])
    assert abs(m1[0] - m1[1]) <= abs(m0[0] - m0[1]) + 1e-9


def test_a_tie_is_no_win_for_the_favourite_tie_break() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=2)
    s.answer("tie")
    assert (s._st.last_win == -1).all()


def test_skip_asks_another_question_and_undo_brings_it_back() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=4)
    s.answer("A")
    q = s.next_query()
    pairs = s.pairs.copy()
    assert s.skip() is q
    q2 = s.next_query()
    assert {q2.index_a, q2.index_b} != {q.index_a, q.index_b}
    assert s.pairs.tolist() == pairs.tolist()  # nothing entered the model
    assert s.n_answers == 1 and s.n_skipped == 1 and s.actions == ["A", "skip"]
    s.answer("tie")
    s.undo()  # the tie
    assert s.n_answers == 1 and s.next_query().index_a == q2.index_a
    s.undo()  # the skip
    assert s.n_skipped == 0 and s.actions == ["A"]
    back = s.next_query()
    assert (back.index_a, back.index_b) == (q.index_a, q.index_b)


@pytest.mark.parametrize("kind", ["items", "branin"])
def test_an_action_log_replays_the_session_exactly(kind: str) -> None:
    if kind == "items":
        X, schema, u = small_items()
        s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=5)
    else:
        s = ElicitationSession.for_benchmark("branin", "dt", seed=5)
    for a in ["A", "B", "tie", "skip", "A", "skip", "B", "tie", "A"]:
        s.apply(a)
    r = ElicitationSession(**s.config())
    for a in s.actions:
        r.apply(a)
    assert r.pairs.tolist() == s.pairs.tolist()
    np.testing.assert_allclose(r.X, s.X)
    assert r.favourite == s.favourite and r.favourite_trace == s.favourite_trace
    nq, rq = s.next_query(), r.next_query()
    np.testing.assert_allclose(np.vstack([nq.a, nq.b]), np.vstack([rq.a, rq.b]))


def test_a_table_with_ties_round_trips() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=6)
    for a in ["A", "tie", "B", "skip", "tie"]:
        s.apply(a)
    t = ElicitationSession.from_frame(s.to_frame(), **s.config())
    assert t.pairs.tolist() == s.pairs.tolist() and t.n_answers == 4
    assert t.favourite == s.favourite


def test_the_favourite_trace_records_mean_and_sd_per_answer() -> None:
    X, schema, u = small_items()
    s = ElicitationSession.for_items(X, schema, "dt", utilities=u, seed=0)
    answer_truthfully(s, 12)
    trace = s.favourite_trace
    assert [p.n_answers for p in trace] == list(range(1, 13))
    assert trace[-1].row == s.favourite
    mean, cov = s.model.posterior(s.X[[s.favourite]])
    assert trace[-1].mean == pytest.approx(float(mean[0]))
    assert trace[-1].sd == pytest.approx(float(np.sqrt(cov[0, 0])))
    s.undo()
    assert len(s.favourite_trace) == 11
