"""Acquisition for pairwise queries: analytic EUBO (qEUBO with q = 2) and DT leaf rules.

EUBO
----
For a pair ``(a, b)`` with jointly Gaussian utilities, the expected utility of the best
option is (Astudillo et al. 2023; DT-PBO App. D.2)::

    EUBO(a, b) = E[max(f_a, f_b)] = mu_b + mu_d Phi(mu_d / s_d) + s_d phi(mu_d / s_d)

with ``mu_d = mu_a - mu_b`` and ``s_d^2 = var_a + var_b - 2 cov_ab``. When ``s_d = 0`` it is
``max(mu_a, mu_b)``.

DT rules (Sec. 3.3, App. C.3)
-----------------------------
Because the DT surrogate is piecewise constant, qEUBO is constant on each leaf pair, so
the search is over ordered leaf pairs of the conditioned posterior
(:func:`best_leaf_pair`). Within a leaf qEUBO collapses to the leaf mean; the
structural-refinement term ``I_struct`` of App. C.3 (:func:`structural_gain`) scores
within-leaf comparisons by the expected change of the leaf's best consistency score.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg
from scipy.optimize import minimize
from scipy.special import ndtr

from pbo_core.tree import best_split

if TYPE_CHECKING:
    from pbo_core.gp import GPSurrogate

_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def eubo(
    mu_a: ArrayLike, mu_b: ArrayLike, var_a: ArrayLike, var_b: ArrayLike, cov_ab: ArrayLike
) -> np.ndarray:
    """Analytic EUBO ``E[max(f_a, f_b)]`` for q = 2, vectorised with broadcasting.

    Parameters
    ----------
    mu_a, mu_b
        Posterior means of the two options.
    var_a, var_b
        Posterior variances.
    cov_ab
        Posterior covariance between the two options.

    Returns
    -------
    ndarray
        EUBO values, broadcast shape of the inputs; always ``>= max(mu_a, mu_b)``.
    """
    mu_a = np.asarray(mu_a, dtype=float)
    mu_b = np.asarray(mu_b, dtype=float)
    var_d = np.asarray(var_a, dtype=float) + np.asarray(var_b, dtype=float)
    var_d = var_d - 2.0 * np.asarray(cov_ab, dtype=float)
    s = np.sqrt(np.maximum(var_d, 0.0))
    d = mu_a - mu_b
    pos = s > 1e-12 * np.maximum(1.0, np.abs(d))
    s_safe = np.where(pos, s, 1.0)
    z = d / s_safe
    val = mu_b + d * ndtr(z) + s_safe * _INV_SQRT_2PI * np.exp(-0.5 * z * z)
    return np.where(pos, val, np.maximum(mu_a, mu_b))


def eubo_matrix(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """EUBO of every ordered pair of options: ``out[a, b] = EUBO(a, b)``; diagonal = mean."""
    mean = np.asarray(mean, dtype=float)
    v = np.diag(cov)
    return eubo(mean[:, None], mean[None, :], v[:, None], v[None, :], cov)


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
        Column metadata as for :func:`pbo_core.tree.best_split`.
    """

    def top(w: np.ndarray, lo: np.ndarray) -> float:
        s = best_split(w, lo, is_categorical, n_categories, span)
        return 0.0 if s is None else s.score

    base = top(Xw, Xl)
    gains = []
    for w, lo in ((xa, xb), (xb, xa)):
        gains.append(abs(top(np.vstack([Xw, w]), np.vstack([Xl, lo])) - base))
    return 0.5 * (gains[0] + gains[1])


# ----------------------------------------------------------------------------- GP EUBO
def gp_pair_eubo(model: GPSurrogate, Za: np.ndarray, Zb: np.ndarray) -> np.ndarray:
    """EUBO of the pairs ``(Za[i], Zb[i])`` (GP inputs in the unit cube), vectorised."""
    n = len(Za)
    mean, var = model.posterior_unit(np.vstack([Za, Zb]), full_cov=False)
    from pbo_core.gp import rbf_kernel

    st = model.laplace_
    ell, s = model.lengthscale_, model.outputscale_
    Kqa = rbf_kernel(Za, model.Z_, ell, s)
    Kqb = rbf_kernel(Zb, model.Z_, ell, s)
    Va = linalg.solve_triangular(st.B_chol, st.L @ Kqa.T, lower=True, check_finite=False)
    Vb = linalg.solve_triangular(st.B_chol, st.L @ Kqb.T, lower=True, check_finite=False)
    d2 = (((Za - Zb) / ell) ** 2).sum(1)
    cov_ab = s * np.exp(-0.5 * d2) - np.einsum("ij,ij->j", Va, Vb)
    return eubo(mean[:n], mean[n:], var[:n], var[n:], cov_ab)


