"""The ``rho-regret`` and ``hierarchy --study swissmetro`` commands at small sizes."""

import json

import numpy as np
import pytest

from data_loaders.cached import load_study_cached
from data_loaders.pmr import inbox_urgency
from pbo_core.experiments import cli as experiments
from pbo_core.experiments.cohorts import (
    cohort_cell_grid,
    cohort_hierarchy,
    respondent_permutation,
)
from pbo_core.experiments.rho_regret import pmr_problem, respondent_models, simulated_problem
from pbo_core.metrics import rho_regret
from pbo_core.registry import COHORT_ARMS


def _run(capsys, *argv: str) -> dict:
    assert experiments.main([*argv, "--json", "-", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pmr_demo_triage_truth_and_curves(capsys, tmp_path) -> None:
    problem, order = pmr_problem("A", load_study=load_study_cached, inbox_urgency=inbox_urgency)
    assert len(problem.items) == 30
    u = problem.utility(problem.items)
    assert np.all(np.diff(u[order]) <= 0)  # order is the true urgency, most urgent first
    assert rho_regret(order, u) == 0.0
    out = _run(
        capsys,
        "rho-regret",
        "--study",
        "pmr-demo",
        "--methods",
        "dt,dt-random",
        "--seeds",
        "2",
        "--iters",
        "6",
        "--out",
        str(tmp_path),
    )
    s = out["summary"]
    assert s["study"] == "pmr-demo"
    for m in ("dt", "dt-random"):
        d = s["methods"][m]
        assert d["runs"] == 4  # 2 inboxes x 2 seeds
        assert d["question"] == list(range(1, 8))
        for mean, se, (lo, hi) in zip(
            d["rho_regret_mean"], d["rho_regret_se"], d["rho_regret_ci95"], strict=True
        ):
            assert 0 <= mean and se >= 0 and lo <= mean <= hi
    # DT with qEUBO learns the urgent messages faster than random pairs
    assert s["methods"]["dt"]["rho_regret_mean"][-1] < s["methods"]["dt"]["rho_regret_mean"][0]
    # resumable: every cell stored, a rerun reads them back unchanged
    assert len(list(tmp_path.glob("cell-*.parquet"))) == 8
    again = _run(
        capsys,
        "rho-regret",
        "--study",
        "pmr-demo",
        "--methods",
        "dt,dt-random",
        "--seeds",
        "2",
        "--iters",
        "6",
        "--out",
        str(tmp_path),
    )
    assert again["summary"] == s


@pytest.mark.parametrize(
    "study", ["electricity", pytest.param("swissmetro", marks=pytest.mark.slow)]
)
def test_simulated_respondents_use_fitted_utilities(capsys, study) -> None:
    p0, order0 = simulated_problem(study, 0, 12, seed=0, load_study=load_study_cached)
    assert len(p0.items) == 12 and len(np.unique(p0.items, axis=0)) == 12
    u0 = p0.utility(p0.items)
    assert np.all(np.diff(u0[order0]) <= 0)
    # heterogeneous truths: two respondents do not share one utility function
    model = respondent_models(study, load_study=load_study_cached)
    u1 = model.predict(p0.items, respondent=model.respondents_[1])
    assert np.allclose(u0, model.predict(p0.items, respondent=model.respondents_[0]))
    assert not np.allclose(u0, u1)
    out = _run(
        capsys,
        "rho-regret",
        "--study",
        study,
        "--methods",
        "dt,gp,dt-random",
        "--units",
        "3",
        "--items",
        "12",
        "--iters",
        "5",
    )
    methods = out["summary"]["methods"]
    assert set(methods) == {"dt", "gp", "dt-random"}
    assert all(d["runs"] == 3 and len(d["rho_regret_mean"]) == 6 for d in methods.values())


def test_unknown_rho_method_is_rejected() -> None:
    with pytest.raises(SystemExit):
        experiments.main(["rho-regret", "--study", "pmr-demo", "--methods", "nope"])


def test_cohort_hierarchy_splits_on_modes() -> None:
    h = cohort_hierarchy(
        "swissmetro", 600, 0, "hierarchy", 3, 20, None, load_study=load_study_cached
    )
    assert h.user_tree_.n_leaves > 1  # Eq. 15 on modes separates respondents
    assert "Surveyed among" in h.rule(0, True) or h.user_tree_.split[0] is not None
    pooled = cohort_hierarchy(
        "swissmetro", 600, 0, "pooled", 3, 20, None, load_study=load_study_cached
    )
    assert pooled.user_tree_.n_leaves == 1
    perm = respondent_permutation(1191, 0)
    assert sorted(perm.tolist()) == list(range(1191))


@pytest.mark.slow
def test_hierarchy_swissmetro_command_small(capsys) -> None:
    cells = cohort_cell_grid(8, 5)
    assert {c["variant"] for c in cells if c["user"] < 5} == {"plain"}
    assert {c["variant"] for c in cells if c["user"] >= 5} == set(COHORT_ARMS)
    out = _run(
        capsys,
        "hierarchy",
        "--study",
        "swissmetro",
        "--users",
        "130",
        "--refit-every",
        "120",
        "--max-depth",
        "3",
    )
    s = out["summary"]
    assert s["study"] == "swissmetro" and s["respondents"] == 10
    for v in ("plain", "pooled", "hierarchy"):
        d = s["variants"][v]
        assert d["tasks_answered"][0] == 0
        assert all(0 <= a <= 1 for a in d["test_acc_mean"])
        assert all(
            lo <= m <= hi
            for m, (lo, hi) in zip(d["test_acc_mean"], d["test_acc_ci95"], strict=True)
        )
    # a plain DT without any own answer can only guess; the warm starts cannot be worse
    # than chance on average here and usually predict from the group
    assert s["variants"]["plain"]["test_acc_mean"][0] == 0.5
    paired = s["paired_difference"]["hierarchy_minus_plain"]
    h, p = s["variants"]["hierarchy"]["test_acc_mean"], s["variants"]["plain"]["test_acc_mean"]
    np.testing.assert_allclose(paired["mean"], np.subtract(h, p), atol=1e-12)
    # the baselines at every number of own tasks, and the cold-start verdict
    for v in ("logit-pooled-update", "logit-interaction", "hierarchy-mob"):
        assert len(s["variants"][v]["test_acc_mean"]) == len(h)
    cold = s["cold_start"]
    assert cold["best_tree_family"] in cold["accuracy_at_0_tasks"]
    d = s["paired_difference"]["hierarchy-mob_minus_logit-interaction"]
    m, li = s["variants"]["hierarchy-mob"], s["variants"]["logit-interaction"]
    np.testing.assert_allclose(
        d["mean"], np.subtract(m["test_acc_mean"], li["test_acc_mean"]), atol=1e-12
    )
    seg = s["last_cohort"]["models"]["hierarchy-mob"]
    assert seg["segments"] == len(seg["segment_table"]) >= 1


def test_sushi_a_case_reuses_the_sushi_pbo_path(capsys, tmp_path) -> None:
    from tests.fixtures.synthetic import write_sushi_tiny

    folder = tmp_path / "sushi3-2016"
    write_sushi_tiny(folder, n_users=3, seed=2)
    out = _run(
        capsys,
        "rho-regret",
        "--study",
        "sushi-a",
        "--methods",
        "dt",
        "--units",
        "3",
        "--iters",
        "4",
        "--data-dir",
        str(folder),
    )
    d = out["summary"]["methods"]["dt"]
    assert d["runs"] == 3 and d["question"] == [1, 2, 3, 4, 5]
