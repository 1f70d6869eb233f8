"""Size guard of the GP-Laplace fit: warn on large data, refuse very large data.

The GP's cost grows with the cube of the number of items (kernel factorisation) and the
hyperparameter fit repeats it dozens of times; a fit on a few thousand comparisons runs
for minutes and hangs the dashboard. :func:`check_gp_size` runs at the top of
:meth:`GPSurrogate.fit <pbo_core.models.gp.surrogate.GPSurrogate.fit>`:

* above ``warn_*`` comparisons or items it issues a :class:`GPSizeWarning`;
* above ``max_*`` it raises :class:`GPTooLargeError` unless ``allow_large=True``.

Defaults (:data:`DEFAULT_LIMITS`), from fits with hyperparameter optimisation on a
shared 2-core VM (2-D Branin points, one new item per comparison): 100 comparisons
2.3 s, 250 7.7 s, 500 5.4 s, 1000 110 s. So 500 (seconds today) warns, and 2000 (many
minutes today, about 8x the cost of 1000) is refused; with a faster GP the limits can be
raised per model (``GPSurrogate.size_limits = GPSizeLimits(...)``) or per call
(``fit(data, allow_large=True)``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "GPSizeLimits", "GPSizeWarning", "GPTooLargeError", "check_gp_size"]


class GPSizeWarning(UserWarning):
    """The GP is fitted on many comparisons or items; the fit may be slow."""


class GPTooLargeError(ValueError):
    """The GP would be fitted on more comparisons or items than its limit allows."""


@dataclass(frozen=True)
class GPSizeLimits:
    """Sizes above which a GP fit warns (``warn_*``) or is refused (``max_*``)."""

    warn_comparisons: int = 500
    max_comparisons: int = 2000
    warn_items: int = 500
    max_items: int = 2000

    def __post_init__(self) -> None:
        if not (0 < self.warn_comparisons <= self.max_comparisons):
            raise ValueError("GPSizeLimits: need 0 < warn_comparisons <= max_comparisons")
        if not (0 < self.warn_items <= self.max_items):
            raise ValueError("GPSizeLimits: need 0 < warn_items <= max_items")


#: The limits every ``GPSurrogate`` uses unless told otherwise.
DEFAULT_LIMITS = GPSizeLimits()


def check_gp_size(
    n_comparisons: int, n_items: int, limits: GPSizeLimits = DEFAULT_LIMITS, *, allow_large=False
) -> None:
    """Warn or refuse according to ``limits`` (see the module notes).

    Raises
    ------
    GPTooLargeError
        Above ``max_comparisons`` or ``max_items`` unless ``allow_large``.
    """
    over = []
    if n_comparisons > limits.max_comparisons:
        over.append(f"{n_comparisons} comparisons (limit {limits.max_comparisons})")
    if n_items > limits.max_items:
        over.append(f"{n_items} items (limit {limits.max_items})")
    if over and not allow_large:
        raise GPTooLargeError(
            f"GP-Laplace fit refused: {' and '.join(over)}; its cost grows with the cube of "
            "the number of items (minutes to hours here). Use the decision tree "
            "(DTSurrogate), subsample, or pass allow_large=True to fit anyway."
        )
    if over or n_comparisons > limits.warn_comparisons or n_items > limits.warn_items:
        warnings.warn(
            f"GP-Laplace fit on {n_comparisons} comparisons and {n_items} items may be slow "
            f"(warns above {limits.warn_comparisons} comparisons / {limits.warn_items} items)",
            GPSizeWarning,
            stacklevel=3,
        )
