"""Fixtures of the dashboard tests: an isolated data environment and an AppTest factory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"

#: Environment variables that point the loaders at user data.
DATA_ENV = ("DTPBO_SUSHI_DIR", "DTPBO_BELA_PATH", "DTPBO_PRESIDENTIAL_PATH", "DTPBO_PMR_DIR")
LLM_ENV = (
    "DTPBO_LLM_BASE_URL",
    "OPENAI_BASE_URL",
    "DTPBO_LLM_MODEL",
    "DTPBO_LLM_API_KEY",
    "OPENAI_API_KEY",
)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``e2e`` marker (real browser; skipped without Playwright/Chromium)."""
    config.addinivalue_line(
        "markers",
        "e2e: end-to-end test in a real browser (Playwright + /usr/bin/chromium); skipped "
        "when either is missing",
    )


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No user data, no LLM settings, caches and ``results/`` inside ``tmp_path``, the
    only allowed data root (``DTPBO_DATA_ROOTS``); not in shared-server mode."""
    for name in (*DATA_ENV, *LLM_ENV, "DTPBO_SHARED_SERVER", "DTPBO_MAX_DATA_BYTES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "data_home"))
    monkeypatch.setenv("DTPBO_DATA_ROOTS", str(tmp_path))
    # default grids (first-visit content) only in the tests that ask for them
    monkeypatch.setenv("DTPBO_NO_DEFAULT_RESULTS", "1")
    # nor the Tree explorer's background comparison of tree models (its own tests on)
    monkeypatch.setenv("DTPBO_NO_TREE_CHOICE", "1")
    # jobs run in the test's thread: an AppTest cannot wait for a worker process (the
    # job service's own tests start workers)
    monkeypatch.setenv("DTPBO_JOBS", "inline")
    # background workers at their niceness, not in the idle class: `make test` keeps every
    # core busy, and a job in the idle class would wait for a core nothing else wants
    monkeypatch.setenv("DTPBO_JOB_IDLE", "0")
    # an unexpected exception reaches AppTest's ``at.exception`` (instead of the page's
    # one sentence and error id; tests of that unset it)
    monkeypatch.setenv("DTPBO_SHOW_TRACEBACKS", "1")
    monkeypatch.setenv("DTPBO_LLM_CACHE", str(tmp_path / "llm_cache.sqlite"))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    # no job (a tree comparison, a pooled fit) carries over into the next test
    from dashboard._services import jobs

    jobs.reset_service()


@pytest.fixture
def app() -> Callable[..., object]:
    """``app(page=None, query=None, **state)``: an AppTest of the dashboard, run once (on
    ``page``), with URL query parameters ``query`` (e.g. ``{"session": ...}``)."""
    from streamlit.testing.v1 import AppTest

    def make(
        page: str | None = None, query: dict[str, str] | None = None, **state: object
    ) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=120)
        for k, v in (query or {}).items():
            at.query_params[k] = v
        for k, v in state.items():
            at.session_state[k] = v
        at.run()
        if page is not None:
            at.switch_page(f"views/{page}.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return make


@pytest.fixture
def quick_dt_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry's ``dt-linear`` with the prior strengths its inner CV picks on Train
    (shrinkage 3, slope ratio 0.01) instead of the CV (~30 s per fit on Train): pages,
    not the fit, are what the dashboard tests time."""
    import dataclasses

    from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
    from pbo_core.registry import DT_LINEAR, MODELS

    quick = {**DT_LINEAR, "slope_ratio": 0.01, "shrinkage": 3.0}
    fast = dataclasses.replace(
        MODELS["dt-linear"], estimator=lambda **kw: LinearLeafDTSurrogate(**{**quick, **kw})
    )
    monkeypatch.setitem(MODELS, "dt-linear", fast)
