"""What the code says of itself holds: no issue-tracker numbers in code (a reader of a
clone cannot follow them; the commit log keeps the history)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Every Python file of the repository: the packages, the tests, the docs' scripts.
SOURCES = sorted(
    p
    for folder in ("pbo_core", "data_loaders", "feature_extraction", "dashboard", "tests", "docs")
    for p in (ROOT / folder).rglob("*.py")
)
ISSUE = re.compile(r"\bissues? ?#?\d+\b", re.IGNORECASE)


def test_the_sources_were_found() -> None:
    assert len(SOURCES) > 300


def test_no_issue_numbers_in_code() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in SOURCES
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
        if ISSUE.search(line)
    ]
    assert not found, "issue numbers in code (say what the code does instead):\n" + "\n".join(
        found
    )
