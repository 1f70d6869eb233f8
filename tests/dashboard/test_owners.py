"""Imported studies belong to the visitor who imported them (shared-server mode, AppTest):
another visitor neither lists, loads, links nor removes them, until the operator publishes
one; a personal server keeps today's behaviour (every study for its one visitor)."""

from __future__ import annotations

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
