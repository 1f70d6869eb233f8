"""Experiments: resumable grids, benchmark cells, case studies.

Modules: :mod:`~pbo_core.experiments.runner` (:func:`run_grid` on joblib or Dask, tidy
Parquet per cell, resume, per-step hook), :mod:`~pbo_core.experiments.bench` (benchmark
cells, summaries, ``python -m pbo_core.bench``) and
the case studies (this package ``__init__`` does not import them; they take study loaders
as arguments): :mod:`~pbo_core.experiments.studies` (loader types, task splits),
:mod:`~pbo_core.experiments.sushi`, :mod:`~pbo_core.experiments.accuracy`,
:mod:`~pbo_core.experiments.sensitivity`, :mod:`~pbo_core.experiments.cohorts`,
:mod:`~pbo_core.experiments.rho_regret`, :mod:`~pbo_core.experiments.report` and
:mod:`~pbo_core.experiments.cli` (``python -m pbo_core.experiments``, the app that binds
:mod:`data_loaders`' loaders to them).
"""

from pbo_core.experiments.bench import run_cell, summarize
from pbo_core.experiments.runner import Cell, GridError, cell_path, read_results, run_grid

__all__ = ["Cell", "GridError", "cell_path", "read_results", "run_cell", "run_grid", "summarize"]
