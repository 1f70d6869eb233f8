"""``python -m dashboard``: Streamlit's own command line, with the app preloaded beside it."""

from __future__ import annotations

import sys
import threading
import time

import pytest

import dashboard.__main__ as launcher


@pytest.fixture(autouse=True)
def _switch_interval_restored():
    """main() sets the interpreter's switch interval: later tests get the default back."""
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_main_runs_streamlit_on_the_app_with_the_options_given(monkeypatch) -> None:
    seen: dict[str, object] = {}
    started = threading.Event()

    def fake_cli(prog_name: str) -> None:
        seen["argv"] = list(sys.argv)
        seen["prog"] = prog_name
        raise SystemExit(0)

    monkeypatch.setattr(launcher.cli, "main", fake_cli)
    # the thread's whole target replaced: the real one would start the precompute of
    # every bundled study in this process if it ran after this test's environment was
    # undone (a race seen in CI: later tests found the comparisons done)
    monkeypatch.setattr(launcher, "preload_and_report", started.set)
    monkeypatch.setattr(sys, "argv", ["python -m dashboard"])
    assert launcher.main(["--server.port=8999", "--server.headless=true"]) == 0
    assert seen["argv"] == [
        "streamlit",
        "run",
        str(launcher.APP),
        "--server.port=8999",
        "--server.headless=true",
        "--server.address=127.0.0.1",  # the safe defaults (dashboard._server)
        "--client.showErrorDetails=none",
        "--server.maxUploadSize=32",
    ]
    assert seen["prog"] == "streamlit"
    assert launcher.APP.name == "app.py" and launcher.APP.exists()
    assert started.wait(5), "the preload thread was not started"


def test_main_passes_streamlit_exit_codes_on(monkeypatch) -> None:
    def failing_cli(prog_name: str) -> None:
        raise SystemExit(2)

    monkeypatch.setattr(launcher.cli, "main", failing_cli)
    monkeypatch.setattr(launcher, "preload_and_report", lambda: None)
    monkeypatch.setattr(sys, "argv", ["x"])
    assert launcher.main([]) == 2


@pytest.mark.filterwarnings("ignore")
def test_preload_imports_every_page_dependency_and_loads_the_kernels() -> None:
    t0 = time.perf_counter()
    seconds = launcher.preload()
    assert 0.0 < seconds <= time.perf_counter() - t0  # the time it took, as it reports it
    for name in launcher.PRELOAD:
        assert name in sys.modules
    # the kernel warm-up is cached: a second call returns the same recorded time
    svc = sys.modules["dashboard._services"]
    assert svc.warm_up() == svc.warm_up()


@pytest.mark.filterwarnings("ignore")
def test_the_preload_survives_a_worker_killed_while_it_starts(monkeypatch, caplog) -> None:
    """A job worker ended from outside while the launcher waits for it (the job service
    raises its WorkerLostError): the preload logs it and goes on (the service starts
    another worker when a job needs one); before, the preload thread died with a
    traceback and the kernels were never loaded."""
    import dashboard._services as svc
    from dashboard._services import jobs

    lost = jobs.WorkerLostError("starting stopped: its worker process ended before it finished")
    warmed: list[bool] = []

    def start_worker() -> None:
        raise lost

    monkeypatch.setattr(svc, "start_worker", start_worker)
    monkeypatch.setattr(svc, "warm_up", lambda: warmed.append(True))
    with caplog.at_level("WARNING", logger="dtpbo.dashboard"):
        assert launcher.preload() >= 0.0
    assert warmed == [True]
    assert "its worker process ended" in caplog.text


def test_the_launcher_says_when_the_preload_is_done(monkeypatch, capsys) -> None:
    monkeypatch.setattr(launcher, "preload", lambda: 2.25)
    launcher.preload_and_report()
    out = capsys.readouterr().out
    assert launcher.READY in out and "loaded in 2.2 s" in out


def test_a_personal_server_refuses_a_network_address(monkeypatch, capsys) -> None:
    monkeypatch.delenv("DTPBO_SHARED_SERVER", raising=False)
    monkeypatch.setattr(launcher.cli, "main", lambda prog_name: pytest.fail("started"))
    assert launcher.main(["--server.address=0.0.0.0"]) == 2
    assert "DTPBO_SHARED_SERVER=1" in capsys.readouterr().err


def test_the_server_hands_the_interpreter_lock_over_less_often(monkeypatch) -> None:
    """The server's switch interval: the launcher's own unless DTPBO_SWITCH_INTERVAL_S
    names a number of seconds in (0, 1]; main() sets it in the server process."""
    monkeypatch.delenv("DTPBO_SWITCH_INTERVAL_S", raising=False)
    assert launcher.switch_interval() == launcher.SWITCH_INTERVAL_S > sys.getswitchinterval()
    for bad in ("", "fast", "0", "-1", "nan", "inf", "2"):
        monkeypatch.setenv("DTPBO_SWITCH_INTERVAL_S", bad)
        assert launcher.switch_interval() == launcher.SWITCH_INTERVAL_S
    monkeypatch.setenv("DTPBO_SWITCH_INTERVAL_S", "0.02")
    assert launcher.switch_interval() == 0.02

    monkeypatch.setattr(launcher.cli, "main", lambda prog_name: None)
    monkeypatch.setattr(launcher, "preload_and_report", lambda: None)
    monkeypatch.setattr(sys, "argv", ["python -m dashboard"])
    assert launcher.main(["--server.headless=true"]) == 0
    assert sys.getswitchinterval() == pytest.approx(0.02)
