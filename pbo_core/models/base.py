"""The interface every surrogate shares, and helpers built on it.

The loop, metrics, experiments and dashboard speak only this interface::

    model = SomeSurrogate(...).fit(data)      # returns self
    mean, cov = model.posterior(X)            # joint posterior of the utilities of X
    p = model.prob_prefer(Xa, Xb)             # P(a preferred to b), elementwise
    ranks = model.rank(X)                     # competition ranks, 1 = best, ties share

Utilities are in units of the comparison noise ``sigma_noise`` (see
:mod:`pbo_core.models.leaves`).

Every surrogate is an :class:`Estimator`: ``get_params`` / ``set_params`` / :func:`clone`
read the parameters from the ``__init__`` signature, as scikit-learn's ``BaseEstimator``
does (``sklearn.base.clone`` accepts them too), without importing scikit-learn. Next to
its ``__init__`` an estimator declares the values every parameter may take
(``_parameter_constraints``: :class:`Interval`, :class:`Options`, :class:`ArrayOf`,
:data:`NAMES`, a type or ``None``), and its ``fit`` checks them first
(:meth:`Estimator._validate_params`): a value outside them raises one sentence naming
the parameter and the allowed values (:class:`~pbo_core.errors.InvalidParameterError`),
scikit-learn's ``_parameter_constraints`` idea.
"""

from __future__ import annotations

import copy
import inspect
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, Self, runtime_checkable

import numpy as np
from scipy.special import ndtr

from pbo_core.data import PreferenceData
from pbo_core.errors import InvalidParameterError
from pbo_core.metrics import competition_rank

__all__ = [
    "BOOLEAN",
    "CALLABLE",
    "COUNT",
    "NAMES",
    "NON_NEGATIVE",
    "NON_NEGATIVE_INT",
    "POSITIVE",
    "RANDOM_STATE",
    "ArrayOf",
    "Estimator",
    "Interval",
    "InvalidParameterError",
    "Options",
    "Surrogate",
    "check_input",
    "clone",
    "competition_rank",
    "probit_preference",
]


@runtime_checkable
class Surrogate(Protocol):
    """Structural type of a fitted preference surrogate."""

    def fit(self, data: PreferenceData) -> Surrogate:
        """Fit to comparisons; returns self."""
        ...

    def posterior(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean ``(n,)`` and covariance ``(n, n)`` of the utilities of ``X``."""
        ...

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utility ``(n,)``."""
        ...

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray) -> np.ndarray:
        """``P(a > b)`` for paired rows of ``Xa`` and ``Xb``."""
        ...

    def rank(self, X: np.ndarray) -> np.ndarray:
        """Competition ranks (1 = best) of the rows of ``X``."""
        ...


# ----------------------------------------------------------------------------- constraints
class Constraint:
    """One kind of value a parameter may take: ``accepts(value)``, and ``str()`` says it."""

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError


def _is_number(value: Any, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool | np.bool_)


