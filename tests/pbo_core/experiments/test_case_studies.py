import json
from pathlib import Path

import pytest

from pbo_core.experiments import cli as experiments
from tests.fixtures.shared_data import real_sushi_dir

_REAL_SUSHI = real_sushi_dir()  # $DTPBO_SUSHI_DIR or ../shared/data/sushi beside the checkout
SUSHI = str(_REAL_SUSHI) if _REAL_SUSHI is not None else ""


def run(capsys, *args):
    assert experiments.main([*args, "--json", "-", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)["summary"]


def test_conjoint_accuracy_on_bundled_train_data(capsys, tmp_path) -> None:
    s = run(
        capsys,
        "conjoint-accuracy",
        "--study",
        "train",
        "--respondents",
        "12",
        "--methods",
        "dt,gp,logit-pooled",
        "--out",
        str(tmp_path),
    )
    for model in ("dt", "gp", "logit-pooled"):
        m = s[model]
        assert m["n"] == 12
        assert 0.5 <= m["train_acc_mean"] <= 1.0
        assert 0.0 <= m["test_acc_mean"] <= 1.0
    # resumable: the second run reads the stored cells
    assert (
        run(
            capsys,
            "conjoint-accuracy",
            "--study",
            "train",
            "--respondents",
            "12",
            "--methods",
            "dt,gp,logit-pooled",
            "--out",
            str(tmp_path),
        )
        == s
    )


def test_straddler_ablation_reports_tree_size(capsys) -> None:
    s = run(capsys, "straddler-ablation", "--study", "electricity", "--respondents", "8")
    assert {"dt", "dt-keep", "logit-pooled"} <= set(s) and "gp" not in s
    assert s["dt-keep"]["mean_depth"] <= 4
    assert s["dt"]["mean_leaves"] >= 1


def test_sensitivity_pooled_pmr_demo(capsys) -> None:
    s = run(capsys, "sensitivity", "--study", "pmr-demo", "--methods", "dt,logit-pooled")
    rows = s["table"]
    assert rows[0]["feature removed"] == "None (baseline)"
    # the baseline row beside the other methods on the same split
    acc = s["baseline_accuracy"]
    assert set(acc) == {"dt", "logit-pooled"}
    assert acc["dt"]["test_acc_mean"] * 100 == pytest.approx(rows[0]["test acc (%)"])
    # one pooled split: the CI resamples test comparisons, not one "respondent"
    lo, hi = acc["dt"]["test_acc_ci95"]
    assert acc["dt"]["n"] > 50 and lo < acc["dt"]["test_acc_mean"] < hi
    assert rows[1]["feature removed"] == "message_actionability"
    # one leave-one-out block per named method, each on the same split
    assert list(s["tables"]) == ["dt", "logit-pooled"] == s["methods"]
    logit = s["tables"]["logit-pooled"]
    assert logit[0]["feature removed"] == "None (baseline)"
    assert logit[0]["test acc (%)"] == pytest.approx(100 * acc["logit-pooled"]["test_acc_mean"])
    assert {r["feature removed"] for r in logit[1:]} == {r["feature removed"] for r in rows[1:]}
    # pooled split: the change has a CI over the test comparisons
    assert all(r["delta test CI low (pp)"] <= r["delta test (pp)"] for r in logit[1:])


@pytest.mark.slow
@pytest.mark.skipif(not SUSHI, reason="Sushi data not present ($DTPBO_SUSHI_DIR, ../shared)")
def test_sushi_commands_on_real_data(capsys, monkeypatch) -> None:
    monkeypatch.setenv("DTPBO_SUSHI_DIR", SUSHI)
    s = run(capsys, "sushi-pbo", "--users", "6", "--iters", "6", "--methods", "dt,gp")
    dt = s["methods"]["dt"]
    assert dt["users"] == 6 and dt["question"] == list(range(1, 8))
    assert dt["rho_regret_mean"][-1] <= dt["rho_regret_mean"][0]
    g = run(capsys, "sushi-generalization", "--users", "6")
    assert {"dt", "gp", "bt-popularity", "bt-offsets", "copeland"} <= set(g)
    assert g["dt"]["n"] == 6 and g["bt-offsets"]["n"] == 6


def test_unknown_method_is_rejected() -> None:
    with pytest.raises(SystemExit, match="unknown methods"):
        experiments.main(["sushi-pbo", "--methods", "magic", "--quiet"])


@pytest.mark.slow
@pytest.mark.skipif(not SUSHI, reason="Sushi data not present ($DTPBO_SUSHI_DIR, ../shared)")
def test_hierarchy_command_produces_cohort_curves(capsys, monkeypatch) -> None:
    monkeypatch.setenv("DTPBO_SUSHI_DIR", SUSHI)
    s = run(
        capsys,
        "hierarchy",
        "--dataset",
        "A",
        "--users",
        "24",
        "--refit-every",
        "12",
        "--iters",
        "4",
    )
    cohorts = {(c["cohort"], c["variant"]) for c in s["cohorts"]}
    assert cohorts == {(0, "plain"), (0, "hierarchy"), (1, "plain"), (1, "hierarchy")}
    assert all(len(c["regret_mean"]) == 5 for c in s["cohorts"])
    assert "hierarchy_mean_regret_first_5_questions" in s
    # the user-covariate Bradley-Terry models beside the hierarchy, same new users
    cold = s["cold_start_baselines"]
    assert cold["train_users"] == 12 and cold["new_users"] == 12
    v = cold["variants"]
    assert set(v) == {"bt-pooled", "bt-covariates", "bt-tree", "hierarchy"}
    assert all(0 <= x["test_acc_mean"] <= 1 and x["favourite_rank_mean"] >= 0 for x in v.values())
    d = cold["paired_difference"]["bt-tree_minus_bt-covariates"]["mean"][0]
    assert d == pytest.approx(v["bt-tree"]["test_acc_mean"] - v["bt-covariates"]["test_acc_mean"])


def test_conjoint_accuracy_runs_on_swissmetro(tmp_path: Path) -> None:
    out = tmp_path / "acc.json"
    args = ["--study", "swissmetro", "--respondents", "3", "--quiet", "--json", str(out)]
    methods = ["--methods", "dt,dt-keep,logit-shrink"]
    assert experiments.main(["conjoint-accuracy", *args, *methods]) == 0
    doc = json.loads(out.read_text())
    assert doc["study"] == "swissmetro" and doc["summary"]["dt"]["n"] == 3
    assert experiments.main(["straddler-ablation", *args, *methods]) == 0
    assert set(json.loads(out.read_text())["summary"]) == {"dt", "dt-keep", "logit-shrink"}
