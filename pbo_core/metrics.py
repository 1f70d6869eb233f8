"""Evaluation metrics: rho-regret, top-1 rank error, pairwise accuracy, the field's choice
metrics, summaries.

Choice metrics (the discrete-choice field's)
--------------------------------------------
A model predicts a choice situation ``s`` (available alternatives ``C_s``, the chosen one
``c_s``) by probabilities over ``C_s``. From utilities ``u`` and a scale ``lambda`` fitted
on training situations only (:func:`fit_scale`; 1 for a logit's own utilities):

.. math::

    P_s(j) = \frac{e^{\\lambda u_j}}{\\sum_{k \\in C_s} e^{\\lambda u_k}}, \\qquad
    \\mathrm{NLL} = -\frac{1}{S} \\sum_s \\log P_s(c_s), \\qquad
    \rho^2 = 1 - \frac{\\sum_s \\log P_s(c_s)}{-\\sum_s \\log |C_s|},        \\qquad (1)

the held-out negative log-likelihood per choice, and rho-squared against equal shares;
**top-1 accuracy** counts a situation 1 when the chosen alternative has the highest
utility (``1/k`` when it ties with ``k - 1`` others). :func:`situation_log_probs`,
:func:`situation_top1` and :func:`calibration_table` read a situation as the arrays
``item`` (rows), ``start`` (offsets) and ``chosen`` (rows), log-sum-exp per situation
(no overflow).

Rho-regret (DT-PBO App. G.1, after Husslage et al. 2015)
--------------------------------------------------------
Every item gets a value from its position ``j`` (1-based) in the *true* ranking of ``n``
items with a top ``k``:

* positions ``1..k``:   ``(k - j + 1) / k``   (Table 8, ``k = 3``: 1, 2/3, 1/3)
* positions ``k+1..n``: ``(j - k) / (n - k)`` (Table 8, ``n = 10``: 1/7, 2/7, ..., 1)

Predicted utilities are ranked by *competition ranking* ("1224"): an item's rank is one
plus the number of items predicted strictly better, so tied items share the best rank of
their group. An item is in the predicted top ``k`` when its rank is ``<= k``; with ties
more than ``k`` items can be in it. The regret is the sum of the values of

* true top-``k`` items that are *not* in the predicted top ``k`` (they "leave"), and
* other items that *are* in the predicted top ``k`` (they "enter").

Anchor values (``n = 10``, ``k = 3``): perfect prediction -> 0; the true top three tied
in one leaf above the rest -> 0; all ten tied -> every item has rank 1, the seven others
enter: ``(1 + ... + 7) / 7 = 4.0``; the reversed ranking -> ``(1 + 2/3 + 1/3) +
(5 + 6 + 7) / 7 = 2 + 18/7 ~ 4.571``, the maximum over rankings without ties
(:func:`rho_regret_max`). With ties the regret can exceed that: if the seven other items
tie above the true top three, all seven enter and all three leave, ``2 + 4 = 6``; the
bound over all predictions is the sum of all values, ``(n + 2) / 2``
(``rho_regret_max(..., ties=True)``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from pbo_core.data import PreferenceData

__all__ = [
    "MeanSD",
    "MeanSE",
    "accuracy",
    "calibration_table",
    "competition_rank",
    "fit_scale",
    "margin_scores",
    "mean_sd",
    "mean_se",
    "pair_scores",
    "pairwise_accuracy",
    "ratio_ci",
    "rho_regret",
    "rho_regret_max",
    "rho_values",
    "situation_log_probs",
    "situation_top1",
    "top1_rank_error",
]


def _scores(predicted_scores: Sequence[float] | np.ndarray) -> np.ndarray:
    s = np.asarray(predicted_scores, dtype=float).reshape(-1)
    if not np.all(np.isfinite(s)):
        raise ValueError("predicted_scores must be finite (no NaN or inf)")
    return s


def competition_rank(scores: Sequence[float] | np.ndarray, tol: float = 0.0) -> np.ndarray:
    """Competition ranks ("1224") of ``scores``, higher score = better = rank 1.

    The rank of item ``i`` is ``1 + #{j : scores[j] > scores[i] + tol}``, so tied items
    (within ``tol``) share the best rank of their group.
    """
    s = _scores(scores)
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    srt = np.sort(s)
    # number of items strictly above s[i] + tol
    above = len(s) - np.searchsorted(srt, s + tol, side="right")
    return above.astype(np.int64) + 1


def rho_values(n: int, k: int = 3) -> np.ndarray:
    """Value of each true position ``1..n`` (index 0 = position 1).

    Positions ``1..k`` get ``(k - j + 1) / k``; positions ``k+1..n`` get
    ``(j - k) / (n - k)``. For ``n = 10, k = 3`` this is Table 8 of DT-PBO.
    """
    if k < 1 or n < 1:
        raise ValueError(f"need n >= 1 and k >= 1, got n={n}, k={k}")
    j = np.arange(1, n + 1, dtype=float)
    top = (k - j + 1) / k
    rest = (j - k) / (n - k) if n > k else j * 0.0
    return np.where(j <= k, top, rest)


def rho_regret_max(n: int = 10, k: int = 3, *, ties: bool = False) -> float:
    """Largest rho-regret for ``n`` items and top ``k``.

    ``ties=False``: over strict predicted rankings (the DT-PBO value, ``2 + 18/7`` for
    ``n = 10, k = 3``). Exactly ``k`` items are in the predicted top, so as many items
    enter as leave; at most ``m = min(k, n - k)`` can, and the worst case is the ``m``
    best items leaving and the ``m`` worst entering. ``ties=True``: over all predictions,
    the sum of all values, ``(k + 1) / 2 + (n - k + 1) / 2 = (n + 2) / 2`` for ``k < n``
    (6.0 for ``n = 10, k = 3``).
    """
    if k >= n:
        return 0.0
    v = rho_values(n, k)
    if ties:
        return float(v.sum())
    m = min(k, n - k)
    return float(v[:m].sum() + np.sort(v[k:])[::-1][:m].sum())


def rho_regret(
    true_order: Sequence[int] | np.ndarray,
    predicted_scores: Sequence[float] | np.ndarray,
    k: int = 3,
    *,
    tol: float = 0.0,
) -> float:
    """Top-``k`` rho-regret of predicted utilities against a true ranking.

    Parameters
    ----------
    true_order
        Item indices, best first. The items ranked are exactly these (``n =
        len(true_order)``); predicted scores of other items are ignored, so for a user
        who ranked 10 of 100 items pass their 10 indices and the scores of all 100.
    predicted_scores
        ``predicted_scores[i]`` is the predicted utility of item ``i`` (higher = better).
    k
        Size of the top set (3 in DT-PBO).
    tol
        Scores within ``tol`` of each other count as tied (see :func:`competition_rank`).

    Returns
    -------
    float
        The regret, ``0 <= regret <= rho_regret_max(n, k, ties=True)``; at most
        ``rho_regret_max(n, k)`` when the predicted scores of the ranked items are
        distinct.

    Raises
    ------
    ValueError
        If ``true_order`` repeats an item or names one outside ``predicted_scores``, or
        a score is not finite.
    """
    order = np.asarray(true_order).reshape(-1)
    if order.size and not np.issubdtype(order.dtype, np.integer):
        if not np.all(order == np.round(order)):
            raise ValueError("true_order must hold integer item indices")
        order = order.astype(np.int64)
    s = _scores(predicted_scores)
    if np.any((order < 0) | (order >= len(s))):
        raise ValueError(f"true_order names items outside 0..{len(s) - 1}")
    if len(np.unique(order)) != len(order):
        raise ValueError("true_order repeats an item")
    n = len(order)
    if n == 0:
        return 0.0
    values = rho_values(n, k)
    rank = competition_rank(s[order], tol=tol)  # rank among the ranked items only
    in_pred_top = rank <= k
    in_true_top = np.arange(n) < k
    leave = in_true_top & ~in_pred_top
    enter = ~in_true_top & in_pred_top
    return float(values[leave].sum() + values[enter].sum())


def top1_rank_error(
    true_best: int,
    predicted_scores: Sequence[float] | np.ndarray,
    candidates: Sequence[int] | np.ndarray | None = None,
) -> int:
    """Number of items predicted strictly better than the true best item.

    0 means the true favourite is (possibly jointly) ranked first. ``candidates`` limits
    the count to those item indices (e.g. the 10 items a sushi set-B user ranked); by
    default all items of ``predicted_scores`` count.
    """
    s = _scores(predicted_scores)
    if not 0 <= int(true_best) < len(s):
        raise ValueError(f"true_best {true_best} outside 0..{len(s) - 1}")
    pool = s if candidates is None else s[np.asarray(candidates, dtype=np.int64)]
    return int(np.sum(pool > s[int(true_best)]))


def margin_scores(margins: Sequence[float] | np.ndarray, *, ties: float = 0.5) -> np.ndarray:
    """Per comparison, from the utility margin ``u_winner - u_loser``: 1 if it is positive,
    ``ties`` if it is 0, 0 if negative (NaN stays NaN: no prediction)."""
    z = np.asarray(margins, dtype=float)
    return np.where(np.isnan(z), np.nan, np.where(z > 0, 1.0, np.where(z == 0, ties, 0.0)))


def pair_scores(
    scores: Sequence[float] | np.ndarray,
    pairs: Sequence[Sequence[int]] | np.ndarray,
    *,
    ties: float = 0.5,
) -> np.ndarray:
    """Per comparison ``(winner, loser)``: 1 if ``scores[winner] > scores[loser]``, ``ties``
    if they are equal (default 0.5: a tie is a coin flip, so a constant model scores 0.5,
    not 0 or 1; 0 counts ties as wrong), 0 otherwise; NaN when either score is NaN.

    The project's one pair accuracy: every accuracy it reports is a mean of these.
    """
    s = np.asarray(scores, dtype=float).reshape(-1)
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if np.any((p < 0) | (p >= len(s))):
        raise ValueError(f"pairs name items outside 0..{len(s) - 1}")
    w, lo = s[p[:, 0]], s[p[:, 1]]
    out = np.where(w > lo, 1.0, np.where(w == lo, ties, 0.0))
    return np.where(np.isnan(w) | np.isnan(lo), np.nan, out)


def pairwise_accuracy(
    scores: Sequence[float] | np.ndarray,
    pairs: Sequence[Sequence[int]] | np.ndarray,
    *,
    ties: float = 0.5,
) -> float:
    """Share of comparisons ``(winner, loser)`` the scores order correctly: the mean of
    :func:`pair_scores` (scores must be finite). Returns NaN when there are no pairs."""
    s = _scores(scores)
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(p) == 0:
        return math.nan
    return float(np.mean(pair_scores(s, p, ties=ties)))


class MeanSD(NamedTuple):
    """Mean, sample standard deviation (ddof=1) and number of values."""

    mean: float
    sd: float
    n: int


class MeanSE(NamedTuple):
    """Mean, standard error of the mean (sd / sqrt(n)) and number of values."""

    mean: float
    se: float
    n: int


def _finite(values: Iterable[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    x = x.reshape(-1)
    return x[~np.isnan(x)]


def mean_sd(values: Iterable[float] | np.ndarray) -> MeanSD:
    """Mean, sample standard deviation and count; NaN values are left out.

    With no values the mean is NaN; with fewer than two the sd is NaN.
    """
    x = _finite(values)
    n = len(x)
    mean = float(x.mean()) if n else math.nan
    sd = float(x.std(ddof=1)) if n > 1 else math.nan
    return MeanSD(mean, sd, n)


def mean_se(values: Iterable[float] | np.ndarray) -> MeanSE:
    """Mean, standard error of the mean and count; NaN values are left out."""
    m, sd, n = mean_sd(values)
    return MeanSE(m, sd / math.sqrt(n) if n > 1 else math.nan, n)


def accuracy(model: Any, data: PreferenceData) -> float:
    """Pairwise accuracy of a fitted surrogate on ``data`` (ties count one half).

    ``model`` is anything with ``predict(X)``; ``data`` a :class:`~pbo_core.data.PreferenceData`
    (``nan`` without pairs). The one accuracy of the project (see :func:`pairwise_accuracy`).
    """
    if data.n_pairs == 0:
        return float("nan")
    return float(pairwise_accuracy(model.predict(data.X), data.pairs))


# ----------------------------------------------------------------------------- intervals
class Summary(NamedTuple):
    """Summary of per-respondent values: count, mean, sd, se, 95% bootstrap CI, median."""

    n: int
    mean: float
    sd: float
    se: float
    ci95: tuple[float, float]
    median: float


class PairedDifference(NamedTuple):
    """Mean per-respondent difference of two methods (a - b) and its bootstrap CI."""

    n: int
    mean_diff: float
    ci: tuple[float, float]
    level: float


def bootstrap_ci(
    values: Iterable[float] | np.ndarray,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over respondents.

    ``values`` holds one number per respondent (NaN values are left out); respondents are
    resampled with replacement ``n_boot`` times and the ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles of the resampled means are returned. With no values the
    interval is ``(nan, nan)``; with one it is that value twice.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    x = _finite(values)
    n = len(x)
    if n == 0:
        return (math.nan, math.nan)
    if n == 1:
        return (float(x[0]), float(x[0]))
    means = x[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def summarize(
    values: Iterable[float] | np.ndarray,
    *,
    rng: np.random.Generator,
    n_boot: int = 2000,
) -> Summary:
    """n, mean, sd (ddof=1), se, 95% percentile-bootstrap CI and median (NaN left out)."""
    x = _finite(values)
    m, sd, n = mean_sd(x)
    se = sd / math.sqrt(n) if n > 1 else math.nan
    ci = bootstrap_ci(x, n_boot=n_boot, level=0.95, rng=rng)
    med = float(np.median(x)) if n else math.nan
    return Summary(n, m, sd, se, ci, med)


def paired_difference(
    a: Iterable[float] | np.ndarray,
    b: Iterable[float] | np.ndarray,
    *,
    rng: np.random.Generator,
    n_boot: int = 2000,
    level: float = 0.95,
) -> PairedDifference:
    """Mean of the per-respondent differences ``a - b`` and its percentile bootstrap CI.

    ``a`` and ``b`` are aligned per respondent (same order and length); respondents where
    either value is NaN are left out. Resampling respondents keeps the pairing, so the CI
    reflects the between-method correlation.
    """
    xa = np.asarray(list(a) if not isinstance(a, np.ndarray) else a, dtype=float).reshape(-1)
    xb = np.asarray(list(b) if not isinstance(b, np.ndarray) else b, dtype=float).reshape(-1)
    if xa.shape != xb.shape:
        raise ValueError(f"a and b must align per respondent, got {len(xa)} and {len(xb)}")
    d = xa - xb
    d = d[~np.isnan(d)]
    mean = float(d.mean()) if len(d) else math.nan
    return PairedDifference(
        len(d), mean, bootstrap_ci(d, n_boot=n_boot, level=level, rng=rng), level
    )


# ----------------------------------------------------------------------------- choices
def _segment_max(v: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``(S,)`` maximum of ``v`` within every situation (rows ``start[s]..start[s+1]-1``)."""
    if len(start) <= 1:
        return np.zeros(0)
    return np.maximum.reduceat(v, start[:-1])


