"""The one model registry: a name is one model, everywhere.

Every page and command that offers models lists them from :data:`MODELS`: the PBO
benchmarks (``python -m pbo_core.bench``), the case-study experiments (accuracy,
sensitivity, rho-regret, Sushi), the Tree explorer and its default choice, the live
elicitation page and the report. An entry (:class:`ModelSpec`) holds

* the **estimator**: an unfitted surrogate with ``fit(data) -> self`` and ``predict(X)``
  (and ``predict(X, respondent=r)`` for pooled models with personal utilities), its
  parameters fixed here once, so ``dt-linear`` is the same model in an accuracy table, on
  the Tree explorer and behind the elicitation page's questions;
* the **strategy** (optional): the query rule that asks the next comparison with that same
  model (:mod:`pbo_core.strategies`); a query-rule variant of another entry's model names
  it in ``model_of`` (``dt-toponly`` asks differently, but fits ``dt``'s tree);
* what it **needs** of a study (:data:`NEEDS`), whether it is fitted per respondent or on
  the pooled comparisons (``scope``), its ``family`` (tree, GP, baseline: ``tree`` says it
  draws a tree) and the ``roles`` in which pages and commands offer it by default.

The arms of the cohort experiment (``python -m pbo_core.experiments hierarchy``, the
Hierarchy page) are entries of :data:`COHORT_ARMS` (:class:`CohortArm`): each states its
family and how the experiment builds it, so adding an arm is one :func:`register_arm`
call here.

Adding a model is its module plus one :func:`register` call here; the estimator contract
test (``tests/pbo_core/test_registry.py``) picks every entry up from :data:`MODELS`. An
entry states its parameters once: a GP entry's (:func:`_gp_entry`) make both its
estimator and its EUBO rule, a query rule of the paper DT names its options once
(:func:`_dt_query_rule`), and the item-set baselines share their scope, needs and roles
(:func:`_item_baseline`).

The BoTorch reference (``botorch-gp*``) needs the optional ``bench`` extra and is imported
only when asked for.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd

from pbo_core.data import Feature, PreferenceData, Schema, Study
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
from pbo_core.plan import plan_of
from pbo_core.strategies.base import Strategy
from pbo_core.strategies.dt import DTStrategy, RandomStrategy
from pbo_core.strategies.gp import GPStrategy
from pbo_core.strategies.linear_leaves import LinearLeafStrategy
from pbo_core.strategies.random import RandomSearchStrategy

__all__ = [
    "COHORT_ARMS",
    "COHORT_BUILDS",
    "COHORT_CENTRES",
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
]

Family = Literal["tree", "gp", "baseline"]
Scope = Literal["respondent", "pooled"]

#: What an entry may need of a study: ``conjoint_design`` (items are profiles described by
#: attributes, a design; not a fixed item set such as Sushi's), ``item_set`` (a finite
#: item set every respondent compares, Sushi), ``respondent_features`` (a table of
#: respondent features, ``study.users``), ``panel`` (respondent ids, and the typical
#: respondent answered several choice tasks: :func:`is_panel`; the mixed and latent-class
#: logits, whose likelihood is over each respondent's choices). A ``scope="respondent"``
#: model also needs several tasks of every respondent it predicts (it never sees other
#: respondents).
NEEDS = frozenset({"conjoint_design", "item_set", "respondent_features", "panel"})

#: Where pages and commands offer an entry by default: ``accuracy`` (the accuracy
#: experiments' default list), ``reference`` (a ``baseline`` that may be the best baseline,
#: the reference of every paired difference: :func:`pbo_core.evaluation.best_baseline_of`;
#: only by this declared role, never by its family alone), ``explorer`` (drawn by the Tree
#: explorer, which opens on the most accurate), ``choice_baseline`` (scored beside the
#: explorer's trees), ``sensitivity`` (ablated by default, beside the best baseline),
#: ``elicitation`` (a query rule of the live elicitation page), ``sushi_pbo`` and
#: ``rho_regret`` (the default methods of those commands).
ROLES = frozenset(
    {
        "accuracy",
        "reference",
        "explorer",
        "choice_baseline",
        "sensitivity",
        "elicitation",
        "sushi_pbo",
        "rho_regret",
    }
)


@dataclass(frozen=True)
class ModelSpec:
    """One named model.

    Parameters
    ----------
    name
        The key (``--methods``, URLs, result files).
    label
        What pages show.
    description
        One line for ``--help``, tables and the README.
    family
        ``"tree"``, ``"gp"`` or ``"baseline"``; a ``"baseline"`` with the ``reference``
        role may be the best baseline, the reference of every paired difference.
    scope
        ``"respondent"``: fitted on one respondent's comparisons at a time;
        ``"pooled"``: fitted once on every respondent's comparisons.
    estimator
        ``estimator(**params) -> unfitted model`` (``None``: a query rule of
        ``model_of``'s model, or a strategy without a model of ours).
    strategy
        ``strategy(**options) -> Strategy`` asking the next comparison with this model;
        ``None`` when the model is not used for PBO.
    model_of
        Strategy-only entries: the entry whose estimator the strategy fits.
    respondent_predict
        Pooled models with one utility per respondent, asked with
        ``predict(X, respondent=r)``; otherwise ``predict(X)`` for everybody.
    needs
        Subset of :data:`NEEDS`.
    roles
        Subset of :data:`ROLES`.
    takes_prior
        The strategy accepts ``slope_prior``, a population prior of the shared slopes
        from earlier respondents (:func:`pbo_core.strategies.linear_leaves.pooled_slope_prior`).
    reuse
        ``reuse(fitted) -> params``: settings a fit learned that later fits of the same
        data's cross-validation folds may reuse instead of learning them again (the GP's
        kernel hyperparameters); ``None``: every fit learns everything.
    feature_predict
        A pooled model that predicts any respondent from their recorded features
        (``predict(X, respondent=r)``), seen in training or not (the conditional logit's
        case-specific variables).
    predicts_new
        ``False``: its prediction for a respondent it never saw is no model of anybody
        (the mean of independent per-respondent fits, a count of own wins); a split that
        holds out whole respondents skips it with the reason, as it skips models fitted
        per respondent.
    planned
        The model takes parameters from the study's analysis plan
        (:meth:`pbo_core.plan.AnalysisPlan.model_params`: alternatives, reference,
        case-specific variables); :func:`make_for` passes them.
    plan_as
        A planned model that takes the plan parameters of another entry (the
        choice-model tree takes the conditional logit's); :func:`make_for` then also
        passes the study's respondent feature schema (``user_schema``) when the entry
        needs ``respondent_features``.
    """

    name: str
    label: str
    description: str
    family: Family
    scope: Scope = "respondent"
    estimator: Callable[..., Any] | None = None
    strategy: Callable[..., Strategy] | None = None
    model_of: str | None = None
    respondent_predict: bool = False
    needs: frozenset[str] = field(default_factory=frozenset)
    roles: frozenset[str] = field(default_factory=frozenset)
    takes_prior: bool = False
    reuse: Callable[[Any], dict[str, Any]] | None = None
    feature_predict: bool = False
    planned: bool = False
    predicts_new: bool = True
    plan_as: str | None = None

    @property
    def tree(self) -> bool:
        """Does the model draw a tree?"""
        return self.family == "tree"

    @property
    def fits(self) -> bool:
        """Has the entry an estimator (usable for held-out accuracy)?"""
        return self.estimator is not None

    def make(self, **params: Any) -> Any:
        """A fresh unfitted estimator (``params`` override the registered ones)."""
        if self.estimator is None:
            raise TypeError(f"{self.name} has no estimator of its own (model of {self.model_of})")
        return self.estimator(**params)


#: The registry: name -> entry, in the order pages and tables list them.
MODELS: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add ``spec`` to :data:`MODELS` (replacing one of the same name); checks its fields."""
    if spec.family not in ("tree", "gp", "baseline"):
        raise ValueError(f"{spec.name}: family must be tree, gp or baseline")
    if spec.scope not in ("respondent", "pooled"):
        raise ValueError(f"{spec.name}: scope must be respondent or pooled")
    if not spec.needs <= NEEDS or not spec.roles <= ROLES:
        raise ValueError(f"{spec.name}: unknown needs or roles")
    if "reference" in spec.roles and spec.family != "baseline":
        raise ValueError(f"{spec.name}: only a baseline may be a paired-difference reference")
    if spec.estimator is None and spec.strategy is None:
        raise ValueError(f"{spec.name}: an entry needs an estimator or a strategy")
    if spec.model_of is not None and spec.model_of not in MODELS:
        raise ValueError(f"{spec.name}: model_of {spec.model_of!r} is not registered")
    MODELS[spec.name] = spec
    return spec


_Entry = TypeVar("_Entry")


def _lookup(table: Mapping[str, _Entry], name: str, what: str) -> _Entry:
    """``table[name]``, or a ``KeyError`` naming ``what`` and the known entries."""
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"unknown {what} {name!r}; known {what}s: {list(table)}") from None


