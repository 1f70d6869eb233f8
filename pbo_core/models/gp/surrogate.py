"""``GPSurrogate``: the GP-Laplace preference surrogate behind the shared interface.

See :mod:`pbo_core.models.gp` for the model; the numerics are in
:mod:`pbo_core.models.gp.laplace` and the optional KappaSharp correction in
:mod:`pbo_core.models.gp.kappasharp`.
"""

from __future__ import annotations

import numbers
from typing import ClassVar, Literal

import numpy as np
from scipy import linalg
from scipy.optimize import minimize

from pbo_core.data import PreferenceData
from pbo_core.models.base import (
    BOOLEAN,
    COUNT,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    ArrayOf,
    Estimator,
    Interval,
    Options,
    check_input,
    competition_rank,
    probit_preference,
)
from pbo_core.models.gp.kappasharp import (
    ALPHA,
    MODEL_NOISE_VAR,
    MODES,
    THRESHOLD,
    activation_for,
    decisiveness,
    kappasharp_step,
)
from pbo_core.models.gp.laplace import (
    BOTORCH_ZLIM,
    LENGTHSCALE_BOUNDS,
    PRIORS,
    InputEncoder,
    cholesky_jitter,
    evidence_and_gradient,
    laplace_map,
    log_prior,
    log_prior_grad,
    merge_duplicates,
    rbf_kernel,
)
from pbo_core.models.gp.size_guard import DEFAULT_LIMITS, GPSizeLimits, check_gp_size
from pbo_core.models.leaves import aggregate_pairs

KappaSharpMode = Literal[
    "off", "static", "adaptive", "fixed20", "jitter", "diagonal", "metriconly", "covonly"
]

#: BoTorch 0.6-era behaviours the GP can take one at a time (docs/fidelity.md):
#: ``raw`` lengthscale prior on the raw inputs (0.6 had no input normalisation), ``fallback``
#: a failed hyperparameter fit keeps BoTorch's initial values (``unfitted``: every fit
#: does, the limit of BoTorch's 82-93 % failed fits under the 0.6 priors), ``clamp`` the
#: probit argument clamp ``|z| <= 3``, ``nomerge`` duplicate points kept as separate items.
FIDELITY_VARIANTS: dict[str, dict[str, object]] = {
    "raw": {"input_units": "raw"},
    "fallback": {"fit_failure": "initial"},
    "unfitted": {"fit_failure": "always"},
    "clamp": {"zlim": BOTORCH_ZLIM},
    "nomerge": {"merge": False},
}


def variant_options(variant: str | None) -> dict[str, object]:
    """:class:`GPSurrogate` keywords of a ``+``-joined set of :data:`FIDELITY_VARIANTS`.

    ``"none"`` (or ``None``) is the plain GP, ``"all"`` every variant at once (with
    ``fallback``, not ``unfitted``); e.g. ``"raw+clamp"``.
    """
    if variant is None or variant == "none":
        return {}
    every = [v for v in FIDELITY_VARIANTS if v != "unfitted"]
    names = every if variant == "all" else variant.split("+")
    out: dict[str, object] = {}
    for name in names:
        if name not in FIDELITY_VARIANTS:
            known = ", ".join(FIDELITY_VARIANTS)
            raise ValueError(f"unknown GP variant {name!r}; choose from none, all, {known}")
        out.update(FIDELITY_VARIANTS[name])
    return out


