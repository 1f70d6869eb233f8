"""GP acquisition: EUBO of candidate pairs and its maximisation over the unit cube.

Uses only the GP's public pair posterior (:meth:`GPSurrogate.pair_posterior_unit`) and its
gradient (:meth:`GPSurrogate.pair_moments_grad_unit`), as BoTorch's EUBO only calls the
model's posterior.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import ndtr

from pbo_core.acquisition.eubo import eubo
from pbo_core.models.gp import GPSurrogate

__all__ = ["eubo_value_and_grad", "gp_pair_eubo", "maximize_gp_eubo"]

_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def gp_pair_eubo(model: GPSurrogate, Za: np.ndarray, Zb: np.ndarray) -> np.ndarray:
    """EUBO of the pairs ``(Za[i], Zb[i])`` (GP inputs in the unit cube), vectorised."""
    return eubo(*model.pair_posterior_unit(Za, Zb))


def eubo_value_and_grad(
    model: GPSurrogate, za: np.ndarray, zb: np.ndarray
) -> tuple[float, np.ndarray]:
    """EUBO of one pair and its gradient with respect to ``(za, zb)`` (unit cube), ``(2p,)``."""
    mu_a, mu_b, dmu_a, dmu_b, var_d, dvar_a, dvar_b = model.pair_moments_grad_unit(za, zb)
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
            v, g = eubo_value_and_grad(model, x[:p], x[p:])
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
