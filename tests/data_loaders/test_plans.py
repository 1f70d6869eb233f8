"""Saved analysis plans: shown, edited and reset by ``python -m data_loaders plan``, carried
by every load of the study, checked against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_loaders import cli
from data_loaders.cached import load_study_cached
from data_loaders.plans import edit_plan, plan_changes, plan_path, plan_text, saved_plan
from data_loaders.registry import load_study
from pbo_core.data import DataValidationError
from pbo_core.plan import plan_of


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_show_edit_and_reset_a_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["plan", "--study", "train"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Plan: split auto") and "time time (min)" in out
    assert cli.main(["plan", "--study", "train", "--set", "time=none", "respondents=40"]) == 0
    assert "time none" in capsys.readouterr().out
    study = load_study("train")
    assert plan_of(study).time is None and plan_of(study).respondents == 40
    assert load_study_cached("train").plan == plan_of(study)  # the cache reads the edit
    assert cli.main(["plan", "--study", "train", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["respondents"] == 40
    assert cli.main(["plan", "--study", "train", "--reset"]) == 0
    assert saved_plan("train") is None and plan_of(load_study("train")).time is not None
    assert plan_of(load_study_cached("train")).respondents is None


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ("money=nothing", "not an attribute"),
        ("alternative=price", "not categorical"),
        ("case_specific=age", "need labelled alternatives"),
        ("colour=red", "no 'colour'"),
        ("respondents=0", "at least 1"),
        ("seed=x", "whole number"),
        ("baseline=nope", "not a model"),
        ("sensitivity_models=dt,nope", "sensitivity model 'nope' is not a model"),
        ("split=halves", "'halves' is not a split"),
    ],
)
def test_edits_that_do_not_fit_the_study_are_refused(
    capsys: pytest.CaptureFixture[str], edit: str, words: str
) -> None:
    assert cli.main(["plan", "--study", "train", "--set", edit]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and "Traceback" not in err
    assert not plan_path("train").exists()


def test_a_saved_plan_that_no_longer_fits_names_its_file() -> None:
    study = load_study("swissmetro")
    plan = edit_plan(study, {"time": "headway", "reference": "Car"})
    assert plan.time.attribute == "headway" and plan.time.how == "chosen by the analyst"
    path = plan_path("train")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**plan.to_dict(), "alternative": "mode"}), encoding="utf-8")
    with pytest.raises(DataValidationError, match=r"train\.json: the money attribute .cost. is"):
        load_study("train")
    with pytest.raises(ValueError, match="not a study key"):
        plan_path("../etc/passwd")


def test_a_plan_in_words_reads_back_to_the_same_plan() -> None:
    """``plan_text`` writes what ``--set`` reads: every study's plan survives the trip,
    and ``plan_changes`` of an unchanged plan is empty."""
    for key in ("train", "swissmetro"):
        study = load_study(key)
        plan = plan_of(study)
        back = edit_plan(study, plan_text(plan))

        def whats(p: object) -> dict:  # the plan without how its roles were chosen
            d = p.to_dict()  # type: ignore[attr-defined]
            for role in ("money", "time"):
                if d[role]:
                    d[role].pop("how")
            return {k: v for k, v in d.items() if k != "notes"}

        assert whats(back) == whats(plan) and plan_changes(plan, plan_text(plan)) == {}
    study = load_study("train")
    plan = plan_of(study)
    edited = edit_plan(study, {"money_unit": "NLG", "sensitivity_models": "dt,mnl"})
    assert edited.money.unit == "NLG" and edited.money.attribute == "price"
    assert edited.sensitivity_models == ("dt", "mnl")
    assert plan_text(edited)["sensitivity_models"] == "dt,mnl"
    wanted = {**plan_text(plan), "time": "changes", "time_unit": "changes"}
    assert plan_changes(plan, wanted) == {"time": "changes", "time_unit": "changes"}
    with pytest.raises(DataValidationError, match="time_unit needs a time attribute"):
        edit_plan(study, {"time": "none", "time_unit": "min"})
