"""The Case studies page's "Analysis plan" panel (AppTest): an edit saves the file the
command saves, a wrong edit is one sentence naming the field, Reset goes back to the
default, and on a shared server only an imported study's owner edits its plan."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard._plan_editor import widget_key
from data_loaders import cli
from data_loaders import user_studies as us
from data_loaders.plans import plan_path, remove_plan
from tests.dashboard._shown import shown
from tests.dashboard.test_owners import A, B, import_on_page


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


def on_train(app: Any, **state: Any) -> Any:
    at = app("case_studies", **state)
    at.selectbox(key="cs_study").set_value("train").run()
    no_exception(at)
    return at


def captions(at: Any) -> str:
    return "\n".join(shown(c.value) for c in at.caption)


def test_an_edit_saves_the_file_the_command_saves(app, capsys) -> None:
    at = on_train(app)
    assert "Plan: split auto" in captions(at) and "time time (min)" in captions(at)
    assert at.button(key="plan_save::train").proto.disabled  # nothing to save yet
    at.number_input(key=widget_key("seed", "train")).set_value(3).run()
    at.text_input(key=widget_key("respondents", "train")).input("40").run()
    at.selectbox(key=widget_key("time", "train")).set_value("(none)").run()
    no_exception(at)
    same = "python -m data_loaders plan --study train --set seed=3 respondents=40 time=none"
    assert same in captions(at)
    at.button(key="plan_save::train").click().run()
    no_exception(at)
    assert "Saved" in "\n".join(shown(s.value) for s in at.success)
    # the page now reads the saved plan (the study cache's key holds the plan's stamp)
    assert "the first 40 respondents" in captions(at) and "time none" in captions(at)
    from_page = plan_path("train").read_text(encoding="utf-8")

    assert remove_plan("train")
    edit = ["seed=3", "respondents=40", "time=none"]
    assert cli.main(["plan", "--study", "train", "--set", *edit]) == 0
    capsys.readouterr()
    assert plan_path("train").read_text(encoding="utf-8") == from_page


def test_reset_goes_back_to_the_default(app) -> None:
    assert cli.main(["plan", "--study", "train", "--set", "respondents=30"]) == 0
    at = on_train(app)
    assert "the first 30 respondents" in captions(at)
    assert at.text_input(key=widget_key("respondents", "train")).value == "30"
    at.button(key="plan_reset::train").click().run()
    no_exception(at)
    assert not plan_path("train").exists()
    assert "all respondents" in captions(at) and "Reset" in at.success[0].value
    assert at.text_input(key=widget_key("respondents", "train")).value == "all"


@pytest.mark.parametrize(
    ("widget", "value", "words"),
    [
        ("respondents", "0", "Respondents must be at least 1, got 0."),
        ("sensitivity_respondents", "many", "Sensitivity_respondents must be a whole number"),
        ("time", "price", "'price' cannot be both the money and the time attribute."),
    ],
)
def test_a_wrong_edit_is_one_sentence_naming_the_field(app, widget, value, words) -> None:
    at = on_train(app)
    w = widget_key(widget, "train")
    if widget == "time":
        at.selectbox(key=w).set_value(value).run()
    else:
        at.text_input(key=w).input(value).run()
    at.button(key="plan_save::train").click().run()
    no_exception(at)
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1 and words in errors[0], errors
    assert errors[0].count(". ") == 0 and "Traceback" not in errors[0]
    assert not plan_path("train").exists()


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DTPBO_SHARED_SERVER", "1")


def test_a_shared_server_lets_only_the_owner_edit(app, shared) -> None:
    from dashboard import _plan_editor
    from dashboard._services import studies
    from pbo_core.data import Study

    at = on_train(app, dtpbo_visitor=A)  # a bundled study: read-only for everyone
    info = "\n".join(shown(i.value) for i in at.info)
    assert "Read-only: this is a bundled study on a shared server" in info
    assert not [b for b in at.button if str(b.key).startswith("plan_")]
    assert not [t for t in at.text_input if str(t.key).startswith("plan_")]

    at, key = import_on_page(app, A, "A's study")  # its owner edits its plan
    assert [b for b in at.button if b.key == f"plan_save::{key}"]
    at.text_input(key=widget_key("respondents", key)).input("2").run()
    at.button(key=f"plan_save::{key}").click().run()
    no_exception(at)
    assert '"respondents": 2' in plan_path(key).read_text(encoding="utf-8")

    us.set_public(key)  # published: another visitor sees it, and its plan read-only
    studies._user_metas.clear()
    b = app("case_studies", dtpbo_visitor=B)
    b.selectbox(key="cs_study").set_value(key).run()
    no_exception(b)
    assert "this study is published to every visitor of this server" in "\n".join(
        shown(i.value) for i in b.info
    )
    assert not [x for x in b.button if str(x.key).startswith("plan_")]
    study = studies.get_study(key)[0]
    assert isinstance(study, Study)
    with pytest.raises(PermissionError):  # the editor's save refuses too (no visitor here)
        _plan_editor.save_edit(study, key, {"respondents": "3"})
    assert '"respondents": 2' in plan_path(key).read_text(encoding="utf-8")

    # published, the plan is read-only for its importer too (every visitor
    # reads it); the save refuses whoever asks
    a = app("case_studies", dtpbo_visitor=A)
    a.selectbox(key="cs_study").set_value(key).run()
    no_exception(a)
    info = "\n".join(shown(i.value) for i in a.info)
    assert "Read-only: this study is published to every visitor of this server" in info
    assert not [x for x in a.button if str(x.key).startswith("plan_")]
    assert not [t for t in a.text_input if str(t.key).startswith("plan_")]
    monkey = pytest.MonkeyPatch()
    monkey.setattr(studies, "visitor", lambda: us.user_study(key).owner)  # type: ignore[union-attr]
    try:
        with pytest.raises(PermissionError, match="published"):
            _plan_editor.save_edit(study, key, {"seed": "9007199254740991"})
    finally:
        monkey.undo()
    assert '"respondents": 2' in plan_path(key).read_text(encoding="utf-8")


#: A unit typed into the plan that Markdown would turn into links and an image.
HOSTILE_UNIT = (
    "CHF` [pay](https://evil.example/x) ![i](http://127.0.0.1:9/img) <mailto:a@evil.example> `"
)


def test_a_typed_unit_is_text_in_the_pending_command_and_after_saving(app) -> None:
    """The pending caption ("Same as the command: ...") rendered a unit as
    Markdown (a backtick ends the code span): links, a mailto: link, an image request.
    Now every echo of it is text; the save keeps the unit as typed."""
    from tests.dashboard._shown import autolinks

    at = on_train(app)
    at.selectbox(key=widget_key("money", "train")).set_value("price").run()
    unit = next(t for t in at.text_input if str(t.key).startswith("plan_money_unit::price::"))
    unit.set_value(HOSTILE_UNIT).run()
    no_exception(at)
    pending = [c.value for c in at.caption if "Same as the command" in c.value]
    assert len(pending) == 1 and HOSTILE_UNIT in shown(pending[0])
    assert autolinks(pending[0]) == [] and "<img" not in _rendered(pending[0])
    at.button(key="plan_save::train").click().run()
    no_exception(at)
    assert HOSTILE_UNIT in plan_path("train").read_text(encoding="utf-8").replace("\\", "\\")
    sources = [m.value for m in (*at.caption, *at.markdown, *at.success, *at.info)]
    assert any("evil.example" in shown(v) for v in sources)  # shown, as text
    for v in sources:
        assert autolinks(v) == [] and "<img" not in _rendered(v), v


def _rendered(markdown: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").render(markdown)


@pytest.mark.parametrize(
    ("widget", "value", "words"),
    [
        ("seed", 2**32, "must be at most 4,294,967,295"),
        ("respondents", "1" + "0" * 26, "respondents must be at most 1,000,000,000"),
    ],
)
def test_a_plan_count_is_bounded(app, widget, value, words) -> None:
    """The issue's seed 9,007,199,254,740,991 and sample 10^26 are refused in words."""
    from data_loaders.plans import edit_plan
    from data_loaders.registry import load_study
    from pbo_core.data import DataValidationError

    with pytest.raises(DataValidationError, match=words):
        edit_plan(load_study("train"), {widget: str(value)})


@pytest.mark.parametrize("key", ["electricity", "swissmetro", "pmr-demo"])
def test_every_bundled_study_shows_its_whole_plan(app, key: str) -> None:
    at = app("case_studies")
    at.selectbox(key="cs_study").set_value(key).run()
    no_exception(at)
    assert "Plan: split " in captions(at)
    saved = at.button(key=f"plan_save::{key}")
    assert saved.proto.disabled  # the widgets show the plan itself: nothing to save
