"""Preference surrogates behind one interface (:mod:`~pbo_core.models.base`).

Modules: :mod:`~pbo_core.models.base` (the :class:`Surrogate` protocol and helpers),
:mod:`~pbo_core.models.probit` (the probit likelihood's pieces),
:mod:`~pbo_core.models.leaves` (Laplace leaf posterior), :mod:`~pbo_core.models.tree`
(split search, array tree, growth), :mod:`~pbo_core.models.dt` (:class:`DTSurrogate`) and
:mod:`~pbo_core.models.gp` (:class:`GPSurrogate`, KappaSharp).
"""

from pbo_core.models.base import Surrogate, check_input, probit_preference
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.gp import GPSurrogate, KappaSharpMode
from pbo_core.models.leaves import LaplaceResult, fit_leaf_posterior, laplace_fit
from pbo_core.models.tree import Tree, build_tree

__all__ = [
    "DTSurrogate",
    "GPSurrogate",
    "KappaSharpMode",
    "LaplaceResult",
    "Surrogate",
    "Tree",
    "build_tree",
    "check_input",
    "fit_leaf_posterior",
    "laplace_fit",
    "probit_preference",
]
