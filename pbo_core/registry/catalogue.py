"""The registry's entries: every model the project offers, its parameters stated once.

Adding a model is its module plus one :func:`~pbo_core.registry.base.register` call here
(or one more :class:`~pbo_core.registry.base.ModelSpec` in an :func:`_entries` list); the
estimator contract test (``tests/pbo_core/test_registry.py``) picks every entry up from
:data:`~pbo_core.registry.base.MODELS`. An entry states its parameters once: a GP entry's
(:func:`_gp_entry`) make both its estimator and its EUBO rule, a query rule of the paper
DT names its options once (:func:`_dt_query_rule`), and the item-set baselines share
their scope, needs and roles (:func:`_item_baseline`). :func:`warm_up` compiles the
kernels these entries' fits use.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np

from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.models.bradley_terry import (
    CopelandSurrogate,
    ItemOffsetSurrogate,
    ItemUtilitySurrogate,
)
from pbo_core.models.choice_tree import ChoiceModelTree
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.gp import GPSurrogate
from pbo_core.models.gp.kappasharp import EQ1_NOISE_VAR
from pbo_core.models.latent_class import LatentClassLogit
from pbo_core.models.linear import LinearUtilitySurrogate, RespondentLinearSurrogate
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
from pbo_core.models.mixed_logit import MixedLogit
from pbo_core.models.mnl import ConditionalLogit
from pbo_core.models.pooled_dt import PooledDTSurrogate
from pbo_core.registry.base import Family, ModelSpec, make_model, register
from pbo_core.strategies.base import Strategy
from pbo_core.strategies.dt import DTStrategy, RandomStrategy
from pbo_core.strategies.gp import GPStrategy
from pbo_core.strategies.linear_leaves import LinearLeafStrategy
from pbo_core.strategies.random import RandomSearchStrategy

__all__ = [
    "DT_KEEP",
    "DT_LINEAR",
    "LATENT_CLASS",
    "LINEAR_CV_RESPONDENTS",
    "LINEAR_EUBO",
    "MIXED_LOGIT",
    "warm_up",
]


def _entries(specs: Iterable[ModelSpec]) -> None:
    for s in specs:
        register(s)


def _dt(**kw: Any) -> DTSurrogate:
    return DTSurrogate(**kw)


def _dt_query_rule(
    name: str,
    label: str,
    description: str,
    *,
    roles: frozenset[str] = frozenset(),
    **rule: Any,
) -> ModelSpec:
    """The paper DT (``dt``'s model) asked by :class:`~pbo_core.strategies.dt.DTStrategy`
    with the options ``rule`` (``within``, ``within_every``, ``ties``, ``lam``, ...): a
    strategy-only entry whose name is stated once."""
    return ModelSpec(
        name,
        label,
        description,
        "tree",
        strategy=partial(DTStrategy, name=name, **rule),
        model_of="dt",
        roles=roles,
    )


def _gp_entry(
    name: str,
    label: str,
    description: str,
    *,
    reuse: Callable[[Any], dict[str, Any]] | None = None,
    roles: frozenset[str] = frozenset(),
    **params: Any,
) -> ModelSpec:
    """A GP entry whose parameters are stated once: the estimator is
    ``GPSurrogate(**params)`` and the strategy asks by EUBO with that same GP
    (:class:`~pbo_core.strategies.gp.GPStrategy` passes ``params`` on to it).

    Parameters
    ----------
    name, label, description
        As in :class:`ModelSpec`.
    reuse, roles
        As in :class:`ModelSpec`.
    **params
        The GP's parameters (``kappasharp``, ``kappasharp_score_noise_var``, ...); keyword
        arguments given to the estimator or the strategy override them.

    Returns
    -------
    ModelSpec
        A ``"gp"`` entry fitted per respondent.
    """
    return ModelSpec(
        name,
        label,
        description,
        "gp",
        estimator=lambda **kw: GPSurrogate(**{**params, **kw}),
        strategy=partial(GPStrategy, name=name, **params),
        reuse=reuse,
        roles=roles,
    )


def _item_baseline(
    name: str,
    label: str,
    description: str,
    model: Callable[..., Any],
    respondent_predict: bool = True,
) -> ModelSpec:
    """A baseline of a finite item set (Sushi): pooled, offered by the accuracy commands;
    ``model(**params)`` is its estimator."""
    return ModelSpec(
        name,
        label,
        description,
        "baseline",
        scope="pooled",
        estimator=model,
        respondent_predict=respondent_predict,
        needs=_ITEMS,
        roles=_REF,
    )


def _planned_pooled(
    name: str,
    label: str,
    description: str,
    family: Family,
    model: Callable[..., Any],
    **fields: Any,
) -> ModelSpec:
    """A pooled model of the analysis plan's choice-model family: ``model(**params)`` takes
    the plan's parameters (:func:`make_for`) and predicts any respondent from their
    recorded features; ``fields`` as in :class:`ModelSpec`."""
    return ModelSpec(
        name,
        label,
        description,
        family,
        scope="pooled",
        estimator=model,
        feature_predict=True,
        planned=True,
        **fields,
    )


#: The linear-leaf tree's CV cost bound: its strengths are scored on the held-out tasks of
#: at most this many respondents (a seeded sample: it picks the same strengths as the whole
#: training set on SwissMetro, at less than half the cost; docs/speed.md).
LINEAR_CV_RESPONDENTS = 400
#: The linear-leaf tree's parameters (one model: accuracy tables, Tree explorer, queries).
DT_LINEAR = {
    "linear_features": "all",
    "pooling": "shrink",
    "slope_ratio": "cv",
    "max_depth": 3,
    "cv_respondents": LINEAR_CV_RESPONDENTS,
}
#: The textbook Bayesian linear probit (one leaf, slopes on every attribute).
LINEAR_EUBO = {"linear_features": "all", "slopes": "shared", "max_depth": 0, "slope_ratio": 1.0}
#: The straddler ablation's tree (paper Table 2: straddlers kept, max depth 4).
DT_KEEP = {"straddlers": "keep", "max_depth": 4}


def _linear_leaf_rule(name: str, params: dict[str, Any]) -> Callable[..., Strategy]:
    def factory(*, slope_prior: Any = None, n_raw: int = 256, **kw: Any) -> Strategy:
        model = LinearLeafDTSurrogate(slope_prior=slope_prior, **{**params, **kw})
        return LinearLeafStrategy(name=name, n_raw=n_raw, model=model)

    return factory


_ACC = frozenset({"accuracy"})
#: A textbook baseline of the accuracy commands, a candidate for the best baseline.
_REF = frozenset({"accuracy", "reference"})
_ITEMS = frozenset({"item_set"})
_DESIGN = frozenset({"conjoint_design"})
_PANEL = frozenset({"panel"})
# The panel baselines have the ``accuracy`` role (every accuracy command's default list:
# about 6 s of CPU added to Electricity's 34 s, 20 s to SwissMetro's 114 s;
# docs/case-studies.md) but not ``choice_baseline``: the Tree explorer's
# held-out comparison is a visitor's wait (docs/speed.md, complete view under 10 s at
# 5,000 respondents), which a mixed logit's simulated likelihood and a latent-class
# logit's BIC search over 1..6 classes would multiply; pages and the report ask for them
# by name.
#: The mixed logit's parameters as a registry model.
MIXED_LOGIT = {"n_draws": 200}
#: The latent-class logit's parameters as a registry model.
LATENT_CLASS = {"max_classes": 6, "n_starts": 5}


def _mixed_logit(**params: Any) -> MixedLogit:
    """The registry's mixed logit with the plan's parameters it takes (the plan's
    penalty is a conditional logit's: a mixed logit is fitted by simulated ML)."""
    params.pop("alpha", None)  # the plan's penalty: a conditional logit's ridge, not ours
    takes = set(inspect.signature(MixedLogit).parameters)
    return MixedLogit(**{**MIXED_LOGIT, **{k: v for k, v in params.items() if k in takes}})


def _latent_class(**params: Any) -> LatentClassLogit:
    """The registry's latent-class logit: the plan's case-specific variables (respondent
    features) explain class membership (Greene & Hensher 2003) instead of entering every
    class's utility, where they would multiply the parameters by the classes."""
    if "membership" not in params:
        params["membership"] = tuple(params.pop("case_specific", ()))
    params.pop("alpha", None)  # the plan's penalty is a conditional logit's; ours is fixed
    takes = set(inspect.signature(LatentClassLogit).parameters)
    return LatentClassLogit(**{**LATENT_CLASS, **{k: v for k, v in params.items() if k in takes}})


_entries(
    [
        ModelSpec(
            "dt",
            "Paper DT (constant leaves)",
            "DT-PBO per respondent (straddlers discarded, depth unrestricted); queries: "
            "qEUBO over leaves with the top-leaf rule",
            "tree",
            estimator=_dt,
            strategy=partial(DTStrategy, name="dt", within="auto"),
            roles=frozenset(
                {"accuracy", "explorer", "sensitivity", "elicitation", "sushi_pbo", "rho_regret"}
            ),
        ),
        _dt_query_rule(
            "dt-literal",
            "DT-PBO, Algorithm 1 literally (qEUBO only)",
            "the paper DT asked by qEUBO over leaf pairs only (no within-leaf rule)",
            roles=frozenset({"elicitation"}),
            within="none",
            ties="first",
        ),
        _dt_query_rule(
            "dt-incumbent",
            "DT, incumbent challenged every 2nd query",
            "the paper DT; every 2nd query the incumbent meets a new point of the top leaf",
            within="incumbent",
            within_every=2,
        ),
        _dt_query_rule(
            "dt-local",
            "DT, incumbent challenged every query",
            "the paper DT; every query the incumbent meets a new point of the top leaf",
            within="incumbent",
            within_every=1,
        ),
        _dt_query_rule(
            "dt-topleaf",
            "DT, top-leaf rule every 2nd query",
            "the paper DT; every 2nd query two points of the top leaf (Sec. 3.3)",
            within="top-leaf",
            within_every=2,
        ),
        _dt_query_rule(
            "dt-toponly",
            "DT, top-leaf rule every query",
            "the paper DT; the top-leaf rule on every query (Sushi 'dt-toponly')",
            roles=frozenset({"sushi_pbo", "rho_regret"}),
            within="top-leaf",
            within_every=1,
        ),
        _dt_query_rule(
            "dt-notop",
            "DT, qEUBO without top-leaf prioritisation",
            "the paper DT; qEUBO with latest-winner ties (Sushi 'no top-leaf prioritisation')",
            roles=frozenset({"sushi_pbo", "rho_regret"}),
            within="none",
        ),
        _dt_query_rule(
            "dt-lambda",
            "DT, qEUBO + lambda I_struct",
            "App. C.3 I_struct with the leaf's split held fixed (the paper's definition)",
            within="lambda",
            lam=1.0,
        ),
        _dt_query_rule(
            "dt-lambda-reopt",
            "DT, qEUBO + lambda I_struct (split re-optimised)",
            "the earlier I_struct variant: the best split re-optimised after appending",
            within="lambda",
            lam=1.0,
            lambda_split="reopt",
        ),
        ModelSpec(
            "dt-random",
            "DT, random pairs",
            "uniformly random comparisons; the paper DT only makes the recommendation",
            "tree",
            strategy=lambda **kw: RandomStrategy(**kw),
            model_of="dt",
            roles=frozenset({"sushi_pbo", "rho_regret"}),
        ),
        ModelSpec(
            "dt-keep",
            "DT, straddlers kept (depth 4)",
            "DT per respondent, straddlers kept (App. C.2), max depth 4 (Table 2)",
            "tree",
            estimator=lambda **kw: DTSurrogate(**{**DT_KEEP, **kw}),
            strategy=partial(DTStrategy, name="dt-keep", within="none", **DT_KEEP),
            roles=_ACC,
        ),
        ModelSpec(
            "dt-pooled",
            "Pooled DT (constant leaves, shrunk)",
            "one tree on the pooled comparisons, each respondent's constant leaves shrunk "
            "toward the pooled leaves (strength and depth by task CV, <= 24 leaves)",
            "tree",
            scope="pooled",
            estimator=PooledDTSurrogate,
            respondent_predict=True,
            needs=_DESIGN,
            roles=frozenset({"accuracy", "explorer"}),
        ),
        ModelSpec(
            "dt-linear",
            "Linear-leaf tree (dt-linear)",
            "pooled tree of depth 3 whose leaves hold a level plus each respondent's slopes "
            "on every attribute, shrunk toward the pooled fit (strengths by task CV, scored on "
            f"at most {LINEAR_CV_RESPONDENTS} respondents); "
            "queries: qEUBO over its Gaussian posterior",
            "tree",
            scope="pooled",
            estimator=lambda **kw: LinearLeafDTSurrogate(**{**DT_LINEAR, **kw}),
            strategy=_linear_leaf_rule("dt-linear", DT_LINEAR),
            respondent_predict=True,
            roles=frozenset({"accuracy", "explorer", "sensitivity", "elicitation"}),
            takes_prior=True,
        ),
        _gp_entry(
            "gp",
            "GP-Laplace with EUBO",
            "GP-Laplace per respondent (ARD RBF, evidence-fitted); queries: EUBO",
            reuse=lambda m: {
                "fit_hyperparameters": False,
                "lengthscale": m.lengthscale_,
                "outputscale": m.outputscale_,
            },
            roles=frozenset({"accuracy", "elicitation", "sushi_pbo", "rho_regret"}),
        ),
        _gp_entry(
            "gp-ks-static",
            "GP, static KappaSharp",
            "the GP with KappaSharp's static diagonal correction (Eq. 8-10)",
            kappasharp="static",
        ),
        _gp_entry(
            "gp-ks-adaptive",
            "GP, adaptive KappaSharp",
            "the GP with Adaptive KappaSharp (Alg. 1)",
            kappasharp="adaptive",
        ),
        _gp_entry(
            "gp-ks-adaptive-eq1",
            "GP, adaptive KappaSharp (Eq. 1 noise)",
            "Eq. 12's 2 sigma^2 read as the simulated noise (sigma = 0.1), not the model's 2",
            kappasharp="adaptive",
            kappasharp_score_noise_var=EQ1_NOISE_VAR,
        ),
        _gp_entry(
            "gp-fixed20",
            "GP, KappaSharp fixed at 20",
            "the GP with the condition number fixed to 20 (KappaSharp Table 3)",
            kappasharp="fixed20",
        ),
        ModelSpec(
            "gp-connected",
            "GP, connected querying",
            "connected querying (Xu et al. 2024; KappaSharp Table 5): one side is x_{t-1}",
            "gp",
            strategy=partial(GPStrategy, name="gp-connected", connected=True),
            model_of="gp",
        ),
        _gp_entry(
            "gp-ks-jitter",
            "GP, KappaSharp ablation: jitter",
            "KappaSharp ablation: a plain jitter instead of the correction",
            kappasharp="jitter",
        ),
        _gp_entry(
            "gp-ks-diagonal",
            "GP, KappaSharp ablation: diagonal",
            "KappaSharp ablation: the diagonal correction only",
            kappasharp="diagonal",
        ),
        _gp_entry(
            "gp-ks-metriconly",
            "GP, KappaSharp ablation: metric only",
            "KappaSharp ablation: the correction in the Newton metric only",
            kappasharp="metriconly",
        ),
        _gp_entry(
            "gp-ks-covonly",
            "GP, KappaSharp ablation: covariance only",
            "KappaSharp ablation: the correction in the posterior covariance only",
            kappasharp="covonly",
        ),
    ]
)

_entries(
    [
        _planned_pooled(
            "mnl",
            "Conditional logit (MNL)",
            "the econometrician's conditional logit over each task's available alternatives: "
            "exact likelihood, alternative constants and respondent features by alternative "
            "(the analysis plan's), maximum likelihood (a ridge only when the plan asks or "
            "the MLE is not identified, and then said), robust and cluster-robust errors",
            "baseline",
            ConditionalLogit,
            roles=_REF | {"choice_baseline"},
        ),
        _planned_pooled(
            "mnl-tree",
            "Choice-model tree (segments of respondents, a conditional logit each)",
            "respondents split on their recorded features; per segment the plan's "
            "conditional logit (constants, attribute slopes; the respondent features enter "
            "through the splits) shrunk toward its parent segment's; grown by "
            "log-likelihood gain, shrinkage and pruning by the held-out log-likelihood of "
            "whole respondents (1.5-SE rule; <= 12 segments, depth <= 4, >= 50 respondents each)",
            "tree",
            ChoiceModelTree,
            plan_as="mnl",
            needs=frozenset({"respondent_features"}),
            roles=_ACC,
        ),
        _planned_pooled(
            "mixed-logit",
            "Mixed logit (random coefficients, panel)",
            "the plan's conditional logit with every attribute slope normal over respondents "
            f"(constants fixed): panel simulated likelihood, {MIXED_LOGIT['n_draws']} scrambled "
            "Halton draws, BFGS; a respondent is predicted by their conditional mean given "
            "their training choices",
            "baseline",
            _mixed_logit,
            plan_as="mnl",
            respondent_predict=True,
            needs=_PANEL,
            roles=_REF,
        ),
        _planned_pooled(
            "latent-class",
            "Latent-class logit (classes by BIC, panel)",
            "the plan's conditional logit (attributes, constants) in C classes of respondents, "
            "C in 1..6 by BIC; the plan's respondent features explain class membership; panel "
            "likelihood by EM (5 starts) and BFGS; a respondent is predicted by their "
            "posterior class memberships",
            "baseline",
            _latent_class,
            plan_as="mnl",
            respondent_predict=True,
            needs=_PANEL,
            roles=_REF,
        ),
    ]
)

for _link in ("logit", "probit"):
    _entries(
        [
            ModelSpec(
                f"{_link}-pooled",
                f"Pairwise {_link}, pooled",
                f"one {_link} for everybody on the pairwise differences of each choice (a "
                "composite likelihood: every pair of a choice counted as independent), L2 by "
                "inner CV (log loss) over tasks",
                "baseline",
                scope="pooled",
                estimator=lambda k=_link, **kw: LinearUtilitySurrogate(k, **kw),
                roles=_REF | {"choice_baseline"} if _link == "logit" else _REF,
            ),
            ModelSpec(
                f"{_link}-respondent",
                f"{_link.capitalize()} per respondent",
                f"{_link} per respondent, one L2 strength by inner CV (error)",
                "baseline",
                scope="pooled",
                estimator=lambda k=_link, **kw: RespondentLinearSurrogate(k, **kw),
                respondent_predict=True,
                predicts_new=False,
                roles=_REF,
            ),
            ModelSpec(
                f"{_link}-shrink",
                f"{_link.capitalize()} per respondent, shrunk",
                f"{_link} per respondent shrunk toward the pooled {_link} (CV)",
                "baseline",
                scope="pooled",
                estimator=lambda k=_link, **kw: RespondentLinearSurrogate(k, shrink=True, **kw),
                respondent_predict=True,
                roles=_REF | {"choice_baseline"} if _link == "logit" else _REF,
            ),
        ]
    )

_entries(
    [
        ModelSpec(
            "linear-eubo",
            "Bayesian linear probit with EUBO",
            "the textbook Bayesian linear probit (one leaf, slopes on every attribute); "
            "queries: EUBO",
            "baseline",
            estimator=lambda **kw: LinearLeafDTSurrogate(**{**LINEAR_EUBO, **kw}),
            strategy=_linear_leaf_rule("linear-eubo", LINEAR_EUBO),
            roles=frozenset({"elicitation"}),
            takes_prior=True,
        ),
        _item_baseline(
            "bt-popularity",
            "Item Bradley-Terry (popularity)",
            "item Bradley-Terry for everybody (global popularity), L2 by CV",
            ItemUtilitySurrogate,
            respondent_predict=False,
        ),
        _item_baseline(
            "bt-offsets",
            "Item Bradley-Terry + personal offsets",
            "item Bradley-Terry plus per-user offsets shrunk to zero (CV)",
            ItemOffsetSurrogate,
        ),
        _item_baseline(
            "copeland",
            "Copeland (wins minus losses)",
            "per-user wins minus losses of every item (sanity floor)",
            CopelandSurrogate,
        ),
    ]
)

_entries(
    [
        ModelSpec(
            "random",
            "Random search",
            "uniformly random comparisons (new points in a box, unasked pairs of a finite "
            "set); recommendation by Copeland score",
            "baseline",
            strategy=lambda **kw: RandomSearchStrategy(**kw),
            model_of="copeland",
        ),
    ]
)


def warm_up() -> float:
    """Compile (or load from numba's disk cache) every kernel the registry's fits use
    (:mod:`pbo_core.models.compiled`): the paper DT's (growth, routing, the probit
    leaves' Newton), the linear-leaf tree's (its per-respondent Newton, inside its
    cross-validation) and the mixed logit's (its panel likelihood), each fitted on a tiny
    three-respondent study. Returns the seconds
    it took: the kernels' compile time on a fresh install, well under a second once
    they are on disk."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    n = 16
    X = np.column_stack([rng.uniform(size=n), rng.integers(0, 3, n).astype(float)])
    u = X[:, 0] - 0.3 * X[:, 1]
    ab = rng.integers(0, n, (90, 2))
    ab = ab[ab[:, 0] != ab[:, 1]]
    pairs = np.where((u[ab[:, 0]] > u[ab[:, 1]])[:, None], ab, ab[:, ::-1])
    schema = Schema(
        (
            Feature("a", "numeric", bounds=(0.0, 1.0)),
            Feature("b", "categorical", levels=("x", "y", "z")),
        )
    )
    data = PreferenceData(
        X, pairs, schema=schema, respondent=np.arange(len(pairs)) % 3, task=np.arange(len(pairs))
    )
    for name in ("dt", "dt-linear"):
        make_model(name).fit(data).predict(X)
    make_model("mixed-logit", n_draws=4).fit(data)  # the panel likelihood's kernel
    return time.perf_counter() - t0
