"""Text that leaves the server: data shown as text on a page, and CSV exports.

Strings from data or a visitor (study titles, attribute names and levels, item names,
uploaded file names, error messages) are never Markdown or HTML: :func:`md` escapes
them for the many Streamlit elements that render Markdown, and :func:`redact` removes
server paths from messages on a shared server. :func:`safe_csv` writes every CSV the
dashboard offers for download with formula cells neutralised (OWASP's advice on CSV
injection). Imported by the pages (through ``dashboard._ui``) and by the services.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from data_loaders.access import shared_server

__all__ = ["WORD_JOINER", "csv_cell", "err", "md", "md_table", "redact", "safe_csv"]

#: Characters Markdown (CommonMark, GFM, Streamlit's directives, emoji and math) may read
#: as syntax; :func:`md` puts a backslash before each (CommonMark's escape for any ASCII
#: punctuation), so ``![x](http://...)`` is no image, ``__x`` no bold, ``<b>`` no tag,
#: ``$x$`` no formula and ``:red[x]`` no colour.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~=$:&])")

#: U+2060 WORD JOINER: invisible, no line break, not a character of any URL or address.
WORD_JOINER = "\u2060"
#: Where a GFM autolinker (Streamlit's remark-gfm: ``https?://...``, ``www.x``,
#: ``a@b.c``, which it also finds in escaped text) would start a link: right after every
#: ``://``, between ``www`` and its dot, on both sides of every ``@``. :func:`md` puts a
#: :data:`WORD_JOINER` there, so no bare URL, ``www.`` name or e-mail address in data
#: becomes a link (the page shows the same text).
_AUTOLINK = re.compile(r"(?<=://)|(?<=www)(?=\.)|(?=@)|(?<=@)", re.IGNORECASE)


def md(value: object) -> str:
    """``value`` (a string from data or a visitor: a study title, an attribute name or
    level, an item name, an uploaded file's name, an error message) as Markdown that shows
    exactly its text: every Markdown character escaped, line breaks as spaces, no leading
    or trailing blanks (four leading spaces would make a code block), and no autolink: a
    bare URL (``http://...``), ``www.`` name or e-mail address stays text, with an
    invisible :data:`WORD_JOINER` where the autolinker would start a link.

    The one way data enters ``st.markdown``, ``st.caption``, ``st.info`` / ``warning`` /
    ``error`` / ``success``, headings, widget labels, metric values, expander and tab
    labels and ``st.table`` cells (all of which Streamlit renders as Markdown); tables
    shown with ``st.dataframe`` and ``st.text`` need nothing.
    """
    text = _AUTOLINK.sub(WORD_JOINER, " ".join(str(value).splitlines()).strip())
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_table(frame: pd.DataFrame) -> str:
    """``frame`` as a Markdown (GFM) table, every header and cell through :func:`md`: a
    small table drawn with the page's text (it wraps long cells; ``st.dataframe`` loads
    its grid first, about 0.5 s on a browser's first page, and cuts long cells)."""
    head = "| " + " | ".join(md(c) for c in frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(md(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


#: An absolute server path in a message (``/srv/x/y.csv``, ``~/data/x``): at least two
#: components, not part of a URL (``http://host/v1``) or a word (``I/O``).
_SERVER_PATH = re.compile(r"(?<![\w:/.~-])~?/(?:[^\s/'\"`<>|;,()\[\]]+/)+[^\s/'\"`<>|;,()\[\]]*")


def redact(text: object) -> str:
    """``text`` with every absolute server path reduced to its last component (on a shared
    server only; an analyst on their own machine sees their own paths)."""
    text = str(text)
    if not shared_server():
        return text
    return _SERVER_PATH.sub(lambda m: m.group().rstrip("/").rsplit("/", 1)[-1] or "…", text)


def err(text: object) -> str:
    """An error message for the page: server paths redacted (:func:`redact`), shown as text
    (:func:`md`)."""
    return md(redact(text))


#: What a spreadsheet reads as a formula at the start of a cell (OWASP: CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: A plain number (a cell that starts with ``-`` or ``+`` but is no formula).
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """A value for a CSV cell: a string that a spreadsheet would run as a formula (it
    starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return and is not a plain
    number) gets a leading ``'``; anything else is returned unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        if not _NUMBER.fullmatch(value.strip()):
            return "'" + value
    return value


def safe_csv(frame: pd.DataFrame, **kwargs: Any) -> str:
    """``frame.to_csv(**kwargs)`` (``index=False`` by default) with every text cell and
    column name passed through :func:`csv_cell`: the one writer of the dashboard's CSV
    downloads (answers, sensitivity, PMR features)."""
    kwargs.setdefault("index", False)
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or isinstance(out[col].dtype, pd.StringDtype):
            out[col] = out[col].map(csv_cell)
    out.columns = [csv_cell(c) for c in out.columns]
    return out.to_csv(**kwargs)
