"""dashboard._progress: a page's first progress bar is logged with its delay."""

from __future__ import annotations

import logging
import re
import threading

import pytest

from dashboard import _progress
from dashboard._services.jobs import Job


def test_the_first_bar_of_a_run_is_logged_once_with_its_delay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    job = Job("choice-abc", "Comparing", print, ())
    with caplog.at_level(logging.DEBUG, logger="dtpbo.dashboard"):
        _progress._log_first_bar(job)  # no run noted in this thread: nothing
        _progress.script_started("Tree explorer")
        _progress._log_first_bar(job)
        _progress._log_first_bar(job)  # the run's second bar: nothing
        other: list[int] = []
        t = threading.Thread(target=lambda: (_progress._log_first_bar(job), other.append(1)))
        t.start()
        t.join()  # another session's thread has its own run
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and other == [1]
    assert re.fullmatch(
        r"page Tree explorer: first progress bar \d+\.\d{3} s after its script started "
        r"\(choice-abc\)",
        lines[0],
    )
