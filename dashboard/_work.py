"""The worker side of the dashboard's job service: the loop of a worker process and the
bodies of the jobs it runs.

Pages hand anything that can take more than a moment (the held-out comparison of the
tree models, a respondent's evidence, leave-one-out sensitivity, the hierarchy's first
fit, the default result grids) to :mod:`dashboard._services.jobs`, which runs it here, in
a separate process (``spawn``): CPU that must not hold the web server's interpreter lock
while pages are drawn. This module imports no Streamlit and nothing of
``dashboard._services`` (whose package imports the whole app), so a worker starts with
the models only. Every job body takes ``progress(fraction, step)`` and calls it as it
goes; the loop (:func:`serve`) sends those reports back to the server.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import Study
from pbo_core.evaluation import plan_sensitivity, plan_split, sample_text
from pbo_core.experiments.runner import run_grid
from pbo_core.plan import AnalysisPlan
from pbo_core.registry import get, names, not_applicable
from pbo_core.splits import Split

Progress = Callable[[float, str], None]

#: Niceness of the worker that runs background jobs (``os.nice``; ``DTPBO_JOB_NICE``):
#: work nobody waits for yields to pages and to the jobs a visitor waits for, which run
#: in a worker at the server's own priority (at the lowest priority, 19, a busy machine
#: starved them: the issue's 265 s evidence wait).
DEFAULT_NICE = 10


def niceness() -> int:
    """The background worker's niceness: ``$DTPBO_JOB_NICE`` or :data:`DEFAULT_NICE`."""
    try:
        return int(os.environ.get("DTPBO_JOB_NICE", DEFAULT_NICE))
    except ValueError:
        return DEFAULT_NICE


def idle_class(pid: int, idle: bool) -> None:
    """Put process ``pid`` (0: this one; on Linux its main thread, and the threads it
    starts later) in the idle scheduling class (``SCHED_IDLE``: it runs only on a core no
    other task wants, so background work never delays a visitor's page, whatever the
    number of tasks competing: a niceness only weighs it) or back in the normal one.
    Nothing where the system has no such class."""
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


def ready(*, progress: Progress | None = None) -> bool:
    """``True``: sent to a fresh worker, it makes the worker import this module and the
    models, and compile (or load from numba's disk cache) every kernel a fit uses
    (:func:`pbo_core.registry.warm_up`), before any real job: on a fresh install a first
    job would otherwise compile them (Train's first held-out evidence: 11.4 s instead of
    2.7 s)."""
    from pbo_core import registry

    registry.warm_up()
    return True


def _picklable(exc: BaseException) -> BaseException:
    import pickle

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


# ----------------------------------------------------------------------------- sensitivity
def sensitivity_methods(study: Study) -> list[str]:
    """Registry models with an estimator that apply to ``study`` (registry order)."""
    return [n for n in names(fits=True) if not_applicable(get(n), study) is None]


def sensitivity_split(study: Study, plan: AnalysisPlan) -> Split:
    """The split of the Feature sensitivity page: the analysis plan's sensitivity sample
    (:func:`pbo_core.evaluation.plan_split`), as the command and the report use it."""
    return plan_split(study, plan, sensitivity=True)


def _rows_progress(progress: Progress | None, what: str) -> Any:
    if progress is None:
        return None

    def report(done: int, total: int) -> None:
        progress(done / max(1, total), f"{what}: {done} of {total} fits")

    return report


def sensitivity(
    study: Study,
    plan: AnalysisPlan,
    methods: tuple[str, ...],
    *,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Leave-one-out blocks (one per model) on the plan's sensitivity split
    (:func:`pbo_core.evaluation.plan_sensitivity`); the split's reason and sample in
    ``attrs["split"]``."""
    split = sensitivity_split(study, plan)
    ok = [
        m
        for m in methods
        if not_applicable(get(m), study, new_respondents=split.new_respondents) is None
    ]
    blocks, _, split = plan_sensitivity(
        study,
        ok,
        plan,
        progress=_rows_progress(progress, "refitting without each feature"),
    )
    if not blocks:
        return pd.DataFrame()
    table = pd.concat(blocks.values(), ignore_index=True)
    table.attrs["split"] = f"{split.reason}; {sample_text(split)}"
    return table


# ----------------------------------------------------------------------------- hierarchy
def hierarchy(
    study: Study,
    n_users: int,
    max_depth: int,
    min_users_leaf: int,
    item_max_depth: int,
    *,
    progress: Progress | None = None,
) -> Any:
    """User/item hierarchy on the first ``n_users`` respondents."""
    from pbo_core.hierarchy import UserItemHierarchy

    n = min(int(n_users), len(study.respondents()))
    if progress is not None:
        progress(0.0, f"growing the user tree on {n:,} respondents")
    return UserItemHierarchy(
        max_depth=max_depth, min_users_leaf=min_users_leaf, item_max_depth=item_max_depth
    ).fit(study, users=np.arange(n))


def segments(
    study: Study,
    n_users: int,
    max_depth: int,
    min_users_leaf: int,
    *,
    progress: Progress | None = None,
) -> Any:
    """Parameter-instability user tree with segment logits on the first ``n_users``."""
    from pbo_core.segments import SegmentLogitHierarchy, cohort_arrays

    n = min(int(n_users), len(study.respondents()))
    if progress is not None:
        progress(0.0, f"fitting the segment logits of {n:,} respondents")
    return SegmentLogitHierarchy(max_depth=max_depth, min_users_leaf=min_users_leaf).fit(
        cohort_arrays(study), np.arange(n), study=study
    )


# ----------------------------------------------------------------------------- grids
def grid(
    cells: list[dict[str, Any]],
    fn: Callable[[dict[str, Any]], pd.DataFrame],
    out_dir: str,
    what: str,
    *,
    progress: Progress | None = None,
) -> str:
    """The missing cells of a result grid (one Parquet file each) into ``out_dir``."""

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done / max(1, total), f"{what}: {done} of {total} runs")

    run_grid(cells, fn, out_dir=Path(out_dir), progress=report)
    return out_dir


# ----------------------------------------------------------------------------- item texts
def formatted_items(data: Any) -> pd.DataFrame:
    """Every item's id and attributes as the pages print them (the Items table's left
    columns)."""
    schema = data.get_schema()
    dec = schema.decode(data.X)
    for f in schema.features:
        dec[f.name] = [f.format_value(v) for v in dec[f.name]]
    dec = dec.rename(columns={f.name: f.display for f in schema.features})
    dec.insert(0, "item", data.ids())
    return dec


def item_texts(data: Any, *, progress: Progress | None = None) -> dict[Any, Any]:
    """The Tree explorer's texts of many items: labels (70 characters), leaf names (44
    and 60) and the formatted attribute table, keyed as ``dashboard._services.trees``
    caches them."""
    from pbo_core.explain import naming

    out: dict[Any, Any] = {}
    steps = [
        (("labels", 70), lambda: naming.item_labels(data, 70), "labelling the items"),
        (("names", 44), lambda: naming.item_names(data, 44), "naming them for the leaves"),
        (("names", 60), lambda: naming.item_names(data, 60), "naming them for the table"),
        ("attributes", lambda: formatted_items(data), "formatting their attributes"),
    ]
    for k, (key, fn, what) in enumerate(steps):
        if progress is not None:
            progress(k / len(steps), what)
        out[key] = fn()
    return out
