"""The hierarchy grid at scale: the per-study indexes give what the per-cell scans gave, and
the pre-run estimate grows with the grid (issue 43)."""

from __future__ import annotations

import numpy as np

from pbo_core.data import Study
from pbo_core.experiments.cohorts import (
    cohort_cell_grid,
    estimate_grid_seconds,
    estimate_text,
    respondent_rows,
)
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
