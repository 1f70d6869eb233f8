"""Every surrogate follows scikit-learn's estimator contract (``Estimator``)."""

from __future__ import annotations

import inspect
import numbers
import re

import numpy as np
import pytest
import sklearn.base

from pbo_core.data import PreferenceData, Schema
from pbo_core.models import DTSurrogate, GPSurrogate
from pbo_core.models.base import (
    NAMES,
    ArrayOf,
    Estimator,
    Interval,
    InvalidParameterError,
    Options,
    clone,
)
from pbo_core.models.bradley_terry import (
    BradleyTerrySurrogate,
    CopelandSurrogate,
    ItemOffsetSurrogate,
    ItemUtilitySurrogate,
    ThurstoneSurrogate,
)
from pbo_core.models.gp.size_guard import GPSizeLimits, GPSizeWarning, GPTooLargeError
from pbo_core.models.linear import (
    LinearUtilitySurrogate,
    LogitSurrogate,
    ProbitSurrogate,
    RespondentLinearSurrogate,
)
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
from pbo_core.models.pooled_dt import PooledDTSurrogate

CLASSES = [
    DTSurrogate,
    GPSurrogate,
    LinearUtilitySurrogate,
    RespondentLinearSurrogate,
    ItemUtilitySurrogate,
    ItemOffsetSurrogate,
    CopelandSurrogate,
    LinearLeafDTSurrogate,
    PooledDTSurrogate,
]
ALIASES = [LogitSurrogate, ProbitSurrogate, BradleyTerrySurrogate, ThurstoneSurrogate]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_params_are_the_init_signature(cls: type) -> None:
    names = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
    if cls is CopelandSurrogate:
        names = []  # no parameters
    model = cls()
    assert isinstance(model, Estimator)
    assert sorted(model.get_params()) == sorted(names)
    for name, p in inspect.signature(cls).parameters.items():
        assert model.get_params()[name] is p.default or model.get_params()[name] == p.default


@pytest.mark.parametrize("cls", CLASSES + ALIASES, ids=lambda c: c.__name__)
def test_clone_and_set_params(cls: type) -> None:
    model = cls()
    params = model.get_params()
    for twin in (clone(model), sklearn.base.clone(model)):
        assert type(twin) is cls and twin is not model
        assert twin.get_params().keys() == params.keys()
    if params:
        name = sorted(params)[0]
        assert model.set_params(**{name: params[name]}) is model
    with pytest.raises(ValueError, match="invalid parameter 'no_such'"):
        model.set_params(no_such=1)


def test_dt_params_include_the_prior_and_clone_copies_them() -> None:
    mean = np.array([0.5, -0.5])
    m = DTSurrogate(0.5, prior_mean=mean, prior_precision=np.ones(2))
    p = m.get_params()
    assert p["prior_mean"] is mean and p["ratio"] == 0.5
    twin = clone(m)
    np.testing.assert_array_equal(twin.prior_mean, mean)
    assert twin.prior_mean is not mean  # a deep copy, as sklearn.base.clone makes
    assert "prior_mean" in repr(m) and "ratio=0.5" in repr(m)


@pytest.mark.parametrize("alias", ALIASES, ids=lambda c: c.__name__)
def test_fixed_link_aliases_keep_their_link(alias: type) -> None:
    m = alias(max_iter=7)
    assert "link" not in m.get_params() and m.get_params()["max_iter"] == 7
    assert clone(m).link == m.link == ("probit" if "Probit" in alias.__name__ or
                                       "Thurstone" in alias.__name__ else "logit")  # fmt: skip


def test_gp_size_limits_are_constructor_parameters() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(8, 2))
    pairs = np.column_stack([np.arange(11) % 8, (np.arange(11) + 3) % 8])
    data = PreferenceData(X, pairs, schema=Schema.numeric([(0, 1), (0, 1)]))
    small = GPSizeLimits(warn_comparisons=5, max_comparisons=10, warn_items=6, max_items=12)
    gp = GPSurrogate(lengthscale=0.3, outputscale=1.0, size_limits=small)
    with pytest.raises(GPTooLargeError, match="11 comparisons"):
        gp.fit(data)
    with pytest.warns(GPSizeWarning):
        gp.set_params(allow_large=True).fit(data)
    assert clone(gp).get_params()["size_limits"] == small


