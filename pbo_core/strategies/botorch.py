"""BoTorch's ``PairwiseGP`` + analytic EUBO as a reference method (optional extra).

Needs the ``bench`` extra (``pip install -e '.[bench]'``: torch CPU + botorch). Nothing
else in the project imports torch; this module is loaded only when a ``botorch-gp*``
method is requested.

Hyperparameter priors (``priors``)
----------------------------------
``"current"``
    The installed BoTorch's ``PairwiseGP`` defaults (since 0.9: lengthscale
    ``Gamma(2.4, 2.7)`` starting at its mode 0.52, outputscale ``SmoothedBox(0.01, 100)``
    constrained to ``[0.005, 200]``).
``"0.6"``
    BoTorch 0.6.x's ``PairwiseGP`` defaults, the stack of the KappaSharp paper (its EUBO,
    ``AnalyticExpectedUtilityOfBestOption``, first shipped in 0.6.3): lengthscale
    ``Gamma(1.2, 0.5)`` with an untransformed positive constraint starting at its mode
    0.4, outputscale ``SmoothedBox(1, 4)`` with the ``ScaleKernel`` default constraint.

In both, the probit argument is clamped to ``|z| <= 3`` (``PairwiseProbitLikelihood``,
unchanged since 0.6) and the model is rebuilt and refitted from scratch at every step.

KappaSharp on PairwiseGP (``kappasharp``)
-----------------------------------------
After each fit, with ``A = covar_inv`` (``K^-1``) and ``W = likelihood_hess`` at the MAP::

    H = A + W,    a_i = A_ii,                                          (1)
    R = R(eta*),  eta* = min{eta : kappa(H + R(eta)) <= kappa(H)^(1 - alpha)}   (2)

(the calibration of :func:`pbo_core.models.gp.kappasharp.mode_correction`, activation by
:func:`~pbo_core.models.gp.kappasharp.activation_for`), then the MAP is re-solved with
``R`` added to the prior precision, by the same ``fsolve`` BoTorch uses on its own
objective::

    grad(f) = grad_BoTorch(f) + R (f - m),    hess(f) = A + W(f) + diag(R)     (3)

and the model's ``utility`` and ``likelihood_hess`` are replaced by the shifted MAP and
the *unaugmented* ``W`` there, so the posterior covariance is ``(A + W(f_R))^-1``
("MAP-only", Algorithm 1 line 10).
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np

from pbo_core.data import PreferenceData
from pbo_core.models.gp.kappasharp import (
    ALPHA,
    MODEL_NOISE_VAR,
    MODES,
    THRESHOLD,
    activation_for,
    decisiveness,
    mode_correction,
)
from pbo_core.strategies.base import LoopState, QuerySide

__all__ = ["BOTORCH_PRIORS", "BotorchStrategy", "botorch_available"]

logger = logging.getLogger(__name__)

#: Prior sets of :class:`BotorchStrategy` (see the module docstring).
BOTORCH_PRIORS = ("current", "0.6")


def botorch_available() -> bool:
    """True when torch and botorch import."""
    try:
        import botorch  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _covar_module_06(dim: int) -> Any:
    """BoTorch 0.6.x's ``PairwiseGP`` default kernel (module docstring)."""
    import torch
    from gpytorch.constraints import Positive
    from gpytorch.kernels import RBFKernel, ScaleKernel
    from gpytorch.priors import GammaPrior, SmoothedBoxPrior

    ls_prior = GammaPrior(1.2, 0.5)
    mode = float((ls_prior.concentration - 1) / ls_prior.rate)  # 0.4
    return ScaleKernel(
        RBFKernel(
            ard_num_dims=dim,
            lengthscale_prior=ls_prior,
            lengthscale_constraint=Positive(transform=None, initial_value=mode),
        ),
        outputscale_prior=SmoothedBoxPrior(a=1.0, b=4.0),
    ).to(torch.float64)


