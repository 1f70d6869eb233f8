"""``python -m dashboard [streamlit options]``: the dashboard, ready before its first visitor.

``streamlit run dashboard/app.py`` imports the app's modules (pandas, SciPy, numba,
Altair, the OpenAI client: about 2 s on a small machine) and loads the tree kernels from
numba's disk cache only when the first browser session runs a page, so the first visitor
waits for all of it. This launcher starts the same server (Streamlit's own command line,
same options and ``.streamlit/config.toml``) and, beside it, a background thread that does
that work while the server comes up and the browser opens: the first page then only
computes its own content. ``make run`` uses it.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from pathlib import Path

from streamlit.web import cli

APP = Path(__file__).resolve().parent / "app.py"

#: The modules the pages import (the app's own imports pull in the rest).
PRELOAD = ("dashboard._services", "dashboard._charts", "dashboard._ui", "pbo_core.explain")


def preload() -> float:
    """Import what every page imports and load the tree kernels; returns the seconds taken."""
    t0 = time.perf_counter()
    for name in PRELOAD:
        importlib.import_module(name)
    importlib.import_module("dashboard._services").warm_up()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    """Start :func:`preload` in the background, then ``streamlit run`` the app."""
    args = sys.argv[1:] if argv is None else list(argv)
    threading.Thread(target=preload, name="dtpbo-preload", daemon=True).start()
    sys.argv = ["streamlit", "run", str(APP), *args]
    try:
        cli.main(prog_name="streamlit")
    except SystemExit as stop:
        return int(stop.code or 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