def get(name: str) -> ModelSpec:
    """The entry ``name``; a ``KeyError`` naming the known entries otherwise."""
    return _lookup(MODELS, name, "model")


def names(
    *,
    role: str | None = None,
    family: str | None = None,
    fits: bool | None = None,
    pbo: bool | None = None,
) -> list[str]:
    """Names of the entries with ``role`` / ``family``, an estimator (``fits``) or a strategy
    (``pbo``), in registry order."""
    out = []
    for n, s in MODELS.items():
        if role is not None and role not in s.roles:
            continue
        if family is not None and s.family != family:
            continue
        if fits is not None and s.fits != fits:
            continue
        if pbo is not None and (s.strategy is not None) != pbo:
            continue
        out.append(n)
    return out


def reports_estimates(name: str) -> bool:
    """Does entry ``name`` fit a model with an estimates table: ``coef_table()`` and
    ``fit_statistics()`` (the conditional logit's columns and keys; the model the plan's
    ``estimates`` may name)? Asked of an unfitted estimator, so any entry that adds the two
    methods qualifies without a registry flag."""
    spec = MODELS.get(name)
    if spec is None or not spec.fits:
        return False
    try:
        model = spec.make()
    except (TypeError, ValueError, ImportError):  # needs parameters, or an optional extra
        return False
    return all(callable(getattr(model, m, None)) for m in ("coef_table", "fit_statistics"))


