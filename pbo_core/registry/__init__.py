"""The one model registry: a name is one model, everywhere.

Every page and command that offers models lists them from :data:`MODELS`: the PBO
benchmarks (``python -m pbo_core.bench``), the case-study experiments (accuracy,
sensitivity, rho-regret, Sushi), the Tree explorer and its default choice, the live
elicitation page and the report. An entry (:class:`ModelSpec`) holds

* the **estimator**: an unfitted surrogate with ``fit(data) -> self`` and ``predict(X)``
  (and ``predict(X, respondent=r)`` for pooled models with personal utilities), its
  parameters fixed once, so ``dt-linear`` is the same model in an accuracy table, on
  the Tree explorer and behind the elicitation page's questions;
* the **strategy** (optional): the query rule that asks the next comparison with that same
  model (:mod:`pbo_core.strategies`); a query-rule variant of another entry's model names
  it in ``model_of`` (``dt-toponly`` asks differently, but fits ``dt``'s tree);
* what it **needs** of a study (:data:`NEEDS`), whether it is fitted per respondent or on
  the pooled comparisons (``scope``), its ``family`` (tree, GP, baseline: ``tree`` says it
  draws a tree) and the ``roles`` in which pages and commands offer it by default.

Modules: :mod:`~pbo_core.registry.base` (the machinery: :class:`ModelSpec`,
:func:`register`, the look-ups), :mod:`~pbo_core.registry.catalogue` (the entries, and
:func:`warm_up` of their compiled kernels), :mod:`~pbo_core.registry.arms` (the cohort
experiment's arms, :data:`COHORT_ARMS`) and :mod:`~pbo_core.registry.botorch` (the
BoTorch reference ``botorch-gp*``, registered when its optional ``bench`` extra is
installed). Adding a model is its module plus one :func:`register` call in the
catalogue; adding a cohort arm one :func:`register_arm` call in ``arms``.
"""

from __future__ import annotations

import importlib
import importlib.util

from pbo_core.registry.arms import (
    COHORT_ARMS,
    COHORT_BUILDS,
    COHORT_CENTRES,
    CohortArm,
    arm_names,
    former_arm_names,
    get_arm,
    register_arm,
)
from pbo_core.registry.base import (
    MODELS,
    NEEDS,
    ROLES,
    UNAVAILABLE,
    ModelSpec,
    estimates_models,
    fit_for,
    get,
    is_panel,
    make_for,
    make_model,
    make_strategy,
    names,
    not_applicable,
    register,
    reports_estimates,
    study_kind,
)
from pbo_core.registry.catalogue import (
    DT_KEEP,
    DT_LINEAR,
    LATENT_CLASS,
    LINEAR_CV_RESPONDENTS,
    LINEAR_EUBO,
    MIXED_LOGIT,
    warm_up,
)

__all__ = [
    "COHORT_ARMS",
    "COHORT_BUILDS",
    "COHORT_CENTRES",
    "DT_KEEP",
    "DT_LINEAR",
    "LATENT_CLASS",
    "LINEAR_CV_RESPONDENTS",
    "LINEAR_EUBO",
    "MIXED_LOGIT",
    "MODELS",
    "NEEDS",
    "ROLES",
    "CohortArm",
    "ModelSpec",
    "arm_names",
    "estimates_models",
    "fit_for",
    "former_arm_names",
    "get",
    "get_arm",
    "is_panel",
    "make_for",
    "make_model",
    "make_strategy",
    "names",
    "not_applicable",
    "register",
    "register_arm",
    "reports_estimates",
    "study_kind",
    "warm_up",
]

#: What the BoTorch entries need: the optional ``bench`` extra.
BOTORCH_EXTRA = "needs the optional bench extra (torch, botorch): pip install -e '.[bench]'"

if importlib.util.find_spec("botorch") is None:
    UNAVAILABLE["botorch-"] = BOTORCH_EXTRA
else:
    try:
        importlib.import_module("pbo_core.registry.botorch")  # registers botorch-gp*
    except ImportError as exc:  # installed but broken: said when one is asked for
        UNAVAILABLE["botorch-"] = f"cannot be used here: {exc}"
