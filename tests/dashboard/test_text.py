"""Data is text (dashboard/_text.py): escaped Markdown renders exactly the data, server
paths are redacted on a shared server, CSV exports neutralise formula cells; and no page
writes a CSV or puts data into Markdown another way."""

from __future__ import annotations

import ast
import html
import io
import re
from pathlib import Path

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from dashboard._text import WORD_JOINER, csv_cell, md, md_table, redact, safe_csv
from tests.dashboard._shown import autolinks, shown

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"

#: Strings a visitor or a data file may hold (titles, attribute names, levels, messages).
HOSTILE = [
    "![x](http://127.0.0.1:9/img)",
    "__xss",
    "**bold** _it_ ~~gone~~ `code`",
    "<img src=x onerror=alert(1)> <b>tag</b> &amp; &lt;",
    "[link](javascript:alert(1)) <http://127.0.0.1:9/>",
    "$x^2$ :red[colour] :material/home:",
    "# heading\n---\n> quote\n1. item\n- item",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "back\\slash \\*not bold\\*",
    "    indented code",
]


def rendered(markdown: str) -> str:
    """CommonMark + GFM tables and strikethrough, as HTML."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_markdown_shows_exactly_the_text(text: str) -> None:
    out = rendered(md(text))
    assert re.fullmatch(r"<p>.*</p>\n", out, flags=re.S), out  # one paragraph, no element
    inner = html.unescape(out[3:-5]).replace(WORD_JOINER, "")  # invisible (no autolink)
    assert inner == " ".join(text.splitlines()).strip()
    for tag in ("<img", "<a ", "<strong", "<em", "<code", "<del", "<h1", "<table"):
        assert tag not in out
    # Streamlit's own syntax (directives, math) starts with ':' or '$': always escaped
    assert not re.search(r"(?<!\\)[:$]", md(text))


#: Text an autolinker (Streamlit's remark-gfm) turns into a link: bare URLs, ``www.``
#: names, e-mail addresses, in any case, also inside punctuation and Markdown syntax.
LINKY = [
    "Your session expired - log in again at http://evil.example/login",
    "HTTPS://EVIL.EXAMPLE/x?y=1&z=2#f",
    "see www.evil.example/path, or WWW.Evil.Example.",
    "write to help.desk+x@evil.example (a.b@c.example)",
    "mailto:help@evil.example xmpp:me@evil.example ftp://evil.example",
    "(http://evil.example) [www.evil.example] <https://evil.example> 'x@evil.example'",
    "![i](http://evil.example/i.png) [t](https://evil.example)",
    "wwww.evil.example http://www.evil.example user@www.evil.example",
]


@pytest.mark.parametrize("text", LINKY)
def test_urls_www_names_and_addresses_in_data_are_no_links(text: str) -> None:
    """The oracle finds the links in the raw text; none in :func:`md`'s Markdown, which
    still shows exactly the text (the word joiners are invisible)."""
    assert autolinks(text)
    assert autolinks(md(text)) == [], md(text)
    assert shown(md(text)) == text
    assert autolinks(md_table(pd.DataFrame({text: [text]}))) == []


def test_the_autolink_oracle_is_streamlits() -> None:
    """The test's autolinker (``tests/dashboard/_shown.py``) is the installed Streamlit's
    frontend's: its two expressions appear in Streamlit's Markdown bundle."""
    import streamlit

    bundle = Path(streamlit.__file__).parent / "static" / "static" / "js"
    sources = [f.read_text(errors="replace") for f in bundle.glob("StreamlitMarkdown*.js")]
    if not sources:
        pytest.skip("this Streamlit ships no StreamlitMarkdown bundle")
    js = "".join(sources)
    assert r"/(https?:\/\/|www(?=\.))([-.\w]+)([^ \t\r\n]*)/gi" in js
    assert r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)/gu" in js


def test_redact_keeps_paths_on_a_personal_server_only(monkeypatch) -> None:
    msg = "BELA data '/srv/dtpbo/secret/bela.csv', line 3; see http://127.0.0.1:8000/v1 (I/O)"
    monkeypatch.delenv("DTPBO_SHARED_SERVER", raising=False)
    assert redact(msg) == msg
    monkeypatch.setenv("DTPBO_SHARED_SERVER", "1")
    shared = redact(msg)
    assert "/srv" not in shared and "'bela.csv', line 3" in shared
    assert "http://127.0.0.1:8000/v1" in shared and "(I/O)" in shared
    assert redact("~/data/x.csv and /proc/self/environ") == "x.csv and environ"


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
        ("\t=1+1", "'\t=1+1"),
        ("\r=1+1", "'\r=1+1"),
        ("-2.5", "-2.5"),  # a number is no formula
        ("+1e-3", "+1e-3"),
        ("plain", "plain"),
        (-3, -3),
    ],
)
def test_formula_cells_are_neutralised(cell: object, safe: object) -> None:
    assert csv_cell(cell) == safe


def test_safe_csv_neutralises_every_text_cell_and_keeps_numbers() -> None:
    frame = pd.DataFrame(
        {
            "=name": ["=1+1", "ok", "@x"],
            "x": [-1.5, 2.0, -3.25],
            "id": [-1, 2, 3],
            "s": pd.array(["-a", "b", None], dtype="string"),
        }
    )
    back = pd.read_csv(io.StringIO(safe_csv(frame)), keep_default_na=False)
    assert list(back.columns) == ["'=name", "x", "id", "s"]
    assert back["'=name"].tolist() == ["'=1+1", "ok", "'@x"]
    assert back["x"].tolist() == [-1.5, 2.0, -3.25] and back["id"].tolist() == [-1, 2, 3]
    assert back["s"].tolist() == ["'-a", "b", ""]


def _calls(tree: ast.AST, attr: str, skip: tuple[str, ...] = ()) -> list[ast.Call]:
    """Calls of ``.attr(...)`` outside the functions named in ``skip``."""
    skipped = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name in skip
        for n in ast.walk(f)
    }
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == attr
        and id(n) not in skipped
    ]


def test_every_csv_download_goes_through_safe_csv() -> None:
    """No page or service writes CSV text itself: ``safe_csv`` is the one writer."""
    offenders = []
    for f in DASHBOARD.rglob("*.py"):
        if f.name == "_text.py":
            continue
        # table_token hashes a table's CSV text (a cache key, never a download)
        for call in _calls(ast.parse(f.read_text()), "to_csv", skip=("table_token",)):
            offenders.append(f"{f.relative_to(DASHBOARD)}:{call.lineno}")
    assert offenders == []


def test_pages_show_uploaded_text_with_st_text_or_escaped() -> None:
    """``st.write`` of a string is Markdown: the pages never hand it data."""
    offenders = []
    for f in [*DASHBOARD.glob("views/*.py"), DASHBOARD / "_study_import.py", DASHBOARD / "_ui.py"]:
        for call in _calls(ast.parse(f.read_text()), "write"):
            if isinstance(call.func, ast.Attribute) and getattr(call.func.value, "id", "") == "st":
                offenders.append(f"{f.relative_to(DASHBOARD)}:{call.lineno}")
    assert offenders == []


def test_md_table_renders_every_cell_as_its_own_text() -> None:
    """A GFM table whose cells show exactly the data: pipes, links, tags and line breaks
    in a cell neither split the row nor render."""
    frame = pd.DataFrame(
        {"study": ["a|b", "![x](http://e.invalid/i.png)"], "licence": ["<b>MIT</b>", "two\nlines"]}
    )
    out = rendered(md_table(frame))
    assert out.count("<tr>") == 3 and out.count("<td>") == 4 and out.count("<th>") == 2
    assert "<img" not in out and "<b>" not in out
    cells = re.findall(r"<td>(.*?)</td>", out)
    assert [html.unescape(c).replace(WORD_JOINER, "") for c in cells] == [
        "a|b",
        "<b>MIT</b>",
        "![x](http://e.invalid/i.png)",
        "two lines",
    ]
