"""DT acquisition: qEUBO over leaf pairs and the App. C.3 structural-refinement term.

Because the DT surrogate is piecewise constant, qEUBO is constant on each leaf pair, so
the search is over ordered leaf pairs of the conditioned posterior
(:func:`best_leaf_pair`). Within a leaf qEUBO collapses to the leaf mean; the
structural-refinement term ``I_struct`` of App. C.3 (:func:`structural_gain`) scores
within-leaf comparisons by the expected change of the leaf's best consistency score.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from pbo_core.acquisition.eubo import eubo
from pbo_core.models.tree import best_split
from pbo_core.models.tree.splits import goes_right

__all__ = ["best_leaf_pair", "fixed_split_gain", "structural_gain"]


@lru_cache(maxsize=128)
def _upper_pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    iu = np.triu_indices(m, k=1)
    for a in iu:
        a.setflags(write=False)
    return iu


def best_leaf_pair(
    mean: np.ndarray,
    cov: np.ndarray,
    rng: np.random.Generator | None = None,
    allowed: np.ndarray | None = None,
) -> tuple[int, int, float]:
    """Leaf pair ``(a, b)``, ``a != b``, maximising EUBO.

    Parameters
    ----------
    mean, cov
        Conditioned posterior of the leaf utilities.
    rng
        Breaks exact ties uniformly at random (first pair in row-major order if ``None``).
    allowed
        Optional ``(m, m)`` boolean mask of admissible pairs.

    Returns
    -------
    a, b, value
        ``a < b`` (EUBO is symmetric) and the EUBO value. With one leaf, ``(0, 0, mean)``.
    """
    m = len(mean)
    if m < 2:
        return 0, 0, float(mean[0]) if m else 0.0
    ia, ib = _upper_pairs(m)
    if allowed is not None:
        ok = allowed[ia, ib] | allowed[ib, ia]
        if not ok.any():
            return 0, 0, float(np.max(mean))
        ia, ib = ia[ok], ib[ok]
    v = np.diagonal(cov)
    vals = eubo(mean[ia], mean[ib], v[ia], v[ib], cov[ia, ib])
    k = int(vals.argmax())
    best = float(vals[k])
    if rng is not None:
        ties = (vals >= best - 1e-12 * max(1.0, abs(best))).nonzero()[0]
        if ties.size > 1:
            k = int(ties[rng.integers(ties.size)])
    return int(ia[k]), int(ib[k]), best


def structural_gain(
    Xw: np.ndarray,
    Xl: np.ndarray,
    xa: np.ndarray,
    xb: np.ndarray,
    is_categorical: np.ndarray,
    n_categories: np.ndarray,
    span: np.ndarray,
) -> float:
    """``I_struct`` of App. C.3 for one within-leaf candidate pair.

    The expected absolute change of the leaf's best consistency score when the comparison
    ``(xa, xb)`` is appended to the leaf's split-search set, averaged over both outcomes
    (the within-leaf predictive is 1/2 each).

    Parameters
    ----------
    Xw, Xl
        ``(N, d)`` winners and losers of the leaf's current split-search set ``D_A``.
    xa, xb
        The candidate pair (``(d,)`` each).
    is_categorical, n_categories, span
        Column metadata as for :func:`pbo_core.models.tree.best_split`.
    """

    def top(w: np.ndarray, lo: np.ndarray) -> float:
        s = best_split(w, lo, is_categorical, n_categories, span)
        return 0.0 if s is None else s.score

    base = top(Xw, Xl)
    gains = []
    for w, lo in ((xa, xb), (xb, xa)):
        gains.append(abs(top(np.vstack([Xw, w]), np.vstack([Xl, lo])) - base))
    return 0.5 * (gains[0] + gains[1])


def fixed_split_gain(
    Xw: np.ndarray,
    Xl: np.ndarray,
    xa: np.ndarray,
    xb: np.ndarray,
    is_categorical: np.ndarray,
    n_categories: np.ndarray,
    span: np.ndarray,
) -> float:
    """``I_struct`` of App. C.3 with the leaf's best split ``s*_A`` held fixed.

    ``E_Y |S_A^(+Y)(s*_A) - S_A(s*_A)|`` over the two outcomes (1/2 each within a
    leaf), where ``S_A(s) = |sum_i Z_i(s)| / N`` and the appended comparison adds
    ``Z = +-(1{xa right} - 1{xb right})``.

    Parameters
    ----------
    Xw, Xl
        ``(N, d)`` winners and losers of the leaf's split-search set ``D_A``.
    xa, xb
        The candidate pair (``(d,)`` each).
    is_categorical, n_categories, span
        Column metadata as for :func:`pbo_core.models.tree.best_split`.

    Returns
    -------
    float
        The expected change. A leaf without any split candidate (no ``s*_A``, e.g. empty
        ``D_A``) falls back to the re-optimised gain
        (:func:`pbo_core.acquisition.leaves.structural_gain`), the only way to score it.
    """
    s = best_split(Xw, Xl, is_categorical, n_categories, span) if len(Xw) else None
    if s is None:
        return structural_gain(Xw, Xl, xa, xb, is_categorical, n_categories, span)
    c = s.column
    cat = bool(is_categorical[c])
    side = goes_right(np.array([xa[c], xb[c]], dtype=float), s.threshold, s.right_mask, cat)
    z = float(int(side[0]) - int(side[1]))
    n = len(Xw)
    base = abs(s.sum_z) / n
    g1 = abs(abs(s.sum_z + z) / (n + 1) - base)
    g2 = abs(abs(s.sum_z - z) / (n + 1) - base)
    return 0.5 * (g1 + g2)
