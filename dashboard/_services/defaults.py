"""Default results computed on first need, so every page has content on a fresh install.

The grids are small versions of the command-line experiments and run through
:func:`pbo_core.experiments.runner.run_grid` into the per-user data folder
(:func:`results_home`: ``$DTPBO_DATA_HOME/results``, default ``~/.cache/dtpbo/results``),
never into the checkout. Each cell is one Parquet file, so a grid is computed once (an
interrupted first visit resumes) and read back instantly afterwards. Bigger grids stay on
the command line (``python -m pbo_core.bench``, ``python -m pbo_core.experiments``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from data_loaders._common import data_home
from data_loaders.cached import load_study_cached
from data_loaders.pmr import inbox_urgency
from pbo_core import __version__
from pbo_core.experiments.bench import run_cell
from pbo_core.experiments.cohorts import cohort_cell, cohort_cell_grid
from pbo_core.experiments.rho_regret import rho_cells, rho_regret_cell
from pbo_core.experiments.runner import Cell, cell_path, run_grid
from pbo_core.registry import arm_names


def results_home() -> Path:
    """Per-user folder of results the dashboard reads and writes by default."""
    return data_home() / "results"


@dataclass(frozen=True)
class DefaultGrid:
    """A small named grid: its folder under :func:`results_home` and its cells."""

    name: str
    what: str
    command: str
    cells: Callable[[], list[dict[str, Any]]]
    fn: Callable[[Cell], pd.DataFrame]

    def folder(self, root: str | Path | None = None) -> Path:
        """Where the grid's cells are stored."""
        base = Path(root).expanduser() if root is not None else results_home()
        return base / "defaults" / self.name

    def missing(self, root: str | Path | None = None) -> int:
        """Cells not computed yet."""
        out = self.folder(root)
        return sum(not cell_path(out, c).exists() for c in self.cells())


_BASE = {"version": __version__}


def _bench_cells() -> list[dict[str, Any]]:
    # GP runs cost ~20x a DT run: fewer and shorter, so a first visit stays short
    grid = [("branin", "dt", 5), ("branin", "dt-literal", 5), ("branin", "gp", 2)]
    grid += [("levy", "dt", 5), ("levy", "dt-literal", 5)]
    return [
        dict(
            _BASE,
            function=fn,
            method=m,
            seed=s,
            iters=20 if m == "gp" else 60,
            n_init=10,
            noise=0.0,
        )
        for fn, m, seeds in grid
        for s in range(seeds)
    ]


#: A rho-regret cell with the command line's loaders bound (picklable for joblib).
_rho_one = partial(rho_regret_cell, load_study=load_study_cached, inbox_urgency=inbox_urgency)

#: The default grids, by name.
GRIDS: dict[str, DefaultGrid] = {
    g.name: g
    for g in (
        DefaultGrid(
            "bench",
            "Branin and Levy: DT-PBO (dt) and Algorithm 1 as written (dt-literal), 5 seeds x "
            "60 queries; the GP baseline on Branin, 2 seeds x 20 queries; 10 initial pairs",
            "python -m pbo_core.bench --functions branin,levy --methods dt,dt-literal,gp "
            "--seeds 10 --iters 100 --out DIR",
            _bench_cells,
            run_cell,
        ),
        DefaultGrid(
            "rho-pmr-demo",
            "PMR demo triage: both inboxes, 5 seeds, 15 questions after a random first one",
            "python -m pbo_core.experiments rho-regret --study pmr-demo --out DIR",
            lambda: rho_cells(
                "pmr-demo",
                ["dt", "gp", "dt-random"],
                units=2,
                seeds=5,
                iters=15,
                base=dict(_BASE, seed=0),
            ),
            _rho_one,
        ),
        DefaultGrid(
            "rho-train",
            "Train, simulated respondents (true utility: the per-respondent logit fitted on "
            "the real answers), first 10 respondents, 30 alternatives each, 15 questions",
            "python -m pbo_core.experiments rho-regret --study train --out DIR",
            lambda: rho_cells(
                "train",
                ["dt", "gp", "dt-random"],
                units=10,
                seeds=1,
                iters=15,
                n_items=30,
                base=dict(_BASE, seed=0),
            ),
            _rho_one,
        ),
        DefaultGrid(
            "hierarchy-swissmetro",
            "SwissMetro: 15 new respondents warm-started from 600 earlier ones (seeded "
            "arrival order): DT warm starts, segment logits and the two logit baselines, "
            "held-out accuracy of 2 tasks per respondent",
            "python -m pbo_core.experiments hierarchy --study swissmetro --out DIR",
            # the arms on the page by default (registry.CohortArm.on_page_by_default):
            # 15 respondents x 6 arms = 90 cells
            lambda: cohort_cell_grid(
                615,
                600,
                base=dict(_BASE, seed=0),
                first_user=600,
                variants=tuple(arm_names(on_page_by_default=True)),
            ),
            partial(cohort_cell, load_study=load_study_cached),
        ),
    )
}


def ensure(
    name: str,
    root: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Compute the missing cells of a default grid (once) and return its folder."""
    grid = GRIDS[name]
    out = grid.folder(root)
    run_grid(grid.cells(), grid.fn, out_dir=out, progress=progress)
    return out
