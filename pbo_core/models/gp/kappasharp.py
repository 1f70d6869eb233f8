"""Adaptive KappaSharp: condition-number shaping of the GP-Laplace MAP (Shao et al.).

Under EUBO with q = 2 most queries are between two new points, so the comparison graph
falls apart into many components and the likelihood Hessian loses rank. KappaSharp adds a
diagonal correction to the Hessian *only when solving for the MAP*:

* ``r_i(eta) = eta^2 / (eta + (K^-1)_ii)`` (Prop. 4): larger where the prior precision is
  small;
* ``eta*`` is the smallest of 60 log-spaced values in ``[1e-6, 1e8]`` with
  ``kappa(H + R(eta)) <= kappa(H)^(1 - alpha)``, ``alpha = 0.1`` (Eq. 10);
* the MAP is re-solved with ``R(eta*)`` added to the prior precision (Eq. 8), and the
  covariance is the *unaugmented* Hessian ``K^-1 + H_lik`` at the shifted MAP
  ("MAP-only", Algorithm 1 line 10).

The adaptive variant switches the correction on only when the surrogate is decisive about
recent comparisons: ``s = 1 - H(p) / log 2`` with
``p = Phi(|mu_diff| / sqrt(sigma_diff^2 + 2))`` on the latest comparison, smoothed by an
exponential moving average (rate 0.2, start 0); active when the EMA is at least 0.30 and
the step is at least 8 (Algorithm 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg
from scipy.special import log_ndtr, ndtr

from pbo_core.models.gp.laplace import LaplaceState, laplace_map, state_at

#: Calibration grid and target of Eq. 10.
ETA_GRID = np.logspace(-6, 8, 60)
ALPHA = 0.1
#: Adaptive activation (Algorithm 1).
EMA_RATE = 0.2
THRESHOLD = 0.30
MIN_STEP = 8


def correction(prior_precision_diag: np.ndarray, eta: float) -> np.ndarray:
    """Diagonal ``r_i = eta^2 / (eta + a_i)`` with ``a_i = (K^-1)_ii`` (Eq. 9)."""
    a = np.asarray(prior_precision_diag, dtype=float)
    return eta * eta / (eta + a)


def condition_number(H: np.ndarray) -> float:
    """``lambda_max / lambda_min`` of a symmetric positive definite matrix."""
    ev = linalg.eigvalsh(H, check_finite=False)
    lo = ev[0]
    return float(ev[-1] / lo) if lo > 0 else float("inf")


def calibrate_eta(
    H: np.ndarray,
    prior_precision_diag: np.ndarray,
    alpha: float = ALPHA,
    grid: np.ndarray = ETA_GRID,
) -> tuple[float | None, float, float]:
    """Smallest grid ``eta`` with ``kappa(H + R(eta)) <= kappa(H)^(1 - alpha)``.

    Returns
    -------
    eta, kappa_before, kappa_after
        ``eta`` is ``None`` when no grid value reaches the target (then no correction).
    """
    k0 = condition_number(H)
    target = k0 ** (1.0 - alpha)
    diag = np.diag_indices_from(H)
    for eta in grid:
        Hr = H.copy()
        Hr[diag] += correction(prior_precision_diag, float(eta))
        k = condition_number(Hr)
        if k <= target:
            return float(eta), k0, k
    return None, k0, k0


def decisiveness(mean_diff: float, var_diff: float) -> float:
    """``s = 1 - H(p) / log 2`` with ``p = Phi(|mean_diff| / sqrt(var_diff + 2))`` (Eq. 12)."""
    zz = abs(mean_diff) / np.sqrt(max(var_diff, 0.0) + 2.0)
    p = float(ndtr(zz))
    log_p = float(log_ndtr(zz))
    log_q = float(log_ndtr(-zz))
    ent = -(p * log_p + (1.0 - p) * log_q)
    return float(min(1.0, max(0.0, 1.0 - ent / np.log(2.0))))


@dataclass
class AdaptiveActivation:
    """EMA of the decisiveness score and the activation rule of Algorithm 1."""

    rate: float = EMA_RATE
    threshold: float = THRESHOLD
    min_step: int = MIN_STEP
    ema: float = 0.0
    step: int = 0

    def update(self, score: float) -> bool:
        """Feed the score of step ``t`` (steps count from 1); returns whether KS is active."""
        self.step += 1
        self.ema = (1.0 - self.rate) * self.ema + self.rate * float(score)
        return self.step >= self.min_step and self.ema >= self.threshold


@dataclass
class KappaSharpStep:
    """Outcome of one KappaSharp decision (one GP fit).

    Attributes
    ----------
    active
        Whether the correction shaped this fit's MAP.
    state
        The unaugmented Laplace state at the shifted MAP when active, else ``None``.
    eta
        The calibrated correction strength (``None`` when inactive or not reachable).
    record
        One row of the activation trace: step, decisiveness, EMA, active, eta, condition
        numbers before/after (and an error message when the re-solve failed).
    """

    active: bool
    state: LaplaceState | None
    eta: float | None
    record: dict[str, Any]


def kappasharp_step(
    mode: str,
    activation: AdaptiveActivation,
    score: float,
    K: np.ndarray,
    C: np.ndarray,
    counts: np.ndarray,
    plain: LaplaceState,
    hessians: Callable[[], tuple[np.ndarray, np.ndarray]],
) -> KappaSharpStep:
    """Decide on and compute the correction for one fit of the GP.

    Parameters
    ----------
    mode
        ``"static"`` (correction at every fit) or ``"adaptive"`` (activation rule).
    activation
        The activation controller; updated in place (it carries the EMA across fits).
    score
        Decisiveness of the latest comparison under the plain posterior (Eq. 12).
    K, C, counts
        Prior covariance ``(n, n)``, incidence ``(M, n)`` and multiplicities ``(M,)``.
    plain
        The plain (uncorrected) Laplace state.
    hessians
        Returns the likelihood Hessian ``W`` and the posterior Hessian ``K^-1 + W`` at the
        plain MAP, ``(n, n)`` each (called only when the correction is active).
    """
    active = activation.update(score) if mode == "adaptive" else True
    if mode == "static":
        activation.step += 1
    record: dict[str, Any] = {
        "step": activation.step,
        "decisiveness": score,
        "ema": activation.ema,
        "active": False,
        "eta": None,
        "kappa_before": None,
        "kappa_after": None,
    }
    if not active:
        return KappaSharpStep(False, None, None, record)
    W, H = hessians()
    a = np.diag(H) - np.diag(W)  # prior precisions (K^-1)_ii
    eta, k0, k1 = calibrate_eta(H, a)
    record.update(kappa_before=k0, kappa_after=k1, eta=eta)
    if eta is None:
        return KappaSharpStep(False, None, None, record)
    R = correction(a, eta)
    try:
        shifted = laplace_map(K, C, counts, plain.alpha, extra_precision=R)
        state = state_at(K, C, counts, shifted.f)
    except np.linalg.LinAlgError as exc:  # keep the plain MAP, say why
        record["error"] = str(exc)
        return KappaSharpStep(False, None, None, record)
    record["active"] = True
    return KappaSharpStep(True, state, eta, record)
