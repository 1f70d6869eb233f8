"""The job service: long computations off the page's script, with progress, on disk.

A page that needs something that can take more than a moment (the held-out comparison
of the tree models, a respondent's evidence, leave-one-out sensitivity, the hierarchy's
first fit, the default result grids) submits a :class:`Job` and draws its progress
(``dashboard._progress``) until it is done. The job runs in a worker process
(:func:`dashboard._work.serve`, ``spawn``), so it

* never blocks the page's script or the server's interpreter lock, and goes on when the
  visitor switches pages (the page finds the same job, by its key, when it comes back);
* reports how far it is and what it is doing (``fraction``, ``step``), with an estimate
  of the time left (:meth:`Job.eta`);
* can be cancelled (a queued job is dropped; a running one's worker is stopped and a new
  one starts for the next job);
* leaves its result on disk, per study version: ``$DTPBO_DATA_HOME/cache/jobs/<kind>/
  <key>.pkl`` with the key a hash of the job's kind, its arguments' fingerprint (the
  study's data, :func:`pbo_core.experiments.tree_choice.study_fingerprint`) and the code
  version (:func:`code_version`), so a second visit, another visitor and a restarted
  server read it back at once.

Each job has a budget, the operator's settings: its worker's memory
(``DTPBO_JOB_MEMORY_MB``, default :data:`MEMORY_MB`) and its time
(``DTPBO_JOB_SECONDS``, default :data:`SECONDS`); a watchdog thread samples every running
worker twice a second and stops one over its budget (a fresh worker replaces it), the job
failing with a :class:`JobLimitError` that says which budget and what to do. A visitor's
job is cancelled when every browser tab that asked for it has closed (its Streamlit
sessions gone for :data:`ABANDON_S` seconds; a page switch or a reload keeps it), and
starts again if someone asks for it later. Background jobs are never abandoned.

Two workers: one at the server's priority, one below it (``DTPBO_JOB_NICE``, default
10, and in Linux's idle scheduling class, so it only takes a core nobody else wants: with
16 visitors answering at once while the bundled studies were precomputed, the server's
p95 per answer was 2.7-4.6 s with the niceness alone). A visitor's job that runs there
goes at the server's priority, and when the other worker is idle the two swap roles (it
becomes the background worker), so background work does not wait for the visitor's
job to end. Jobs a visitor waits for (priority 0) take an idle
worker, the first one first; background jobs (priority 1: the bundled studies'
comparisons and defaults computed after the server is ready) run only in the second, so a
visitor's job never queues behind them and never competes with them at equal priority.
Jobs with the same key are one job.

``DTPBO_JOBS=inline`` runs every job at once in the calling thread (tests drive pages
with Streamlit's ``AppTest``, which cannot wait for a worker); the disk cache still
applies.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import itertools
import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dashboard import _server, _work
from data_loaders._common import data_home
from pbo_core import __version__

_LOG = logging.getLogger("dtpbo.jobs")

#: Worker processes (a visitor's job never waits behind background work).
WORKERS = 2
#: Priorities: a visitor waits for it / computed ahead of any visit.
VISITOR, BACKGROUND = 0, 1
#: One job's budgets (defaults of ``DTPBO_JOB_MEMORY_MB`` and ``DTPBO_JOB_SECONDS``): its
#: worker's resident memory in MB and its running time in seconds.
MEMORY_MB, SECONDS = 4096.0, 1200.0
#: Seconds a visitor's job goes on once no browser tab that asked for it is connected
#: (``DTPBO_JOB_ABANDON_SECONDS``).
ABANDON_S = 30.0
#: How often the watchdog samples the workers (seconds).
WATCH_EVERY_S = 0.5
#: Seconds without an answer on Live elicitation before background work starts its next
#: job (:func:`wait_for_quiet`): a room answering at once has both cores.
ANSWER_QUIET_S = 10.0
_LAST_ANSWER = [float("-inf")]


def note_answer() -> None:
    """An answer arrived (Live elicitation): background work waits for a quiet moment."""
    _LAST_ANSWER[0] = time.monotonic()


def wait_for_quiet(quiet: float = ANSWER_QUIET_S, poll: float = 0.25) -> float:
    """Block until no answer has arrived for ``quiet`` seconds; the seconds waited. (The
    precompute calls it before each of its jobs; a job already running goes on, in the
    idle scheduling class.)"""
    t0 = time.monotonic()
    while (left := _LAST_ANSWER[0] + quiet - time.monotonic()) > 0:
        time.sleep(min(poll, left))
    return time.monotonic() - t0


class JobStoppedError(RuntimeError):
    """A job the server stopped or lost before it finished: its message is the one
    sentence a visitor sees (what happened, what to try), with "Try again"."""


class JobLimitError(JobStoppedError):
    """A job stopped at its memory or time budget (the message names it, in one
    sentence a visitor can act on)."""


class WorkerLostError(JobStoppedError):
    """A job's worker process ended before the job did (killed from outside the job
    service, e.g. by the system when memory ran short); the job did not finish."""


def _lost(job: Job) -> WorkerLostError:
    return WorkerLostError(
        f"{job.title} stopped: its worker process ended before it finished (ended from "
        "outside, e.g. by the system when memory ran short); try again, or choose fewer "
        "respondents or a smaller study."
    )


def budget(name: str, default: float) -> float:
    """A positive number from the environment variable ``name``, else ``default``."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def _limit(job: Job, what: str, setting: str) -> JobLimitError:
    return JobLimitError(
        f"{job.title} {what}, this server's budget for one computation ({setting}), and "
        "was stopped: choose fewer respondents or a smaller study."
    )


