"""The Live elicitation page's answer buttons in AppTest (their keys carry the question)."""

from __future__ import annotations

from typing import Any

_PREFIX = {
    "A": "el_pick_A_",
    "B": "el_pick_B_",
    "=": "el_tie_",
    "tie": "el_tie_",
    "skip": "el_skip_",
}


def answer_button(at: Any, action: str) -> Any:
    """The button that gives ``action`` ("A", "B", "=" / "tie", "skip") to the shown question."""
    prefix = _PREFIX[action]
    found = [b for b in at.button if b.key and b.key.startswith(prefix)]
    assert len(found) == 1, [b.key for b in at.button]
    return found[0]
