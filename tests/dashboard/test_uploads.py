"""Uploaded files are parsed in memory; the browser's file name never becomes a path."""

from __future__ import annotations

import pytest

from dashboard._uploads import upload_name
from data_loaders.pmr import DEMO_DIR
from tests.dashboard._shown import shown


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("../../x.csv", "x.csv"),
        ("/abs/x.csv", "x.csv"),
        ("C:\\Users\\me\\x.csv", "x.csv"),
        ("C:x.csv", "x.csv"),
        ("..\\..\\x.csv", "x.csv"),
        ("x\x00.csv", "x.csv"),
        ("..", "uploaded file"),
        ("", "uploaded file"),
        ("features.csv", "features.csv"),
    ],
)
def test_upload_name_keeps_only_the_base_name(name: str, base: str) -> None:
    assert upload_name(name) == base


@pytest.mark.parametrize("kind", ["relative", "absolute"])
def test_pmr_upload_with_a_hostile_name_writes_nothing(app, tmp_path, kind) -> None:
    target = tmp_path / "outside" / "escaped.csv"
    target.parent.mkdir()
    # relative: climbs out of any temporary folder; absolute: replaces it
    name = "../" * 12 + str(target).lstrip("/") if kind == "relative" else str(target)
    blob = (DEMO_DIR / "truth.csv").read_bytes()
    at = app("pmr", pmr_view="Extraction")
    at.file_uploader(key="pmr_upload").upload(name, blob, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not target.exists()
    assert not [e.value for e in at.error]
    assert len(at.session_state["pmr_extracted::pmr-demo"]) == 60


def test_pmr_upload_error_names_only_the_base_name(app) -> None:
    at = app("pmr", pmr_view="Extraction")
    at.file_uploader(key="pmr_upload").upload("/secret/dir/bad.csv", b"", "text/csv").run()
    errors = " ".join(shown(e.value) for e in at.error)
    assert "bad.csv" in errors and "/secret/dir" not in errors
