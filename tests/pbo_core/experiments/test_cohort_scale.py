"""The hierarchy grid at scale: the per-study indexes give what the per-cell scans gave, and
the pre-run estimate grows with the grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pbo_core.data import Study
from pbo_core.experiments.cohorts import (
    COHORT_SIZE,
    cohort_cell_grid,
    cohort_size,
    estimate_grid_seconds,
    estimate_text,
    respondent_rows,
)
from pbo_core.registry import arm_names
from pbo_core.segments import cohort_arrays
from pbo_core.splits import holdout_tasks, pair_tasks, respondent_holdout
from tests.benchmarks.hierarchy_scale import simulated_study

STUDY = simulated_study(60, seed=3)


def _load(key: str, data_dir: str | None = None) -> Study:
    """A ``LoadStudy`` of the one simulated study."""
    return STUDY


def test_respondent_rows_match_the_scan_of_every_comparison() -> None:
    resp, rows = respondent_rows("simulated-60", load_study=_load)
    assert list(resp) == list(STUDY.respondents())
    for pos in (0, 17, 59):
        r = resp[pos]
        assert np.array_equal(rows[pos], np.flatnonzero(STUDY.data.respondent == r))
        # the cell's data and held-out tasks, as respondent_holdout draws them
        data, mask = respondent_holdout(STUDY, r, 2, seed=0)
        sub = STUDY.data.select_pairs(rows[pos], drop_unused_items=True)
        assert np.array_equal(sub.pairs, data.pairs) and np.array_equal(sub.X, data.X)
        held = holdout_tasks(
            pair_tasks(STUDY.data)[rows[pos]], np.random.default_rng([0, pos]), n_test=2
        )
        assert held is not None and np.array_equal(held, mask)


def test_cohort_arrays_rows_of() -> None:
    arr = cohort_arrays(STUDY)
    for u in (0, 5, 59):
        assert np.array_equal(arr.rows_of(u), np.flatnonzero(arr.user == u))


def test_the_estimate_grows_with_the_grid() -> None:
    small = cohort_cell_grid(1000, 200, study="x", base={"seed": 0})
    big = cohort_cell_grid(5000, 200, study="x", base={"seed": 0})
    s, b = estimate_grid_seconds(small, 8.0, 4.0), estimate_grid_seconds(big, 8.0, 4.0)
    assert 0 < s < b
    assert estimate_grid_seconds(big, 16.0, 4.0) > b  # more comparisons per respondent
    assert estimate_grid_seconds(big, 8.0, 9.0) > b  # more tasks: more fits per cell
    assert estimate_grid_seconds([], 8.0) == 0.0
    text = estimate_text(cohort_cell_grid(60, 20, study="x", base={"seed": 0}), STUDY)
    assert text.startswith("hierarchy grid: ") and "60 arriving respondents" in text


def test_the_default_cohort_size_leaves_two_cohorts_at_least() -> None:
    """The command's and the page's one rule: 200 arrivals a cohort, at most half of them;
    a stated ``--refit-every`` as given."""
    assert cohort_size(5000) == COHORT_SIZE == 200
    assert cohort_size(300) == 150 and cohort_size(1) == 1
    assert cohort_size(5000, 50) == 50 and cohort_size(30, 50) == 50
    cohorts = {c["cohort"] for c in cohort_cell_grid(61, cohort_size(61), study="x")}
    assert cohorts == {0, 1, 2}  # 30 a cohort: the second and third learn from the first


def test_strengths_are_chosen_on_all_earlier_respondents_then_once_per_doubling() -> None:
    from pbo_core.experiments.cohorts import CV_ALL_UP_TO, cv_respondents

    assert [cv_respondents(n) for n in (0, 200, CV_ALL_UP_TO)] == [0, 200, CV_ALL_UP_TO]
    sizes = range(CV_ALL_UP_TO + 1, 40 * CV_ALL_UP_TO, 200)
    for n in sizes:
        m = cv_respondents(n)
        assert n / 2 < m <= n and m % CV_ALL_UP_TO == 0
    # a study 40 times the threshold chooses its strengths on six samples beyond it
    assert len({cv_respondents(n) for n in sizes}) == 6


def test_a_cohort_beyond_the_threshold_reuses_the_strengths_of_its_sample(monkeypatch) -> None:
    from pbo_core.experiments import cohorts

    monkeypatch.setattr(cohorts, "CV_ALL_UP_TO", 20)
    for variant in arm_names(build="linear"):
        m = cohorts.cohort_segment_model(
            "simulated-60-cv", 50, 0, variant, 3, 10, None, load_study=_load
        )
        cv = cohorts.cohort_segment_model(
            "simulated-60-cv", 40, 0, variant, 3, 10, None, load_study=_load
        )
        assert cv.cv_loss_ is not None and m.cv_loss_ is None  # CV on 40 only
        assert m.rho_ == cv.rho_
        for attr in ("alpha_", "shrinkage_"):
            if hasattr(cv.centre_, attr):
                assert getattr(m.centre_, attr) == getattr(cv.centre_, attr)


def test_a_linear_cell_is_the_respondents_own_eq6_fit() -> None:
    from pbo_core.experiments import cohorts

    cells = cohorts.cohort_cell_grid(
        30, 20, study="simulated-60", base={"seed": 0}, variants=("logit-interaction",)
    )
    cells = [c for c in cells if c["variant"] == "logit-interaction"]
    assert [c["user"] for c in cells] == list(range(20, 30))
    model = cohorts.cohort_segment_model(
        "simulated-60", 20, 0, "logit-interaction", 5, 20, None, load_study=_load
    )
    arr = cohorts.cohort_arrays_of("simulated-60", load_study=_load)
    for cell in cells[:4]:
        rows = cohorts.cohort_cell(cell, load_study=_load)
        a = cohorts.arrival("simulated-60", None, 0, cell["user"], 2, load_study=_load)
        Z = arr.design.transform(a.data.X)
        d = Z[a.data.pairs[:, 0]] - Z[a.data.pairs[:, 1]]
        own = [d[a.answered(k)] for k in range(len(a.train_tasks) + 1)]
        B = model.coefficients(arr, a.pos, own)
        test = a.data.pairs[a.test_mask]
        want = [float(np.mean(cohorts.pair_scores(Z @ b, test))) for b in B]
        np.testing.assert_array_equal(rows["test_acc"].to_numpy(), want)
        assert list(rows["question"]) == list(range(len(B)))


def test_the_cohort_grid_runs_on_a_dask_cluster() -> None:
    from functools import partial

    from pbo_core.experiments.cli import build_parser
    from pbo_core.experiments.cohorts import cohort_cell
    from pbo_core.experiments.runner import run_grid

    distributed = pytest.importorskip("distributed")
    args = build_parser().parse_args(
        ["hierarchy", "--study", "x", "--dask-scheduler", "tcp://127.0.0.1:8786"]
    )
    assert args.dask_scheduler == "tcp://127.0.0.1:8786"
    cells = cohort_cell_grid(26, 20, study="simulated-60", base={"seed": 0})
    fn = partial(cohort_cell, load_study=_load)
    serial = run_grid(cells, fn)
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        on_dask = run_grid(cells, fn, dask_scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(on_dask, serial)
