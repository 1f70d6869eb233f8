from pathlib import Path

import pytest

from data_loaders import pmr
from data_loaders._common import DataNotAvailableError
from data_loaders.registry import (
    StudyInfo,
    StudyUnavailableError,
    list_studies,
    load_preset,
    load_study,
    study_info,
)
from pbo_core.data import Study
from tests.fixtures.synthetic import bela_frame, write_sushi_tiny

KEYS = [
    "train",
    "electricity",
    "swissmetro",
    "sushi-a",
    "sushi-b",
    "bela",
    "presidential",
    "pmr-demo",
    "pmr",
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("DTPBO_SUSHI_DIR", "DTPBO_BELA_PATH", "DTPBO_PRESIDENTIAL_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))


def infos() -> dict[str, StudyInfo]:
    return {s.key: s for s in list_studies()}


def test_every_key_is_listed_once() -> None:
    assert [s.key for s in list_studies()] == KEYS
    for s in list_studies():
        assert s.title and s.kind in ("conjoint", "ranking", "text") and s.license
        assert s.reason


def test_vendored_studies_are_available_and_load() -> None:
    i = infos()
    assert i["train"].available and i["electricity"].available
    assert i["train"].location_option == ""
    study = load_study("train")
    assert isinstance(study, Study) and study.key == "train"
    assert load_study("electricity").key == "electricity"


def test_sushi_available_iff_the_folder_exists(tmp_path: Path, monkeypatch) -> None:
    i = infos()
    assert not i["sushi-a"].available and not i["sushi-b"].available
    assert "kamishima.net/sushi" in i["sushi-a"].reason
    with pytest.raises(StudyUnavailableError, match=r"'sushi-a'.*DTPBO_SUSHI_DIR"):
        load_study("sushi-a")
    folder = tmp_path / "sushi"
    monkeypatch.setenv("DTPBO_SUSHI_DIR", str(folder))
    assert not study_info("sushi-a").available  # set, but the folder does not exist
    assert "does not exist" in study_info("sushi-a").reason
    write_sushi_tiny(folder, n_users=3)
    assert study_info("sushi-a").available and study_info("sushi-b").available
    assert load_study("sushi-b").counts()["respondents"] == 3
    (folder / "sushi3b.5000.10.score").unlink()  # set B needs the score file, A does not
    assert study_info("sushi-a").available and not study_info("sushi-b").available


def test_sushi_in_the_download_folder_is_found(tmp_path: Path) -> None:
    write_sushi_tiny(tmp_path / "home" / "sushi" / "sushi3-2016", n_users=2)
    assert study_info("sushi-a").available


def test_location_option_bypasses_the_check(tmp_path: Path) -> None:
    p = tmp_path / "bela.csv"
    bela_frame(2, 18).to_csv(p, index=False)
    assert not study_info("bela").available
    assert study_info("bela").location_option == "path"
    assert load_study("bela", path=p).counts()["respondents"] == 2
    with pytest.raises(StudyUnavailableError, match="does not exist"):
        load_study("bela", path=tmp_path / "nope.csv")


def test_env_var_studies(tmp_path: Path, monkeypatch) -> None:
    i = infos()
    assert not i["bela"].available and "DTPBO_BELA_PATH" in i["bela"].reason
    assert not i["presidential"].available and "Dataverse" in i["presidential"].reason
    p = tmp_path / "bela.csv"
    bela_frame(2, 18).to_csv(p, index=False)
    monkeypatch.setenv("DTPBO_BELA_PATH", str(p))
    assert study_info("bela").available
    assert load_study("bela").key == "bela"
    monkeypatch.setenv("DTPBO_PRESIDENTIAL_PATH", str(tmp_path / "missing.csv"))
    assert not study_info("presidential").available


def test_pmr_status_failure_makes_the_entry_unavailable(monkeypatch) -> None:
    def broken() -> tuple[bool, str]:
        raise OSError("disk on fire")

    monkeypatch.setattr(pmr, "pmr_synth_status", broken)
    i = infos()
    assert not i["pmr"].available
    assert "availability check failed (OSError: disk on fire)" in i["pmr"].reason
    assert i["pmr-demo"].available and i["train"].available  # the listing still works
    with pytest.raises(StudyUnavailableError, match=r"'pmr'.*disk on fire"):
        load_study("pmr")


def test_pmr_loaders_are_called(monkeypatch) -> None:
    calls = {}

    def load_pmr_demo() -> str:
        calls["demo"] = True
        return "demo-study"

    def load_pmr_synth(path: str | None = None) -> str:
        calls["synth"] = path
        return "synth-study"

    monkeypatch.setattr(pmr, "load_pmr_demo", load_pmr_demo)
    monkeypatch.setattr(pmr, "load_pmr_synth", load_pmr_synth)
    monkeypatch.setattr(pmr, "pmr_synth_status", lambda: (True, "found"))
    i = infos()
    assert i["pmr-demo"].available and i["pmr"].available
    assert load_study("pmr-demo") == "demo-study" and calls["demo"]
    assert load_study("pmr", path="x.parquet") == "synth-study" and calls["synth"] == "x.parquet"
    monkeypatch.setattr(pmr, "pmr_synth_status", lambda: (False, "PMR files not found"))
    assert study_info("pmr") == StudyInfo(
        "pmr", i["pmr"].title, "text", False, "PMR files not found", i["pmr"].license, "path",
        i["pmr"].wording, i["pmr"].location,
    )  # fmt: skip
    # the entry declares how the study is asked about and where its data lie
    assert i["pmr"].wording.question == "Which message is more urgent?"
    assert i["pmr"].location.env == pmr.PMR_DIR_ENV and i["pmr"].location.folder
    with pytest.raises(StudyUnavailableError, match="PMR files not found"):
        load_study("pmr")


def test_data_locations_come_from_the_entries() -> None:
    """The Data locations inputs (dashboard) read the registry: one per data set, the
    studies it serves, its variable."""
    from data_loaders.registry import data_locations

    locs = data_locations()
    assert locs["sushi"]["studies"] == ("sushi-a", "sushi-b") and locs["sushi"]["folder"]
    assert locs["bela"]["env"] == "DTPBO_BELA_PATH" and not locs["bela"]["folder"]
    assert {"sushi", "bela", "presidential", "pmr"} == set(locs)


def test_pmr_demo_is_built_in(monkeypatch) -> None:
    info = study_info("pmr-demo")
    assert info.available and info.reason == "built in (data_loaders.pmr)"
    assert info.location_option == ""
    monkeypatch.delenv(pmr.PMR_DIR_ENV, raising=False)
    assert not study_info("pmr").available and pmr.PMR_DIR_ENV in study_info("pmr").reason

    def missing_files() -> None:
        raise DataNotAvailableError("the bundled demo file messages.csv is missing")

    monkeypatch.setattr(pmr, "load_pmr_demo", missing_files)
    with pytest.raises(StudyUnavailableError, match=r"'pmr-demo'.*messages.csv is missing"):
        load_study("pmr-demo")


def test_unknown_key() -> None:
    with pytest.raises(KeyError, match="known studies are"):
        load_study("nope")
    with pytest.raises(KeyError):
        study_info("nope")


def test_load_preset_unknown() -> None:
    with pytest.raises(KeyError, match="presets are"):
        load_preset("nope")
    assert load_preset("train").key == "train"


def test_licence_names_are_the_licences_first_words() -> None:
    names = {s.key: s.license_name for s in list_studies()}
    assert names["train"] == "MIT" and names["sushi-a"] == "Research use only"
    assert names["bela"] == "CC BY 4.0"
    for s in list_studies():
        assert s.license_name and s.license.startswith(s.license_name)
