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

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import linalg
from scipy.special import log_ndtr, ndtr

from pbo_core.gp import LaplaceState, _probit_terms, cholesky_jitter

if TYPE_CHECKING:
    from pbo_core.data import PreferenceData
    from pbo_core.gp import GPSurrogate

#: Calibration grid and target of Eq. 10.
ETA_GRID = np.logspace(-6, 8, 60)
ALPHA = 0.1
#: Adaptive activation (Algorithm 1).
EMA_RATE = 0.2
THRESHOLD = 0.30
MIN_STEP = 8

_INV_SQRT2 = 1.0 / np.sqrt(2.0)


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


def state_at(K: np.ndarray, C: np.ndarray, counts: np.ndarray, f: np.ndarray) -> LaplaceState:
    """Unaugmented Laplace quantities (curvature, ``B``) of the plain GP at utilities ``f``."""
    z = (C @ f) * _INV_SQRT2
    lp, r, h = _probit_terms(z)
    omega = counts * h * 0.5
    L = np.sqrt(omega)[:, None] * C
    B = np.eye(C.shape[0]) + (L @ K) @ L.T
    B_chol = cholesky_jitter(0.5 * (B + B.T))
    grad_ll = C.T @ (counts * r) * _INV_SQRT2
    loglik = float(counts @ lp)
    return LaplaceState(
        f=f,
        alpha=np.zeros_like(f),
        grad_loglik=grad_ll,
        omega=omega,
        L=L,
        B_chol=B_chol,
        loglik=loglik,
        log_evidence=float("nan"),
        n_iter=0,
    )


def apply_kappasharp(model: GPSurrogate, data: PreferenceData) -> None:
    """Decide on and apply the correction to a freshly fitted :class:`GPSurrogate`.

    Sets ``model.decisiveness_``, ``model.kappasharp_active_``, ``model.eta_`` and, when
    active, replaces ``model.laplace_`` by the state at the shifted MAP (its covariance is
    the unaugmented Hessian there). Appends a record to ``model.kappasharp_history_``.
    """
    from pbo_core.gp import laplace_map

    ctl: AdaptiveActivation = getattr(model, "_ks_ctl", None) or AdaptiveActivation()
    model._ks_ctl = ctl
    # decisiveness on the latest comparison under the standard (uncorrected) posterior
    w, lo = (int(v) for v in model.item_index_[data.pairs[-1]])
    model._finalise()
    mean, cov = model.posterior_unit(model.Z_[[w, lo]])
    s = decisiveness(mean[0] - mean[1], cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1])
    active = ctl.update(s) if model.kappasharp == "adaptive" else True
    if model.kappasharp == "static":
        ctl.step += 1
    model.decisiveness_ = s
    record = {
        "step": ctl.step,
        "decisiveness": s,
        "ema": ctl.ema,
        "active": False,
        "eta": None,
        "kappa_before": None,
        "kappa_after": None,
    }
    if active:
        K = model.K_
        W, H = model.hessians()  # likelihood Hessian and K^-1 + W at the plain MAP
        a = np.diag(H) - np.diag(W)  # prior precisions (K^-1)_ii
        eta, k0, k1 = calibrate_eta(H, a)
        record.update(kappa_before=k0, kappa_after=k1, eta=eta)
        if eta is not None:
            R = correction(a, eta)
            try:
                shifted = laplace_map(
                    K, model.C_, model.counts_, model.laplace_.alpha, extra_precision=R
                )
                state = state_at(K, model.C_, model.counts_, shifted.f)
            except np.linalg.LinAlgError as exc:  # keep the plain MAP, say why
                record["error"] = str(exc)
            else:
                model.laplace_ = state
                model.kappasharp_active_ = True
                model.eta_ = eta
                record["active"] = True
    history = getattr(model, "kappasharp_history_", [])
    history.append(record)
    model.kappasharp_history_ = history
