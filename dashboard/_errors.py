"""Errors on a page: one sentence and an error id for the visitor, the traceback (with
the same id) in the server log (``dtpbo.dashboard``). :func:`error_boundary` guards a
page's run, :func:`fragment` a fragment's reruns; ``dashboard._ui`` re-exports both and
``dashboard._progress`` guards its progress bars with them.
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

_LOG = logging.getLogger("dtpbo.dashboard")

#: Environment variable: ``1`` lets an exception through to Streamlit (its traceback on
#: the page; for developers and the test suite), instead of :func:`error_boundary`.
SHOW_TRACEBACKS_ENV = "DTPBO_SHOW_TRACEBACKS"


@contextmanager
def error_boundary(where: str = "page") -> Iterator[None]:
    """Turn an unexpected exception into one sentence and an error id on the page; the
    traceback, with the same id, goes to the server log (``dtpbo.dashboard``).

    Streamlit's own control flow (``st.stop()``, ``st.rerun()``) derives from
    ``BaseException`` and passes through.
    """
    try:
        yield
    except Exception:
        if os.environ.get(SHOW_TRACEBACKS_ENV, "") not in ("", "0"):
            raise
        error_id = secrets.token_hex(4)
        _LOG.error("error %s on the %s", error_id, where, exc_info=True)
        st.error(
            f"Something went wrong on this page (error id {error_id}). Nothing you did is "
            "lost; reload the page or try other settings, and quote the error id to the "
            "server's administrator: the details are in the server log.",
            icon=":material/error:",
        )


def fragment(fn: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """``st.fragment`` whose reruns are guarded by :func:`error_boundary` as whole pages
    are (a fragment reruns on its own, outside ``page.run()``)."""

    def wrap(f: Callable[..., Any]) -> Any:
        @functools.wraps(f)
        def guarded(*args: Any, **kw: Any) -> Any:
            with error_boundary(f"fragment {f.__qualname__}"):
                return f(*args, **kw)

        return st.fragment(guarded, **kwargs)

    return wrap if fn is None else wrap(fn)