def test_an_init_with_kwargs_only_is_rejected() -> None:
    class Loose(Estimator):
        def __init__(self, *args: object) -> None:
            pass

    with pytest.raises(TypeError, match="must name every parameter"):
        Loose().get_params()


# ----------------------------------------------------------------------------- parameters
def _estimator_classes() -> list[type]:
    """Every estimator class of ``pbo_core.models`` that has parameters."""
    import importlib
    import pkgutil

    import pbo_core.models

    for info in pkgutil.walk_packages(pbo_core.models.__path__, "pbo_core.models."):
        importlib.import_module(info.name)
    found: set[type] = set()
    todo = [Estimator]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("pbo_core.models.") and sub._param_names():
                found.add(sub)
    return sorted(found, key=lambda c: c.__name__)


ESTIMATORS = _estimator_classes()


def _tiny_data() -> PreferenceData:
    X = np.array([[0.1, 0.2], [0.5, 0.9], [0.8, 0.3], [0.3, 0.6]])
    pairs = np.array([[0, 1], [2, 3], [1, 2]])
    return PreferenceData(X, pairs, schema=Schema.numeric([(0, 1), (0, 1)]))


def test_the_estimators_found_include_every_model() -> None:
    names = {c.__name__ for c in ESTIMATORS}
    assert {c.__name__ for c in CLASSES if c is not CopelandSurrogate} <= names
    assert {"ConditionalLogit", "MixedLogit", "LatentClassLogit", "ChoiceModelTree"} <= names


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_declared_and_the_defaults_pass(cls: type) -> None:
    undeclared = set(cls._param_names()) - set(cls._parameter_constraints)
    assert not undeclared, f"{cls.__name__} declares no constraint for {sorted(undeclared)}"
    cls()._validate_params()


def test_every_registry_entry_passes_its_own_parameters() -> None:
    from pbo_core.registry import MODELS, make_model

    checked = 0
    for name, spec in MODELS.items():
        if spec.estimator is None:
            continue
        model = make_model(name)
        if isinstance(model, Estimator):
            model._validate_params()
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_fit_refuses_a_value_of_no_allowed_kind_for_every_parameter(cls: type) -> None:
    """``fit`` checks every parameter first, whatever the data."""
    data = _tiny_data()
    for name in cls._param_names():
        model = cls().set_params(**{name: object()})
        with pytest.raises(InvalidParameterError, match=rf"^{cls.__name__}: {name} must be "):
            model.fit(data)


INVALID = [
    (DTSurrogate, {"max_depth": -1}, "max_depth must be an int >= 0 or None, got -1."),
    (DTSurrogate, {"min_samples_split": 0}, "min_samples_split must be an int >= 1, got 0."),
    (DTSurrogate, {"ratio": 0.0}, "ratio must be a number > 0, got 0.0."),
    (DTSurrogate, {"max_depth": 2.5}, "max_depth must be an int >= 0 or None, got 2.5."),
    (DTSurrogate, {"straddlers": "drop"}, "straddlers must be 'discard' or 'keep', got 'drop'."),
    (DTSurrogate, {"prior_mean": np.zeros(2)}, "prior_mean must be a callable or None"),
    (LinearUtilitySurrogate, {"n_folds": 0}, "n_folds must be an int >= 1, got 0."),
    (LinearUtilitySurrogate, {"alpha": -1.0}, "alpha must be a number >= 0 or 'cv', got -1.0."),
    (LinearUtilitySurrogate, {"alpha": "auto"}, "alpha must be a number >= 0 or 'cv', got 'auto'"),
    (
        LinearUtilitySurrogate,
        {"alphas": [1.0, 0.0]},
        "alphas must be a non-empty sequence of numbers > 0 or None, got [1.0, 0.0].",
    ),
    (LinearUtilitySurrogate, {"link": "cauchit"}, "link must be 'logit' or 'probit'"),
    (LinearUtilitySurrogate, {"tol": float("nan")}, "tol must be a number > 0, got nan."),
    (LogitSurrogate, {"max_iter": 0}, "max_iter must be an int >= 1, got 0."),
    (
        RespondentLinearSurrogate,
        {"alpha_selection": "each"},
        "alpha_selection must be 'respondent' or 'pooled', got 'each'.",
    ),
    (RespondentLinearSurrogate, {"shrink": "yes"}, "shrink must be True or False, got 'yes'."),
    (ItemUtilitySurrogate, {"alpha": 0.0}, "alpha must be a number > 0 or 'cv', got 0.0."),
    (ItemOffsetSurrogate, {"tau": -2}, "tau must be a number > 0 or 'cv', got -2."),
    (
        LinearLeafDTSurrogate,
        {"max_depth": "deep"},
        "max_depth must be an int >= 0, None or 'cv', got 'deep'.",
    ),
    (LinearLeafDTSurrogate, {"depths": []}, "depths must be a non-empty sequence of ints >= 0"),
    (LinearLeafDTSurrogate, {"cv_respondents": 0}, "cv_respondents must be an int >= 1 or None"),
    (
        LinearLeafDTSurrogate,
        {"linear_features": "price"},
        "linear_features must be a sequence of names, 'all' or None, got 'price'.",
    ),
    (PooledDTSurrogate, {"shrinkage": -0.5}, "shrinkage must be a number >= 0 or 'cv'"),
    (GPSurrogate, {"kappasharp_tau": 1.5}, "kappasharp_tau must be a number in [0, 1], got 1.5."),
    (GPSurrogate, {"size_limits": (1, 2)}, "size_limits must be a GPSizeLimits, got (1, 2)."),
]