def estimates_models() -> list[str]:
    """The registry entries whose fits have an estimates table (:func:`reports_estimates`),
    in registry order."""
    return [n for n in MODELS if reports_estimates(n)]


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
    return _lookup(COHORT_ARMS, name, "cohort arm")


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


def make_model(name: str, **params: Any) -> Any:
    """A fresh unfitted estimator of entry ``name`` (``model_of``'s for a query rule)."""
    spec = get(name)
    return get(spec.model_of).make(**params) if spec.model_of else spec.make(**params)


def make_strategy(name: str, **options: object) -> Strategy:
    """A fresh strategy of entry ``name``.

    Parameters
    ----------
    name
        Entry name.
    **options
        Keyword options of the entry's strategy (e.g. ``ratio`` and ``max_depth`` for the
        DT rules, ``tau`` for the GP rules, ``slope_prior`` for entries that
        ``takes_prior``); an option the strategy does not take raises ``TypeError``.
    """
    spec = get(name)
    if spec.strategy is None:
        raise KeyError(f"{name} is not a PBO method; PBO methods: {names(pbo=True)}")
    return spec.strategy(**options)


def make_for(
    model: str | ModelSpec, study: Study, *, schema: Schema | None = None, **params: Any
) -> Any:
    """A fresh unfitted estimator of entry ``model`` as ``study``'s analysis plan sets it
    (:meth:`pbo_core.plan.AnalysisPlan.model_params`; ``params`` override). ``schema``:
    the attributes the model will see, when some were left out (an ablation)."""
    spec = get(model) if isinstance(model, str) else model
    own = get(spec.model_of) if spec.model_of else spec
    if own.planned:
        planned = plan_of(study).model_params(own.plan_as or own.name, study, schema=schema)
        if own.plan_as and "respondent_features" in own.needs:
            planned = {**planned, "user_schema": study.user_schema}
        takes = _parameters(own.estimator)
        if takes is not None:  # a plan setting the estimator has no use for (a penalty)
            planned = {k: v for k, v in planned.items() if k in takes}
        params = {**planned, **params}
    return own.make(**params)


def _parameters(estimator: Callable[..., Any] | None) -> set[str] | None:
    """The keyword parameters ``estimator`` takes, or ``None`` when it takes any
    (``**kwargs``) or cannot be inspected."""
    if estimator is None:
        return None
    try:
        sig = inspect.signature(estimator)
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return set(sig.parameters)


def fit_for(
    name: str, study: Study, respondent: Any = None, *, fitted: Any = None, **params: Any
) -> Any:
    """Model ``name`` as a page or a report shows it for ``respondent`` (``None``: the pooled
    data): a per-respondent model fitted on that respondent's comparisons; a pooled model
    fitted on the whole study (or ``fitted``, such a fit made earlier) and, for a tree with
    personal utilities, that respondent's posterior on their own items."""
    spec = get(name)
    data = (
        study.data
        if respondent is None or study.data.respondent is None
        else study.for_respondent(respondent)
    )
    if spec.scope == "respondent":
        return make_for(name, study, **params).fit(data)
    model = fitted if fitted is not None else make_for(name, study, **params).fit(study.data)
    if data is not study.data and spec.respondent_predict and spec.tree:
        return model.for_respondent(respondent, data.X)
    return model


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