def _rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MB (10^6 bytes); 0 when unknown."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def _session_id() -> str | None:
    """The Streamlit session (browser tab) running this script, if any."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
    except Exception:
        return None
    return getattr(ctx, "session_id", None) if ctx is not None else None


def _session_active(session_id: str) -> bool:
    """Is that browser tab still connected? (``True`` when there is no Streamlit
    runtime to ask: nothing is cancelled then.)"""
    try:
        from streamlit.runtime import Runtime

        return bool(Runtime.instance().is_active_session(session_id))
    except Exception:
        return True


def inline() -> bool:
    """Are jobs run in the calling thread (``DTPBO_JOBS=inline``; AppTests)?"""
    return os.environ.get("DTPBO_JOBS", "") == "inline"


_CODE_VERSION: list[str] = []


def code_version() -> str:
    """The package version and a hash of the model code (``pbo_core`` and the job
    bodies), so results computed by other code are never read back."""
    if not _CODE_VERSION:
        h = hashlib.sha1(__version__.encode())
        root = Path(__file__).resolve().parents[2]
        files = [*sorted((root / "pbo_core").rglob("*.py")), root / "dashboard" / "_work.py"]
        for f in files:
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _CODE_VERSION.append(f"{__version__}-{h.hexdigest()[:12]}")
    return _CODE_VERSION[0]


def cache_dir() -> Path:
    """Where job results are kept: ``$DTPBO_DATA_HOME/cache/jobs``."""
    return data_home() / "cache" / "jobs"


def job_key(kind: str, *parts: Any) -> str:
    """The key of a job: a hash of its kind, its arguments' fingerprint and the code."""
    h = hashlib.sha1(repr((kind, parts, code_version())).encode())
    return f"{kind}-{h.hexdigest()[:20]}"


@dataclass(eq=False)
class Job:
    """One computation: what it is, how far it is, and its result.

    ``state`` is ``queued``, ``running``, ``done``, ``failed`` or ``cancelled``;
    ``fraction`` (0..1) and ``step`` are the last progress report; ``estimate`` the
    expected seconds (for the time left before the first report).
    """

    key: str
    title: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    estimate: float = 5.0
    priority: int = VISITOR
    cached: bool = True
    state: str = "queued"
    fraction: float = 0.0
    step: str = ""
    submitted: float = field(default_factory=time.monotonic)
    started: float | None = None
    finished: float | None = None
    result: Any = None
    error: BaseException | None = None
    from_disk: bool = False
    #: the Streamlit sessions (browser tabs) that asked for it, and since when none is
    #: connected; ``abandoned``: cancelled for that reason
    watchers: set[str] = field(default_factory=set)
    unwatched_since: float | None = None
    abandoned: bool = False
    _done: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def done(self) -> bool:
        """Finished (successfully, with an error, or cancelled)."""
        return self.state in ("done", "failed", "cancelled")

    def elapsed(self) -> float:
        """Seconds since the job started (0 while queued)."""
        if self.started is None:
            return 0.0
        return (self.finished or time.monotonic()) - self.started

    def eta(self) -> float:
        """Estimated seconds left: from the progress so far once there is some (blended
        with the estimate early on), else the estimate minus the time spent."""
        spent = self.elapsed()
        guess = max(0.0, self.estimate - spent)
        f = min(max(self.fraction, 0.0), 1.0)
        if f <= 0.02 or spent <= 0.0:
            return guess
        rate = spent * (1.0 - f) / f
        return rate if f >= 0.3 else (rate * f + guess * (0.3 - f)) / 0.3

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the job is done; its result (re-raises its error)."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"{self.title}: not done after {timeout} s")
        if self.error is not None:
            raise self.error
        if self.state == "cancelled":
            raise RuntimeError(f"{self.title}: cancelled")
        return self.result

    def _finish(self, state: str, result: Any = None, error: BaseException | None = None) -> None:
        self.state, self.result, self.error = state, result, error
        # a finished job's arguments are never used again (asked for again, a new job
        # starts with the caller's): an upload's bytes or a study must not stay here
        self.args, self.kwargs = (), {}
        self.finished = time.monotonic()
        if state == "done":
            self.fraction = 1.0
        self._done.set()
        _LOG.debug(
            "job %s: %s in %.2f s after %.2f s queued (priority %d): %s",
            state,
            self.key,
            self.elapsed(),
            (self.started or self.finished) - self.submitted,
            self.priority,
            self.title,
        )


