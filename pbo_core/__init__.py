"""Shared surrogate core of DT-PBO Explorer.

Subpackages and modules, lowest layer first (each imports only those above it in this
list; ``lint-imports`` checks it):

data          ``Feature`` / ``Schema`` / ``PreferenceData`` / ``Study``: the one data model.
metrics       rho-regret, top-1 rank error, pairwise accuracy (the only accuracy).
benchmarks    Benchmark utility functions, the App. F.6 noise scale, ruggedness.
problem       ``Problem`` (box or finite item set) and the simulated ``PreferenceOracle``.
models        Surrogates behind one interface: tree + Laplace leaves = ``DTSurrogate``,
              ``GPSurrogate`` (+ KappaSharp); probit helpers shared by both.
acquisition   Analytic EUBO, qEUBO over leaf pairs, GP EUBO maximisation.
splits        Folds and hold-outs that keep choice tasks (and respondents) whole; ``Split``.
strategies    Query rules (``DTStrategy``, ``GPStrategy``, ``LinearLeafStrategy``).
registry      The one model registry (``MODELS``): a name is one model everywhere.
loop          ``run_pbo``: initial designs, recommendation, ``RunResult``.
hierarchy     User trees (Eq. 15) with item trees per user group, warm start.
evaluation    The one evaluation core: held-out accuracy, evidence, sensitivity.
explain       Rules, DOT/JSON export, the HTML report, graph diagnostics.
session       ``ElicitationSession``: live elicitation (a person answers).
experiments   Resumable grids (joblib/Dask), benchmark cells, case studies (the apps
              layer: ``python -m pbo_core.experiments``); ``python -m pbo_core.bench``.
"""

__version__ = "0.1.0"

from pbo_core.data import (  # after __version__: submodules read it
    DataValidationError,
    Feature,
    PreferenceData,
    Schema,
    Study,
)
from pbo_core.loop import RunResult, run_pbo
from pbo_core.models import DTSurrogate, GPSurrogate, Surrogate
from pbo_core.problem import PreferenceOracle, Problem
from pbo_core.registry import MODELS, make_model, make_strategy
from pbo_core.session import ElicitationSession
from pbo_core.strategies import DTStrategy, GPStrategy

__all__ = [
    "MODELS",
    "DTStrategy",
    "DTSurrogate",
    "DataValidationError",
    "ElicitationSession",
    "Feature",
    "GPStrategy",
    "GPSurrogate",
    "PreferenceData",
    "PreferenceOracle",
    "Problem",
    "RunResult",
    "Schema",
    "Study",
    "Surrogate",
    "__version__",
    "make_model",
    "make_strategy",
    "run_pbo",
]
