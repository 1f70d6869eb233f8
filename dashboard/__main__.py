"""``python -m dashboard [streamlit options]``: the dashboard, ready before its first visitor.

``streamlit run dashboard/app.py`` imports the app's modules (pandas, SciPy, numba,
Altair, the OpenAI client: about 2 s on a small machine) and loads the tree kernels from
numba's disk cache only when the first browser session runs a page, so the first visitor
waits for all of it. This launcher starts the same server (Streamlit's own command line,
same options and ``.streamlit/config.toml``) and, beside it, a background thread that does
that work while the server comes up and the browser opens: the first page then only
computes its own content. It also loads the study the pages open on and walks the call
stack once with :func:`inspect.stack`: Streamlit does that on the first element a process
draws (to tell a REPL from ``streamlit run``), and the first walk resolves the file of
every imported module (about 0.2 s with the app's ~3,000 modules), and starts the worker
processes of the job service (``dashboard._services.jobs``). After the ready line it
queues the bundled studies' tree comparisons as background jobs. ``make run`` uses it.

It also serves safely by default (:mod:`dashboard._server`): 127.0.0.1 only unless in
shared mode (``DTPBO_SHARED_SERVER=1``, ``make serve``: all interfaces), no error details
on pages, uploads capped, the visitor cookie set by the server (httpOnly), only loopback
``Host`` and ``Origin`` headers answered unless in shared mode (no DNS rebinding), and
SIGTERM ends the process within a few seconds whatever a page is computing.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
import threading
import time
from pathlib import Path

from streamlit.web import cli

from dashboard import _server
from data_loaders.access import shared_server

APP = Path(__file__).resolve().parent / "app.py"

#: The modules the pages import (the app's own imports pull in the rest).
PRELOAD = ("dashboard._services", "dashboard._charts", "dashboard._ui", "pbo_core.explain")


def preload() -> float:
    """Start the job service's worker processes (they import the models and compile or
    load their kernels meanwhile), import what every page imports, load the first study,
    fill :mod:`inspect`'s module-file cache, wait for the workers, then load the kernels
    here too; returns the seconds."""
    t0 = time.perf_counter()
    jobs = importlib.import_module("dashboard._services.jobs")
    jobs.service().start_workers(wait=False)
    for name in PRELOAD:
        importlib.import_module(name)
    svc = importlib.import_module("dashboard._services")
    svc.start_study_sweeper()  # shared mode: expired visitors' studies go, now and hourly
    svc.warm_up_first_study()
    inspect.stack()
    try:
        svc.start_worker()
    except jobs.JobStoppedError as exc:  # a worker ended from outside while it started
        logging.getLogger("dtpbo.dashboard").warning(
            "preload: %s (the job service starts another when a job needs one)", exc
        )
    # after the workers: they compiled the kernels on a fresh install (once; docs/speed.md),
    # which this process now loads from numba's disk cache instead of compiling again
    svc.warm_up()
    return time.perf_counter() - t0


#: The interpreter's thread switch interval in the server process, in seconds (Python's
#: default is 0.005): a visitor's rerun is short, and with many reruns and the event loop
#: in one process a longer interval lets each run on instead of handing the interpreter
#: lock over every few milliseconds, each handover waiting for the next thread to get a
#: core on a busy machine. ``DTPBO_SWITCH_INTERVAL_S`` overrides it; the measurements are
#: in docs/shared-server.md (Load test).
SWITCH_INTERVAL_S = 0.05


def switch_interval() -> float:
    """:data:`SWITCH_INTERVAL_S`, or ``DTPBO_SWITCH_INTERVAL_S`` when it is a number of
    seconds in (0, 1]."""
    try:
        value = float(os.environ.get("DTPBO_SWITCH_INTERVAL_S", ""))
    except ValueError:
        return SWITCH_INTERVAL_S
    return value if 0 < value <= 1 else SWITCH_INTERVAL_S


#: Printed when :func:`preload` is done (after Streamlit's own "You can now view ..." lines):
#: from then on a first visitor's page only computes its own content.
READY = "DT-PBO Explorer is ready"


def preload_and_report() -> None:
    """:func:`preload`, then say on standard output that the app is ready, then queue
    the bundled studies' tree comparisons as background jobs (first visits find them
    done; ``DTPBO_NO_PRECOMPUTE=1`` turns that off)."""
    seconds = preload()
    print(
        f"  {READY} (pages' modules, tree kernels, the first study and the job workers "
        f"loaded in {seconds:.1f} s).",
        flush=True,
    )
    if (
        os.environ.get("DTPBO_NO_PRECOMPUTE", "") != "1"
        and os.environ.get("DTPBO_NO_TREE_CHOICE", "") != "1"
    ):
        svc = importlib.import_module("dashboard._services")
        svc.precompute_bundled()


class _QuietThreads(logging.Filter):
    """Drop Streamlit's "missing ScriptRunContext" warnings of the server's own threads
    (``dtpbo-...``: the preload and the precompute call the pages' cached functions
    without a page: hundreds of lines per start that would bury the log's real ones)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.threadName.startswith("dtpbo-")
            and "missing ScriptRunContext" in record.getMessage()
        )


def _log_errors() -> None:
    """The pages' errors (``dtpbo.dashboard``: an error id and its traceback) on stderr,
    the server's log; without the warnings :class:`_QuietThreads` drops."""
    ctx_log = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    if not any(isinstance(f, _QuietThreads) for f in ctx_log.filters):
        ctx_log.addFilter(_QuietThreads())
    log = logging.getLogger("dtpbo")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        # DTPBO_LOG_LEVEL=DEBUG also logs every job's end (what the background walk computed
        # and when: the timeline behind the benchmarks' waits)
        level = os.environ.get("DTPBO_LOG_LEVEL", "INFO").upper()
        log.setLevel(level if level in logging.getLevelNamesMapping() else "INFO")
        log.propagate = False


def main(argv: list[str] | None = None) -> int:
    """Start :func:`preload_and_report` in the background, then ``streamlit run`` the app
    with the safe options of :func:`dashboard._server.server_args`."""
    args = sys.argv[1:] if argv is None else list(argv)
    shared = shared_server()
    try:
        args = _server.server_args(args, shared=shared)
    except _server.LaunchError as exc:
        print(f"python -m dashboard: {exc}", file=sys.stderr)
        return 2
    _server.install(shared=shared)
    _log_errors()
    sys.setswitchinterval(switch_interval())
    threading.Thread(target=preload_and_report, name="dtpbo-preload", daemon=True).start()
    sys.argv = ["streamlit", "run", str(APP), *args]
    try:
        cli.main(prog_name="streamlit")
    except SystemExit as stop:
        return int(stop.code or 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
