"""Errors without internals: a page (or a fragment) that raises shows one sentence and an
error id; the traceback, with the same id, goes to the server log; the page shows no
traceback, no exception text and no server path."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from tests.dashboard._shown import shown

SECRET = "/srv/secret-dir/internal.py"


def page_text(at: Any) -> str:
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "code"):
        parts += [shown(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError(f"failed in {SECRET} on host kernel-6.1")


@pytest.fixture
def production(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's behaviour: exceptions stay off the page."""
    monkeypatch.delenv("DTPBO_SHOW_TRACEBACKS", raising=False)


@pytest.mark.parametrize(
    ("page", "service"),
    [
        ("tree_explorer", "tree_models"),  # the page itself
        ("elicitation", "favourite_trace"),  # inside the page's fragment
    ],
)
def test_an_error_is_one_sentence_and_an_id(
    app, production, monkeypatch, caplog, page: str, service: str
) -> None:
    from dashboard import _services as svc

    monkeypatch.setattr(svc, service, boom)
    with caplog.at_level(logging.ERROR, logger="dtpbo.dashboard"):
        at = app(page)
    assert not at.exception
    (error,) = [shown(e.value) for e in at.error]
    found = re.search(r"error id ([0-9a-f]{8})", error)
    assert found and "Something went wrong" in error
    text = page_text(at)
    assert SECRET not in text and "kernel-6.1" not in text and "Traceback" not in text
    assert "RuntimeError" not in text
    logged = [r for r in caplog.records if found.group(1) in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # the traceback is in the log
    assert SECRET in logging.Formatter().formatException(logged[0].exc_info)


def test_tracebacks_are_shown_only_when_asked(monkeypatch) -> None:
    """``DTPBO_SHOW_TRACEBACKS=1`` (developers, this test suite) lets it through."""
    from streamlit.testing.v1 import AppTest

    from dashboard import _services as svc
    from tests.dashboard.conftest import APP

    monkeypatch.setattr(svc, "tree_models", boom)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    at.switch_page("views/tree_explorer.py").run()
    assert at.exception and "kernel-6.1" in at.exception[0].value


def test_the_report_names_no_host() -> None:
    import platform

    from pbo_core.explain.report import versions

    v = versions()
    assert "platform" not in v
    assert platform.platform() not in " ".join(v.values())
    assert platform.release() not in " ".join(v.values())
