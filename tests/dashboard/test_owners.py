"""Imported studies belong to the visitor who imported them (shared-server mode, AppTest):
another visitor neither lists, loads, links nor removes them, until the operator publishes
one; a personal server keeps today's behaviour (every study for its one visitor)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from data_loaders import user_studies as us
from tests.dashboard._shown import shown
from tests.fixtures.shapes import SHAPES

A, B = "a" * 32, "b" * 32


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


def picker(at: Any) -> list[str]:
    """The titles the Case studies picker offers."""
    return list(at.selectbox(key="cs_study").options)


def import_on_page(app: Any, token: str, title: str = "mine") -> tuple[Any, str]:
    """Visitor ``token`` imports the panel-long shape through the Add-a-study form."""
    at = app("case_studies", dtpbo_visitor=token)
    content = SHAPES["panel-long"].file.read_bytes()
    at.file_uploader(key="add_choices").upload("mine.csv", content, "text/csv").run()
    no_exception(at)
    at.text_input(key="add_title::mine.csv").input(title).run()
    at.button(key="add_import").click().run()
    no_exception(at)
    key = at.session_state["sel_study"]
    assert key.startswith(us.KEY_PREFIX), key
    return at, key


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DTPBO_SHARED_SERVER", "1")


def test_another_visitor_neither_sees_links_nor_removes_a_study(app, shared, tmp_path) -> None:
    at, key = import_on_page(app, A, "Visitor A's study")
    studies = tmp_path / "data_home" / "studies"
    assert [p.name for p in studies.iterdir()] == [key]
    assert us.user_study(key).owner and not us.user_study(key).public
    assert "Visitor A's study" in picker(at)
    assert [b for b in at.button if b.key == f"cs_remove::{key}"]  # its owner may remove it

    b = app("case_studies", dtpbo_visitor=B)
    no_exception(b)
    assert "Visitor A's study" not in picker(b)
    assert not any("Visitor A" in m.value for m in b.markdown)  # nor in the overview table
    pickers = {"tree_explorer": "te_study", "sensitivity": "fs_study", "elicitation": "el_study"}
    for page, widget in pickers.items():
        linked = app(page, query={"study": key}, dtpbo_visitor=B)  # a deep link
        no_exception(linked)
        assert linked.selectbox(key=widget).value != key  # another study is shown
        assert "Visitor A's study" not in linked.selectbox(key=widget).options
        assert linked.query_params.get("study") != [key]
        assert "Visitor A" not in "\n".join(shown(m.value) for m in linked.markdown)
    linked = app(query={"study": key}, dtpbo_visitor=B)  # the default page: Case studies
    warnings = "\n".join(shown(w.value) for w in linked.warning)
    assert "not available" in warnings
    assert not [x for x in linked.button if str(x.key).startswith("cs_remove::")]

    from dashboard import _services as svc

    with pytest.raises(PermissionError):  # the service refuses too, whatever the page shows
        svc.remove_study(key)
    assert [p.name for p in studies.iterdir()] == [key]  # nothing was removed

    us.set_public(key)  # the operator publishes it: everyone sees it, nobody removes it
    from dashboard._services import studies

    studies._user_metas.clear()  # the pages see it within their 5 s cache otherwise
    b = app("case_studies", dtpbo_visitor=B)
    b.selectbox(key="cs_study").set_value(key).run()
    no_exception(b)
    assert "Visitor A's study" in picker(b)
    assert not [x for x in b.button if str(x.key).startswith("cs_remove::")]


def test_the_owner_removes_their_study(app, shared, tmp_path) -> None:
    at, key = import_on_page(app, A)
    at.button(key=f"cs_remove::{key}").click().run()
    no_exception(at)
    assert not (tmp_path / "data_home" / "studies" / key).exists()
    assert "mine" not in picker(at)


def test_a_visitor_holds_at_most_the_limit(app, shared, monkeypatch) -> None:
    monkeypatch.setenv(us.MAX_STUDIES_ENV, "1")
    import_on_page(app, A)
    at = app("case_studies", dtpbo_visitor=A)
    assert "Importing is closed for you here" in "\n".join(shown(i.value) for i in at.info)
    assert not [u for u in at.get("file_uploader") if u.proto.id.endswith("add_choices")]
    other, _ = import_on_page(app, B)  # another visitor may still import
    no_exception(other)


def test_a_personal_server_shows_every_study(app, tmp_path: Path) -> None:
    _, key = import_on_page(app, A)
    b = app("case_studies", dtpbo_visitor=B)  # another browser of the same analyst
    assert "mine" in picker(b)
    b.selectbox(key="cs_study").set_value(key).run()
    assert [x for x in b.button if str(x.key) == f"cs_remove::{key}"]


def test_one_address_holds_at_most_its_limit_whatever_the_cookies(app, shared, monkeypatch) -> None:
    """A crowd of new browsers (new cookies) from one address: the address's limit holds
    them, another address still imports; the form says why, in one sentence."""
    from dashboard import _server
    from dashboard._services import studies

    monkeypatch.setenv(us.MAX_ADDRESS_STUDIES_ENV, "2")
    crowd = _server.address_id("203.0.113.7")
    monkeypatch.setattr(studies, "client_address", lambda: crowd)
    import_on_page(app, "c" * 32, "first")
    import_on_page(app, "d" * 32, "second")
    assert {m.address for m in us.list_user_studies()} == {crowd}  # a hash, not the address
    third = app("case_studies", dtpbo_visitor="e" * 32)  # a new cookie, the same address
    info = "\n".join(shown(i.value) for i in third.info)
    assert "Importing is closed for you here" in info
    assert "your network address already have 2 studies" in info, info
    assert not [u for u in third.get("file_uploader") if u.proto.id.endswith("add_choices")]
    monkeypatch.setattr(studies, "client_address", lambda: _server.address_id("198.51.100.9"))
    import_on_page(app, "e" * 32, "elsewhere")  # another address is not held back


def test_addresses_are_keyed_hashes_by_host() -> None:
    from dashboard import _server

    one = _server.address_id("203.0.113.7")
    assert one and "203.0.113" not in one and one == _server.address_id(" 203.0.113.7 ")
    assert one == _server.address_id("::ffff:203.0.113.7")  # IPv4-mapped: the same host
    assert one != _server.address_id("203.0.113.8")
    # one IPv6 host rotates through its /64: one address for the limits
    assert _server.address_id("2001:db8:1:2::1") == _server.address_id("2001:db8:1:2:ffff::9")
    assert _server.address_id("2001:db8:1:2::1") != _server.address_id("2001:db8:1:3::1")
    assert _server.address_id("") == ""
    # behind a proxy on this machine: the address it appended, not what the client sent
    assert _server.forwarded_for("6.6.6.6, 203.0.113.7") == "203.0.113.7"
    assert _server.forwarded_for("") == ""


def test_a_forwarded_address_is_believed_only_from_a_trusted_proxy() -> None:
    """``X-Forwarded-For`` is read only when the peer is a proxy the server is
    told to trust (``$DTPBO_TRUSTED_PROXIES``, none by default); a loopback peer is one
    address; a header without an address counts as the proxy (every visitor a cap)."""
    from dashboard._server import LaunchError, client_ip, server_args, trusted_proxies

    none = trusted_proxies("")
    assert none == ()
    for forged in ("198.51.100.9", "10.9.9.1", "not-an-ip-at-all", ""):
        assert client_ip(None, forged, none) == "127.0.0.1"  # a loopback peer: one address
        assert client_ip("203.0.113.5", forged, none) == "203.0.113.5"
    local = trusted_proxies("127.0.0.1, ::1")
    assert client_ip(None, "6.6.6.6, 203.0.113.7", local) == "203.0.113.7"  # the proxy's
    assert client_ip(None, "", local) == "127.0.0.1"  # none appended: the proxy's cap
    assert client_ip(None, "203.0.113.7, not-an-ip-at-all", local) == "127.0.0.1"
    assert client_ip("203.0.113.5", "6.6.6.6", local) == "203.0.113.5"  # not a proxy
    assert client_ip("::ffff:127.0.0.1", "203.0.113.7", local) == "203.0.113.7"
    chain = trusted_proxies("127.0.0.1,10.0.0.0/8")  # two proxies: the client before both
    assert client_ip(None, "6.6.6.6, 203.0.113.7, 10.1.2.3", chain) == "203.0.113.7"
    assert client_ip(None, ", ".join(["10.0.0.1"] * 100), chain) == "127.0.0.1"
    with pytest.raises(ValueError, match="'nginx' is no address or network"):
        trusted_proxies("127.0.0.1, nginx")
    old = os.environ.get("DTPBO_TRUSTED_PROXIES")
    os.environ["DTPBO_TRUSTED_PROXIES"] = "nginx"
    try:
        with pytest.raises(LaunchError, match="DTPBO_TRUSTED_PROXIES"):
            server_args([], shared=True)  # refused at launch, not at an import
    finally:
        if old is None:
            del os.environ["DTPBO_TRUSTED_PROXIES"]
        else:
            os.environ["DTPBO_TRUSTED_PROXIES"] = old


def test_the_owner_sees_when_their_studies_expire(app, shared, monkeypatch) -> None:
    monkeypatch.setenv(us.IDLE_DAYS_ENV, "3")
    at, key = import_on_page(app, A, "Kept a while")
    from dashboard._services import studies

    studies._user_metas.clear()
    at = app("case_studies", dtpbo_visitor=A)
    captions = "\n".join(shown(c.value) for c in at.caption)
    assert "Your studies on this server: **Kept a while**" in captions, captions
    assert key in captions and "unless used" in captions
    assert "Each is removed after 3 days that nobody uses it" in captions
    b = app("case_studies", dtpbo_visitor=B)  # another visitor: nothing of A's
    assert "Kept a while" not in "\n".join(shown(c.value) for c in b.caption)


def test_the_sweep_removes_expired_studies_and_keeps_used_ones(app, shared, monkeypatch) -> None:
    import time

    from dashboard import _services as svc

    _, old = import_on_page(app, A, "old")
    _, fresh = import_on_page(app, B, "fresh")
    long_ago = time.time() - 8 * 86400
    for name in (".used", "study.json"):
        path = us.studies_dir() / old / name
        if path.exists():
            os.utime(path, (long_ago, long_ago))
    assert svc.sweep_studies() == [old]
    assert [m.key for m in us.list_user_studies()] == [fresh]
    b = app("case_studies", dtpbo_visitor=A)  # its owner: gone from the picker
    assert "old" not in picker(b)


@pytest.fixture
def real_workers(monkeypatch):
    """The process's job service with worker processes (not inline)."""
    from dashboard._services import jobs

    monkeypatch.delenv("DTPBO_JOBS", raising=False)
    jobs.reset_service()
    yield jobs.service()
    jobs.reset_service()


