"""The cohort experiment's arms come from the registry: one registry entry adds
an arm to the ``hierarchy`` grid, its report and the Hierarchy page's family column, with
no list elsewhere to update."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import partial

import pandas as pd
import pytest

from pbo_core import registry
from pbo_core.data import Study
from pbo_core.experiments import cohorts
from pbo_core.experiments.runner import run_grid
from pbo_core.registry import COHORT_ARMS, CohortArm, arm_names, register_arm
from tests.benchmarks.hierarchy_scale import simulated_study

STUDY = simulated_study(60, seed=3)
KEY = "simulated-60-arms"
TOY = "toy-interaction-fixed"


def _load(key: str, data_dir: str | None = None) -> Study:
    """A ``LoadStudy`` of the one simulated study."""
    return STUDY


@pytest.fixture
def toy_arm() -> Iterator[str]:
    """One registry entry: the interaction logit with its strength fixed, a baseline."""
    register_arm(
        CohortArm(
            TOY,
            "covariate-interaction logit, strength fixed at 1, updated by Eq. 6",
            "baseline",
            "linear",
            centre="covariate",
            params={"alpha": 1.0},
        )
    )
    yield TOY
    COHORT_ARMS.pop(TOY, None)


def test_every_arm_is_one_family_and_can_be_built() -> None:
    """The arms the grid runs split into the two families the summary pairs, in registry
    order, and every arm names what the experiment needs to build it."""
    tree, baseline = arm_names(family="tree"), arm_names(family="baseline")
    assert tree and baseline and not set(tree) & set(baseline)
    assert sorted(tree + baseline, key=list(COHORT_ARMS).index) == list(COHORT_ARMS)
    for name in arm_names(build="own"):  # fitted on the respondent's own answers
        assert registry.get(COHORT_ARMS[name].model).fits, name
    for name in arm_names(build="linear"):
        assert COHORT_ARMS[name].centre in registry.COHORT_CENTRES, name
    assert set(arm_names(on_page_by_default=True)) <= set(COHORT_ARMS)
    # every centre a linear arm may name has a builder
    assert set(cohorts.CENTRES) == registry.COHORT_CENTRES


@pytest.mark.parametrize(
    "arm",
    [
        CohortArm("bad", "x", "gp", "own", model="dt"),  # type: ignore[arg-type]
        CohortArm("bad", "x", "tree", "grow", model="dt"),  # type: ignore[arg-type]
        CohortArm("bad", "x", "tree", "own"),  # no model
        CohortArm("bad", "x", "tree", "own", model="random"),  # a query rule: no estimator
        CohortArm("bad", "x", "tree", "warm_start", model="dt"),
        CohortArm("bad", "x", "tree", "linear", centre="forest"),
        CohortArm("bad", "x", "tree", "warm_start", centre="pooled"),
        CohortArm("bad", "x", "tree", "own", model="dt", formerly=("plain",)),
    ],
)
def test_register_arm_refuses_an_arm_it_cannot_build(arm: CohortArm) -> None:
    with pytest.raises(ValueError, match="bad"):
        register_arm(arm)
    assert "bad" not in COHORT_ARMS


def test_a_registered_arm_is_run_reported_and_labelled(toy_arm: str) -> None:
    from dashboard._services.analyses import cold_start_table

    cells = cohorts.cohort_cell_grid(26, 20, study=KEY, base={"seed": 0}, max_depth=3)
    # in the default grid, from cohort 1 on (it learns from earlier respondents)
    assert sorted({c["user"] for c in cells if c["variant"] == toy_arm}) == list(range(20, 26))
    # built as its entry says: the interaction logit with the entry's fixed strength
    model = cohorts.cohort_segment_model(KEY, 20, 0, toy_arm, 3, 20, None, load_study=_load)
    assert isinstance(model.centre_, cohorts.CovariateLogit) and model.centre_.alpha_ == 1.0
    rows = run_grid(cells, partial(cohorts.cohort_cell, load_study=_load))
    toy_rows = rows[rows["variant"] == toy_arm]
    assert len(toy_rows) > 0 and toy_rows["test_acc"].between(0, 1).all()
    # the report pairs every tree arm with it, as with every baseline
    s = cohorts.summarize_cohorts(rows)
    assert toy_arm in s["variants"]
    for tree in arm_names(family="tree"):
        assert f"{tree}_minus_{toy_arm}" in s["paired_difference"]
    assert f"best_minus_{toy_arm}" in s["cold_start"]
    # the linear arms' strengths in the segment report
    report = cohorts.segment_report(KEY, 20, 0, 3, 20, None, load_study=_load)
    assert report["models"][toy_arm]["alpha"] == 1.0
    # the Hierarchy page's cold-start table labels its family from the same entry
    table = cold_start_table(rows).set_index("variant")["family"]
    assert table[toy_arm] == "baseline"
    assert table.to_dict() == {v: COHORT_ARMS[v].family for v in table.index}


def test_an_unregistered_variant_is_refused_before_the_grid_runs() -> None:
    # (a name outside the lists used to run silently as a hierarchy warm start)
    with pytest.raises(KeyError, match=r"known cohort arms: .*'hierarchy-mob'"):
        cohorts.cohort_cell_grid(30, 20, study=KEY, variants=("plain", "hierarchy-forest"))


def test_one_name_is_one_model_in_the_cohort_experiment_too() -> None:
    # the cohort's pooled logit (respondent folds + Eq. 6) is not MODELS' logit-pooled
    assert not set(COHORT_ARMS) & set(registry.MODELS)
    arm = COHORT_ARMS["logit-pooled-update"]
    assert (arm.build, arm.centre, arm.formerly) == ("linear", "pooled", ("logit-pooled",))
    assert registry.former_arm_names() == {"logit-pooled": "logit-pooled-update"}
    with pytest.raises(KeyError, match="'logit-pooled' is called 'logit-pooled-update' now"):
        registry.get_arm("logit-pooled")


@pytest.mark.parametrize(
    "arm",
    [
        CohortArm("logit-pooled", "x", "baseline", "linear", centre="pooled"),
        CohortArm("logit-shrink", "x", "baseline", "linear", centre="pooled"),
        CohortArm("dt", "x", "tree", "own", model="dt-keep"),
        CohortArm("bad", "x", "baseline", "linear", centre="pooled", formerly=("hierarchy",)),
        CohortArm("bad", "x", "baseline", "linear", centre="pooled", formerly=("logit-pooled",)),
    ],
)
def test_register_arm_refuses_a_name_of_another_model_or_arm(arm: CohortArm) -> None:
    with pytest.raises(ValueError, match=r"former name|registry model"):
        register_arm(arm)
    assert arm.name not in COHORT_ARMS
    # the one case where an arm shares a model's name: it is that model
    register_arm(CohortArm("dt", "x", "tree", "own", model="dt"))
    COHORT_ARMS.pop("dt")


def test_the_page_default_grid_is_the_arms_flagged_for_it(toy_arm: str) -> None:
    from dashboard._services import defaults

    page = arm_names(on_page_by_default=True)
    assert page == [
        "plain",
        "pooled",
        "hierarchy",
        "logit-pooled-update",
        "logit-interaction",
        "hierarchy-mob",
    ]
    cells = defaults.GRIDS["hierarchy-swissmetro"].cells()
    assert [c["variant"] for c in cells[: len(page)]] == page and len(cells) == 15 * len(page)
    # one entry with the flag puts an arm on the page
    register_arm(dataclasses.replace(COHORT_ARMS[toy_arm], on_page_by_default=True))
    variants = {c["variant"] for c in defaults.GRIDS["hierarchy-swissmetro"].cells()}
    assert variants == {*page, toy_arm}


def test_cells_written_under_a_former_name_are_read_as_the_arm(tmp_path) -> None:
    cells = cohorts.cohort_cell_grid(24, 20, study=KEY, base={"seed": 0}, max_depth=3)
    cells = [c for c in cells if c["variant"] in ("logit-pooled-update", "logit-interaction")]
    rows = run_grid(cells, partial(cohorts.cohort_cell, load_study=_load))
    now = cohorts.summarize_cohorts(rows)
    assert "logit-interaction_minus_logit-pooled-update" in now["paired_difference"]
    assert "best_minus_logit-pooled-update" not in now["cold_start"]  # no tree arm here
    # the same cells as a folder written before the rename: the same summary
    old = rows.assign(variant=rows["variant"].replace("logit-pooled-update", "logit-pooled"))
    assert set(old["variant"]) == {"logit-pooled", "logit-interaction"}
    back = cohorts.current_arm_names(old)
    pd.testing.assert_frame_equal(back, rows, check_dtype=False)
    assert cohorts.summarize_cohorts(old) == now
    # a folder holding both (a grid resumed after the rename): every respondent once
    both = pd.concat([old, rows[rows["variant"] == "logit-pooled-update"]], ignore_index=True)
    assert len(cohorts.current_arm_names(both)) == len(rows)
    assert cohorts.summarize_cohorts(both) == now
    # an old cell without its new twin stays
    extra = old[(old["variant"] == "logit-pooled") & (old["user"] == 23)]
    mixed = pd.concat([rows[rows["user"] != 23], extra], ignore_index=True)
    assert (cohorts.current_arm_names(mixed)["user"] == 23).sum() == len(extra)
    # rows without a renamed arm are returned as they are
    assert cohorts.current_arm_names(rows) is rows


def test_sushi_cohorts_run_the_papers_two_curves_only() -> None:
    # Fig. 17's plain DT and hierarchy warm start, not registry arms: others are refused
    assert cohorts.SUSHI_VARIANTS == ("plain", "hierarchy")
    with pytest.raises(ValueError, match="'pooled'"):
        cohorts.hierarchy_cell({"variant": "pooled", "dataset": "A"}, load_study=_load)
