"""Hostile inputs, as a visitor sends them through the pages (AppTest, in-process; the
server-level twin with the health check and SIGTERM is ``test_hostile_e2e.py``).

Every case ends in a clear error on the page within :data:`LIMIT_S` seconds of the
process's CPU (not wall seconds: a loaded machine must not fail a case), below
:data:`LIMIT_MB` of extra memory (the process's resident set, sampled every 5 ms while the
case runs), and stores nothing (the studies folder and the session store are unchanged).
Cases: the issue's sizes (a 1,000,000-column CSV, a valid 1.7 MB session file with 50,000
comparisons, 300,000 invalid rows, ``max_items`` 10^12, a 200,000-deep JSON) and their
neighbours; then Markdown/HTML in a study's title, attribute names, levels and item names
on every page; bare URLs, ``www.`` names and e-mail addresses in data and link parameters
(no autolink) on every page, and formula cells in every CSV export. Path escapes on every
path input:
``test_path_inputs.py``.
"""

from __future__ import annotations

import gc
import html
import io
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from tests.dashboard._shown import autolinks, shown
from tests.fixtures.shapes import SHAPES

#: Each case: a clear error within this many CPU seconds of this process...
LIMIT_S = 10.0
#: ... and below this much extra resident memory (MB).
LIMIT_MB = 500.0
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE / 2**20


@dataclass
class Cost:
    """What a case cost: CPU seconds of this process (all its threads) and peak extra
    resident memory (MB)."""

    seconds: float = 0.0
    extra_mb: float = 0.0
    samples: list[float] = field(default_factory=list)


@contextmanager
def bounded(what: str) -> Iterator[Cost]:
    """Time a case and sample its memory; fail beyond :data:`LIMIT_S` / :data:`LIMIT_MB`."""
    gc.collect()
    cost, stop = Cost(), threading.Event()
    base = _rss_mb()

    def sample() -> None:
        while not stop.is_set():
            cost.samples.append(_rss_mb() - base)
            time.sleep(0.005)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.process_time()
    try:
        yield cost
    finally:
        cost.seconds = time.process_time() - t0
        stop.set()
        t.join()
        cost.extra_mb = max([0.0, *cost.samples])
        print(f"\n[hostile] {what}: {cost.seconds:.2f} s CPU, +{cost.extra_mb:.0f} MB")
    assert cost.seconds < LIMIT_S, f"{what}: {cost.seconds:.1f} s"
    assert cost.extra_mb < LIMIT_MB, f"{what}: +{cost.extra_mb:.0f} MB"


def texts(at: Any) -> str:
    """The page's messages and its ``st.table`` cells (the import problems), as shown."""
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success"):
        parts += [shown(e.value) for e in getattr(at, kind)]
    for t in at.table:
        parts += [shown(v) for v in t.value.astype(str).to_numpy().ravel()]
    return "\n".join(parts)


def errors(at: Any) -> str:
    return "\n".join(shown(e.value) for e in at.error)


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


def stored(home: Path) -> tuple[Any, ...]:
    """What the server holds for visitors: study folders and session-store rows."""
    studies = home / "studies"
    folders = sorted(p.name for p in studies.iterdir()) if studies.exists() else []
    db = home / "dashboard" / "sessions.sqlite"
    rows: tuple[int, ...] = ()
    if db.exists():
        con = sqlite3.connect(db)
        try:
            rows = tuple(
                con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("sessions", "answers")
            )
        finally:
            con.close()
    return folders, rows


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "data_home"


# ----------------------------------------------------------------------------- study imports
def wide_header(columns: int) -> bytes:
    """A header of ``columns`` names (``c0000000``, ...) and one data line of 900,000 bytes:
    the issue's 9.9 MB CSV for a million columns."""
    return (",".join(f"c{k:07d}" for k in range(columns)) + "\n" + "1," * 449_999 + "1\n").encode()


