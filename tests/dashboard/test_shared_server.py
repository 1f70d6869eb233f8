"""Hostile paths typed on the page (AppTest): refused before opening, never echoed; and
shared-server mode, in which the Data locations inputs are absent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard._shown import shown

CANARY = "SECRET-LINE-CANARY-d41e"


def everything(at: Any) -> str:
    """Every element of the page (main and sidebar) as its protobuf text."""
    out: list[str] = []

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def sidebar_warnings(at: Any) -> str:
    return "\n".join(shown(w.value) for w in at.sidebar.warning)


def no_exception(at: Any) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the test's only data root, holding one-line canary files."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "passwd").write_text(f"root:x:0:0:{CANARY}:/root:/bin/bash\n")
    (folder / "names.csv").write_text(f"id,task,{CANARY}\n1,2,3\n")
    return folder


def test_a_path_outside_the_roots_is_refused_and_never_echoed(app, outside: Path) -> None:
    at = app("case_studies", sel_study="bela")
    for f in ("passwd", "names.csv"):
        at.text_input(key="path_bela").input(str(outside / f)).run()
        no_exception(at)
        assert "outside the allowed data roots" in sidebar_warnings(at)
        assert "not available" in everything(at)
        assert CANARY not in everything(at)


def test_hostile_corpus_on_the_page(app, tmp_path: Path, outside: Path) -> None:
    """Symlink and ``..`` escapes, a FIFO, /proc, a folder, a hidden file: each refused
    (or, for the folder, not a file), the page never hangs and never shows the canary."""
    (tmp_path / "link.csv").symlink_to(outside / "names.csv")
    (tmp_path / ".env").write_text(f"KEY={CANARY}\n")
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "folder").mkdir()
    corpus = {
        str(tmp_path / "link.csv"): "outside the allowed data roots",
        str(tmp_path / ".." / outside.name / "names.csv"): "outside the allowed data roots",
        str(tmp_path / ".env"): "hidden file",
        str(tmp_path / "pipe.csv"): "not a regular file",
        "/proc/self/environ": "system folders",
        str(tmp_path / "folder"): "is a folder",
        "bad\x00path": "not a usable path",
    }
    at = app("case_studies", sel_study="presidential")
    for path, why in corpus.items():
        at.text_input(key="path_presidential").input(path).run()
        no_exception(at)
        assert why in sidebar_warnings(at), (path, sidebar_warnings(at))
        assert CANARY not in everything(at), path


def test_a_canary_inside_the_roots_is_read_but_not_echoed(app, tmp_path: Path) -> None:
    f = tmp_path / "bela.csv"
    f.write_text(f"root:x:0:0:{CANARY}:/root:/bin/bash\n")
    at = app("case_studies", sel_study="bela")
    at.text_input(key="path_bela").input(str(f)).run()
    no_exception(at)
    page = everything(at)
    assert "does not match the expected ones" in page  # the loader's message is shown
    assert CANARY not in page


def test_shared_server_mode_has_no_path_inputs(app, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DTPBO_SHARED_SERVER", "1")
    from dashboard._services import sessions as store

    store.store_paths({"bela": str(tmp_path / "bela.csv")})  # a stored path is not used
    at = app("case_studies", sel_study="bela", data_paths={"bela": str(tmp_path / "x.csv")})
    no_exception(at)
    assert not [t for t in at.text_input if str(t.key).startswith("path_")]
    assert "set by the administrator" in everything(at)
    assert "ask its administrator" in everything(at)
    assert str(tmp_path / "x.csv") not in everything(at)


def test_shared_server_mode_fixes_the_other_server_paths(app, monkeypatch, tmp_path) -> None:
    """Results folder, output folder, LLM endpoint and extraction cache: not from visitors,
    and the page names none of the server's paths."""
    monkeypatch.setenv("DTPBO_SHARED_SERVER", "1")
    at = app("convergence", cv_root_value="/")
    no_exception(at)
    keys = {str(t.key) for t in at.text_input}
    assert not keys & {"cv_root", "pmr_base_url", "pmr_cache"}
    assert "set by its administrator" in everything(at)
    assert str(tmp_path) not in everything(at)  # the data home lies below it
    at.session_state["cv_view"] = "Run a small benchmark"
    at.run()
    assert not [b for b in at.button if b.key == "cv_r_run"]  # runs are the operator's
    assert not [t for t in at.text_input if str(t.key).startswith("cv_r_out")]
    at = app("pmr", pmr_view="Extraction")
    no_exception(at)
    keys = {str(t.key) for t in at.text_input}
    assert not keys & {"pmr_base_url", "pmr_cache"}
    assert str(tmp_path) not in everything(at)