def _cache_path(job: Job) -> Path:
    kind = job.key.split("-", 1)[0]
    return cache_dir() / kind / f"{job.key}.pkl"


def _read_cache(job: Job) -> bool:
    """Fill ``job`` from its file on disk; ``False`` when there is none (or it is
    unreadable: it is then computed again)."""
    if not job.cached:
        return False
    path = _cache_path(job)
    try:
        with path.open("rb") as fh:
            value = pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        return False
    except Exception:
        return False
    job.from_disk = True
    job.started = job.started or time.monotonic()
    job._finish("done", value)
    return True


def _write_cache(job: Job) -> None:
    if not job.cached:
        return
    path = _cache_path(job)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(job.result, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except Exception:  # a read-only or full disk: the result is still in memory
        pass


class _Worker:
    """One worker process and the thread that reads its messages."""

    def __init__(self, service: JobService, background: bool) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self.background = background
        nice = _work.niceness() if background else 0
        self.process = ctx.Process(
            target=_work.serve, args=(child, nice), name="dtpbo-jobs", daemon=True
        )
        self.process.start()
        child.close()
        self.service = service
        self.job: Job | None = None
        self.dead = False
        self.promoted = False  # running a visitor's job at the server's priority
        self._reader = threading.Thread(target=self._read, name="dtpbo-jobs-read", daemon=True)
        self._reader.start()

    def promote(self) -> bool:
        """Run the current job at the server's own priority: a visitor now waits for this
        background job (where the system allows raising a process's priority: root, or
        ``RLIMIT_NICE``; otherwise it goes on at the background priority). Whether the
        worker now runs at the server's priority."""
        if self.background and not self.promoted:
            self.promoted = True
            self._renice()
        try:
            return os.getpriority(os.PRIO_PROCESS, self.process.pid) <= os.getpriority(
                os.PRIO_PROCESS, 0
            )
        except OSError:
            return False

    def _renice(self) -> None:
        """Apply the promotion to every thread of the worker (again when the job starts: a
        worker just spawned nices itself first)."""
        _work.set_priority(self.process.pid, os.getpriority(os.PRIO_PROCESS, 0), False)

    def _demote(self) -> None:
        """Back to the background priority once the promoted job is done."""
        if self.promoted:
            self.promoted = False
            self._lower()

    def _lower(self) -> None:
        nice = min(19, os.getpriority(os.PRIO_PROCESS, 0) + _work.niceness())
        _work.set_priority(self.process.pid, nice, True)

    def take_background_role(self) -> None:
        """Become the background worker (an idle front worker, when the background one was
        promoted for a visitor: the roles swap)."""
        self.background = True
        self._lower()

    def run(self, job: Job) -> None:
        self.job = job
        job.state = "running"  # started (the clock) when the worker says so
        if job.priority < BACKGROUND:  # a visitor's job here: at the server's priority
            self.promote()
        try:
            self._conn.send((job.key, job.fn, job.args, job.kwargs, True))
        except Exception as exc:  # unpicklable arguments, or the process died
            self.job = None
            job._finish("failed", error=exc)
            self.service._idle(self)

    def _read(self) -> None:
        while True:
            try:
                msg = self._conn.recv()
            except (EOFError, OSError):
                break
            except Exception as exc:  # a result that does not unpickle here
                job = self.job
                if job is not None:
                    self.job = None
                    job._finish("failed", error=exc)
                    self.service._idle(self)
                continue
            job = self.job
            if job is None or msg[1] != job.key:
                continue
            if msg[0] == "start":
                job.started = time.monotonic()
                if self.promoted:
                    self._renice()
            elif msg[0] == "progress":
                job.fraction, job.step = max(job.fraction, msg[2]), msg[3]
            else:
                self.job = None
                self._demote()
                if msg[2]:
                    job._finish("done", msg[3])
                    _write_cache(job)
                else:
                    job._finish("failed", error=msg[3])
                self.service._idle(self)
        self.dead = True
        job, self.job = self.job, None
        if job is not None and not job.done:
            job._finish("failed", error=_lost(job))
        self.service._idle(self)

    def stop(self) -> None:
        self.dead = True
        try:
            self.process.terminate()
        except Exception:
            pass

    def kill(self) -> None:
        """End the worker process at once: SIGKILL, then its threads back in the normal
        scheduling class where the system allows (a killed process still needs a core to
        exit: in the idle class on a busy machine that took 4-20 s, and the server's exit
        waited for it)."""
        self.dead = True
        try:
            self.process.kill()
            _work.set_priority(self.process.pid, os.getpriority(os.PRIO_PROCESS, 0), False)
        except Exception:
            pass


class JobService:
    """Jobs by key, a priority queue and :data:`WORKERS` worker processes (see module)."""

    def __init__(self, workers: int = WORKERS) -> None:
        self.n_workers = workers
        self._jobs: dict[str, Job] = {}
        #: per key, the browser tabs shown a failed or cancelled job of that key that is
        #: no longer in the table (replaced, or forgotten by "Try again")
        self._saw_end: dict[str, set[str]] = {}
        self._queue: list[tuple[int, int, str]] = []
        self._order = itertools.count()
        self._workers: list[_Worker] = []
        self._probes: list[Job] = []
        self._lock = threading.RLock()
        self._watchdog_thread: threading.Thread | None = None
        self._closed = threading.Event()

    # -- public
    def get(self, key: str) -> Job | None:
        """The job of that key, if one was submitted in this process."""
        return self._jobs.get(key)

    def submit(
        self,
        key: str,
        title: str,
        fn: Callable[..., Any],
        *args: Any,
        estimate: float = 5.0,
        priority: int | None = None,
        cached: bool = True,
        **kwargs: Any,
    ) -> Job:
        """The job ``key``: the one already known (a background job someone now waits for
        moves up to ``priority``), else its result read from disk, else a new job queued.

        A failed or cancelled job is never the answer for someone else: a browser tab
        that has seen this key's job end (it asked for it before it ended, or was shown
        an earlier end of the same key) keeps seeing it, with its sentence and "Try again"
        (:meth:`forget`), but any other tab that asks starts it afresh (a fresh browser
        on the same study after a budget was hit or a worker was killed); a caller outside
        any tab (the background precompute) gets it as it is, so a computation that failed
        is not retried in a loop, nor restarted by every rerun of two tabs that saw it end.

        ``fn(*args, **kwargs, progress=...)`` runs in a worker; it and its arguments must
        pickle. ``cached=False`` keeps the result off the disk. ``priority`` defaults to
        :data:`VISITOR` (inside :func:`submitting_as`: its priority).
        """
        if priority is None:
            priority = getattr(_DEFAULT, "priority", VISITOR)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and job.state == "done":
                self._saw_end.pop(key, None)
            if job is not None and (job.abandoned or self._stale_for_caller(job)):
                self._drop(job)  # asked for again: start it anew
                job = None
            if job is not None:
                self._watch(job, priority)
                if priority < job.priority and job.state == "queued":
                    job.priority = priority
                    heapq.heappush(self._queue, (priority, next(self._order), key))
                    self._dispatch()
                elif priority < job.priority:
                    job.priority = priority
                    if priority < BACKGROUND:  # a visitor waits for it now
                        for w in self._workers:
                            if w.job is job and w.promote():
                                self._swap_roles(w)
                return job
            job = Job(key, title, fn, args, kwargs, estimate, priority, cached)
            self._jobs[key] = job
            self._watch(job, priority)
            if _read_cache(job):
                return job
            if inline():
                self._run_inline(job)
                return job
            heapq.heappush(self._queue, (priority, next(self._order), key))
            self._dispatch()
            return job

    def _stale_for_caller(self, job: Job) -> bool:
        """Is ``job`` failed or cancelled, and asked for by a browser tab that has seen no
        end of this key's job (neither this one's nor an earlier one's)? Such a tab starts
        it afresh (:meth:`submit`)."""
        if job.state not in ("failed", "cancelled"):
            return False
        sid = _session_id()
        seen = job.watchers | self._saw_end.get(job.key, set())
        return sid is not None and sid not in seen

    def _drop(self, job: Job) -> None:
        """Take an ended job out of the table, remembering the tabs that saw it end."""
        if self._jobs.get(job.key) is job:
            self._jobs.pop(job.key)
        if job.done and job.state != "done" and job.watchers:
            self._saw_end.setdefault(job.key, set()).update(job.watchers)

    def cancel(self, key: str) -> None:
        """Drop a queued job, or stop the worker running it (a fresh one replaces it)."""
        self._end(key, "cancelled")

    def check(self) -> None:
        """One look of the watchdog: stop a job over its memory or time budget, cancel a
        visitor's job no connected browser tab waits for (see module)."""
        memory = budget("DTPBO_JOB_MEMORY_MB", MEMORY_MB)
        seconds = budget("DTPBO_JOB_SECONDS", SECONDS)
        abandon = budget("DTPBO_JOB_ABANDON_SECONDS", ABANDON_S)
        now = time.monotonic()
        with self._lock:
            over: list[tuple[str, JobLimitError]] = []
            for w in self._workers:
                job = w.job
                if job is None or w.dead or job.started is None:
                    continue
                why: tuple[str, str] | None = None
                if _rss_mb(w.process.pid) > memory:
                    why = f"needed more than {memory:,.0f} MB of memory", "DTPBO_JOB_MEMORY_MB"
                elif job.elapsed() > seconds:
                    why = f"took longer than {seconds:,.0f} s", "DTPBO_JOB_SECONDS"
                if why is not None:
                    over.append((job.key, _limit(job, *why)))
            for key, error in over:
                _LOG.warning("job %s stopped: %s", key, error)
                self._end(key, "failed", error)
            for job in list(self._jobs.values()):
                if job.done or job.priority >= BACKGROUND or not job.watchers:
                    continue
                if any(_session_active(s) for s in job.watchers):
                    job.unwatched_since = None
                    continue
                if job.unwatched_since is None:
                    job.unwatched_since = now
                elif now - job.unwatched_since >= abandon:
                    job.abandoned = True
                    _LOG.info("job %s (%s) cancelled: no tab waits for it", job.key, job.title)
                    self._end(job.key, "cancelled")

    def _end(self, key: str, state: str, error: BaseException | None = None) -> None:
        """Finish a job that is not done as ``state``: dropped from the queue, or its
        worker stopped (a fresh one replaces it)."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None or job.done:
                return
            for w in self._workers:
                if w.job is job:
                    w.job = None
                    w.stop()
            job._finish(state, error=error)
            self._workers = [w for w in self._workers if not w.dead]
            self._dispatch()

    def forget(self, key: str) -> None:
        """Forget a job (cancelling it if it runs): the next :meth:`submit` starts anew."""
        self.cancel(key)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None:
                self._drop(job)

    def jobs(self) -> list[Job]:
        """Every job of this process, oldest first."""
        return list(self._jobs.values())

    def start_workers(self, wait: bool = True) -> float:
        """Start the worker processes and let them import the models (the launcher's
        preload calls this); the seconds taken. ``wait=False`` returns at once (the
        workers import in the background; :meth:`start_workers` again waits)."""
        t0 = time.perf_counter()
        if inline():
            return 0.0
        with self._lock:
            while len(self._workers) < self.n_workers:
                self._new_worker()
            if not self._probes:
                self._probes = [
                    self.submit(f"ready-{i}", "starting", _work.ready, cached=False)
                    for i in range(self.n_workers)
                ]
        if wait:
            for p in self._probes:
                p.wait(300)
        return time.perf_counter() - t0

    # -- internal
    def _run_inline(self, job: Job) -> None:
        job.state, job.started = "running", time.monotonic()

        def report(fraction: float, step: str = "") -> None:
            job.fraction, job.step = max(job.fraction, float(fraction)), str(step)

        try:
            value = job.fn(*job.args, **job.kwargs, progress=report)
        except Exception as exc:
            job._finish("failed", error=exc)
            return
        job._finish("done", value)
        _write_cache(job)

    def _idle(self, worker: _Worker) -> None:
        with self._lock:
            if worker.dead:
                self._workers = [w for w in self._workers if w is not worker]
            self._dispatch()

    def _swap_roles(self, promoted: _Worker) -> None:
        """``promoted``, the background worker, now runs a visitor's job at the server's
        priority: when the front worker is idle the two swap roles, so background work
        goes on there at once instead of waiting for the visitor's job to end."""
        if not promoted.background:
            return
        front = [w for w in self._workers if not w.background and not w.dead]
        if len(front) != 1 or front[0].job is not None:
            return
        promoted.background, promoted.promoted = False, False
        front[0].take_background_role()
        self._dispatch()

    def _watch(self, job: Job, priority: int) -> None:
        """Note the browser tab asking for ``job`` (a visitor's job only)."""
        if priority < BACKGROUND:
            sid = _session_id()
            if sid is not None:
                job.watchers.add(sid)

    def close(self) -> None:
        """Stop the watchdog and every worker process (a service is not used after)."""
        self._closed.set()
        with self._lock:
            for w in self._workers:
                w.stop()

    def kill_workers(self) -> None:
        """Kill every worker process now, without the lock (the server's SIGTERM handler,
        :func:`dashboard._server.on_stop`: no worker outlives the server)."""
        self._closed.set()
        for w in list(self._workers):
            w.kill()

    def _watchdog(self) -> None:
        while not self._closed.wait(WATCH_EVERY_S):
            try:
                self.check()
            except Exception:  # never let the watchdog die
                pass

    def _new_worker(self) -> _Worker:
        """A new worker: at the server's priority when none is, else the background one."""
        if self._watchdog_thread is None:
            self._watchdog_thread = threading.Thread(
                target=self._watchdog, name="dtpbo-jobs-watchdog", daemon=True
            )
            self._watchdog_thread.start()
        front = any(not w.background for w in self._workers if not w.dead)
        w = _Worker(self, background=front)
        self._workers.append(w)
        return w

    def _dispatch(self) -> None:
        """Give queued jobs to idle workers (starting workers as needed): a visitor's job
        to an idle worker, the first one first; a background job to the background worker
        only."""
        with self._lock:
            self._workers = [w for w in self._workers if not w.dead]
            if self._closed.is_set():  # stopping: a killed worker's reader starts none
                return
            while len(self._workers) < self.n_workers:
                self._new_worker()
            blocked: list[tuple[int, int, str]] = []
            while self._queue:
                item = heapq.heappop(self._queue)
                prio, _, key = item
                job = self._jobs.get(key)
                if job is None or job.state != "queued" or prio != job.priority:
                    continue  # done, cancelled or moved up
                idle = [w for w in self._workers if w.job is None and not w.dead]
                if job.priority >= BACKGROUND:
                    idle = [w for w in idle if w.background or self.n_workers == 1]
                else:
                    idle.sort(key=lambda w: w.background)
                if not idle:
                    blocked.append(item)
                    if job.priority < BACKGROUND:
                        break  # a visitor's job waits for the next free worker
                    continue
                idle[0].run(job)
            for item in blocked:
                heapq.heappush(self._queue, item)


_DEFAULT = threading.local()


@contextlib.contextmanager
def submitting_as(priority: int) -> Iterator[None]:
    """Jobs submitted in this thread inside the block default to ``priority`` (the
    precompute submits a page's jobs as background work)."""
    before = getattr(_DEFAULT, "priority", VISITOR)
    _DEFAULT.priority = priority
    try:
        yield
    finally:
        _DEFAULT.priority = before


_SERVICE: list[JobService] = []
_SERVICE_LOCK = threading.Lock()


def service() -> JobService:
    """The process's job service (created on first use)."""
    with _SERVICE_LOCK:
        if not _SERVICE:
            _SERVICE.append(JobService())
            _server.on_stop(_kill_workers)
        return _SERVICE[0]


def _kill_workers() -> None:
    for s in list(_SERVICE):
        s.kill_workers()


def reset_service() -> None:
    """Close the process's job service (its watchdog and workers); the next
    :func:`service` call starts a fresh one with no jobs. Tests start each from an
    empty service: a job done in one test is not a result in the next."""
    with _SERVICE_LOCK:
        while _SERVICE:
            _SERVICE.pop().close()
