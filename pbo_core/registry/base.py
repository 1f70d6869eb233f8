"""The registry's machinery: what an entry is (:class:`ModelSpec`), the table
:data:`MODELS`, :func:`register`, and the look-ups every page and command uses
(:func:`get`, :func:`names`, :func:`make_model`, :func:`make_strategy`, :func:`make_for`,
:func:`fit_for`, :func:`not_applicable`). The entries themselves are
:mod:`pbo_core.registry.catalogue`'s (and :mod:`pbo_core.registry.botorch`'s, with the
optional extra); :mod:`pbo_core.registry` holds them all.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import pandas as pd

from pbo_core.data import Schema, Study
from pbo_core.plan import plan_of
from pbo_core.strategies.base import Strategy

__all__ = [
    "MODELS",
    "NEEDS",
    "ROLES",
    "UNAVAILABLE",
    "ModelSpec",
    "estimates_models",
    "fit_for",
    "get",
    "is_panel",
    "lookup",
    "make_for",
    "make_model",
    "make_strategy",
    "names",
    "not_applicable",
    "register",
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


_T = TypeVar("_Entry")


def lookup(table: Mapping[str, _T], name: str, what: str) -> _T:
    """``table[name]``, or a ``KeyError`` naming ``what`` and the known entries."""
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"unknown {what} {name!r}; known {what}s: {list(table)}") from None


#: Entries an optional extra provides when it is installed: name prefix -> what to
#: install (set by :mod:`pbo_core.registry` when the extra is missing).
UNAVAILABLE: dict[str, str] = {}


def get(name: str) -> ModelSpec:
    """The entry ``name``; a ``KeyError`` naming the known entries otherwise (or the
    optional extra that provides it)."""
    for prefix, why in UNAVAILABLE.items():
        if name not in MODELS and name.startswith(prefix):
            raise KeyError(f"{name} {why}")
    return lookup(MODELS, name, "model")


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