def situation_log_probs(
    u: np.ndarray,
    item: np.ndarray,
    start: np.ndarray,
    chosen: np.ndarray,
    scale: float = 1.0,
) -> np.ndarray:
    """``(S,)`` log-probability of every situation's chosen alternative under the
    scaled logit of utilities ``u`` (Eq. 1), computed with a per-situation log-sum-exp."""
    v = float(scale) * np.asarray(u, dtype=float)[item]
    if not len(v):
        return np.zeros(0)
    m = _segment_max(v, start)
    row_s = np.repeat(np.arange(len(start) - 1), np.diff(start))
    lse = m + np.log(np.add.reduceat(np.exp(v - m[row_s]), start[:-1]))
    return v[chosen] - lse


def situation_top1(
    u: np.ndarray, item: np.ndarray, start: np.ndarray, chosen: np.ndarray
) -> np.ndarray:
    """``(S,)`` top-1 score of every situation: 1 when its chosen alternative has the
    highest utility, ``1/k`` when it ties with ``k - 1`` others at the top, else 0."""
    v = np.asarray(u, dtype=float)[item]
    if not len(v):
        return np.zeros(0)
    m = _segment_max(v, start)
    row_s = np.repeat(np.arange(len(start) - 1), np.diff(start))
    top = (v == m[row_s]).astype(float)
    n_top = np.add.reduceat(top, start[:-1])
    return np.where(v[chosen] == m, 1.0 / np.maximum(n_top, 1.0), 0.0)


