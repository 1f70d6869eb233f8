"""Acquisition for pairwise queries.

Modules: :mod:`~pbo_core.acquisition.eubo` (analytic EUBO, model-agnostic),
:mod:`~pbo_core.acquisition.leaves` (qEUBO over DT leaf pairs, App. C.3 ``I_struct``) and
:mod:`~pbo_core.acquisition.gp` (EUBO maximisation through the GP's public posterior).
"""

from pbo_core.acquisition.eubo import eubo, eubo_matrix
from pbo_core.acquisition.gp import eubo_value_and_grad, gp_pair_eubo, maximize_gp_eubo
from pbo_core.acquisition.leaves import best_leaf_pair, structural_gain

__all__ = [
    "best_leaf_pair",
    "eubo",
    "eubo_matrix",
    "eubo_value_and_grad",
    "gp_pair_eubo",
    "maximize_gp_eubo",
    "structural_gain",
]
