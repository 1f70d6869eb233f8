"""End-to-end (Chromium): the Live elicitation page asks 10 questions with ``dt-linear``.

Uses the browser, page and server fixtures of :mod:`tests.dashboard.test_e2e` (skipped
the same way when Playwright or ``/usr/bin/chromium`` is missing).
"""

from __future__ import annotations

import pytest

from dashboard._services.elicitation import rule_label
from tests.dashboard.test_e2e import (  # noqa: F401  (pytest fixtures)
    TREE_FRAME,
    browser,
    metric,
    page,
    server,
    settle,
    snap,
    sync_api,
)

pytestmark = pytest.mark.e2e


def test_live_elicitation_answers_ten_questions_with_dt_linear(server, page) -> None:  # noqa: F811
    expect = sync_api.expect
    page.goto(f"{server}/elicitation?study=electricity")
    settle(page)
    page.locator('[data-testid="stSelectbox"]', has_text="Query rule").first.click()
    page.get_by_role("option", name=rule_label("dt-linear")).click()
    settle(page, timeout=60_000)  # the first visit fits the study's respondents (the prior)
    expect(metric(page, "Answers")).to_have_text("0", timeout=60_000)
    for k, side in enumerate("ABBABAABBA", start=1):
        page.get_by_role("button", name=f"I prefer {side}").click()
        expect(metric(page, "Answers")).to_have_text(str(k), timeout=60_000)
        expect(page.locator("h3", has_text=f"Question {k + 1}:").first).to_be_visible()
        settle(page)
    assert int(metric(page, "Leaves").inner_text()) >= 1
    favourite = metric(page, "Favourite").inner_text()
    assert favourite != "—"
    frame = page.frame_locator(TREE_FRAME).first
    expect(frame.locator("body")).to_contain_text("after 10 answers", timeout=60_000)
    snap(page, "elicitation_dt_linear")
