"""The worker processes of the dashboard's job service: their loop and their priorities.

:mod:`dashboard._services.jobs` starts each worker process (``spawn``) on :func:`serve`,
which runs the jobs that arrive, one at a time, and sends their progress and results
back; the job bodies themselves are in :mod:`dashboard._work`. A worker that runs
background jobs runs at a lower priority (:func:`niceness`, the idle scheduling class:
:func:`idle_class`, :func:`set_priority`), so work nobody waits for yields to pages and to
the jobs a visitor waits for. This module imports no Streamlit, nothing of
``dashboard._services`` (whose package imports the whole app) and no models: a worker
starts with the standard library, and its first job (:func:`dashboard._work.ready`)
imports the models.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import threading
from multiprocessing.connection import Connection
from typing import Any

__all__ = [
    "DEFAULT_NICE",
    "IDLE_ENV",
    "idle_class",
    "idle_wanted",
    "niceness",
    "serve",
    "set_priority",
]

#: Niceness of the worker that runs background jobs (``os.nice``; ``DTPBO_JOB_NICE``):
#: work nobody waits for yields to pages and to the jobs a visitor waits for, which run
#: in a worker at the server's own priority (at the lowest priority, 19, a busy machine
#: starved them; docs/speed.md).
DEFAULT_NICE = 10


def niceness() -> int:
    """The background worker's niceness: ``$DTPBO_JOB_NICE`` or :data:`DEFAULT_NICE`."""
    try:
        return int(os.environ.get("DTPBO_JOB_NICE", DEFAULT_NICE))
    except ValueError:
        return DEFAULT_NICE


#: ``DTPBO_JOB_IDLE=0`` keeps the background worker in the normal scheduling class, at its
#: niceness alone: on a machine whose cores are never idle (a test run on every core, a
#: batch host) the idle class would starve background work for good.
IDLE_ENV = "DTPBO_JOB_IDLE"


def idle_wanted() -> bool:
    """Whether background work goes to the idle scheduling class (``$DTPBO_JOB_IDLE``,
    default yes)."""
    return os.environ.get(IDLE_ENV, "1").strip() not in ("0", "no", "false")


def idle_class(pid: int, idle: bool) -> None:
    """Put process ``pid`` (0: this one; on Linux its main thread, and the threads it
    starts later) in the idle scheduling class (``SCHED_IDLE``: it runs only on a core no
    other task wants, so background work never delays a visitor's page, whatever the
    number of tasks competing: a niceness only weighs it) or back in the normal one.
    Nothing where the system has no such class; the normal class when
    :func:`idle_wanted` says no."""
    idle = idle and idle_wanted()
    policy = getattr(os, "SCHED_IDLE", None) if idle else getattr(os, "SCHED_OTHER", None)
    if policy is None or not hasattr(os, "sched_setscheduler"):
        return
    try:
        os.sched_setscheduler(pid, policy, os.sched_param(0))
    except OSError:
        pass


def _threads(pid: int) -> list[int]:
    """Thread ids of process ``pid`` (Linux ``/proc``; else the process id alone)."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")] or [pid]
    except OSError:
        return [pid]


def set_priority(pid: int, nice: int, idle: bool) -> None:
    """Niceness ``nice`` and the idle scheduling class (or the normal one) for every thread
    of process ``pid``. Linux applies both per thread: a worker's kernel threads
    (:func:`pbo_core.models.glm.run_split`) started while it ran at one priority would
    keep it after the worker's role changed, a visitor's job's threads left in the idle
    class or a background job's at the visitor's priority. Raising a priority needs
    privileges (root, ``RLIMIT_NICE``); where refused the thread keeps its own."""
    for tid in _threads(pid):
        idle_class(tid, idle)
        try:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        except OSError:
            pass


def _picklable(exc: BaseException) -> BaseException:
    """``exc``, or a ``RuntimeError`` with its text when it does not pickle."""
    try:
        pickle.dumps(exc)
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def serve(conn: Connection, nice: int | None = None) -> None:
    """The loop of a worker process: run the jobs that arrive on ``conn``, one at a time.

    A message is ``(job_id, fn, args, kwargs, wants_progress)``. The job's start is sent as
    ``("start", job_id)``; while it runs, its ``progress(fraction, step)`` calls are sent
    as ``("progress", job_id, fraction, step)``; at the end ``("done", job_id, True,
    result)`` or ``("done", job_id, False, exception)``. Runs ``nice`` below the server
    (default :func:`niceness`) and returns when the other end closes; when the parent
    process is gone (a server ended mid-job) it ends within a second instead of finishing
    the job.
    """
    nice = niceness() if nice is None else nice
    os.nice(nice)
    if nice > 0:
        idle_class(0, True)
    parent, done = multiprocessing.parent_process(), threading.Event()
    if parent is not None:  # a worker process (not a thread of the caller's)
        # no Streamlit runtime here, by design: its "bare mode" and "No runtime found"
        # warnings (hundreds per job) would only bury the server log's real lines
        logging.getLogger("streamlit").setLevel(logging.ERROR)

        def _orphaned() -> None:  # a daemon thread: the job in progress may take minutes
            parent.join()  # returns when the parent process is gone (its sentinel closes)
            if not done.is_set():
                os._exit(0)

        threading.Thread(target=_orphaned, name="parent-watch", daemon=True).start()
    try:
        _loop(conn)
    finally:
        done.set()


def _loop(conn: Connection) -> None:
    while True:
        try:
            job_id, fn, args, kwargs, wants = conn.recv()
        except (EOFError, OSError):
            return

        def report(fraction: float, step: str = "", job_id: Any = job_id) -> None:
            conn.send(("progress", job_id, float(fraction), str(step)))

        conn.send(("start", job_id))
        try:
            value = fn(*args, **kwargs, progress=report) if wants else fn(*args, **kwargs)
            answer: tuple[Any, ...] = ("done", job_id, True, value)
        except Exception as exc:  # sent back and re-raised by the page
            answer = ("done", job_id, False, _picklable(exc))
        try:
            conn.send(answer)
        except (EOFError, OSError):
            return
        except Exception as exc:  # a result that does not pickle
            conn.send(("done", job_id, False, RuntimeError(f"cannot send the result: {exc}")))