@dataclass(frozen=True)
class Interval(Constraint):
    """A finite number of ``kind`` (``numbers.Integral`` or ``numbers.Real``) in a range.

    ``low`` / ``high``: the bounds (``None``: unbounded); ``closed``: which bounds belong
    to the range (``"both"``, ``"left"``, ``"right"``, ``"neither"``). Booleans and NaN
    are never numbers here.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: Literal["both", "left", "right", "neither"] = "both"

    def accepts(self, value: Any) -> bool:
        if not _is_number(value, self.kind) or not np.isfinite(value):
            return False
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and not (value >= self.low if left else value > self.low):
            return False
        return self.high is None or (value <= self.high if right else value < self.high)

    def _range(self) -> str:
        lo = ">=" if self.closed in ("both", "left") else ">"
        hi = "<=" if self.closed in ("both", "right") else "<"
        if self.low is not None and self.high is not None:
            a = "[" if lo == ">=" else "("
            b = "]" if hi == "<=" else ")"
            return f" in {a}{self.low:g}, {self.high:g}{b}"
        if self.low is not None:
            return f" {lo} {self.low:g}"
        if self.high is not None:
            return f" {hi} {self.high:g}"
        return ""

    def noun(self, plural: bool = False) -> str:
        word = "int" if self.kind is numbers.Integral else "number"
        return f"{word}s" if plural else ("an int" if word == "int" else "a number")

    def __str__(self) -> str:
        return self.noun() + self._range()


@dataclass(frozen=True)
class Options(Constraint):
    """One of a few strings."""

    values: tuple[str, ...]

    def __init__(self, *values: str) -> None:
        object.__setattr__(self, "values", tuple(values))

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values

    def __str__(self) -> str:
        return _either([repr(v) for v in self.values])


@dataclass(frozen=True)
class ArrayOf(Constraint):
    """A non-empty sequence (list, tuple, 1-D array) whose every element ``item`` accepts."""

    item: Interval

    def accepts(self, value: Any) -> bool:
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence | np.ndarray):
            return False
        values = list(np.asarray(value).ravel()) if isinstance(value, np.ndarray) else value
        return len(values) > 0 and all(self.item.accepts(v) for v in values)

    def __str__(self) -> str:
        return f"a non-empty sequence of {self.item.noun(plural=True)}{self.item._range()}"


@dataclass(frozen=True)
class _Names(Constraint):
    """A sequence of names (possibly empty), never one bare string."""

    def accepts(self, value: Any) -> bool:
        if isinstance(value, str | bytes | Mapping):
            return False
        if not isinstance(value, Sequence | np.ndarray | set | frozenset):
            return False
        return all(isinstance(v, str) for v in value)

    def __str__(self) -> str:
        return "a sequence of names"


@dataclass(frozen=True)
class _Boolean(Constraint):
    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool | np.bool_)

    def __str__(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class _Callable(Constraint):
    def accepts(self, value: Any) -> bool:
        return callable(value)

    def __str__(self) -> str:
        return "a callable"


@dataclass(frozen=True)
class _InstanceOf(Constraint):
    kind: type

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.kind)

    def __str__(self) -> str:
        name = self.kind.__name__
        if self.kind.__module__.startswith("numpy"):
            name = f"numpy {name}"
        return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


@dataclass(frozen=True)
class _NoneValue(Constraint):
    def accepts(self, value: Any) -> bool:
        return value is None

    def __str__(self) -> str:
        return "None"


#: ``True`` or ``False`` (NumPy's booleans too).
BOOLEAN = _Boolean()
#: Any callable.
CALLABLE = _Callable()
#: A sequence of names (feature or attribute names), possibly empty; not one string.
NAMES = _Names()
#: The usual number ranges.
POSITIVE = Interval(numbers.Real, 0, None, "neither")
NON_NEGATIVE = Interval(numbers.Real, 0, None)
COUNT = Interval(numbers.Integral, 1, None)  # an int >= 1
NON_NEGATIVE_INT = Interval(numbers.Integral, 0, None)
#: The seed of a model's randomness: an int >= 0, a NumPy ``Generator`` or ``None``
#: (``numpy.random.default_rng`` takes each).
RANDOM_STATE: tuple[Any, ...] = (
    NON_NEGATIVE_INT,
    np.random.Generator,
    None,
)


def _constraint(spec: Any) -> Constraint:
    if isinstance(spec, Constraint):
        return spec
    if spec is None:
        return _NoneValue()
    if isinstance(spec, type):
        return _InstanceOf(spec)
    raise TypeError(f"not a parameter constraint: {spec!r}")


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ----------------------------------------------------------------------------- estimator
class Estimator:
    """Parameters from the ``__init__`` signature (scikit-learn's estimator contract).

    ``__init__`` names every parameter and stores each unchanged under its own name;
    fitted state ends in ``_``. A subclass that only fixes some of its base's parameters
    says so in its class statement, ``class ProbitSurrogate(LinearUtilitySurrogate,
    link="probit")``: its ``__init__`` takes the base's other parameters, and those are
    its parameters (the fixed ones are listed in ``_fixed_params``).

    ``_parameter_constraints`` maps every parameter to the list of what it may be (any
    one suffices): a :class:`Constraint` (:class:`Interval`, :class:`Options`,
    :class:`ArrayOf`, :data:`NAMES`, :data:`BOOLEAN`, :data:`CALLABLE`), a type (an
    instance of it) or ``None`` (the value ``None``). ``fit`` calls
    :meth:`_validate_params` first; checks that involve several parameters or the data
    stay in ``fit``.
    """

    _fixed_params: ClassVar[tuple[str, ...]] = ()
    _parameter_constraints: ClassVar[Mapping[str, Sequence[Any]]] = {}

    def __init_subclass__(cls, **fixed: Any) -> None:
        super().__init_subclass__()
        if not fixed:
            return

        def __init__(self: Estimator, **kwargs: Any) -> None:
            clash = sorted(set(fixed) & set(kwargs))
            if clash:
                raise TypeError(f"{cls.__name__} fixes {clash}; it is not a parameter")
            super(cls, self).__init__(**fixed, **kwargs)

        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = __init__  # type: ignore[method-assign]
        cls._fixed_params = (*cls._fixed_params, *fixed)

    @classmethod
    def _init_parameters(cls) -> list[inspect.Parameter]:
        """The parameters of the nearest ``__init__`` that names them (aliases skipped)."""
        for klass in cls.__mro__:
            if klass is object:
                break
            if "__init__" not in vars(klass):
                continue
            params = list(inspect.signature(klass.__init__).parameters.values())[1:]
            if params and all(p.kind == p.VAR_KEYWORD for p in params):
                continue  # a fixed-parameter alias: its base names the parameters
            if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
                raise TypeError(f"{klass.__name__}.__init__ must name every parameter")
            return [p for p in params if p.name not in cls._fixed_params]
        return []

    @classmethod
    def _param_names(cls) -> list[str]:
        return sorted(p.name for p in cls._init_parameters())

    def _validate_params(self) -> None:
        """Check every parameter against ``_parameter_constraints`` (called first in ``fit``).

        Raises
        ------
        InvalidParameterError
            A parameter outside its constraints: one sentence naming the estimator, the
            parameter, what it may be and the value given.
        TypeError
            A parameter without a declared constraint (a bug of the estimator's class).
        """
        cls = type(self).__name__
        for name in self._param_names():
            if name not in self._parameter_constraints:
                raise TypeError(f"{cls} declares no constraint for its parameter {name!r}")
            allowed = [_constraint(c) for c in self._parameter_constraints[name]]
            value = getattr(self, name)
            if not any(c.accepts(value) for c in allowed):
                raise InvalidParameterError(
                    f"{cls}: {name} must be {_either([str(c) for c in allowed])}, "
                    f"got {_shown(value)}."
                )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters (``deep``: with those of nested estimators)."""
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and isinstance(value, Estimator):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params: Any) -> Self:
        """Set constructor parameters (``name`` or ``nested__name``); returns self."""
        valid = self._param_names()
        for key, value in params.items():
            name, nested, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for {type(self).__name__}; valid: {valid}"
                )
            if nested:
                getattr(self, name).set_params(**{sub: value})
            else:
                setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in self._init_parameters()}
        shown = [
            f"{k}={v!r}"
            for k, v in self.get_params(deep=False).items()
            if not (k in defaults and _same(v, defaults[k]))
        ]
        return f"{type(self).__name__}({', '.join(shown)})"


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):  # arrays: no single truth value
        return False


def clone(estimator: Estimator) -> Estimator:
    """A new unfitted estimator with deep copies of ``estimator``'s parameters."""
    params = estimator.get_params(deep=False)
    return type(estimator)(**{k: copy.deepcopy(v) for k, v in params.items()})


def check_input(X: np.ndarray, n_features: int | None, name: str) -> np.ndarray:
    """``X`` as a 2-D float array with ``n_features`` columns (``None``: not fitted)."""
    if n_features is None:
        raise RuntimeError(f"{name} is not fitted; call fit(data) first")
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[None, :]
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} columns, the model was fitted on {n_features}")
    return X


def probit_preference(mean_diff: np.ndarray, var_diff: np.ndarray) -> np.ndarray:
    """Predictive ``P(a > b) = Phi(mu_d / sqrt(2 + s_d^2))`` under the probit likelihood.

    ``mean_diff`` and ``var_diff`` are the posterior mean and variance of ``f(a) - f(b)`` in
    ``sigma_noise`` units (Eq. 2 integrated over the Gaussian posterior).
    """
    return ndtr(np.asarray(mean_diff) / np.sqrt(2.0 + np.maximum(var_diff, 0.0)))