#: The largest utility gap times the scale a fitted scale may reach: a probability of
#: ``e^-30`` is as certain as a model can honestly be (a wrong test choice then costs
#: 30 nats, finite).
MAX_SCALED_GAP = 30.0


def fit_scale(u: np.ndarray, item: np.ndarray, start: np.ndarray, chosen: np.ndarray) -> float:
    """The scale ``lambda >= 0`` maximising the log-likelihood (1) of the (training)
    situations given, bounded so that no utility gap scales beyond
    :data:`MAX_SCALED_GAP` (a model that separates its training choices gets a large,
    finite scale). ``0`` (equal shares) when the utilities do not vary."""
    from scipy.optimize import minimize_scalar

    v = np.asarray(u, dtype=float)[item]
    if len(v) == 0:
        return 1.0
    m = _segment_max(v, start)
    row_s = np.repeat(np.arange(len(start) - 1), np.diff(start))
    gap = float(np.max(m[row_s] - v)) if len(v) else 0.0
    if not np.isfinite(gap) or gap <= 0:
        return 0.0
    hi = MAX_SCALED_GAP / gap

    def nll(lam: float) -> float:
        return -float(situation_log_probs(u, item, start, chosen, lam).sum())

    res = minimize_scalar(nll, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-6 * hi})
    return float(res.x)