def study_kind(study: Study) -> str:
    """``"items"`` for a finite item set shared by respondents (Sushi: ``study.kind``),
    else ``"conjoint"`` (items described by attributes, text features included)."""
    return "items" if getattr(study, "kind", "conjoint") == "items" else "conjoint"


def is_panel(study: Study) -> bool:
    """Are ``study``'s choices a panel: respondent ids, and the median respondent answered
    at least two choice tasks?"""
    data = study.data
    if data.respondent is None or data.n_pairs == 0:
        return False
    frame = pd.DataFrame({"r": data.respondent, "t": data.task_keys()})
    return bool(frame.groupby("r", sort=False)["t"].nunique().median() >= 2)


def not_applicable(spec: ModelSpec, study: Study, *, new_respondents: bool = False) -> str | None:
    """Why ``spec`` cannot be fitted or scored on ``study``, or ``None`` when it can.

    ``new_respondents``: the evaluation predicts respondents the model never saw (a
    per-respondent model cannot).
    """
    if not spec.fits:
        return "a query rule: its model is " + str(spec.model_of)
    kind = study_kind(study)
    if "item_set" in spec.needs and kind != "items":
        return "needs a finite item set that every respondent compares"
    if "conjoint_design" in spec.needs and kind != "conjoint":
        return "needs items described by a conjoint design"
    if "respondent_features" in spec.needs and study.users is None:
        return "needs respondent features"
    if "panel" in spec.needs and not is_panel(study):
        return "needs a panel: respondents who each answered several choice tasks"
    if new_respondents and (spec.scope == "respondent" or not spec.predicts_new):
        return "a per-respondent model cannot predict respondents it never saw"
    return None


# ----------------------------------------------------------------------------- entries
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


def _botorch(name: str, kappasharp: str = "off") -> Callable[..., Strategy]:
    def factory(**kw: object) -> Strategy:
        # delayed import: BotorchStrategy pulls in torch and botorch (optional bench extra)
        from pbo_core.strategies.botorch import BotorchStrategy

        return BotorchStrategy(name=name, kappasharp=kappasharp, **kw)  # type: ignore[arg-type]

    return factory


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
    takes = set(inspect.signature(MixedLogit).parameters)
    return MixedLogit(**{**MIXED_LOGIT, **{k: v for k, v in params.items() if k in takes}})


def _latent_class(**params: Any) -> LatentClassLogit:
    """The registry's latent-class logit: the plan's case-specific variables (respondent
    features) explain class membership (Greene & Hensher 2003) instead of entering every
    class's utility, where they would multiply the parameters by the classes."""
    if "membership" not in params:
        params["membership"] = tuple(params.pop("case_specific", ()))
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
        ModelSpec(
            "botorch-gp",
            "BoTorch PairwiseGP with EUBO",
            "BoTorch's PairwiseGP (bench extra); option priors = current | 0.6",
            "gp",
            strategy=_botorch("botorch-gp"),
        ),
        ModelSpec(
            "botorch-gp-ks-static",
            "BoTorch PairwiseGP, static KappaSharp",
            "BoTorch's PairwiseGP with the static KappaSharp hook (bench extra)",
            "gp",
            strategy=_botorch("botorch-gp-ks-static", "static"),
        ),
        ModelSpec(
            "botorch-gp-ks-adaptive",
            "BoTorch PairwiseGP, adaptive KappaSharp",
            "BoTorch's PairwiseGP with the adaptive KappaSharp hook (bench extra)",
            "gp",
            strategy=_botorch("botorch-gp-ks-adaptive", "adaptive"),
        ),
        ModelSpec(
            "botorch-gp-fixed20",
            "BoTorch PairwiseGP, KappaSharp fixed at 20",
            "BoTorch's PairwiseGP with the condition number fixed to 20 (bench extra)",
            "gp",
            strategy=_botorch("botorch-gp-fixed20", "fixed20"),
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
            "conditional logit (constants, case-specific variables) shrunk toward its parent "
            "segment's; the root is mnl's fit; grown by log-likelihood gain, shrinkage and "
            "pruning by the held-out log-likelihood of whole respondents (1-SE; <= 12 "
            "segments, depth <= 4, >= 50 respondents each)",
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

# ----------------------------------------------------------------------------- cohort arms
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
