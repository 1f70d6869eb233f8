"""The arms of the cohort experiment (``python -m pbo_core.experiments hierarchy``, the
Hierarchy page): :class:`CohortArm`, the table :data:`COHORT_ARMS` and
:func:`register_arm`, then the arms themselves. Each states its family and how the
experiment builds it (:mod:`pbo_core.experiments.cohorts`), so adding an arm is one
:func:`register_arm` call here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pbo_core.registry.catalogue  # noqa: F401  (the models the arms name: register_arm checks them)
from pbo_core.registry.base import MODELS, get, lookup

__all__ = [
    "COHORT_ARMS",
    "COHORT_BUILDS",
    "COHORT_CENTRES",
    "CohortArm",
    "arm_names",
    "former_arm_names",
    "get_arm",
    "register_arm",
]


#: How the cohort experiment (:mod:`pbo_core.experiments.cohorts`) builds an arm's
#: prediction of a new respondent: ``own`` (a registry model fitted on the respondent's
#: own answers only), ``warm_start`` (the item tree of the respondent's group in the
#: Eq. 15 user/item hierarchy of the earlier respondents, refitted with their own answers)
#: or ``linear`` (a linear item model of :mod:`pbo_core.segments` fitted on the earlier
#: respondents, updated from the respondent's own answers by Eq. 6).
COHORT_BUILDS = frozenset({"own", "warm_start", "linear"})

#: The centre models of ``linear`` arms (:mod:`pbo_core.segments`): ``pooled``
#: (``PooledLogit``, Eq. 2), ``covariate`` (``CovariateLogit``, Eq. 3), ``segments``
#: (``SegmentLogitHierarchy``, a user tree with segment logits, Eq. 4-5).
COHORT_CENTRES = frozenset({"pooled", "covariate", "segments"})


@dataclass(frozen=True)
class CohortArm:
    """One arm of the cohort experiment: how a new respondent is predicted from the earlier
    respondents and their own first answers (:mod:`pbo_core.experiments.cohorts`).

    Parameters
    ----------
    name
        The variant (cells, result files, the JSON summary, the Hierarchy page).
    label
        One line on what it is.
    family
        ``"tree"`` (a DT, a DT warm start or a user tree) or ``"baseline"`` (a textbook
        model): the summary pairs every tree arm with every baseline arm, and its
        cold-start test compares the best tree arm at 0 own tasks with each baseline.
    build
        One of :data:`COHORT_BUILDS`.
    model
        ``build="own"``: the :data:`MODELS` entry fitted on the respondent's own answers.
    centre
        ``build="linear"``: one of :data:`COHORT_CENTRES`.
    params
        ``build="linear"``: the centre's fixed parameters (beside ``seed``).
    grid_tree
        The arm's tree takes the grid's settings (``hierarchy --max-depth`` for the own
        model's tree; ``--max-depth`` and ``--min-users`` for a user tree). Otherwise a
        warm start has one group (user tree of depth 0) and a centre keeps its own
        defaults.
    on_page_by_default
        The arm is in the Hierarchy page's default grid (a few new respondents computed on
        a first visit); every arm is in the command's grid.
    formerly
        Earlier names of the arm: result files written under them (their ``variant``
        column) are read as this arm (:func:`former_arm_names`), and asking for one
        names the arm it became.
    """

    name: str
    label: str
    family: Literal["tree", "baseline"]
    build: Literal["own", "warm_start", "linear"]
    model: str | None = None
    centre: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    grid_tree: bool = False
    on_page_by_default: bool = False
    formerly: tuple[str, ...] = ()

    @property
    def earlier(self) -> bool:
        """Does the arm learn from earlier respondents (so it starts with cohort 1)?"""
        return self.build != "own"


#: The cohort experiment's arms: name -> entry, in the order of its grid and its report.
COHORT_ARMS: dict[str, CohortArm] = {}


def register_arm(arm: CohortArm) -> CohortArm:
    """Add ``arm`` to :data:`COHORT_ARMS` (replacing one of the same name); checks its
    fields."""
    if arm.family not in ("tree", "baseline"):
        raise ValueError(f"{arm.name}: a cohort arm's family is tree or baseline")
    if arm.build not in COHORT_BUILDS:
        raise ValueError(f"{arm.name}: build must be one of {sorted(COHORT_BUILDS)}")
    if (arm.build == "own") != (arm.model is not None):
        raise ValueError(f"{arm.name}: an own-answers arm, and only one, names its model")
    if arm.model is not None and not get(arm.model).fits:
        raise ValueError(f"{arm.name}: model {arm.model!r} has no estimator")
    if (arm.build == "linear") != (arm.centre in COHORT_CENTRES):
        raise ValueError(
            f"{arm.name}: a linear arm, and only one, has a centre in {sorted(COHORT_CENTRES)}"
        )
    if arm.name in MODELS and arm.model != arm.name:
        raise ValueError(
            f"{arm.name}: the name of a registry model; an arm has it only when it fits that "
            "model on the respondent's own answers (one name, one model)"
        )
    others = {n: a for n, a in COHORT_ARMS.items() if n != arm.name}
    former = former_arm_names(others.values())
    if arm.name in former or arm.name in arm.formerly:
        raise ValueError(f"{arm.name}: a former name of an arm cannot name another arm")
    if clash := sorted(set(arm.formerly) & (set(others) | set(former))):
        raise ValueError(f"{arm.name}: former names {clash} name another arm")
    COHORT_ARMS[arm.name] = arm
    return arm


def former_arm_names(arms: Iterable[CohortArm] | None = None) -> dict[str, str]:
    """Former name -> current name of the cohort arms (:attr:`CohortArm.formerly`; default:
    every arm of :data:`COHORT_ARMS`)."""
    return {
        old: a.name for a in (COHORT_ARMS.values() if arms is None else arms) for old in a.formerly
    }


def get_arm(name: str) -> CohortArm:
    """The cohort arm ``name``; a ``KeyError`` naming the known arms otherwise (or, for a
    former name, the arm it became)."""
    if name not in COHORT_ARMS and (now := former_arm_names().get(name)) is not None:
        raise KeyError(f"cohort arm {name!r} is called {now!r} now")
    return lookup(COHORT_ARMS, name, "cohort arm")


def arm_names(
    *,
    family: str | None = None,
    build: str | None = None,
    on_page_by_default: bool | None = None,
) -> list[str]:
    """Names of the cohort arms of ``family`` / ``build`` / ``on_page_by_default``, in
    registry order."""
    return [
        n
        for n, a in COHORT_ARMS.items()
        if (family is None or a.family == family)
        and (build is None or a.build == build)
        and (on_page_by_default is None or a.on_page_by_default == on_page_by_default)
    ]


# The grid's and the report's order. ``logit-pooled-update`` is segments.PooledLogit (folds
# of whole respondents) updated from the respondent's own answers by Eq. 6; result files
# written before it had its own name call it ``logit-pooled`` (its ``formerly``), the name
# of the MODELS entry (one utility for everybody, folds of tasks). The page's default
# grid leaves out ``hierarchy-linear`` (in the full experiment only).
_arms = [
    CohortArm(
        "plain",
        "the paper DT on the respondent's own answers",
        "tree",
        "own",
        model="dt",
        grid_tree=True,
        on_page_by_default=True,
    ),
    CohortArm(
        "pooled",
        "DT warm start from every earlier respondent (one group)",
        "tree",
        "warm_start",
        on_page_by_default=True,
    ),
    CohortArm(
        "hierarchy",
        "DT warm start from the respondent's group of the Eq. 15 user tree (item trees)",
        "tree",
        "warm_start",
        grid_tree=True,
        on_page_by_default=True,
    ),
    CohortArm(
        "logit-pooled-update",
        "pooled logit of the earlier respondents (Eq. 2), updated by Eq. 6",
        "baseline",
        "linear",
        centre="pooled",
        on_page_by_default=True,
        formerly=("logit-pooled",),
    ),
    CohortArm(
        "logit-interaction",
        "covariate-interaction logit (Eq. 3), updated by Eq. 6",
        "baseline",
        "linear",
        centre="covariate",
        on_page_by_default=True,
    ),
    CohortArm(
        "hierarchy-linear",
        "the Eq. 15 user tree with segment logits (Eq. 4), updated by Eq. 6",
        "tree",
        "linear",
        centre="segments",
        params={"split": "consistency"},
        grid_tree=True,
    ),
    CohortArm(
        "hierarchy-mob",
        "the parameter-instability user tree (Eq. 5) with segment logits, updated by Eq. 6",
        "tree",
        "linear",
        centre="segments",
        on_page_by_default=True,
    ),
]
for _arm in _arms:
    register_arm(_arm)