def deep_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_a_million_column_csv_upload_is_refused(app, home) -> None:
    blob = wide_header(1_000_000)
    at = app("case_studies")
    before = stored(home)
    with bounded(f"1,000,000-column CSV upload ({len(blob) / 1e6:.1f} MB)"):
        at.file_uploader(key="add_choices").upload("wide.csv", blob, "text/csv").run()
    no_exception(at)
    assert "header line is longer than 256 KiB" in texts(at) or "columns" in texts(at)
    assert "nothing was imported" in texts(at)
    assert stored(home) == before


def test_a_200000_deep_attribute_table_is_refused(app, home) -> None:
    at = app("case_studies")
    content = SHAPES["panel-long"].file.read_bytes()
    at.file_uploader(key="add_choices").upload("mine.csv", content, "text/csv").run()
    before = stored(home)
    with bounded("200,000-deep attribute JSON"):
        at.file_uploader(key="add_attrs").upload(
            "attrs.json", deep_json(200_000), "application/json"
        ).run()
    no_exception(at)
    assert "nest deeper than 32 levels" in texts(at)
    assert stored(home) == before


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        (  # the 60,000-character condition: cut to the input's max_chars by the
            # server (5,000), then refused
            "add_avail_when",
            "CAR: license == " + "1" * 60_000,
            "Availability conditions, entry 1: a text of 5,000 characters is longer than 500",
        ),
        ("add_avail_when", "CAR license == 1", "Availability conditions, condition 1: "),
        ("add_missing", "-1, " + "9" * 1_000, "Missing-value codes, entry 2: a text of 1,000"),
        ("add_levels", "x=" + "k" * 1_000, "Text levels, entry 1: a text of 1,000"),
    ],
)
def test_a_hostile_field_on_the_form_is_refused_before_a_worker_reads_it(
    app, home, key: str, value: str, words: str
) -> None:
    """A field is bounded and read on the page (one sentence naming the form's
    field), before any worker inspects the upload with it; a browser that ignores the
    inputs' ``max_chars`` gets the same (``set_value`` sends the text whole)."""
    from tests.data_loaders.test_availability_rules import licence_frame

    at = app("case_studies")
    content = licence_frame().to_csv(index=False).encode()
    at.file_uploader(key="add_choices").upload("licence.csv", content, "text/csv").run()
    before = stored(home)
    with bounded(f"{len(value):,}-character {key}") as cost:
        at.text_input(key=key).set_value(value).run()
    no_exception(at)
    assert words in errors(at), errors(at)
    assert len(at.error) == 1 and "\n" not in errors(at)
    assert not [b for b in at.button if b.key == "add_import"]  # nothing to import
    assert stored(home) == before
    assert cost.seconds < LIMIT_S


def test_a_200000_deep_proposal_file_is_refused(app, home) -> None:
    at = app("pmr", pmr_view="Feature proposals")
    with bounded("200,000-deep proposal JSON"):
        at.file_uploader(key="pmr_prop_upload").upload(
            "props.json", deep_json(200_000), "application/json"
        ).run()
    no_exception(at)
    assert "nest deeper than 32 levels" in errors(at)


# ----------------------------------------------------------------------------- sessions
def session_json(**overrides: Any) -> bytes:
    """An exported session of the Electricity items (35 items: no sample)."""
    doc: dict[str, Any] = {
        "format": "dtpbo-elicitation-session",
        "version": 2,
        "session": "x" * 22,
        "participant": "",
        "config": {
            "kind": "items",
            "source": "electricity",
            "method": "dt",
            "seed": 0,
            "max_items": None,
        },
        "base": [],
        "actions": [],
        "answers": [],
    }
    for k, v in overrides.items():
        if k in doc["config"]:
            doc["config"][k] = v
        else:
            doc[k] = v
    return json.dumps(doc, separators=(",", ":")).encode()


def valid_rows(n: int) -> list[dict[str, int]]:
    return [{"winner_id": k % 35, "loser_id": (k + 1 + k % 7) % 35} for k in range(n)]


