"""Shared surrogate core of DT-PBO Explorer.

Subpackages and modules, lowest layer first (each imports only those above it in this
list; ``lint-imports`` checks it):

errors        The project's exception types (standard library only).
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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from pbo_core.data import Feature, PreferenceData, Schema, Study
    from pbo_core.errors import DataValidationError
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

#: Where each public name lives; imported on first use, so a light module of the package
#: (``pbo_core.errors``: the exception types) is imported without the models.
_HOME = {
    "DataValidationError": "pbo_core.errors",
    **dict.fromkeys(("Feature", "PreferenceData", "Schema", "Study"), "pbo_core.data"),
    **dict.fromkeys(("RunResult", "run_pbo"), "pbo_core.loop"),
    **dict.fromkeys(("DTSurrogate", "GPSurrogate", "Surrogate"), "pbo_core.models"),
    **dict.fromkeys(("PreferenceOracle", "Problem"), "pbo_core.problem"),
    **dict.fromkeys(("MODELS", "make_model", "make_strategy"), "pbo_core.registry"),
    "ElicitationSession": "pbo_core.session",
    **dict.fromkeys(("DTStrategy", "GPStrategy"), "pbo_core.strategies"),
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'pbo_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value