class GPSurrogate(Estimator):
    """GP-Laplace preference surrogate with optional Adaptive KappaSharp.

    Parameters
    ----------
    kappasharp
        ``"off"`` (default), ``"static"`` (from step 8 on), ``"adaptive"`` (from step 8
        when the decisiveness EMA reaches ``kappasharp_tau``), the ``"fixed20"`` baseline or
        the ablations ``"jitter"``, ``"diagonal"``, ``"metriconly"``, ``"covonly"``; see
        :mod:`pbo_core.models.gp.kappasharp`.
    kappasharp_tau, kappasharp_alpha, kappasharp_min_step
        Activation threshold ``tau`` (0.30), calibration exponent ``alpha`` (0.1) and first
        eligible step (default 8, 20 for ``"fixed20"``).
    kappasharp_score_noise_var
        The ``2 sigma^2`` of the decisiveness score (Eq. 12): 2, the model's latent probit
        noise (default), or e.g. ``EQ1_NOISE_VAR`` (``sigma = 0.1`` of the simulation).
    lengthscale, outputscale
        Fixed hyperparameters; when both are given no hyperparameter fitting happens.
    fit_hyperparameters
        Maximise the Laplace evidence + priors at every fit (default True).
    priors
        Hyperparameter priors, ``"current"`` (BoTorch 0.18's defaults) or ``"0.6"``
        (BoTorch 0.6.x's; :data:`~pbo_core.models.gp.laplace.PRIORS`).
    input_units
        ``"unit"``: the lengthscale prior is on unit-cube inputs (BoTorch with input
        normalisation; default); ``"raw"``: on the schema's own units (BoTorch 0.6's
        default, no transform), i.e. ``Gamma(a, b * span)`` on the unit-cube lengthscale
        (L.1) and the starting lengthscale ``mode / span``.
    fit_failure
        When L-BFGS-B ends abnormally (line-search failure) or an evidence evaluation
        fails: ``"keep"`` its last point (default) or ``"initial"``: BoTorch's initial
        values (lengthscale at the prior mode, outputscale ``log 2``), what BoTorch does
        after failed retries. Either way the fit is counted in ``fit_failures_``.
        ``"always"``: no fit, the initial values every time (every fit failed).
    zlim
        BoTorch's probit clamp ``|z| <= zlim`` (``None``: none; BoTorch: 3).
    merge
        Merge duplicate items (default); ``False`` keeps them as separate items (the
        kernel Cholesky's jitter then handles the repeated rows).
    max_opt_iter
        L-BFGS-B iterations per hyperparameter fit.
    merge_atol
        Items closer than this in every unit-cube input are merged.
    jitter
        Relative jitter for the kernel Cholesky when needed.
    size_limits
        Sizes above which :meth:`fit` warns or refuses (see :mod:`.size_guard`).
    allow_large
        Fit above ``size_limits.max_*`` anyway (or pass ``fit(..., allow_large=True)``).

    Attributes
    ----------
    lengthscale_, outputscale_ : fitted hyperparameters
    f_map_ : MAP utilities of the merged training items
    Z_ : merged training inputs (unit cube)
    laplace_ : LaplaceState
    fit_failures_ : list of int, the fits (counted from 1) whose hyperparameter fit failed
    merged_items_ : int, items merged into others at the last fit
    kappasharp_active_ : bool, whether the correction shaped this fit's MAP
    eta_ : float or None, the calibrated correction strength
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "kappasharp": [Options(*MODES)],
        "lengthscale": [POSITIVE, ArrayOf(POSITIVE), None],
        "outputscale": [POSITIVE, None],
        "fit_hyperparameters": [BOOLEAN],
        "priors": [Options(*PRIORS)],
        "input_units": [Options("unit", "raw")],
        "fit_failure": [Options("keep", "initial", "always")],
        "zlim": [POSITIVE, None],
        "merge": [BOOLEAN],
        "max_opt_iter": [COUNT],
        "merge_atol": [NON_NEGATIVE],
        "jitter": [NON_NEGATIVE],
        "kappasharp_tau": [Interval(numbers.Real, 0, 1)],
        "kappasharp_alpha": [NON_NEGATIVE],
        "kappasharp_min_step": [NON_NEGATIVE_INT, None],
        "kappasharp_score_noise_var": [POSITIVE],
        "size_limits": [GPSizeLimits],
        "allow_large": [BOOLEAN],
    }

    def __init__(
        self,
        *,
        kappasharp: KappaSharpMode = "off",
        lengthscale: float | np.ndarray | None = None,
        outputscale: float | None = None,
        fit_hyperparameters: bool = True,
        priors: str = "current",
        input_units: str = "unit",
        fit_failure: str = "keep",
        zlim: float | None = None,
        merge: bool = True,
        max_opt_iter: int = 50,
        merge_atol: float = 1e-6,
        jitter: float = 1e-6,
        kappasharp_tau: float = THRESHOLD,
        kappasharp_alpha: float = ALPHA,
        kappasharp_min_step: int | None = None,
        kappasharp_score_noise_var: float = MODEL_NOISE_VAR,
        size_limits: GPSizeLimits = DEFAULT_LIMITS,
        allow_large: bool = False,
    ) -> None:
        self.priors = priors
        self.input_units = input_units
        self.fit_failure = fit_failure
        self.zlim = zlim
        self.merge = merge
        self.kappasharp = kappasharp
        self.kappasharp_tau = kappasharp_tau
        self.kappasharp_alpha = kappasharp_alpha
        self.kappasharp_min_step = kappasharp_min_step
        self.kappasharp_score_noise_var = kappasharp_score_noise_var
        self.lengthscale = lengthscale
        self.outputscale = outputscale
        self.fit_hyperparameters = fit_hyperparameters
        self.max_opt_iter = max_opt_iter
        self.merge_atol = merge_atol
        self.jitter = jitter
        self.size_limits = size_limits
        self.allow_large = allow_large

    # ------------------------------------------------------------------ fitting
    def _input_span(self, encoder: InputEncoder) -> np.ndarray | float:
        """Widths of the GP inputs in the units of the lengthscale prior (see ``input_units``)."""
        if self.input_units == "unit":
            return 1.0
        return np.r_[encoder.span[encoder.threshold_cols], np.ones(sum(encoder.n_categories))]

    def _initial_theta(self, p: int, *, fallback: bool = False) -> np.ndarray:
        """The previous fit's ``theta`` (warm start), else the starting values.

        ``fallback``: BoTorch's initial values instead (outputscale ``log 2``).
        """
        prev = getattr(self, "theta_", None)
        if prev is not None and len(prev) == p + 1 and not fallback:
            return prev.copy()
        # prior mode, as BoTorch initialises (in unit-cube units)
        ell0 = PRIORS[self.priors].lengthscale_mode / np.broadcast_to(self.span_, (p,))
        ell = (
            ell0
            if self.lengthscale is None
            else np.broadcast_to(np.asarray(self.lengthscale, dtype=float), (p,))
        )
        s0 = PRIORS[self.priors].outputscale0 if fallback else 1.0
        s = s0 if self.outputscale is None else float(self.outputscale)
        return np.log(np.r_[ell, s])

    def fit(self, data: PreferenceData, *, allow_large: bool | None = None) -> GPSurrogate:
        """Merge duplicates, fit hyperparameters, find the MAP (and apply KappaSharp).

        Warns (:class:`~.size_guard.GPSizeWarning`) above ``size_limits.warn_*`` and
        raises :class:`~.size_guard.GPTooLargeError` above ``size_limits.max_*``
        comparisons or items unless ``allow_large`` (here or as an attribute).
        """
        self._validate_params()
        big = self.allow_large if allow_large is None else allow_large
        check_gp_size(data.n_pairs, data.n_items, self.size_limits, allow_large=big)
        schema = data.get_schema()
        self.encoder_ = InputEncoder.from_schema(schema)
        self.span_ = self._input_span(self.encoder_)
        Z_all = self.encoder_(data.X) if data.n_items else np.zeros((0, self.encoder_.n_inputs))
        if self.merge:
            Z, pairs, item_index = merge_duplicates(Z_all, data.pairs, self.merge_atol)
        else:
            Z, pairs, item_index = Z_all, data.pairs, np.arange(len(Z_all))
        self.merged_items_ = len(Z_all) - len(Z)
        self.n_fits_ = getattr(self, "n_fits_", 0) + 1
        if not hasattr(self, "fit_failures_"):
            self.fit_failures_: list[int] = []
        w, lo, counts = (
            aggregate_pairs(pairs[:, 0], pairs[:, 1], len(Z))
            if len(pairs)
            else (np.zeros(0, int), np.zeros(0, int), np.zeros(0))
        )
        n = len(Z)
        C = np.zeros((len(w), n))
        C[np.arange(len(w)), w] = 1.0
        C[np.arange(len(w)), lo] = -1.0
        p = Z.shape[1]
        theta = self._initial_theta(p)
        alpha0 = self._warm_alpha(item_index, n)
        fixed = not self.fit_hyperparameters or (
            self.lengthscale is not None and self.outputscale is not None
        )
        if self.fit_failure == "always":
            theta = self._initial_theta(p, fallback=True)
        elif not fixed and len(w):
            theta, ok = self._optimise(theta, Z, C, counts, alpha0)
            if not ok:
                self.fit_failures_.append(self.n_fits_)
                if self.fit_failure == "initial":
                    theta = self._initial_theta(p, fallback=True)
        ell = np.exp(theta[:-1])
        s = float(np.exp(theta[-1]))
        K = rbf_kernel(Z, Z, ell, s)
        st = laplace_map(K, C, counts, alpha0, zlim=self.zlim)
        self.theta_ = theta
        self.lengthscale_ = ell
        self.outputscale_ = s
        self.Z_ = Z
        self.C_ = C
        self.counts_ = counts
        self.K_ = K
        self.item_index_ = item_index
        self.laplace_ = st
        self.kappasharp_active_ = False
        self.eta_ = None
        self.decisiveness_ = None
        if self.kappasharp != "off" and len(w):
            self._apply_kappasharp(data)
        self._finalise()
        self.n_features_in_ = data.X.shape[1]
        self._X_fit = data.X
        return self

    def _apply_kappasharp(self, data: PreferenceData) -> None:
        """Decide on and apply KappaSharp to the fresh plain fit.

        Sets ``decisiveness_``, ``kappasharp_active_``, ``eta_`` and, when active,
        replaces ``laplace_`` by the state at the shifted MAP (covariance from the
        unaugmented Hessian there); appends the step to ``kappasharp_history_``.
        """
        if not hasattr(self, "_activation"):
            self._activation = activation_for(
                self.kappasharp, self.kappasharp_tau, self.kappasharp_min_step
            )
        # decisiveness on the latest comparison under the standard (uncorrected) posterior
        w, lo = (int(v) for v in self.item_index_[data.pairs[-1]])
        self._finalise()
        mean, cov = self.posterior_unit(self.Z_[[w, lo]])
        s = decisiveness(
            mean[0] - mean[1],
            cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1],
            self.kappasharp_score_noise_var,
        )
        self.decisiveness_ = s
        step = kappasharp_step(
            self.kappasharp,
            self._activation,
            s,
            self.K_,
            self.C_,
            self.counts_,
            self.laplace_,
            self.hessians,
            alpha=self.kappasharp_alpha,
            zlim=self.zlim,
        )
        if step.active:
            self.laplace_ = step.state
            self.kappasharp_active_ = True
            self.eta_ = step.eta
        history = getattr(self, "kappasharp_history_", [])
        history.append(step.record)
        self.kappasharp_history_ = history

    def _warm_alpha(self, item_index: np.ndarray, n: int) -> np.ndarray | None:
        """Previous ``alpha`` on the items that were already there (0 for new items)."""
        prev = getattr(self, "laplace_", None)
        prev_idx = getattr(self, "item_index_", None)
        if prev is None or prev_idx is None:
            return None
        k = min(len(prev_idx), len(item_index))
        a0 = np.zeros(n)
        a0[item_index[:k]] = prev.alpha[prev_idx[:k]]
        return a0

    def _optimise(
        self,
        theta0: np.ndarray,
        Z: np.ndarray,
        C: np.ndarray,
        counts: np.ndarray,
        alpha0: np.ndarray | None,
    ) -> tuple[np.ndarray, bool]:
        """Maximise evidence + log prior (L.1) over ``theta``; returns ``(theta, ok)``.

        ``ok`` is False when L-BFGS-B ended abnormally (status 2: a line search failed;
        the iteration limit, status 1, is not a failure) or an evaluation failed (a
        kernel not positive definite, non-finite values): what BoTorch counts as a
        failed fit.
        """
        cache: dict[str, np.ndarray | None] = {"alpha": alpha0}
        priors = PRIORS[self.priors]
        span = self.span_
        failed = [False]

        def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
            ell = np.exp(theta[:-1])
            s = float(np.exp(theta[-1]))
            try:
                val, grad, st = evidence_and_gradient(
                    theta, Z, C, counts, cache["alpha"], zlim=self.zlim
                )
            except (np.linalg.LinAlgError, FloatingPointError):
                failed[0] = True
                return 1e10, np.zeros_like(theta)
            cache["alpha"] = st.alpha
            val += log_prior(ell, s, priors, span)
            grad = grad + log_prior_grad(theta, priors, span)
            if not np.isfinite(val) or not np.all(np.isfinite(grad)):
                failed[0] = True
                return 1e10, np.zeros_like(theta)
            return -val, -grad

        p = len(theta0) - 1
        # BoTorch's smoothed box prior (sigma = 0.01) is numerically a hard box: outside
        # [0.01, 100] it costs 0.5 (dist / 0.01)^2. Bounding the optimiser to the box
        # avoids line-search failures at its kinks and loses nothing.
        bounds = [tuple(np.log(LENGTHSCALE_BOUNDS))] * p + [tuple(np.log(priors.outputscale_box))]
        theta0 = np.clip(theta0, [b[0] for b in bounds], [b[1] for b in bounds])
        res = minimize(
            fun,
            theta0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": self.max_opt_iter},
        )
        finite = bool(np.all(np.isfinite(res.x)))
        ok = finite and res.status != 2 and not failed[0]
        return (res.x if finite else theta0), ok

    def _finalise(self) -> None:
        """Quantities for prediction from the current MAP (and unaugmented Hessian)."""
        K = self.K_
        self.K_chol_ = cholesky_jitter(K, self.jitter)
        st = self.laplace_
        # alpha = K^-1 f (equals grad log p at the plain MAP; recomputed for KappaSharp MAPs)
        self.alpha_ = linalg.cho_solve((self.K_chol_, True), st.f, check_finite=False)
        self.f_map_ = st.f

    # ------------------------------------------------------------------ prediction
    def _check(self, X: np.ndarray) -> np.ndarray:
        fitted = getattr(self, "n_features_in_", None) if hasattr(self, "laplace_") else None
        return check_input(X, fitted, "GPSurrogate")

    def posterior_unit(
        self, Zq: np.ndarray, full_cov: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and covariance (or variance) at GP inputs ``Zq``."""
        Kq = rbf_kernel(Zq, self.Z_, self.lengthscale_, self.outputscale_)
        mean = Kq @ self.alpha_
        st = self.laplace_
        V = linalg.solve_triangular(st.B_chol, st.L @ Kq.T, lower=True, check_finite=False)
        if full_cov:
            cov = rbf_kernel(Zq, Zq, self.lengthscale_, self.outputscale_) - V.T @ V
            cov = 0.5 * (cov + cov.T)
            return mean, cov
        var = self.outputscale_ - np.einsum("ij,ij->j", V, V)
        return mean, np.maximum(var, 0.0)

    def pair_posterior_unit(
        self, Za: np.ndarray, Zb: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Posterior moments of paired GP inputs, vectorised over rows.

        Parameters
        ----------
        Za, Zb
            ``(q, p)`` unit-cube inputs; row ``i`` of each forms pair ``i``.

        Returns
        -------
        mean_a, mean_b, var_a, var_b, cov_ab
            ``(q,)`` each: means, variances and the covariance within each pair.
        """
        n = len(Za)
        mean, var = self.posterior_unit(np.vstack([Za, Zb]), full_cov=False)
        st = self.laplace_
        ell, s = self.lengthscale_, self.outputscale_
        Kqa = rbf_kernel(Za, self.Z_, ell, s)
        Kqb = rbf_kernel(Zb, self.Z_, ell, s)
        Va = linalg.solve_triangular(st.B_chol, st.L @ Kqa.T, lower=True, check_finite=False)
        Vb = linalg.solve_triangular(st.B_chol, st.L @ Kqb.T, lower=True, check_finite=False)
        d2 = (((Za - Zb) / ell) ** 2).sum(1)
        cov_ab = s * np.exp(-0.5 * d2) - np.einsum("ij,ij->j", Va, Vb)
        return mean[:n], mean[n:], var[:n], var[n:], cov_ab

    def pair_moments_grad_unit(
        self, za: np.ndarray, zb: np.ndarray
    ) -> tuple[float, float, np.ndarray, np.ndarray, float, np.ndarray, np.ndarray]:
        """Means of one pair, the variance of their difference, and gradients.

        Parameters
        ----------
        za, zb
            ``(p,)`` unit-cube inputs.

        Returns
        -------
        mu_a, mu_b, dmu_a, dmu_b, var_d, dvar_a, dvar_b
            Posterior means, their gradients ``(p,)`` with respect to ``za`` / ``zb``, the
            variance of ``f(a) - f(b)`` (floored at ``1e-12``) and its gradients.
        """
        st = self.laplace_
        ell, s = self.lengthscale_, self.outputscale_
        Z = self.Z_
        ka = rbf_kernel(za[None], Z, ell, s)[0]
        kb = rbf_kernel(zb[None], Z, ell, s)[0]
        inv_l2 = 1.0 / ell**2
        Ja = -ka[:, None] * (za[None, :] - Z) * inv_l2  # d k(a, z_j) / d za, (n, p)
        Jb = -kb[:, None] * (zb[None, :] - Z) * inv_l2
        mu_a, mu_b = ka @ self.alpha_, kb @ self.alpha_
        dmu_a, dmu_b = Ja.T @ self.alpha_, Jb.T @ self.alpha_
        Va = linalg.solve_triangular(st.B_chol, st.L @ ka, lower=True, check_finite=False)
        Vb = linalg.solve_triangular(st.B_chol, st.L @ kb, lower=True, check_finite=False)
        kab = s * np.exp(-0.5 * float((((za - zb) / ell) ** 2).sum()))
        dk_a = -kab * (za - zb) * inv_l2
        dV = Va - Vb
        var_d = max(2.0 * s - 2.0 * kab - float(dV @ dV), 1e-12)
        g = st.L.T @ linalg.solve_triangular(st.B_chol, dV, lower=True, trans=1, check_finite=False)
        dvar_a = -2.0 * dk_a - 2.0 * (Ja.T @ g)
        dvar_b = 2.0 * dk_a + 2.0 * (Jb.T @ g)
        return float(mu_a), float(mu_b), dmu_a, dmu_b, var_d, dvar_a, dvar_b

    def posterior(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean ``(n,)`` and covariance ``(n, n)`` of the utilities of ``X``."""
        X = self._check(X)
        return self.posterior_unit(self.encoder_(X))

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utility."""
        if X is getattr(self, "_X_fit", None):
            return self.f_map_[self.item_index_]
        X = self._check(X)
        Kq = rbf_kernel(self.encoder_(X), self.Z_, self.lengthscale_, self.outputscale_)
        return Kq @ self.alpha_

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray) -> np.ndarray:
        """Predictive ``P(a > b)`` for paired rows."""
        Xa, Xb = self._check(Xa), self._check(Xb)
        n = len(Xa)
        mean, cov = self.posterior_unit(self.encoder_(np.vstack([Xa, Xb])))
        md = mean[:n] - mean[n:]
        vd = np.diag(cov)[:n] + np.diag(cov)[n:] - 2.0 * cov[np.arange(n), n + np.arange(n)]
        return probit_preference(md, vd)

    def rank(self, X: np.ndarray) -> np.ndarray:
        """Competition ranks (1 = best)."""
        return competition_rank(self.predict(X))

    # ------------------------------------------------------------------ diagnostics
    def hessians(self) -> tuple[np.ndarray, np.ndarray]:
        """``(H_lik, H)``: likelihood Hessian ``W`` and posterior Hessian ``K^-1 + W``."""
        W = self.laplace_.W
        if W is None:
            W = self.C_.T @ (self.laplace_.omega[:, None] * self.C_)
        K_inv = linalg.cho_solve((self.K_chol_, True), np.eye(len(self.K_)), check_finite=False)
        K_inv = 0.5 * (K_inv + K_inv.T)
        return W, K_inv + W
