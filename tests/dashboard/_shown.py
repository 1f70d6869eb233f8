"""What a page shows for a Markdown string: data on the pages is escaped as text
(``dashboard._text.md``: a backslash before each Markdown character, an invisible word
joiner where an autolinker would start a link), and the tests read the Markdown sources
AppTest exposes, so they compare what a browser displays; and what of it a browser's
Markdown (Streamlit's remark-gfm) would turn into a link."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
#: U+2060 WORD JOINER (``dashboard._text.WORD_JOINER``): invisible on the page.
_JOINER = "\u2060"


def shown(markdown: object) -> str:
    """``markdown`` with CommonMark's backslash escapes and the invisible word joiners
    removed (as rendered)."""
    return _ESCAPE.sub(r"\1", str(markdown)).replace(_JOINER, "")


#: GFM's autolink literals as Streamlit's frontend finds them: remark-gfm's
#: ``mdast-util-gfm-autolink-literal`` runs these two expressions over the text of the
#: rendered Markdown (after escapes are resolved, so a backslash stops none of them);
#: copied from ``streamlit/static/static/js/StreamlitMarkdown.*.js`` (Streamlit 1.67).
#: ``\w`` is ASCII, as in JavaScript; the e-mail rule's look-behind (start, blank,
#: punctuation or symbol before the address) is left out, so this finds a superset.
GFM_URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.IGNORECASE | re.ASCII)
GFM_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", re.ASCII)
_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def autolinks(markdown: object) -> list[str]:
    """What a browser would show as a link in ``markdown``: every ``<a>`` CommonMark makes
    and every URL, ``www.`` name or e-mail address GFM's autolinker would find in the
    rendered text."""
    out = _MD.render(str(markdown))
    links = re.findall(r"<a\s[^>]*>", out)
    text = html.unescape(re.sub(r"<[^>]+>", " ", out))
    found = [m.group() for rule in (GFM_URL, GFM_EMAIL) for m in rule.finditer(text)]
    return [*links, *found]