class _BotorchDebugLog(logging.Handler):
    """Collects the DEBUG messages of BoTorch's fit attempts while the context is open."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith("Fit attempt"):
            self.messages.append(msg[:400])

    def __enter__(self) -> _BotorchDebugLog:
        self._logger = logging.getLogger("botorch")
        self._level = self._logger.level
        # BoTorch's own handlers keep printing only what they printed before
        self._others = [(h, h.level) for h in self._logger.handlers]
        for h, lvl in self._others:
            h.setLevel(max(lvl, self._logger.getEffectiveLevel()))
        self._logger.addHandler(self)
        self._logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)
        for h, lvl in self._others:
            h.setLevel(lvl)


class BotorchStrategy:
    """PairwiseGP (Laplace, scaled RBF) and analytic EUBO, optionally with KappaSharp.

    Inputs are normalised to the unit cube with BoTorch's ``Normalize`` transform using
    the schema bounds; the model is rebuilt and its hyperparameters refitted with
    ``fit_gpytorch_mll`` at every step; the next pair maximises
    ``AnalyticExpectedUtilityOfBestOption`` with ``optimize_acqf`` (``q = 2``,
    ``num_restarts`` x ``raw_samples``: 4 x 32 by default, KappaSharp App. G.2). Finite
    item sets use the best pair of items.

    Parameters
    ----------
    name
        Method name stored in results.
    priors
        ``"current"`` or ``"0.6"`` (:data:`BOTORCH_PRIORS`).
    kappasharp
        ``"off"`` or a KappaSharp mode (:data:`pbo_core.models.gp.kappasharp.MODES`).
    tau, alpha
        KappaSharp activation threshold and calibration exponent.
    num_restarts, raw_samples
        ``optimize_acqf`` settings.

    Attributes
    ----------
    fit_failures_ : list of dict
        One record per failed hyperparameter fit (``n_pairs``, ``reason``); the model then
        keeps the hyperparameters BoTorch restored.
    kappasharp_history_ : list of dict
        KappaSharp's record per fit (as :class:`~pbo_core.strategies.gp.GPStrategy`).
    """

    ties = "latest-winner"

    def __init__(
        self,
        name: str = "botorch-gp",
        priors: str = "current",
        kappasharp: str = "off",
        tau: float | None = None,
        alpha: float | None = None,
        num_restarts: int = 4,
        raw_samples: int = 32,
    ):
        if not botorch_available():
            raise ImportError(
                f"method {name!r} needs torch and botorch: pip install -e '.[bench]' "
                "(torch==2.13.0 takes the CPU build on this machine)"
            )
        if priors not in BOTORCH_PRIORS:
            raise ValueError(f"priors must be one of {BOTORCH_PRIORS}, got {priors!r}")
        if kappasharp not in MODES or kappasharp in ("metriconly", "covonly"):
            raise ValueError(
                "kappasharp must be off, static, adaptive, fixed20, jitter or diagonal, "
                f"got {kappasharp!r}"
            )
        self.name = name
        self.priors = priors
        self.kappasharp = kappasharp
        self.tau = THRESHOLD if tau is None else float(tau)
        self.alpha = ALPHA if alpha is None else float(alpha)
        self.num_restarts = num_restarts
        self.raw_samples = raw_samples
        self.n_leaves = 0
        self.model = None
        self.fit_failures_: list[dict[str, Any]] = []
        self.kappasharp_history_: list[dict[str, Any]] = []
        self._activation = None if kappasharp == "off" else activation_for(kappasharp, self.tau)
        self._seed = 0

    def activation_trace(self) -> list[dict]:
        """KappaSharp's record per fit; ``[]`` if off."""
        return list(self.kappasharp_history_)

    def fit(self, data: PreferenceData) -> None:
        """Build PairwiseGP and fit its hyperparameters (Laplace marginal likelihood)."""
        import torch
        from botorch.fit import fit_gpytorch_mll
        from botorch.models.pairwise_gp import PairwiseGP, PairwiseLaplaceMarginalLogLikelihood
        from botorch.models.transforms.input import Normalize

        # PairwiseGP draws its Newton start from numpy's global generator and fit_gpytorch_mll
        # its retries from torch's: both seeded from the run's generator (via propose)
        seed = (self._seed + 7919 * data.n_pairs) % 2**31
        np.random.seed(seed)  # noqa: NPY002 (BoTorch reads the legacy global state)
        torch.manual_seed(seed)
        b = data.get_schema().bounds
        self._bounds = torch.tensor(b.T, dtype=torch.float64)
        X = torch.tensor(data.X, dtype=torch.float64)
        comp = torch.tensor(data.pairs, dtype=torch.long)
        d = X.shape[-1]
        covar = _covar_module_06(d) if self.priors == "0.6" else None
        model = PairwiseGP(
            X, comp, covar_module=covar, input_transform=Normalize(d=d, bounds=self._bounds)
        )
        mll = PairwiseLaplaceMarginalLogLikelihood(model.likelihood, model)
        with warnings.catch_warnings(), _BotorchDebugLog() as attempts:
            # BoTorch reports every jitter it adds and every ABNORMAL L-BFGS exit; in a
            # benchmark loop those thousands of lines hide everything else
            warnings.simplefilter("ignore")
            try:
                fit_gpytorch_mll(mll)
            except Exception as exc:  # BoTorch restores the initial hyperparameters
                reason = f"{type(exc).__name__}: {exc}"
                if attempts.messages:  # why the attempts failed (BoTorch logs it at DEBUG)
                    reason += " Last attempt: " + " ".join(attempts.messages[-1].split())
                self.fit_failures_.append({"n_pairs": data.n_pairs, "reason": reason})
                logger.warning(
                    "%s: fit failed at %d comparisons (%s)", self.name, data.n_pairs, reason
                )
                model.eval()
        model.eval()
        self.model = model
        if self._activation is not None and data.n_pairs:
            self._apply_kappasharp(data)

    def _apply_kappasharp(self, data: PreferenceData) -> None:
        """Decisiveness, activation and (when active) the corrected MAP of Eq. (1)-(3)."""
        import torch
        from scipy import optimize

        m = self.model
        w, lo = data.pairs[-1]
        with torch.no_grad():
            post = m.posterior(torch.tensor(data.X[[w, lo]], dtype=torch.float64))
            mu = post.mean.squeeze(-1).numpy()
            cov = post.covariance_matrix.numpy()
        score = decisiveness(
            mu[0] - mu[1], cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1], MODEL_NOISE_VAR
        )
        active = self._activation.update(score)
        rec: dict[str, Any] = {
            "step": self._activation.step,
            "decisiveness": score,
            "ema": self._activation.ema,
            "active": False,
            "eta": None,
            "kappa_before": None,
            "kappa_after": None,
        }
        self.kappasharp_history_.append(rec)
        if not active:
            return
        with torch.no_grad():
            A = m.covar_inv.detach().numpy().astype(float)
            W = m.likelihood_hess.detach().numpy().astype(float)
            f0 = m.utility.detach().numpy().astype(float)
            H = 0.5 * (A + W + (A + W).T)
            R, eta, k0, k1 = mode_correction(self.kappasharp, H, np.diag(A), alpha=self.alpha)
            rec.update(kappa_before=k0, kappa_after=k1, eta=eta)
            if R is None:
                return
            dp = m.transform_inputs(m.datapoints)
            mean0 = m._prior_mean(dp).detach().numpy().astype(float)
            args = (dp, m.D, m.covar_chol, m.covar_inv, True)

            def grad(f: np.ndarray) -> np.ndarray:
                return m._grad_posterior_f(f, *args) + R * (f - mean0)

            def hess(f: np.ndarray) -> np.ndarray:
                return m._hess_posterior_f(f, *args) + np.diag(R)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                f, _info, ier, msg = optimize.fsolve(
                    grad, f0, fprime=hess, xtol=1e-6, maxfev=100, full_output=True
                )
            if not np.all(np.isfinite(f)):
                rec["error"] = f"re-solve gave non-finite utilities ({msg})"
                return
            if ier != 1:
                rec["warning"] = str(msg)
            ft = torch.tensor(f, dtype=m.utility.dtype)
            m.utility = ft
            m.likelihood_hess = m.likelihood.negative_log_hessian_sum(utility=ft, D=m.D)
            m.pred_cov_fac_need_update = True
        rec["active"] = True
        rec["map_norm_ratio"] = float(np.linalg.norm(f) / max(np.linalg.norm(f0), 1e-300))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utilities."""
        import torch

        with torch.no_grad():
            post = self.model.posterior(torch.tensor(X, dtype=torch.float64))
            return post.mean.squeeze(-1).numpy()

    def propose(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        """Pair maximising analytic EUBO."""
        import torch
        from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption
        from botorch.optim import optimize_acqf

        self._seed = int(rng.integers(2**31))
        torch.manual_seed(self._seed)
        acq = AnalyticExpectedUtilityOfBestOption(pref_model=self.model)
        if state.problem.finite:
            X = torch.tensor(state.data.X, dtype=torch.float64)
            ia, ib = np.triu_indices(len(X), k=1)
            with torch.no_grad():
                vals = acq(torch.stack([X[ia], X[ib]], dim=1)).numpy()
            k = int(np.argmax(vals))
            return int(ia[k]), int(ib[k])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cand, _ = optimize_acqf(
                acq,
                bounds=self._bounds,
                q=2,
                num_restarts=self.num_restarts,
                raw_samples=self.raw_samples,
            )
        c = cand.detach().numpy()
        return c[0], c[1]
