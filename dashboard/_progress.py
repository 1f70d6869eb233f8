"""Waiting for a job on a page: a progress bar with what it is doing and the time left.

:func:`result` returns a job's result when it is done; otherwise it draws the job's
progress (title, current step, percentage, estimated time left, a Cancel button) in a
fragment that refreshes twice a second and reruns the page when the job finishes. The
job runs in a worker process (:mod:`dashboard._services.jobs`), so the page's script is
never blocked and the visitor may switch pages: coming back finds the same job.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Any

import streamlit as st

from dashboard._errors import fragment
from dashboard._services.jobs import Job, JobStoppedError, service
from dashboard._text import md

_LOG = logging.getLogger("dtpbo.dashboard")

#: The page script running in this thread (Streamlit runs each session's script in its own
#: thread): its name and when it started, until its first progress bar is logged.
_RUN = threading.local()


def script_started(page: str) -> None:
    """Note that ``page``'s script starts now (the app calls it before each run), so the
    first progress bar of the run is logged with its delay (``DTPBO_LOG_LEVEL=DEBUG``)."""
    _RUN.page, _RUN.t0 = page, time.perf_counter()


def _log_first_bar(job: Job) -> None:
    t0 = getattr(_RUN, "t0", None)
    if t0 is None:
        return
    _RUN.t0 = None
    _LOG.debug(
        "page %s: first progress bar %.3f s after its script started (%s)",
        _RUN.page,
        time.perf_counter() - t0,
        job.key,
    )


def _seconds(s: float) -> str:
    if s < 1.5:
        return "about a second"
    if s < 60:
        return f"about {s:.0f} s"
    return f"about {s / 60:.0f} min"


def describe(job: Job) -> str:
    """One line: what the job does, its current step, how far it is and the time left
    (Markdown: the title and step, which may name a study or a respondent, as text)."""
    title = md(job.title)
    if job.state == "queued":
        return f"{title}: waiting for a free worker (then {_seconds(job.estimate)})"
    if job.started is None:
        return f"{title}: starting (then {_seconds(job.estimate)})"
    step = f" — {md(job.step)}" if job.step else ""
    return f"{title}{step}: {100 * job.fraction:.0f} %, {_seconds(job.eta())} left"


def progress(job: Job, *, key: str, cancel: bool = True) -> None:
    """Draw ``job``'s progress until it is done, then rerun the page (a fragment, guarded
    as pages are: ``dashboard._errors.fragment``)."""

    @fragment(run_every=0.5)
    def _bar() -> None:
        if job.done:
            st.rerun()
        st.progress(min(max(job.fraction, 0.0), 1.0), text=describe(job))
        if cancel and st.button("Cancel", key=f"{key}::cancel", help="Stop this computation"):
            service().cancel(job.key)
            st.rerun()

    _log_first_bar(job)
    _bar()


def result(job: Job, *, key: str, cancel: bool = True) -> Any | None:
    """``job``'s result when it is done; otherwise its progress is drawn and ``None`` is
    returned (the page shows the rest of its content meanwhile, or stops). A failed job
    shows one sentence and an error id (its error, with the same id, goes to the server
    log, as :func:`dashboard._errors.error_boundary` does), or, stopped at its memory or
    time budget or lost with its worker, the sentence saying so; a cancelled one offers to
    start again."""
    if job.state == "done":
        return job.result
    if job.state == "failed" and isinstance(job.error, JobStoppedError):
        st.error(md(str(job.error)), icon=":material/error:")  # one sentence, no internals
        if st.button("Try again", key=f"{key}::retry"):
            service().forget(job.key)
            st.rerun()
        return None
    if job.state == "failed":
        error_id = secrets.token_hex(4)
        exc = job.error
        info = (type(exc), exc, exc.__traceback__) if isinstance(exc, BaseException) else None
        _LOG.error(
            "error %s: job %r (%s) failed: %r", error_id, job.key, job.title, exc, exc_info=info
        )
        st.error(
            f"{md(job.title)} failed (error id {error_id}). Try again, or other settings; "
            "quote the error id to the server's administrator: the details are in the "
            "server log.",
            icon=":material/error:",
        )
        if st.button("Try again", key=f"{key}::retry"):
            service().forget(job.key)  # the page submits it anew
            st.rerun()
        return None
    if job.state == "cancelled":
        st.info(f"{md(job.title)}: cancelled.")
        if st.button("Start again", key=f"{key}::restart"):
            service().forget(job.key)
            st.rerun()
        return None
    progress(job, key=key, cancel=cancel)
    return None