def calibration_table(
    probs: np.ndarray, chosen: np.ndarray, bins: int = 10
) -> list[dict[str, float]]:
    """Predicted against observed: the alternatives' probabilities ``probs`` (one per
    alternative row) and whether each was chosen (``chosen``, 0/1), in ``bins`` equal
    bins of the probability; per bin its range, the number of alternatives, their mean
    predicted probability and the share chosen."""
    p = np.asarray(probs, dtype=float)
    c = np.asarray(chosen, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    out = []
    for b in range(bins):
        m = which == b
        if not m.any():
            continue
        out.append(
            {
                "low": float(edges[b]),
                "high": float(edges[b + 1]),
                "n": int(m.sum()),
                "predicted": float(p[m].mean()),
                "observed": float(c[m].mean()),
            }
        )
    return out


def ratio_ci(
    num: np.ndarray,
    den: np.ndarray,
    *,
    rng: np.random.Generator,
    n_boot: int = 2000,
    level: float = 0.95,
    num_b: np.ndarray | None = None,
    den_b: np.ndarray | None = None,
) -> tuple[float, tuple[float, float]]:
    """``sum(num) / sum(den)`` over units (respondents) and its percentile bootstrap CI
    (units resampled with replacement): a held-out NLL per choice is the units' summed
    negative log-likelihood over their summed choices. With ``num_b``/``den_b`` (aligned
    per unit) the same for the paired difference ``sum(num)/sum(den) -
    sum(num_b)/sum(den_b)``, one resample for both. Units with a zero denominator count
    nothing; with none the result is NaN."""
    a, d = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    paired = num_b is not None and den_b is not None
    if paired:
        b, e = np.asarray(num_b, dtype=float), np.asarray(den_b, dtype=float)
        ok = (d > 0) & (e > 0) & np.isfinite(a) & np.isfinite(b)
        a, d, b, e = a[ok], d[ok], b[ok], e[ok]
    else:
        ok = (d > 0) & np.isfinite(a)
        a, d = a[ok], d[ok]
    n = len(a)
    if n == 0 or d.sum() <= 0:
        return math.nan, (math.nan, math.nan)

    def stat(idx: np.ndarray) -> np.ndarray:
        r = a[idx].sum(axis=-1) / d[idx].sum(axis=-1)
        if paired:
            r = r - b[idx].sum(axis=-1) / e[idx].sum(axis=-1)
        return r

    est = float(stat(np.arange(n)[None, :])[0])
    if n == 1:
        return est, (est, est)
    boots = stat(rng.integers(0, n, size=(n_boot, n)))
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return est, (float(lo), float(hi))
