"""Scalar reference implementations of the consistency score (Eq. 5-6), for tests."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def mean_z(x_winner: ArrayLike, x_loser: ArrayLike, threshold: float) -> float:
    """Signed mean of ``Z_i`` (Eq. 5) for one numeric feature.

    Parameters
    ----------
    x_winner, x_loser
        1-D arrays with the feature value of the winner and the loser of each pair.
    threshold
        Split threshold ``t`` (right side is ``x >= t``).

    Returns
    -------
    float
        ``mean_i Z_i`` in ``[-1, 1]``; positive when winners tend to lie right of ``t``.
        0.0 for no pairs.
    """
    w = np.asarray(x_winner, dtype=float).ravel()
    lo = np.asarray(x_loser, dtype=float).ravel()
    if w.shape != lo.shape:
        raise ValueError(f"x_winner and x_loser differ in length ({w.size} vs {lo.size})")
    if w.size == 0:
        return 0.0
    return float(np.mean((w >= threshold).astype(float) - (lo >= threshold)))


def consistency_score(x_winner: ArrayLike, x_loser: ArrayLike, threshold: float) -> float:
    """Empirical consistency score ``|mean_i Z_i(s)|`` (Eq. 6) of a numeric split.

    ``Z_i`` is +1 when the winner is at or above ``threshold`` and the loser below it,
    -1 for the reverse and 0 when both lie on the same side.

    Examples
    --------
    >>> consistency_score([3.0, 2.0, 0.0], [1.0, 1.0, 4.0], 1.5)
    0.3333333333333333
    """
    return abs(mean_z(x_winner, x_loser, threshold))