def _eubo_value_and_grad(
    model: GPSurrogate, za: np.ndarray, zb: np.ndarray
) -> tuple[float, np.ndarray]:
    """EUBO of one pair and its gradient with respect to ``(za, zb)`` (unit cube)."""
    from pbo_core.gp import rbf_kernel

    st = model.laplace_
    ell, s = model.lengthscale_, model.outputscale_
    Z = model.Z_
    ka = rbf_kernel(za[None], Z, ell, s)[0]
    kb = rbf_kernel(zb[None], Z, ell, s)[0]
    inv_l2 = 1.0 / ell**2
    Ja = -ka[:, None] * (za[None, :] - Z) * inv_l2  # d k(a, z_j) / d za, (n, p)
    Jb = -kb[:, None] * (zb[None, :] - Z) * inv_l2
    mu_a, mu_b = ka @ model.alpha_, kb @ model.alpha_
    dmu_a, dmu_b = Ja.T @ model.alpha_, Jb.T @ model.alpha_
    Va = linalg.solve_triangular(st.B_chol, st.L @ ka, lower=True, check_finite=False)
    Vb = linalg.solve_triangular(st.B_chol, st.L @ kb, lower=True, check_finite=False)
    kab = s * np.exp(-0.5 * float((((za - zb) / ell) ** 2).sum()))
    dk_a = -kab * (za - zb) * inv_l2
    dV = Va - Vb
    var_d = max(2.0 * s - 2.0 * kab - float(dV @ dV), 1e-12)
    g = st.L.T @ linalg.solve_triangular(st.B_chol, dV, lower=True, trans=1, check_finite=False)
    dvar_a = -2.0 * dk_a - 2.0 * (Ja.T @ g)
    dvar_b = 2.0 * dk_a + 2.0 * (Jb.T @ g)
    sd = np.sqrt(var_d)
    u = (mu_a - mu_b) / sd
    cdf = float(ndtr(u))
    pdf = float(_INV_SQRT_2PI * np.exp(-0.5 * u * u))
    val = mu_b + (mu_a - mu_b) * cdf + sd * pdf
    ga = cdf * dmu_a + pdf / (2.0 * sd) * dvar_a
    gb = (1.0 - cdf) * dmu_b + pdf / (2.0 * sd) * dvar_b
    return float(val), np.concatenate([ga, gb])


def _is_asked(za: np.ndarray, zb: np.ndarray, asked: np.ndarray | None, tol: float) -> bool:
    """Is the unordered pair (za, zb) within ``tol`` of a pair in ``asked`` (k, 2, p)?"""
    if asked is None or len(asked) == 0:
        return False
    d1 = np.maximum(np.abs(asked[:, 0] - za).max(1), np.abs(asked[:, 1] - zb).max(1))
    d2 = np.maximum(np.abs(asked[:, 0] - zb).max(1), np.abs(asked[:, 1] - za).max(1))
    return bool(np.any(np.minimum(d1, d2) < tol))


def maximize_gp_eubo(
    model: GPSurrogate,
    rng: np.random.Generator,
    *,
    n_raw: int = 1024,
    n_restarts: int = 8,
    maxiter: int = 100,
    anchors: np.ndarray | None = None,
    asked: np.ndarray | None = None,
    tol: float = 1e-4,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Maximise EUBO over pairs of points of the unit cube.

    ``n_raw`` random candidate pairs (half of them pairing an anchor, e.g. the current
    best item, with a random point, half fully random) are scored, the best
    ``n_restarts`` are polished with L-BFGS-B using the analytic gradient, and the best
    polished pair is returned as ``(za, zb, value)``.

    Pairs of (nearly) identical points and repeats of comparisons in ``asked``
    (``(k, 2, p)`` unit-cube pairs) are rejected: under the Laplace posterior EUBO can keep
    proposing a comparison whose answer the model already predicts with certainty (the
    probit curvature vanishes there), which would stall a noiseless run.
    """
    p = model.Z_.shape[1]
    A = rng.random((n_raw, p))
    Bq = rng.random((n_raw, p))
    if anchors is not None and len(anchors):
        half = n_raw // 2
        A[:half] = anchors[rng.integers(len(anchors), size=half)]
    vals = gp_pair_eubo(model, A, Bq)
    order = np.argsort(-vals)
    order = [k for k in order[: 4 * n_restarts] if not _is_asked(A[k], Bq[k], asked, tol)]
    order = order[:n_restarts] or [int(np.argmax(vals))]
    best = (A[order[0]], Bq[order[0]], float(vals[order[0]]))
    bounds = [(0.0, 1.0)] * (2 * p)
    for k in order:
        x0 = np.concatenate([A[k], Bq[k]])

        def neg(x: np.ndarray) -> tuple[float, np.ndarray]:
            v, g = _eubo_value_and_grad(model, x[:p], x[p:])
            return -v, -g

        res = minimize(
            neg, x0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": maxiter}
        )
        za, zb = res.x[:p], res.x[p:]
        # a pair of (nearly) identical points teaches nothing: EUBO(x, x) = mu(x)
        ok = np.max(np.abs(za - zb)) > tol and not _is_asked(za, zb, asked, tol)
        if ok and np.all(np.isfinite(res.x)) and -res.fun > best[2]:
            best = (za.copy(), zb.copy(), float(-res.fun))
    return best