SESSION_FILES: dict[str, tuple[Callable[[], bytes], str]] = {
    "a valid file with 50,000 comparisons": (
        lambda: session_json(base=valid_rows(50_000)),
        "the largest session file accepted here",
    ),
    "50,000 actions": (
        lambda: session_json(actions=["A", "B"] * 25_000),
        "holds 50,000 answers, more than 200",
    ),
    "300,000 invalid rows": (
        lambda: session_json(base=[{"w": "?"}] * 300_000),
        "the largest session file accepted here",
    ),
    "max_items 10^12": (
        lambda: session_json(max_items=10**12),
        "max_items",
    ),
    "a study not offered here": (
        lambda: session_json(source="my-someone-else"),
        "study is not available here",
    ),
    "three rows naming no item": (
        lambda: session_json(base=[{"winner_id": 999, "loser_id": 998}] * 3),
        "cannot be replayed here",
    ),
    "a 200,000-deep document": (lambda: deep_json(200_000), "nests deeper than 8 levels"),
    "not JSON": (lambda: b"\xff\xfe garbage", "not JSON text"),
}


@pytest.mark.parametrize("case", list(SESSION_FILES))
def test_a_hostile_session_file_is_refused_before_any_fit(app, home, case: str) -> None:
    make, message = SESSION_FILES[case]
    blob = make()
    at = app("elicitation", sel_study="electricity", el_view="Sessions")
    no_exception(at)
    before = stored(home)
    with bounded(f"session file: {case} ({len(blob) / 1e6:.1f} MB)"):
        at.file_uploader(key="el_upload_json").upload("s.json", blob, "application/json").run()
    no_exception(at)
    assert "Could not load that file" in errors(at)
    assert message in errors(at), errors(at)
    assert stored(home) == before  # nothing stored


def test_a_valid_session_file_is_resumed(app, home) -> None:
    """The control: a small valid file passes every check and the page resumes it (its
    controls set before their widgets are drawn)."""
    blob = session_json(method="dt-literal", seed=3, base=valid_rows(5), actions=["A"])
    at = app("elicitation", sel_study="electricity", el_view="Sessions")
    at.file_uploader(key="el_upload_json").upload("s.json", blob, "application/json").run()
    no_exception(at)
    assert not errors(at), errors(at)
    assert at.session_state["el_method"] == "dt-literal" and at.session_state["el_seed"] == 3
    assert at.metric[0].value == "6"
    assert stored(home)[1] == (1, 1)  # one session: its 5 loaded rows and its 1 answer


