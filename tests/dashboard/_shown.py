"""What a page shows for a Markdown string: data on the pages is escaped as text
(``dashboard._text.md``: a backslash before each Markdown character), and the tests read
the Markdown sources AppTest exposes, so they compare what a browser displays."""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(markdown: object) -> str:
    """``markdown`` with CommonMark's backslash escapes removed (as rendered)."""
    return _ESCAPE.sub(r"\1", str(markdown))
