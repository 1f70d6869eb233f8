"""One figure, one number: the held-out accuracy, one ablation and the value of time read
from the pages (AppTest), the commands and the report are equal, for the same analysis
plan, on every bundled study and every shape of the shapes corpus.

Each study's plan is saved with a small evaluation sample (:data:`N` respondents) so the
three surfaces run quickly; they all read it (``python -m data_loaders plan``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from data_loaders.cached import load_study_cached
from data_loaders.plans import save_plan
from data_loaders.registry import load_study
from pbo_core.evaluation import plan_evidence_models, plan_sensitivity_models, plan_split
from pbo_core.experiments import cli
from pbo_core.explain.report import study_report
from pbo_core.plan import plan_of
from pbo_core.registry import get
from tests.dashboard._shown import shown
from tests.fixtures.shapes import SHAPES, import_shape

pytestmark = pytest.mark.slow

#: Respondents of every study's evaluation sample in these tests.
N = 12
BUNDLED = ["train", "electricity", "swissmetro", "pmr-demo"]


def _texts(at) -> str:
    parts = [e.value for e in at.markdown] + [e.value for e in at.caption]
    return shown(" ".join(str(p) for p in parts))


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    assert cli.main([*args, "--json", "-", "--quiet"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _key(source: str, folder: Path) -> str:
    return import_shape(source.split(":", 1)[1], folder) if source.startswith("shape:") else source


@pytest.mark.parametrize("source", [*BUNDLED, *(f"shape:{n}" for n in SHAPES)])
def test_page_command_and_report_show_the_same_numbers(
    app, capsys, isolated_env: Path, quick_dt_linear, source: str
) -> None:
    load_study_cached.cache_clear()
    key = _key(source, isolated_env)
    study = load_study(key)
    save_plan(key, dataclasses.replace(plan_of(study), respondents=N))
    study = load_study_cached(key)
    plan = plan_of(study)
    assert plan.respondents == N
    split = plan_split(study, plan)
    models = [m for m in plan_evidence_models(split, plan) if m in ("dt", "dt-pooled", "mnl")]
    assert "mnl" in models

    # -- held-out accuracy: the command, the report, the Tree explorer's evidence
    acc = _json(capsys, "conjoint-accuracy", "--study", key, "--methods", ",".join(models))
    assert acc["plan"]["respondents"] == N
    tree = next((m for m in models if get(m).tree), "dt")
    parts = study_report(study, model=tree)
    report_ev = parts.evidence.set_index("key")
    at = app("tree_explorer", sel_study=key, te_view="Held-out evidence")
    page_ev = at.dataframe[0].value
    page_ev["label"] = page_ev["model"].str.replace("  ◀ shown above", "")
    page_ev = page_ev.set_index("label")
    for m in models:
        s = acc["summary"][m]
        assert report_ev.loc[m, "heldout"] == pytest.approx(s["test_acc_mean"], abs=1e-12)
        assert [report_ev.loc[m, "ci_low"], report_ev.loc[m, "ci_high"]] == pytest.approx(
            s["test_acc_ci95"], abs=1e-12
        )
        row = page_ev.loc[get(m).label]
        assert row["held-out (%)"] == f"{100 * s['test_acc_mean']:.1f}"
        lo, hi = s["test_acc_ci95"]
        assert row["95% CI (%)"] == f"{100 * lo:.1f} – {100 * hi:.1f}"
        assert 0.0 <= lo <= hi <= 1.0
        # the field's metric: held-out NLL per choice and top-1, the same numbers
        c = s["choices"]
        nlo, nhi = c["nll_per_choice_ci95"]
        assert report_ev.loc[m, "nll"] == pytest.approx(c["nll_per_choice"], abs=1e-12)
        assert report_ev.loc[m, "top1"] == pytest.approx(c["top1_acc"], abs=1e-12)
        assert row["held-out NLL per choice [95% CI]"] == (
            f"{c['nll_per_choice']:.3f} [{nlo:.3f}, {nhi:.3f}]"
        )
        assert row["top-1 choice (%)"] == f"{100 * c['top1_acc']:.1f}"
        assert 0.0 < nlo <= c["nll_per_choice"] <= nhi

    # -- the value of time of the plan's estimates model: the command, the report, the
    #    Tree explorer's Estimates tab, the estimates command
    vot = acc["baseline_fit"]["value_of_time"]
    report_vot = parts.estimates.value_of_time if parts.estimates else None
    assert (vot is None) == (report_vot is None)
    est = _json(capsys, "estimates", "--study", key)
    assert est["value_of_time"] == vot
    if vot is not None:
        assert report_vot["text"] == vot["text"]
        at = app("tree_explorer", sel_study=key, te_view="Estimates")
        assert shown(vot["text"]) in _texts(at)

    # -- one ablation: the command, the report, the Feature sensitivity page
    sens_models = plan_sensitivity_models(plan_split(study, plan, sensitivity=True), plan)
    m = "dt" if "dt" in sens_models else sens_models[0]
    sens = _json(capsys, "sensitivity", "--study", key, "--methods", m)["summary"]
    rows = [r for r in sens["tables"][m] if r["feature removed"] != "None (baseline)"]
    feature, delta = rows[0]["feature removed"], rows[0]["delta test (pp)"]
    rep = parts.sensitivity
    rep_row = rep[(rep["method"] == m) & (rep["feature removed"] == feature)]
    assert float(rep_row["delta test (pp)"].iloc[0]) == pytest.approx(delta, abs=1e-9)
    at = app("sensitivity", sel_study=key)
    at.multiselect(key=f"fs_methods::{key}").set_value([m]).run()
    assert not at.exception
    page = at.dataframe[0].value
    label = study.schema[feature].display
    page_row = page[(page["method"] == m) & (page["feature removed"] == label)]
    assert float(page_row["delta test (pp)"].iloc[0]) == pytest.approx(delta, abs=1e-9)
    load_study_cached.cache_clear()