def test_a_valid_session_too_slow_to_replay_is_refused_at_the_budget(
    app, home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 valid answers under the GP (17 s to replay on Electricity at load 8): refused
    between two answers once the operator's budget is spent."""
    monkeypatch.setenv("DTPBO_REPLAY_SECONDS", "0.5")
    blob = session_json(method="gp", base=valid_rows(200))
    at = app("elicitation", sel_study="electricity", el_view="Sessions")
    before = stored(home)
    with bounded("session file: 200 valid answers under the GP, budget 0.5 s") as cost:
        at.file_uploader(key="el_upload_json").upload("s.json", blob, "application/json").run()
    no_exception(at)
    assert "takes longer than 0.5 s to open here" in errors(at), errors(at)
    assert re.search(r"\(\d+ of 200 answers replayed", errors(at))
    assert cost.seconds < 5.0  # the budget, one refit and the page; not the whole replay
    assert stored(home) == before


def test_a_saved_session_too_slow_to_replay_starts_a_draft(
    app, home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saved 200-answer GP session's link, the budget spent: one sentence, a new session
    that is a draft (no empty row stored), the saved one untouched."""
    from dashboard._services import sessions as store

    config = ("items", "electricity", "gp", 0, None)
    sid = store.create_session(config, pd.DataFrame(valid_rows(200)), owner="x")
    before = stored(home)
    monkeypatch.setenv("DTPBO_REPLAY_SECONDS", "0.3")
    with bounded("the link of a saved 200-answer GP session, budget 0.3 s"):
        at = app("elicitation", query={"session": sid})
    no_exception(at)
    assert "takes longer than 0.3 s to open here" in errors(at), errors(at)
    assert "a new session was started" in errors(at)
    assert at.metric[0].value == "0"
    assert stored(home) == before  # no empty session row, the saved one kept
    assert len(store.load_session(sid).base) == 200


def answers_csv(rows: int, valid: bool) -> bytes:
    if valid:
        lines = [f"{k + 1},A,{k % 35},{(k + 3) % 35}" for k in range(rows)]
    else:
        lines = ["x,?,nope,nope"] * rows
    return ("step,winner_side,winner_id,loser_id\n" + "\n".join(lines) + "\n").encode()


@pytest.mark.parametrize(
    ("case", "blob", "message"),
    [
        ("50,000 valid rows", answers_csv(50_000, True), "more than"),
        ("300,000 invalid rows", answers_csv(300_000, False), "more than"),
        ("3 invalid rows", answers_csv(3, False), "cannot be replayed here"),
    ],
)
def test_a_hostile_answers_csv_is_refused(app, home, case: str, blob: bytes, message) -> None:
    at = app("elicitation", sel_study="electricity", el_view="Answers")
    before = stored(home)
    with bounded(f"answers CSV: {case} ({len(blob) / 1e6:.1f} MB)"):
        at.file_uploader(key="el_upload").upload("a.csv", blob, "text/csv").run()
    no_exception(at)
    assert "Could not load a.csv" in errors(at)
    assert message in errors(at), errors(at)
    assert stored(home) == before


def test_a_stored_session_too_long_to_replay_is_not_opened(app, home) -> None:
    """A session an earlier version stored (50,000 answers): its link starts no fit."""
    from dashboard._services import sessions as store

    sid = store.create_session(("items", "electricity", "dt", 0, None), owner="x")
    con = sqlite3.connect(home / "dashboard" / "sessions.sqlite")
    with con:
        con.executemany(
            "INSERT INTO answers (session_id, seq, action, created) VALUES (?, ?, ?, 0)",
            [(sid, k, "AB"[k % 2]) for k in range(50_000)],
        )
    con.close()
    with bounded("the link of a stored 50,000-answer session"):
        at = app("elicitation", query={"session": sid})
    no_exception(at)
    assert "more than 200 answers" in texts(at)
    # a new session (a draft: no link until its first answer), the old one untouched
    assert at.query_params.get("session") in (None, [])
    con = sqlite3.connect(home / "dashboard" / "sessions.sqlite")
    (n,) = con.execute("SELECT COUNT(*) FROM answers WHERE session_id = ?", (sid,)).fetchone()
    con.close()
    assert n == 50_000


def test_a_session_holds_at_most_the_limit(app, monkeypatch) -> None:
    from dashboard import _session_files as sf

    monkeypatch.setattr(sf, "MAX_ANSWERS", 3)
    at = app("elicitation", sel_study="electricity")
    for k in range(3):
        at.button(key=f"el_pick_A_{k}").click().run()
    no_exception(at)
    assert at.metric[0].value == "3"
    at.button(key="el_pick_A_3").click().run()  # one more: refused, not stored
    no_exception(at)
    assert at.metric[0].value == "3"
    assert "the most a session may hold here" in texts(at)


# ----------------------------------------------------------------------------- data is text
IMG = "http://127.0.0.1:9/xssimg"
TITLE = f"![xssimg]({IMG}) **xssbold** <b>xsshtml</b> $xssmath$"
LEVELS = {"slow": "__xsslevel__", "medium": '=HYPERLINK("http://x","y")', "fast": "[xsslink](x)"}
#: The price: a formula in a CSV, Markdown on a page, guessed as the money attribute ("price")
MONEY = "@SUM(1) *xssmoney* price"


@pytest.fixture
def hostile_study(home: Path) -> str:
    """A study whose title, attribute names, levels and item names are Markdown/HTML."""
    from data_loaders import user_studies as us

    df = pd.read_csv(SHAPES["panel-long"].file)
    df["speed"] = df["speed"].map(LEVELS)
    df = df.rename(columns={"wifi": "*xssattr*", "price": MONEY})
    columns = us.ColumnMap(respondent_features=(("age", "**xssuser** age"),))
    meta, problems = us.save_study(TITLE, df.to_csv(index=False).encode(), "h.csv", None, columns)
    assert meta is not None, problems
    return meta.key


def _markdown_sources(at: Any) -> list[str]:
    """Every string of the page Streamlit renders as Markdown: element bodies, labels,
    help texts, metric values, expander and tab labels."""
    out: list[str] = []

    def items(value: Any) -> list[Any]:
        single = isinstance(value, str | bytes) or hasattr(value, "ListFields")
        return [value] if single else list(value)

    def walk_proto(msg: Any) -> None:
        for fd, value in msg.ListFields():
            if fd.type == fd.TYPE_MESSAGE:
                for v in items(value):
                    walk_proto(v)
            elif fd.type == fd.TYPE_STRING and fd.name in ("body", "label", "help", "caption"):
                out.extend(str(v) for v in items(value))

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            walk_proto(proto)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return out


_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _as_html(markdown: str) -> str:
    return _MD.render(markdown)


#: What each hostile fragment would become if it were read as Markdown or HTML.
FORMATTED = (
    "<img",  # ![xssimg](...): a request to IMG
    "<strong>xssbold</strong>",  # **xssbold**
    "<strong>xsslevel</strong>",  # __xsslevel__
    "<em>xssattr</em>",  # *xssattr*
    "<em>xssmoney</em>",  # the money attribute's *xssmoney*
    "<strong>xssuser</strong>",  # a respondent feature's label **xssuser**
    '<a href="x">xsslink</a>',  # [xsslink](x)
    "<b>xsshtml</b>",  # raw HTML passed through
)


def assert_data_is_text(at: Any, where: str) -> None:
    for src in _markdown_sources(at):
        if "xss" not in src:
            continue
        out = _as_html(src)
        for formatted in FORMATTED:
            assert formatted not in out, (where, formatted, src)
        assert not re.search(r"(?<!\\)\$xssmath", src), (where, src)  # no formula
        assert "xss" in html.unescape(out)  # the data is still shown, as text


@pytest.mark.parametrize(
    ("page", "state"),
    [
        ("case_studies", {}),
        ("tree_explorer", {"te_view": "Tree"}),
        ("tree_explorer", {"te_view": "Leaves"}),
        ("sensitivity", {}),
        ("hierarchy", {"hi_view": "One user group", "hi_min": 5}),
        ("elicitation", {}),
        ("elicitation", {"el_view": "Answers"}),
    ],
)
def test_markdown_in_data_is_shown_as_text(
    app, hostile_study, quick_dt_linear, page: str, state
) -> None:
    at = app(page, sel_study=hostile_study, **state)
    no_exception(at)
    if page == "hierarchy":  # the respondent features' labels and the money attribute
        sources = _markdown_sources(at)
        assert any("xssuser" in s for s in sources) and any("xssmoney" in s for s in sources)
    if page == "elicitation":  # answer once: the favourite, its leaf and path appear
        at.button(key="el_pick_A_0").click().run()
        no_exception(at)
    if page == "tree_explorer":  # follow an item: its name and leaf conditions appear
        follow = next(b for b in at.selectbox if str(b.key).startswith("te_item::"))
        follow.set_value(0).run()
        no_exception(at)
    if page == "tree_explorer" and state["te_view"] == "Tree":  # slopes: the money caption
        box = next(b for b in at.selectbox if b.label == "Model")
        box.set_value("dt-linear").run()
        no_exception(at)
        assert any("xssmoney" in s for s in _markdown_sources(at))
    sources = _markdown_sources(at)
    assert any("xss" in s for s in sources), "the hostile study is not shown"
    assert_data_is_text(at, page)


# ----------------------------------------------------------------------------- links are text
#: Phishing text in a link parameter or in data: a URL, a ``www.`` name, an e-mail address.
PHISH = "Your session expired - log in again at http://evil.example/login"
LINK_TITLE = "Survey https://evil.example/t by www.evil.example, help@evil.example"
LINK_LEVELS = {
    "slow": "http://evil.example/slow",
    "medium": "www.evil.example",
    "fast": "sales@evil.example",
}


@pytest.fixture
def linky_study(home: Path) -> str:
    """A study whose title, levels, an attribute's name and a respondent feature's label
    hold URLs, ``www.`` names and e-mail addresses (as a GFM autolinker finds them)."""
    from data_loaders import user_studies as us

    df = pd.read_csv(SHAPES["panel-long"].file)
    df["speed"] = df["speed"].map(LINK_LEVELS)
    df = df.rename(columns={"wifi": "wifi www.evil.example"})
    columns = us.ColumnMap(respondent_features=(("age", "age, see http://evil.example/a"),))
    blob = df.to_csv(index=False).encode()
    meta, problems = us.save_study(LINK_TITLE, blob, "l.csv", None, columns)
    assert meta is not None, problems
    return meta.key


def opened_by_link(page: str, query: dict[str, str], **state: Any) -> Any:
    """The page opened by a link (its first run, as a new browser tab runs it: the link's
    parameters are read on that page, not on the default one)."""
    from streamlit.testing.v1 import AppTest

    from tests.dashboard.conftest import APP

    at = AppTest.from_file(str(APP), default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(f"views/{page}.py").run()
    return at


def assert_no_links(at: Any, where: str) -> list[str]:
    """No Markdown of the page that shows the links' data holds a link a browser would
    draw; the sources that show it (it is still shown, as text)."""
    showing = [src for src in _markdown_sources(at) if "evil" in src]
    for src in showing:
        assert autolinks(src) == [], (where, autolinks(src), src)
    return showing


PAGES = [
    ("case_studies", {}),
    ("tree_explorer", {"te_view": "Tree"}),
    ("tree_explorer", {"te_view": "Leaves"}),
    ("sensitivity", {}),
    ("hierarchy", {"hi_view": "One user group", "hi_min": 5}),
    ("elicitation", {}),
    ("elicitation", {"el_view": "Answers"}),
]


@pytest.mark.parametrize(("page", "state"), PAGES)
def test_urls_and_addresses_in_data_and_links_are_no_links(
    app, linky_study, quick_dt_linear, page: str, state
) -> None:
    """A study title, levels, attribute names and labels with URLs, ``www.`` names and
    e-mail addresses, and link parameters (``?study=``, ``?respondent=``) holding them, on
    every page: shown as text, never as a clickable link (a phishing link inside the app's
    own warning box)."""
    # a link naming no study: the page says so, quoting the link's text
    at = opened_by_link(page, {"study": PHISH}, **state)
    no_exception(at)
    warned = [shown(w.value) for w in at.warning]
    assert any("log in again at http://evil.example/login" in w for w in warned), warned
    assert assert_no_links(at, f"{page} ?study=")
    # the study's own data, and a respondent the link names
    query = {"study": linky_study, "respondent": "see www.evil.example or a@evil.example"}
    at = opened_by_link(page, query, **state)
    no_exception(at)
    if page == "elicitation":  # answer once: the favourite, its leaf and path appear
        at.button(key="el_pick_A_0").click().run()
        no_exception(at)
    if page == "tree_explorer":  # follow an item: its name and leaf conditions appear
        follow = next(b for b in at.selectbox if str(b.key).startswith("te_item::"))
        follow.set_value(0).run()
        no_exception(at)
    showing = assert_no_links(at, page)
    assert any("evil" in shown(s) for s in showing), f"{page}: the study's data is not shown"


@pytest.mark.parametrize(("page", "warns"), [("pmr", True), ("convergence", False)])
def test_a_link_parameter_is_no_link_on_the_other_pages(page: str, warns: bool) -> None:
    """The pages without the imported studies: a link's ``study`` (and ``respondent``,
    ``session``) holding a URL, a ``www.`` name and an address makes no link either."""
    query = {"study": PHISH, "respondent": "www.evil.example", "session": "a@evil.example"}
    at = opened_by_link(page, query)
    no_exception(at)
    showing = assert_no_links(at, page)
    warned = [shown(w.value) for w in at.warning]
    assert any("http://evil.example/login" in w for w in warned) is warns, warned
    assert bool(showing) is warns


# ----------------------------------------------------------------------------- CSV exports
def download(at: Any, label: str) -> bytes:
    """The bytes of a download button (AppTest keeps them in its media storage)."""
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    (button,) = [d for d in at.get("download_button") if d.proto.label == label]
    file_id = button.proto.url.rsplit("/", 1)[-1].split(".")[0]
    for store in (o for o in gc.get_objects() if isinstance(o, MemoryMediaFileStorage)):
        try:
            return bytes(store.get_file(file_id).content)
        except Exception:
            continue
    raise AssertionError(f"no stored download {label!r}")


def assert_no_formula(csv_text: str, where: str) -> None:
    frame = pd.read_csv(io.StringIO(csv_text), dtype=str, keep_default_na=False)
    cells = [*frame.columns, *frame.to_numpy().ravel().tolist()]
    for c in cells:
        if c[:1] in ("=", "+", "-", "@", "\t", "\r"):
            assert re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", c), (where, c)


def test_every_csv_export_neutralises_formula_cells(app, hostile_study) -> None:
    # the answers of a session: a hostile participant name and hostile levels
    at = app(
        "elicitation",
        sel_study=hostile_study,
        el_view="Answers",
        el_participant='=cmd|" /C calc"!A0',
    )
    for k in range(3):
        at.button(key=f"el_pick_A_{k}").click().run()
    no_exception(at)
    answers = download(at, "Download answers (CSV)").decode()
    assert "'=cmd" in answers and "'=HYPERLINK" in answers
    assert_no_formula(answers, "answers")
    # feature sensitivity: attribute names from the file ('@SUM(1)')
    at = app("sensitivity", sel_study=hostile_study)
    no_exception(at)
    sens = download(at, "Download CSV").decode()
    assert "'@SUM(1)" in sens
    assert_no_formula(sens, "sensitivity")
    # PMR: an extracted table (uploaded, then downloaded)
    from dashboard import _services as svc

    table = pd.DataFrame(
        {"message_id": ["A01", "A02"], "status": ["ok", "=1+1"], "note": ["@x", "+y"]}
    )
    pmr = svc.extracted_csv(table)
    assert_no_formula(pmr, "pmr")
    assert "'=1+1" in pmr and "'@x" in pmr


# ----------------------------------------------------------------------------- private studies
def test_a_session_link_on_another_visitors_private_study_shows_nothing_of_it(
    app, monkeypatch
) -> None:
    """Visitor B opens the link of visitor A's session on A's private study: the same
    page as for an unknown id, and A's participant name is not pre-filled."""
    from tests.dashboard.test_owners import A, B, import_on_page

    monkeypatch.setenv("DTPBO_SHARED_SERVER", "1")
    _, key = import_on_page(app, A, "A's private study")
    at = app("elicitation", sel_study=key, dtpbo_visitor=A, el_participant="Ada Owner")
    at.button(key="el_pick_A_0").click().run()
    no_exception(at)
    sid = str(at.query_params["session"])
    mine = app("elicitation", query={"session": sid}, dtpbo_visitor=A)  # its owner: resumed
    assert mine.text_input(key="el_participant").value == "Ada Owner"
    other = app("elicitation", query={"session": sid}, dtpbo_visitor=B)
    no_exception(other)
    assert other.text_input(key="el_participant").value == ""
    assert "No saved session has this link's id here" in texts(other)
    assert "Ada Owner" not in texts(other) and "A's private study" not in texts(other)
    assert other.selectbox(key="el_study").value != key


def test_one_corrupt_result_file_is_skipped_and_named(app, home) -> None:
    from tests.dashboard.test_pages import _bench_results

    folder = home / "results" / "bench-small"
    _bench_results(folder, methods=("dt",))
    good = sorted(folder.glob("cell-*.parquet"))
    (folder / "cell-zz-corrupt.parquet").write_bytes(b"PAR1 not a parquet file at all PAR1")
    at = app("convergence")
    no_exception(at)
    warned = "\n".join(shown(w.value) for w in at.warning)
    assert "1 result file could not be read and was skipped" in warned, warned
    assert "bench-small/cell-zz-corrupt.parquet" in warned
    assert "Something went wrong" not in texts(at)
    from dashboard import _services as svc

    rows = svc.read_results(folder)  # the other cells are read
    assert len(rows) == sum(len(pd.read_parquet(f)) for f in good) > 0


def test_the_default_extraction_cache_lives_in_the_data_folder(monkeypatch, home) -> None:
    from dashboard import _services as svc
    from feature_extraction import default_cache_path

    monkeypatch.delenv("DTPBO_LLM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home.parent / "elsewhere"))
    path = default_cache_path()
    assert path == home / "llm_cache.sqlite"
    # the default passes the rule a typed cache path is held to (written below the data folder)
    assert (
        svc.typed_path_refusal(str(path), folder=False, write=True, what="extraction cache") is None
    )
    monkeypatch.delenv("DTPBO_DATA_HOME")
    monkeypatch.setenv("HOME", str(home.parent / "home"))
    assert default_cache_path() == home.parent / "home" / ".cache" / "dtpbo" / "llm_cache.sqlite"


def test_a_forged_visitor_cookie_is_not_kept(monkeypatch) -> None:
    """A cookie the server did not sign (another visitor's token typed in, an old unsigned
    one) is no identity: the page takes a new token, and the server's middleware replaces
    the cookie."""
    import streamlit

    from dashboard import _server, _ui

    victim = "v" * 32

    class Context:
        def __init__(self) -> None:
            self.cookies: dict[str, str] = {}

    ctx = Context()
    monkeypatch.setattr(streamlit, "context", ctx)
    for forged in (victim, f"{victim}.{'A' * 22}", f"{victim}.", "<script>", ""):
        ctx.cookies = {_server.VISITOR_COOKIE: forged}
        assert _ui._cookie_token() is None, forged
    ctx.cookies = {_server.VISITOR_COOKIE: _server.signed(victim)}
    assert _ui._cookie_token() == victim  # only what this server issued
    assert _server.cookie_token(f"dtpbo_visitor={victim}") is None
    # the signature depends on the server's secret: another server's cookie is forged here
    monkeypatch.setattr(_server, "_SECRET", [b"another server's secret" * 2])
    assert _server.verified_token(_server.signed(victim)) == victim
    other = _server.signed(victim)
    monkeypatch.setattr(_server, "_SECRET", [b"this server's secret" * 2])
    assert _server.verified_token(other) is None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.slow
def test_no_worker_outlives_the_server_after_sigterm(tmp_path) -> None:
    import signal

    from tests.fixtures.streamlit_server import streamlit_server

    def children(pid: int) -> set[int]:
        out: set[int] = set()
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                out |= {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                pass
        return out

    def alive(pid: int) -> bool:
        try:
            return "zombie" not in Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False

    extra = {"DTPBO_NO_PRECOMPUTE": "1"}
    with streamlit_server(tmp_path, extra_env=extra, timeout=120):
        pid = int((tmp_path / "streamlit.pid").read_text())
        log = tmp_path / "streamlit.log"
        deadline = time.monotonic() + 120
        while "is ready" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = {
            w
            for w in children(pid)
            if "dashboard._work" in _cmdline(w) or "spawn_main" in _cmdline(w)
        }
        assert len(workers) >= 2, (log.read_text()[-2000:], [_cmdline(c) for c in children(pid)])
        t0 = time.monotonic()
        os.kill(pid, signal.SIGTERM)
        gone: dict[int, float] = {}
        while len(gone) < len(workers) + 1 and time.monotonic() - t0 < 30:
            for p in (pid, *workers):
                if p not in gone and not alive(p):
                    gone[p] = time.monotonic() - t0
            time.sleep(0.01)
        server_s = gone.get(pid, float("inf"))
        workers_s = max(gone.get(w, float("inf")) for w in workers)
        print(f"\n[hostile] SIGTERM: server gone in {server_s:.2f} s, workers {workers_s:.2f} s")
        # every process ends (the 30 s loop is a hang guard; the times are printed)
        assert max(server_s, workers_s) < float("inf"), (server_s, workers_s)
