"""The background walk of the bundled studies' first-visit jobs (dashboard._services.precompute)."""

from __future__ import annotations

import pytest

from dashboard._services import jobs, precompute


@pytest.fixture(autouse=True)
def _no_focus():
    precompute._FOCUS.clear()
    yield
    precompute._FOCUS.clear()


def _todo(ran, blocked=()):
    names = ["a1", "a2", "b1", "a3", "b2", None]
    keys = ["a", "a", "b", "a", "b", None]

    def step(n):
        if n in blocked:
            return precompute.BLOCKED
        ran.append(n)
        return None

    return [(k, (lambda n=n: step(n))) for k, n in zip(keys, names, strict=True)]


def _walk(todo):
    while todo:
        assert precompute._run_next(todo)


def test_the_walk_keeps_its_order_until_a_visitor_looks_at_a_study():
    ran = []
    _walk(_todo(ran))
    assert ran == ["a1", "a2", "b1", "a3", "b2", None]


def test_the_study_looked_at_goes_first_its_jobs_in_their_order():
    ran = []
    todo = _todo(ran)
    precompute._run_next(todo)  # a1: before anyone looked
    precompute.focus("b")
    _walk(todo)
    assert ran == ["a1", "b1", "b2", "a2", "a3", None]


def test_the_last_study_looked_at_wins_and_an_empty_pick_changes_nothing():
    ran = []
    todo = _todo(ran)
    precompute.focus("b")
    precompute.focus(None)
    precompute._run_next(todo)
    precompute.focus("a")
    precompute._run_next(todo)
    precompute.focus("unknown")  # a study the walk has no job of: the default order
    precompute._run_next(todo)
    assert ran == ["b1", "a1", "a2"]


def test_a_blocked_step_waits_while_the_others_go_on():
    ran, blocked = [], {"a2"}
    todo = _todo(ran, blocked)
    for _ in range(5):
        assert precompute._run_next(todo)
    assert ran == ["a1", "b1", "a3", "b2", None]
    assert not precompute._run_next(todo)  # only the blocked one is left
    blocked.clear()
    assert precompute._run_next(todo) and ran[-1] == "a2" and not todo


def test_steps_run_at_background_priority_and_a_visitor_job_is_not_waited_for(monkeypatch):
    seen = []

    class FakeJob(jobs.Job):
        @property
        def done(self):
            seen.append(("waited", self.key))
            return True

    def step(key, priority=None):
        prio = jobs._DEFAULT.priority if priority is None else priority
        seen.append(("submitted", key, prio))
        return FakeJob(key, key, print, (), priority=prio)

    todo = [("a", lambda: step("bg")), ("a", lambda: step("visitor", jobs.VISITOR))]
    precompute._run_next(todo)
    precompute._run_next(todo)
    assert seen == [
        ("submitted", "bg", jobs.BACKGROUND),
        ("waited", "bg"),
        ("submitted", "visitor", jobs.VISITOR),
    ]
    # a job the walk waits for stops holding it up once a visitor asks for it
    running = jobs.Job("p", "p", print, (), priority=jobs.BACKGROUND, state="running")
    running.priority = jobs.VISITOR
    precompute._background(running)  # returns at once: not done, a visitor's now


def test_walk_steps_tag_swissmetro_jobs_and_keep_tree_explorer_first(monkeypatch):
    monkeypatch.setattr(
        precompute, "_steps", lambda s: ([f"{s}-e{i}" for i in range(3)], [f"{s}-s"])
    )
    monkeypatch.setattr(precompute.results, "is_default_root", lambda root: False)

    class Swiss:
        def __str__(self):
            return "S"

        def respondents(self):
            return list(range(1000))

    out = precompute._walk_steps([("train", "T"), ("swissmetro", Swiss())])
    keys = [k for k, _ in out]
    # explorer jobs, SwissMetro's hierarchy and segments, then the sensitivity jobs
    assert keys == ["train"] * 3 + ["swissmetro"] * 3 + ["swissmetro"] * 2 + ["train", "swissmetro"]
    assert [s for _, s in out[:4]] == ["T-e0", "T-e1", "T-e2", "S-e0"]
    assert [s for _, s in out[8:]] == ["T-s", "S-s"]


def test_the_fit_waits_for_the_comparison_and_the_ablation_for_the_scoring(monkeypatch):
    """The winner's fit is BLOCKED until the comparison is done, then fits the winner when
    it is a pooled tree; the ablation waits for the baseline scoring."""
    from data_loaders.cached import load_study_cached
    from pbo_core.registry import get

    study = load_study_cached("electricity", None)

    class Pending:
        done, result = False, None

    class Done:
        done = True

        def __init__(self, result):
            self.result = result

    class Choice:
        def __init__(self, best):
            self.best = best

    fitted = []
    monkeypatch.setattr(precompute.trees, "fit_job", lambda s, m, p: fitted.append(m) or m)
    explorer, sensitivity = precompute._steps(study)
    assert explorer[2]() == "dt-linear"  # the richest pooled tree, beside the comparison
    fitted.clear()
    monkeypatch.setattr(precompute.trees, "choice_job", lambda *a: Pending())
    assert explorer[3]() is precompute.BLOCKED
    monkeypatch.setattr(precompute.trees, "choice_job", lambda *a: Done(Choice("dt-linear")))
    assert explorer[3]() == "dt-linear"
    monkeypatch.setattr(precompute.trees, "choice_job", lambda *a: Done(Choice("dt")))
    assert explorer[3]() is None and fitted == ["dt-linear"]  # a personal tree: no fit
    ablated = []
    monkeypatch.setattr(precompute.analyses, "sensitivity_job", lambda *a: ablated.append(a[-1]))
    monkeypatch.setattr(precompute.analyses, "best_baseline_job", lambda *a: Pending())
    _scoring, *ablations = sensitivity
    assert all(step() is precompute.BLOCKED for step in ablations)  # the scoring first
    assert ablated == []
    monkeypatch.setattr(precompute.analyses, "best_baseline_job", lambda *a: Done("logit-shrink"))
    for step in ablations:
        assert step() is not precompute.BLOCKED
    plan = precompute.sensitivity_defaults(study)
    assert ablated == precompute.analyses.default_sensitivity_methods(study, plan, "logit-shrink")
    assert "logit-shrink" in ablated  # the best baseline on the split, by the accuracy rule
    assert ablated[-1] == "mnl" and get("mnl").family == "baseline"  # the plan's baseline


def test_a_study_picked_on_a_page_is_focused_but_not_on_live_elicitation(app, quick_dt_linear):
    """The walk follows the study an analyst opens (Case studies, Tree explorer, ...), not
    the one a room answers on (Live elicitation keeps the cores for the answers)."""
    at = app(sel_study="electricity")  # Case studies, the first page
    assert precompute._FOCUS == ["electricity"]
    precompute._FOCUS.clear()
    at.switch_page("views/elicitation.py").run()
    assert not at.exception and precompute._FOCUS == []
