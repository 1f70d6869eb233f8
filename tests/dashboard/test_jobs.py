"""The job service: work in worker processes with progress, cancellation, on disk."""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path

import pandas as pd
import pytest

from dashboard import _work, _workers
from dashboard._services import jobs
from data_loaders.registry import load_study
from pbo_core.experiments import tree_choice
from tests.dashboard._shown import shown
from tests.fixtures import job_bodies


@pytest.fixture(scope="module")
def workers():
    """One job service for the module (its two worker processes start once)."""
    s = jobs.JobService()
    yield s
    s.close()  # the workers and the watchdog thread


@pytest.fixture
def service(workers, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("DTPBO_JOBS", raising=False)  # worker processes, not inline
    return workers


def _until(cond, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def test_a_comparison_runs_in_a_worker_reports_progress_and_is_read_back_from_disk(
    service,
) -> None:
    study = load_study("train")
    key = jobs.job_key("choice", tree_choice.study_fingerprint(study), "test", 6)
    args = (study, ["dt", "dt-pooled"], ("logit-pooled",), 6)
    job = service.submit(key, "comparing", tree_choice.compare_trees, *args)
    assert service.submit(key, "again", tree_choice.compare_trees, *args) is job  # one job
    seen = set()
    while not job.done:
        seen.add(round(job.fraction, 3))
        time.sleep(0.01)
    choice = job.wait(1)
    same = tree_choice.compare_trees(*args)
    pd.testing.assert_frame_equal(choice.table, same.table)
    assert choice.best == same.best and job.fraction == 1.0 and not job.from_disk
    assert len(seen) >= 2 and job.elapsed() > 0
    # a restarted server (a new service) reads the result from the disk at once
    path = jobs.cache_dir() / "choice" / f"{key}.pkl"
    assert path.is_file()
    again = jobs.JobService().submit(key, "comparing", tree_choice.compare_trees, *args)
    assert again.state == "done" and again.from_disk
    pd.testing.assert_frame_equal(again.result.table, choice.table)
    # other code, other key: never read back
    assert jobs.job_key("choice", "x") != jobs.job_key("choice", "y")


def test_progress_eta_cancel_and_a_new_worker(service) -> None:
    job = service.submit("t-steps", "stepping", job_bodies.steps, 40, 0.1, estimate=4.0)
    _until(lambda: job.fraction >= 0.1)
    assert job.state == "running" and "step" in job.step
    assert 0.0 < job.eta() < 30.0
    pid = next(w.process.pid for w in service._workers if w.job is job)
    service.cancel("t-steps")
    assert job.state == "cancelled"
    with pytest.raises(RuntimeError, match="cancelled"):
        job.wait(1)
    # a cancelled job stays so (the page offers to start again) until forgotten
    assert service.submit("t-steps", "stepping", job_bodies.steps, 1, 0.0) is job
    service.forget("t-steps")
    fresh = service.submit("t-steps", "stepping", job_bodies.steps, 1, 0.0)
    assert fresh is not job and fresh.wait(120) != pid


def test_a_dead_worker_fails_its_job_and_is_replaced(service) -> None:
    dying = service.submit("t-die", "dying", job_bodies.die, cached=False)
    with pytest.raises(RuntimeError, match="stopped"):
        dying.wait(120)
    failing = service.submit("t-fail", "failing", job_bodies.fail, cached=False)
    with pytest.raises(ValueError, match="no good"):
        failing.wait(120)
    ok = service.submit("t-ok", "ok", job_bodies.steps, 1, 0.0, cached=False)
    assert ok.wait(120) != os.getpid()


def test_no_worker_is_started_once_the_workers_are_killed(monkeypatch) -> None:
    """The server's SIGTERM kills the workers; each worker's reader then notices its end
    and asks for the queue to be served, which used to spawn two new workers while the
    server exited (each left "EOFError: Ran out of input" in the log)."""
    import multiprocessing

    monkeypatch.delenv("DTPBO_JOBS", raising=False)
    s = jobs.JobService()
    s._dispatch()  # its two workers
    first = list(s._workers)
    assert len(first) == 2
    before = set(multiprocessing.active_children())  # other services' workers too
    s.kill_workers()
    for w in first:
        w._reader.join(60)  # each reader saw its worker end
        assert not w._reader.is_alive()
    assert [w for w in s._workers if not w.dead] == []
    spawned = set(multiprocessing.active_children()) - before
    assert not [p for p in spawned if p.name == "dtpbo-jobs"], spawned


def test_a_job_over_its_memory_or_time_budget_is_stopped_with_a_sentence(
    service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog stops a worker over the operator's memory or time budget; the job
    fails with a JobLimitError naming the budget and its setting; a fresh worker runs the
    next job."""
    ready = service.submit("t-ready", "ready", job_bodies.steps, 1, 0.0, cached=False)
    ready.wait(120)
    base = max(jobs._rss_mb(w.process.pid) for w in service._workers if not w.dead)
    assert base > 10  # the worker's own resident memory, read from /proc
    monkeypatch.setenv("DTPBO_JOB_MEMORY_MB", f"{base + 150:.0f}")
    big = service.submit("t-big", "Holding 600 MB", job_bodies.hold, 600, 60.0, cached=False)
    with pytest.raises(jobs.JobLimitError) as exc:
        big.wait(120)
    msg = str(exc.value)
    assert msg.startswith("Holding 600 MB needed more than") and "DTPBO_JOB_MEMORY_MB" in msg
    assert big.elapsed() < 30 and msg.count(". ") == 0 and msg.endswith(".")
    small = service.submit("t-small", "small", job_bodies.hold, 20, 0.0, cached=False)
    assert small.wait(120) == 20 * 10**6  # within the budget
    monkeypatch.delenv("DTPBO_JOB_MEMORY_MB")
    monkeypatch.setenv("DTPBO_JOB_SECONDS", "1")
    slow = service.submit("t-slow", "Stepping", job_bodies.steps, 600, 0.1, cached=False)
    with pytest.raises(jobs.JobLimitError, match=r"took longer than 1 s, .*DTPBO_JOB_SECONDS"):
        slow.wait(120)
    assert 1.0 <= slow.elapsed() < 10.0
    monkeypatch.delenv("DTPBO_JOB_SECONDS")
    assert service.submit("t-after", "ok", job_bodies.steps, 1, 0.0, cached=False).wait(120)


def test_a_visitors_job_is_cancelled_when_every_tab_asking_for_it_has_closed(
    service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A visitor's job goes on while a tab that asked for it is connected (a page switch
    keeps the tab's session), is cancelled ABANDON_S seconds after the last one closed, and
    starts anew when asked for again; a background job is never abandoned."""
    tabs = {"tab-1": True, "tab-2": True}
    asking = ["tab-1"]
    monkeypatch.setattr(jobs, "_session_id", lambda: asking[0])
    monkeypatch.setattr(jobs, "_session_active", lambda sid: tabs.get(sid, False))
    monkeypatch.setenv("DTPBO_JOB_ABANDON_SECONDS", "0.5")
    job = service.submit("t-tabs", "stepping", job_bodies.steps, 600, 0.1, cached=False)
    asking[0] = "tab-2"  # a second visitor asks for the same job
    assert service.submit("t-tabs", "stepping", job_bodies.steps, 600, 0.1) is job
    assert job.watchers == {"tab-1", "tab-2"}
    _until(lambda: job.state == "running")
    tabs["tab-1"] = False
    time.sleep(4 * jobs.WATCH_EVERY_S + 0.5)
    assert job.state == "running"  # tab 2 still waits for it
    tabs["tab-2"] = False
    _until(lambda: job.done, timeout=30)
    assert job.state == "cancelled" and job.abandoned
    tabs["tab-2"] = True  # the visitor comes back: the job starts again
    again = service.submit("t-tabs", "stepping", job_bodies.steps, 1, 0.0, cached=False)
    assert again is not job and again.wait(120) != os.getpid()
    # background work (the precompute) has no tab to wait for it
    tabs.clear()
    bg = service.submit(
        "t-tabs-bg", "bg", job_bodies.steps, 20, 0.1, priority=jobs.BACKGROUND, cached=False
    )
    assert not bg.watchers
    assert bg.wait(120) != os.getpid() and bg.state == "done"


def test_background_jobs_run_below_the_server_and_leave_a_worker_free(service) -> None:
    """A visitor's job runs at the server's priority; background jobs only in the second
    worker, below it, so a visitor's job never queues behind them."""
    here = os.nice(0)
    visitor_nice = service.submit("t-nice", "nice", job_bodies.niceness, cached=False)
    assert visitor_nice.wait(120) == here
    bg = [
        service.submit(f"t-bg{i}", "bg", job_bodies.steps, 600, 0.1, priority=jobs.BACKGROUND)
        for i in range(2)
    ]
    _until(lambda: bg[0].state == "running")
    assert bg[1].state == "queued"  # one background job at a time
    visitor = service.submit("t-visitor", "visitor", job_bodies.steps, 1, 0.0)
    visitor.wait(60)  # not behind the background jobs
    assert bg[1].state == "queued"
    service.cancel(bg[0].key)
    _until(lambda: bg[1].state == "running")
    # a visitor now waits for the running background job: it goes on at the server's
    # priority (root may raise a process's priority; others keep the background one)
    _until(lambda: bg[1].started is not None)  # the worker has niced itself
    worker = next(w for w in service._workers if w.job is bg[1])
    assert os.getpriority(os.PRIO_PROCESS, worker.process.pid) > here
    assert service.submit(bg[1].key, "bg", job_bodies.steps, 600, 0.1) is bg[1]
    if os.geteuid() == 0:
        assert os.getpriority(os.PRIO_PROCESS, worker.process.pid) == here
    low = service.submit("t-nice-bg", "nice", job_bodies.niceness, priority=jobs.BACKGROUND)
    service.cancel(bg[1].key)
    assert low.wait(120) == min(19, here + _workers.niceness())


def test_inline_mode_runs_in_the_calling_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DTPBO_JOBS", "inline")
    s = jobs.JobService()
    job = s.submit("t-inline", "inline", job_bodies.steps, 2, 0.0, cached=False)
    assert job.state == "done" and job.result == os.getpid() and job.step == "step 2 of 2"


def _stepped(cell: dict, callback=None) -> pd.DataFrame:
    """A run of ``cell["iters"] + 1`` steps, each reported to ``callback``."""
    for k in range(cell["iters"] + 1):
        if callback is not None:
            callback(k, None)
    return pd.DataFrame({"seed": [cell["seed"]]})


def test_a_grid_job_reports_runs_and_the_steps_within_them(tmp_path) -> None:
    """The grid body (the Convergence page's runs, the default grids): one report a run,
    and with ``steps`` one a step of each run; finished runs are skipped."""
    cells = [{"seed": s, "iters": 3} for s in range(2)]
    seen: list[tuple[float, str]] = []
    out = _work.grid(
        cells, _stepped, str(tmp_path), "runs", steps=4, progress=lambda f, s: seen.append((f, s))
    )
    assert out == str(tmp_path) and len(list(tmp_path.glob("cell-*.parquet"))) == 2
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert ("runs: run 1 of 2, query 1 of 3") in [s for _, s in seen]
    assert fractions[[s for _, s in seen].index("runs: run 1 of 2, query 1 of 3")] == 0.25
    seen.clear()
    _work.grid(cells, _stepped, str(tmp_path), "runs", progress=lambda f, s: seen.append((f, s)))
    assert seen == [(1.0, "runs: 2 of 2 runs")]  # both on disk: nothing run


def test_a_jobs_end_is_logged_for_debugging_with_its_times(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``DTPBO_LOG_LEVEL=DEBUG``: every job's end, how long it ran and waited (the
    timeline behind the benchmarks' waits); nothing at the default level."""
    monkeypatch.setenv("DTPBO_JOBS", "inline")
    with caplog.at_level(logging.INFO, logger="dtpbo.jobs"):
        jobs.JobService().submit("t-quiet", "quiet", job_bodies.steps, 1, 0.0, cached=False)
    assert not caplog.records
    with caplog.at_level(logging.DEBUG, logger="dtpbo.jobs"):
        jobs.JobService().submit("t-log", "Logged job", job_bodies.steps, 2, 0.0, cached=False)
    (line,) = [r.getMessage() for r in caplog.records]
    assert re.fullmatch(
        r"job done: t-log in \d+\.\d\d s after \d+\.\d\d s queued \(priority \d\): Logged job",
        line,
    )


def test_many_items_are_named_in_a_job_whose_texts_the_pages_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above ``BIG_ITEMS`` items the names are a job (inline here); its texts fill the
    caches the Tree explorer reads, equal to naming the items at once."""
    from dashboard._services import trees
    from pbo_core.explain import naming

    monkeypatch.setenv("DTPBO_JOBS", "inline")
    study = load_study("electricity")  # 35 items
    assert trees.texts_job(study, None) is None  # few: named on the page
    monkeypatch.setattr(trees, "BIG_ITEMS", 10)
    trees._TEXTS.clear()
    job = trees.texts_job(study, None)
    assert job is not None and job.state == "done"
    data = study.data
    cache = trees._TEXTS[id(data)][1]
    assert {("labels", 70), ("names", 44), ("names", 60), "attributes"} <= set(cache)
    assert trees.item_labels(data) == naming.item_labels(data, 70)
    assert trees.data_item_names(data, 60) == naming.item_names(data, 60)
    assert list(cache["attributes"]["item"]) == list(data.ids())


_ORPHAN = """
import multiprocessing, os, time
from dashboard import _workers

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    p = ctx.Process(target=_workers.serve, args=(theirs, 0))
    p.start()
    ours.send((1, os.getpid, (), {}, False))
    assert ours.recv() == ("start", 1)
    assert ours.recv() == ("done", 1, True, p.pid)  # the worker serves
    ours.send((2, time.sleep, (120,), {}, False))  # a long job in progress
    print(p.pid, flush=True)
    time.sleep(1.0)
    os._exit(0)  # the server ends without stopping its worker
"""


def test_a_worker_whose_server_is_gone_ends(tmp_path) -> None:
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "orphan.py"
    script.write_text(_ORPHAN)
    env = dict(os.environ, PYTHONPATH=str(root))
    with (tmp_path / "out").open("w") as out:  # not a pipe: the worker would hold it open
        subprocess.run([sys.executable, str(script)], stdout=out, env=env, timeout=300)
    pid = int((tmp_path / "out").read_text().split()[0])
    deadline = time.monotonic() + 60.0  # a hang guard, not a speed claim
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail("the orphaned worker was still running a minute after its server ended")


class _Clock:
    """A clock that moves only when slept on (``time.monotonic`` and ``time.sleep``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_background_work_waits_for_a_quiet_moment_between_answers(monkeypatch) -> None:
    """The precompute's next job waits until no answer has arrived for a while."""
    clock = _Clock()
    monkeypatch.setattr(jobs, "time", clock)
    monkeypatch.setattr(jobs, "_LAST_ANSWER", [float("-inf")])
    assert jobs.wait_for_quiet(quiet=0.3) == 0.0  # no answer yet: at once
    jobs.note_answer()
    clock.sleep(0.1)
    assert jobs.wait_for_quiet(quiet=0.4) == pytest.approx(0.3)  # the rest of the 0.4 s
    jobs.note_answer()
    clock.sleep(0.5)
    assert jobs.wait_for_quiet(quiet=0.4) == 0.0  # quiet long enough already


@pytest.mark.skipif(os.geteuid() != 0, reason="raising a worker's priority needs root")
def test_a_promoted_background_worker_swaps_roles_with_an_idle_front_worker(service) -> None:
    """When a visitor waits for the job running in the background worker and the front
    worker is idle, the two swap roles: the next background job starts at once in the
    former front worker, below the server's priority, not after the visitor's job."""
    here = os.nice(0)
    bg = service.submit("t-swap", "bg", job_bodies.steps, 600, 0.1, priority=jobs.BACKGROUND)
    _until(lambda: bg.started is not None)
    old_front = next(w for w in service._workers if not w.background)
    assert old_front.job is None
    assert service.submit("t-swap", "bg", job_bodies.steps, 600, 0.1) is bg  # a visitor
    worker = next(w for w in service._workers if w.job is bg)
    assert not worker.background and old_front.background
    low = service.submit("t-swap-low", "nice", job_bodies.niceness, priority=jobs.BACKGROUND)
    assert low.wait(60) == min(19, here + _workers.niceness())  # while bg still runs
    assert bg.state == "running"
    service.cancel(bg.key)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="Linux threads only")
def test_set_priority_reaches_every_thread_of_a_worker(tmp_path, monkeypatch) -> None:
    """A worker's threads (the kernels' thread pool) follow its role: niceness and the idle
    class are set on each of them, not on its main thread alone; ``DTPBO_JOB_IDLE=0``
    keeps them in the normal class."""
    import subprocess
    import sys

    monkeypatch.setenv("DTPBO_JOB_IDLE", "1")  # the server's default

    code = (
        "import threading, time\n"
        "for _ in range(2): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "print('up', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
        tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
        assert len(tids) >= 3
        here = os.getpriority(os.PRIO_PROCESS, 0)
        _workers.set_priority(child.pid, min(19, here + 7), True)
        for tid in tids:
            assert os.getpriority(os.PRIO_PROCESS, tid) == min(19, here + 7)
            if hasattr(os, "SCHED_IDLE"):
                assert os.sched_getscheduler(tid) == os.SCHED_IDLE
        monkeypatch.setenv("DTPBO_JOB_IDLE", "0")
        _workers.set_priority(child.pid, min(19, here + 7), True)
        for tid in tids:
            assert os.getpriority(os.PRIO_PROCESS, tid) == min(19, here + 7)
            if hasattr(os, "SCHED_OTHER"):
                assert os.sched_getscheduler(tid) == os.SCHED_OTHER
    finally:
        child.kill()
        child.wait()


def test_a_failed_or_cancelled_job_is_started_afresh_for_the_next_visitor(
    service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job stopped at its budget, killed with its worker or cancelled is no answer for
    anyone else: the tab that saw it end keeps it (its sentence and "Try again"), the
    background precompute too (no retry loop), a fresh browser tab starts it afresh."""
    asking: list[str | None] = ["tab-1"]
    monkeypatch.setattr(jobs, "_session_id", lambda: asking[0])

    def ended(key: str, start) -> jobs.Job:
        asking[0] = "tab-1"
        job = start(key)
        _until(lambda: job.done)
        assert job.state in ("failed", "cancelled")
        assert service.submit(key, "again", job_bodies.steps, 1, 0.0) is job  # seen it end
        asking[0] = None  # the background walk: the job as it is
        assert service.submit(key, "again", job_bodies.steps, 1, 0.0) is job
        asking[0] = "tab-2"  # a new visitor: afresh
        fresh = service.submit(key, "again", job_bodies.steps, 1, 0.0, cached=False)
        assert fresh is not job and fresh.wait(120) != os.getpid() and fresh.state == "done"
        assert service.get(key) is fresh
        asking[0] = "tab-1"  # the first tab now finds the fresh job's result too
        assert service.submit(key, "again", job_bodies.steps, 1, 0.0) is fresh
        return job

    # a worker killed under its job
    died = ended("t-afresh-die", lambda k: service.submit(k, "dying", job_bodies.die, cached=False))
    assert isinstance(died.error, jobs.WorkerLostError)
    assert str(died.error).startswith("dying stopped: its worker process ended before it finished")

    # the time budget
    def over_budget(key: str) -> jobs.Job:
        monkeypatch.setenv("DTPBO_JOB_SECONDS", "1")
        return service.submit(key, "Stepping", job_bodies.steps, 600, 0.1, cached=False)

    slow = ended("t-afresh-slow", over_budget)
    assert isinstance(slow.error, jobs.JobLimitError)
    monkeypatch.delenv("DTPBO_JOB_SECONDS")

    # cancelled by its visitor
    def cancelled(key: str) -> jobs.Job:
        job = service.submit(key, "Stepping", job_bodies.steps, 600, 0.1, cached=False)
        _until(lambda: job.state == "running")
        service.cancel(key)
        return job

    assert ended("t-afresh-cancel", cancelled).state == "cancelled"


def test_the_tree_explorer_says_a_failed_comparison_and_offers_to_try_again(
    app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The held-out comparison that picks the Tree explorer's model stopped at its budget:
    the page draws the paper DT with the budget's sentence and "Try again" (not "Something
    went wrong"), Case studies opens; the next browser tab starts the comparison afresh,
    the tab that saw it fail keeps the sentence until "Try again"."""
    from dashboard._services import trees

    monkeypatch.delenv("DTPBO_NO_TREE_CHOICE")  # the comparison starts with the page
    sentence = (
        "Comparing the tree models took longer than 1 s, this server's budget for one "
        "computation (DTPBO_JOB_SECONDS), and was stopped: choose fewer respondents or a "
        "smaller study."
    )
    calls: list[str] = []

    def over_budget(*args, progress) -> None:
        calls.append("compare")
        raise jobs.JobLimitError(sentence)

    monkeypatch.setattr(trees, "compare_models", over_budget)
    asking = ["tab-1"]
    monkeypatch.setattr(jobs, "_session_id", lambda: asking[0])

    at = app("tree_explorer", sel_study="electricity")
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any(sentence in shown(e) for e in errors), errors
    assert not any("Something went wrong" in shown(e) for e in errors), errors
    assert at.button(key="te_choice::retry").label == "Try again"
    assert at.metric[0].label == "Leaves"  # the paper DT is drawn meanwhile
    assert calls == ["compare"]
    at.run()  # the same tab: the sentence again, no new start
    assert calls == ["compare"] and any(sentence in shown(e.value) for e in at.error)
    cs = app("case_studies", sel_study="electricity")  # the study's page opens too
    assert not cs.exception, [e.value for e in cs.exception]
    assert calls == ["compare"]

    asking[0] = "tab-2"  # a fresh browser on the same study: started afresh
    app("tree_explorer", sel_study="electricity")
    assert calls == ["compare", "compare"]

    asking[0] = "tab-1"  # the first tab's "Try again": started afresh for it too
    at.button(key="te_choice::retry").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls == ["compare", "compare", "compare"]