@pytest.mark.parametrize(
    ("cls", "params", "message"), INVALID, ids=lambda v: getattr(v, "__name__", None)
)
def test_an_invalid_value_raises_one_sentence_naming_it(
    cls: type, params: dict, message: str
) -> None:
    with pytest.raises(InvalidParameterError) as err:
        cls(**params).fit(_tiny_data())
    text = str(err.value)
    assert text.startswith(f"{cls.__name__}: {message}"), text
    assert text.endswith(".") and "\n" not in text
    assert isinstance(err.value, ValueError) and isinstance(err.value, TypeError)


def test_the_choice_models_check_their_parameters() -> None:
    from pbo_core.models.choice_tree import ChoiceModelTree
    from pbo_core.models.latent_class import LatentClassLogit
    from pbo_core.models.mixed_logit import MixedLogit
    from pbo_core.models.mnl import ConditionalLogit

    data = _tiny_data()
    cases = [
        (ConditionalLogit(case_specific="age"), "case_specific must be a sequence of names"),
        (
            ConditionalLogit(scale=np.array([1.0, 0.0])),
            "scale must be a non-empty sequence of numbers > 0 or None",
        ),
        (MixedLogit(n_draws=0), "n_draws must be an int >= 1, got 0."),
        (LatentClassLogit(n_classes=0), "n_classes must be an int >= 1 or None, got 0."),
        (ChoiceModelTree(min_respondents_leaf=0), "min_respondents_leaf must be an int >= 1"),
        (
            ChoiceModelTree(prune_rule="best"),
            "prune_rule must be '1.5se', '1se', '2se' or 'max', got 'best'.",
        ),
    ]
    for model, message in cases:
        with pytest.raises(InvalidParameterError, match=re.escape(message)):
            model.fit(data)


def test_constraints_say_what_they_allow() -> None:
    assert str(Interval(numbers.Integral, 1, None)) == "an int >= 1"
    assert str(Interval(numbers.Real, 0, 1, "right")) == "a number in (0, 1]"
    assert str(Interval(numbers.Real, None, 0, "neither")) == "a number < 0"
    assert not Interval(numbers.Integral, 0, None).accepts(True)  # a flag is not a count
    assert Interval(numbers.Integral, 0, None).accepts(np.int64(3))
    assert not Interval(numbers.Real).accepts(float("inf"))
    assert str(Options("a", "b", "c")) == "'a', 'b' or 'c'"
    assert ArrayOf(Interval(numbers.Real, 0, None)).accepts(np.array([0.0, 2.0]))
    assert not ArrayOf(Interval(numbers.Real, 0, None)).accepts("12")
    assert NAMES.accepts(()) and NAMES.accepts(["a"]) and not NAMES.accepts("a")


def test_an_undeclared_parameter_is_a_bug_of_the_class() -> None:
    class Undeclared(Estimator):
        def __init__(self, depth: int = 1) -> None:
            self.depth = depth

    with pytest.raises(TypeError, match="declares no constraint for its parameter 'depth'"):
        Undeclared()._validate_params()