def test_imports_and_own_studies_load_in_the_budgeted_workers(real_workers, monkeypatch) -> None:
    """The upload is read, checked and saved, and the saved study loaded, in a worker: the
    server process never parses the table; over the worker's budget the form gets the
    budget's sentence as the problem, and nothing is saved."""
    from dashboard import _import_jobs
    from dashboard import _services as svc
    from dashboard._services import studies

    content = SHAPES["panel-long"].file.read_bytes()
    columns, problems, how = svc.upload_columns(content, "mine.csv")
    assert problems == [] and "respondent" in columns and how
    ins = svc.inspect_upload(content, "mine.csv", us.ColumnMap().to_json())
    assert ins.columns is not None and ins.attributes
    meta, problems = svc.import_study("mine", content, "mine.csv", None, ins.columns)
    assert meta is not None, problems
    assert not _import_jobs._LAST  # the table was read over there, not here
    study = studies._load_own_study(meta.key, (), studies.env_stamp(), (0, 0))
    assert study.key == meta.key and study.counts()["comparisons"] > 0
    # a budget of 1 MB: the worker (the models alone are hundreds) is stopped at its next
    # sample, within the check of a larger file
    from tests.benchmarks.server_memory import big_csv

    big = big_csv(us.studies_dir().parent / "big.csv", 8).read_bytes()
    monkeypatch.setenv("DTPBO_JOB_MEMORY_MB", "1")
    # the watchdog looks often, so that a fast machine's load cannot end between two looks
    from dashboard._services import jobs as jobs_module

    monkeypatch.setattr(jobs_module, "WATCH_EVERY_S", 0.01)
    before = sorted(p.name for p in us.studies_dir().iterdir())
    meta, problems = svc.import_study("again", big, "big.csv", None, us.ColumnMap())
    assert meta is None and "DTPBO_JOB_MEMORY_MB" in problems[0].message, problems
    assert sorted(p.name for p in us.studies_dir().iterdir()) == before
    # loading an imported study over the budget: the budget's sentence, not a traceback
    saved, _ = us.save_study("big", big, "big.csv", None, us.ColumnMap())
    monkeypatch.setattr(studies, "study_status", lambda key: studies.StudyStatus(
        studies.StudyInfo(key, "big", "conjoint", True, "", "", ""), True, "", ()
    ))  # fmt: skip
    study, message = svc.get_study(saved.key)
    assert study is None and "DTPBO_JOB_MEMORY_MB" in shown(message), message


