"""Size guard of the GP-Laplace fit: warn on large data, refuse very large data.

The GP's cost grows with the cube of the number of items (kernel factorisation) and the
hyperparameter fit repeats it dozens of times; a fit on a few thousand comparisons runs
for minutes and hangs the dashboard. :func:`check_gp_size` runs at the top of
:meth:`GPSurrogate.fit <pbo_core.models.gp.surrogate.GPSurrogate.fit>`:

* above ``warn_*`` comparisons or items it issues a :class:`GPSizeWarning`;
* above ``max_*`` it raises :class:`GPTooLargeError` unless ``allow_large=True``.

Defaults (:data:`DEFAULT_LIMITS`), from fits with hyperparameter optimisation after the
item-space Laplace (:mod:`pbo_core.models.gp.laplace`), one BLAS thread, on the shared
2-core VM under load (2-D points, random pairs): 200 items x 5,000 comparisons 0.4 s,
200 x 20,000 0.5 s, 500 x 5,000 2.8 s, 1,000 x 5,000 21 s, 2,000 x 8,000 128 s. The cost
now follows the items (cubic), not the comparisons: 500 items warn, 1,500 (about a
minute) are refused; comparisons warn at 20,000 and are refused at 200,000 (memory and
the aggregation pass). Limits can be raised per model (``GPSurrogate.size_limits =
GPSizeLimits(...)``) or per call (``fit(data, allow_large=True)``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from pbo_core.errors import GPSizeWarning, GPTooLargeError

__all__ = ["DEFAULT_LIMITS", "GPSizeLimits", "GPSizeWarning", "GPTooLargeError", "check_gp_size"]


@dataclass(frozen=True)
class GPSizeLimits:
    """Sizes above which a GP fit warns (``warn_*``) or is refused (``max_*``)."""

    warn_comparisons: int = 20_000
    max_comparisons: int = 200_000
    warn_items: int = 500
    max_items: int = 1_500

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
