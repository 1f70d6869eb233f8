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
does (``sklearn.base.clone`` accepts them too), without importing scikit-learn.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

import numpy as np
from scipy.special import ndtr

from pbo_core.data import PreferenceData
from pbo_core.metrics import competition_rank

__all__ = [
    "Estimator",
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


class Estimator:
    """Parameters from the ``__init__`` signature (scikit-learn's estimator contract).

    ``__init__`` names every parameter and stores each unchanged under its own name;
    fitted state ends in ``_``. A subclass that only fixes some of its base's parameters
    says so in its class statement, ``class ProbitSurrogate(LinearUtilitySurrogate,
    link="probit")``: its ``__init__`` takes the base's other parameters, and those are
    its parameters (the fixed ones are listed in ``_fixed_params``).
    """

    _fixed_params: ClassVar[tuple[str, ...]] = ()

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