def test_a_shared_server_sweeps_at_its_start_and_then_periodically(shared, monkeypatch) -> None:
    import time

    from dashboard._services import studies

    def old_study(owner: str) -> str:
        meta, problems = us.save_study(
            "old", SHAPES["panel-long"].file.read_bytes(), "o.csv", None, us.ColumnMap(),
            owner=owner,
        )  # fmt: skip
        assert meta is not None, problems
        long_ago = time.time() - 8 * 86400
        os.utime(meta.folder / "study.json", (long_ago, long_ago))
        return meta.key

    first = old_study(A)
    try:
        assert studies.start_study_sweeper(every=0.1)
        assert studies.start_study_sweeper(every=0.1)  # once per process
        deadline = time.monotonic() + 30
        while us.user_study(first) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert us.user_study(first) is None  # at its start
        second = old_study(B)
        while us.user_study(second) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert us.user_study(second) is None  # and then periodically
    finally:
        studies.stop_study_sweeper()
    monkeypatch.delenv("DTPBO_SHARED_SERVER")
    assert not studies.start_study_sweeper()  # a personal server expires nothing


def test_a_worker_lets_the_last_table_go(monkeypatch) -> None:
    """The table kept for the form's next question goes at the import, or a while after
    its last use (a form left half-filled)."""
    import time

    from dashboard import _import_jobs

    content = SHAPES["panel-long"].file.read_bytes()
    monkeypatch.setattr(_import_jobs, "KEEP_S", 0.2)
    columns, _, _ = _import_jobs.read_columns(content, "mine.csv")
    assert columns and _import_jobs._LAST
    deadline = time.monotonic() + 10
    while _import_jobs._LAST and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _import_jobs._LAST
    monkeypatch.setattr(_import_jobs, "KEEP_S", 600.0)
    _import_jobs.read_columns(content, "mine.csv")
    assert _import_jobs._LAST
    _import_jobs.save_upload("x", b"", "empty.csv", None, us.ColumnMap())  # a save: let go
    assert not _import_jobs._LAST
