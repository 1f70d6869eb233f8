"""Every value ``python -m data_loaders plan --help`` offers, for every plan key, set on a
small study: ``conjoint-accuracy``, ``sensitivity``, ``report`` and every dashboard page
end in a result or one sentence, never a traceback.

The study is written here (12 respondents x 4 tasks, three labelled modes, travel time and
cost, two respondent features) so every key has values to walk: models (every registry
model the key accepts), split kinds, samples, roles and units, alternatives and their
reference, case-specific variables, penalties. Values of different keys are combined in
rounds (round ``i`` takes every key's ``i``-th value, cycling), each round a valid plan,
so each value is set once without one run per value."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dashboard.pages
from data_loaders import cli as dl_cli
from data_loaders.cached import load_study_cached
from data_loaders.plans import PLAN_KEYS
from pbo_core.experiments import cli
from pbo_core.registry import MODELS, estimates_models, names
from pbo_core.splits import SPLIT_KINDS
from tests.dashboard._shown import shown

pytestmark = pytest.mark.slow

MODES = ("car", "bus", "train")
PAGES = [script.removesuffix(".py") for script, _, _ in dashboard.pages.PAGES]


def _write_study(folder: Path) -> Path:
    """A wide choice file: respondent, task, chosen mode, time and cost per mode, two
    respondent features (income with many values, a three-level region)."""
    rng = np.random.default_rng(7)
    rows = []
    for r in range(1, 13):
        income = round(float(rng.uniform(20, 120)), 2)
        region = ("north", "south", "east")[r % 3]
        for t in range(1, 5):
            row = {"respondent": r, "task": t}
            u = {}
            for m, (tm, cm) in zip(MODES, ((30, 8.0), (45, 3.0), (35, 6.0)), strict=True):
                row[f"time.{m}"] = round(tm + float(rng.uniform(-12, 12)), 1)
                row[f"cost.{m}"] = round(cm + float(rng.uniform(-2, 2)), 2)
                u[m] = -0.05 * row[f"time.{m}"] - 0.4 * row[f"cost.{m}"] + rng.gumbel()
            row["choice"] = max(u, key=u.get)
            row["income"], row["region"] = income, region
            rows.append(row)
    path = folder / "modes.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _run(main, args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(args)
        except SystemExit as stop:  # argparse and refusals: a sentence, no traceback
            rc = stop.code if isinstance(stop.code, int) else 2
            err.write(str(stop.code or ""))
    return rc, out.getvalue(), err.getvalue()


def _no_traceback(rc: int, err: str, what: str) -> None:
    assert "Traceback" not in err, (what, err)
    if rc != 0:  # a refusal: one sentence
        lines = [x for x in err.strip().splitlines() if x.strip()]
        assert rc == 2 and lines and len(lines[-1]) > 10, (what, rc, err)


def _accepted(key: str, values: dict[str, list[str]]) -> dict[str, list[str]]:
    """The values ``plan --set`` accepts one at a time on the study's default plan; each
    refused one is refused in one sentence (a split the study cannot make)."""
    out: dict[str, list[str]] = {}
    for name, vals in values.items():
        out[name] = []
        for v in vals:
            rc, _, err = _run(dl_cli.main, ["plan", "--study", key, "--set", f"{name}={v}"])
            _no_traceback(rc, err, f"plan --set {name}={v}")
            if rc == 0:
                out[name].append(v)
            _run(dl_cli.main, ["plan", "--study", key, "--reset"])
        assert out[name], (name, vals)
    return out


def _rounds(study) -> list[dict[str, str]]:
    """Every offered value of every plan key, combined into valid plans."""
    numeric = [f.name for f in study.schema.features if f.kind == "numeric"]
    labelled = [f.name for f in study.schema.features if f.kind in ("categorical", "binary")]
    users = list(study.user_schema.names) if study.user_schema is not None else []
    assert numeric and labelled and users, (numeric, labelled, users)
    fitted = names(fits=True)
    # the help's words name these values
    for word in ("auto", *SPLIT_KINDS[:4]):
        assert word in PLAN_KEYS["split"], word
    assert "'all'" in PLAN_KEYS["respondents"] and "default" in PLAN_KEYS["sensitivity_models"]
    for m in estimates_models():
        assert m in PLAN_KEYS["estimates"]
    for word in ("none", "cv"):
        assert word in PLAN_KEYS["penalty"]
    values: dict[str, list[str]] = {
        "split": ["auto", *SPLIT_KINDS[:4]],
        "seed": ["0", "3"],
        "test_tasks": ["1", "2"],
        "respondents": ["6", "all"],
        "sensitivity_respondents": ["all", "4"],
        "baseline": fitted,
        "estimates": estimates_models(),
        "penalty": ["none", "cv", "0.1"],
        "sensitivity_models": ["default", *fitted],
        "money": ["none", *numeric],
        "time": ["none", *numeric],
        "alternative": ["none", *labelled],
    }
    values = _accepted(study.key, values)
    n = max(len(v) for v in values.values())
    alt = study.schema[labelled[0]]
    levels = ["none", *(alt.levels or ("0", "1"))]
    rounds = []
    j = 0  # rounds with labelled alternatives: their reference and case-specific variables
    for i in range(n):
        r = {k: v[i % len(v)] for k, v in values.items()}
        if r["money"] != "none" and r["money"] == r["time"]:
            r["time"] = "none" if i % 2 else next(x for x in numeric if x != r["money"])
        r["money_unit"] = "" if r["money"] == "none" else ("CHF" if i % 2 else "")
        r["time_unit"] = "" if r["time"] == "none" else ("min" if i % 2 else "")
        if r["alternative"] == "none":
            r["reference"], r["case_specific"] = "none", "none"
        else:
            r["reference"] = levels[j % len(levels)]
            r["case_specific"] = ["none", *users, ",".join(users)][j % (len(users) + 2)]
            j += 1
        rounds.append(r)
    # every offered value is in some round (the coupled keys' too)
    for key in PLAN_KEYS:
        assert key in rounds[0], key
    for key in ("reference", "case_specific"):
        got = {r[key] for r in rounds}
        want = set(levels) if key == "reference" else {"none", *users}
        assert want <= got | {",".join(users)}, (key, want - got)
    return rounds


def test_every_offered_plan_value_runs_everywhere(app, isolated_env: Path, capsys) -> None:
    csv = _write_study(isolated_env)
    rc, out, err = _run(
        dl_cli.main,
        [
            "import-study",
            str(csv),
            "--title",
            "Modes (plan walk)",
            "--respondent-features",
            "income,region",
            "--alternative-attribute",
        ],
    )
    assert rc == 0, err
    key = out.strip().splitlines()[-1]
    load_study_cached.cache_clear()
    study = load_study_cached(key)
    rounds = _rounds(study)
    # a model without fit statistics is refused as the estimates model, in one sentence
    rc, _, err = _run(dl_cli.main, ["plan", "--study", key, "--set", "estimates=logit-pooled"])
    assert rc == 2 and "no coefficient table" in err and "Traceback" not in err
    results: list[tuple[str, int, int, str]] = []
    for i, r in enumerate(rounds):
        edits = [f"{k}={v}" for k, v in r.items()]
        rc, _, err = _run(dl_cli.main, ["plan", "--study", key, "--set", *edits])
        assert rc == 0, (i, r, err)
        load_study_cached.cache_clear()
        what = f"round {i}: {r}"
        for command in ("conjoint-accuracy", "sensitivity"):
            rc, out, err = _run(cli.main, [command, "--study", key, "--json", "-", "--quiet"])
            _no_traceback(rc, err, f"{command} {what}")
            results.append((command, i, rc, err.strip()))
            if rc == 0:
                doc = json.loads(out)
                plan = doc["plan"] if command == "conjoint-accuracy" else doc["summary"]["plan"]
                assert plan["baseline"] == r["baseline"] and plan["estimates"] == r["estimates"]
                if command == "conjoint-accuracy":
                    fit = doc["baseline_fit"]
                    assert fit is None or "error" in fit or fit["model"] == r["estimates"]
        report = isolated_env / f"report-{i}.html"
        rc, _, err = _run(cli.main, ["report", "--study", key, "--out", str(report)])
        _no_traceback(rc, err, f"report {what}")
        results.append(("report", i, rc, err.strip()))
        small = r["respondents"] != "all" and r["split"] in ("auto", "tasks")
        if rc == 0:  # the estimates model's table, whatever the accuracy reference
            html = report.read_text()
            assert 'id="estimates"' in html and "Final log likelihood" in html, what
            if small:  # 6 respondents cannot detect 5 points: cautioned
                assert "Caution: 6 held-out respondents" in html, what
        at = app(None, sel_study=key)
        for page in PAGES:
            at.switch_page(f"views/{page}.py").run()
            assert not at.exception, (page, what, [e.value for e in at.exception])
        for view in ("Held-out evidence", "Estimates"):
            at = app("tree_explorer", sel_study=key, te_view=view)
            assert not at.exception, (view, what, [e.value for e in at.exception])
            if view == "Held-out evidence" and small:  # the page cautions too
                warnings = [shown(w.value) for w in at.warning]
                assert any("Caution: 6 held-out" in w for w in warnings), (what, warnings)
        load_study_cached.cache_clear()
    # the only refusal: sensitivity models the plan names that the split cannot score
    # (per-respondent models on whole held-out respondents, item models on a design)
    failed = [x for x in results if x[2] != 0]
    for command, i, _, err in failed:
        assert command == "sensitivity" and "cannot be scored on this split" in err, (i, err)
        assert rounds[i]["sensitivity_models"] != "default", (i, err)
    assert len(failed) < len(rounds) // 2, failed
    assert MODELS  # the registry walked is the one the pages list
