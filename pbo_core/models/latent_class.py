"""The latent-class conditional logit: a few segments of respondents, a logit each.

Model
-----
Every respondent belongs to one of ``C`` classes, unobserved; class ``c`` holds its own
coefficients ``theta_c`` of the conditional logit (:mod:`pbo_core.models.mnl`, Eq. 1:
attributes, alternative constants, case-specific variables). Respondent ``n`` is in class
``c`` with probability ``pi_nc``: a constant share, or a multinomial logit of their
recorded features ``x_n`` (``membership``; Greene & Hensher 2003). Given the class, a
respondent's choices are independent logits, so the *panel* likelihood of respondent
``n`` mixes the classes over all their choices at once (Kamakura & Russell 1989),

.. math::

    L_n = \\sum_{c=1}^C \\pi_{nc} \\prod_{s \\in n} P_s(c_s \\mid \\theta_c), \\qquad
    \\pi_{nc} = \\frac{e^{\\gamma_c^\\top x_n}}{\\sum_d e^{\\gamma_d^\\top x_n}}
    \\;(\\gamma_1 = 0,\\; x_n = (1, u_n)), \\qquad
    \\ell = \\sum_n \\log L_n,                                                     \\qquad (1)

computed in logs (a log-sum-exp over classes of ``log pi_nc + sum_s log P_s``), so no
value overflows.

Estimation
----------
EM (Dempster, Laird & Rubin 1977). E-step: every respondent's posterior class membership

.. math::

    h_{nc} = \\frac{\\pi_{nc} \\prod_{s \\in n} P_s(c_s \\mid \\theta_c)}{L_n};   \\qquad (2)

M-step: the shares' multinomial logit on the soft labels ``h`` (``mean_n h_nc`` for
constant shares) and, for every class, a conditional logit on all choice situations with
situation weights ``h_nc``; each one Newton step of the project's solver
(:func:`pbo_core.models.solver.newton_minimize`; the class logit's through
:func:`pbo_core.models.mnl._fit`) from the last estimate: a generalised EM whose every
step raises the likelihood. ``n_starts`` starts from random partitions of the respondents
run :data:`START_ITER` EM iterations each; the best continues until an iteration gains
less than :data:`EM_TOL` per respondent, and L-BFGS on (1) with its gradient

.. math::

    \\frac{\\partial \\ell}{\\partial \\theta_c} = \\sum_n h_{nc} \\sum_{s \\in n}
    (z_{s c_s} - \\bar z_s(\\theta_c)), \\qquad
    \\frac{\\partial \\ell}{\\partial \\gamma_c} = \\sum_n (h_{nc} - \\pi_{nc}) x_n  \\qquad (3)

finishes the fit (EM is slow near its end). Classes are listed by decreasing share. The
membership slopes carry a weak ridge (:data:`MEMBERSHIP_ALPHA`, about one respondent's
weight), so a feature level held by a few respondents of one class has a finite estimate.

The number of classes
---------------------
``n_classes=None`` fits ``C = 1 .. max_classes`` and keeps the smallest BIC,

.. math::

    \\mathrm{BIC}(C) = -2 \\ell_C + P_C \\log N, \\qquad P_C = C K + (C - 1) Q,   \\qquad (4)

``N`` the number of respondents (the independent units of (1)), ``K`` the design's
columns and ``Q`` the membership model's (1 for constant shares); ``bic_table_`` holds every
``C``'s log-likelihood, parameters, BIC and AIC. ``C`` stops at the number of respondents
and where ``P_C`` would reach the number of choices.

Standard errors
---------------
``se_`` (classical): ``sqrt(diag(H^-1))``, ``H`` the Hessian of ``-l`` in ``(theta_1, ...,
theta_C, gamma_2, ..., gamma_C)`` by central differences of (3); ``robust_se_``: the
sandwich ``H^-1 (sum_n g_n g_n^T) H^-1`` with the respondents' scores; ``cluster_se_``:
that times ``G/(G-1)``; all computed on first use
(:class:`~pbo_core.models.mixed_logit.LazyErrors`). A share (the mean of ``pi_nc`` over
respondents) has its error by the delta method.

Prediction
----------
A respondent seen in training is predicted with their posterior memberships (2): utilities
``sum_c h_nc z^T theta_c`` (``predict``), probabilities ``sum_c h_nc P(j | theta_c)``
(:meth:`LatentClassLogit.choice_probabilities`, :meth:`LatentClassLogit.prob_prefer`);
anybody else with their membership probabilities ``pi_nc`` from their recorded features,
or the shares.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.optimize import minimize
from scipy.special import expit, logsumexp, ndtr

from pbo_core.data import DataValidationError, PreferenceData, Schema
from pbo_core.models.base import (
    COUNT,
    NAMES,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    RANDOM_STATE,
    Estimator,
    check_input,
    competition_rank,
)
from pbo_core.models.glm import blas_single_thread
from pbo_core.models.linear import LinearDesign
from pbo_core.models.mixed_logit import (
    Errors,
    LazyErrors,
    PanelDesign,
    panel_design,
    sandwich_errors,
)
from pbo_core.models.mnl import (
    DESIGN_CONSTRAINTS,
    ConditionalLogit,
    _fit,
    _Problem,
    choice_sets,
)
from pbo_core.models.solver import ConvergenceWarning, NewtonStep, newton_minimize

__all__ = ["EM_TOL", "MEMBERSHIP_ALPHA", "START_ITER", "LatentClassLogit"]

#: EM iterations of every random start before the best one continues.
START_ITER = 20
#: EM stops when an iteration gains less than this per respondent; L-BFGS finishes the fit.
EM_TOL = 1e-4
#: The least ridge strength of the membership slopes (standardised as the logit's: about
#: one respondent's weight): a feature level held by a few respondents, all of one class,
#: keeps a finite estimate, and the membership logit's Hessian stays invertible.
MEMBERSHIP_ALPHA = 1.0


class _Classes:
    """The likelihood (1), its E-step (2) and gradient (3) on one panel design, with the
    membership design ``Xm`` ``(G, Q)`` (first column 1)."""

    def __init__(self, design: PanelDesign, C: int, Xm: np.ndarray) -> None:
        self.design = design
        self.C = C
        self.G = design.n_respondents
        self.Xm = Xm
        self.Q = Xm.shape[1]
        S, m = design.n_situations, len(design.Z)
        sizes = np.diff(design.start)
        self.who = np.repeat(np.arange(self.G), np.diff(design.gstart))  # (S,) respondent
        self.probs = [_Problem(design.Z, design.start, design.chosen, np.ones(S)) for _ in range(C)]
        self.K = design.Z.shape[1]
        # (G, m): row g sums the rows of respondent g's situations
        self._by_who = sparse.csr_matrix(
            (np.ones(m), (np.repeat(self.who, sizes), np.arange(m))), shape=(self.G, m)
        )
        self._chosen_sum = np.asarray(
            sparse.csr_matrix((np.ones(S), (self.who, design.chosen)), shape=(self.G, m)) @ design.Z
        )  # (G, K): every respondent's chosen rows summed

    @property
    def n_parameters(self) -> int:
        """``P_C`` of Eq. 4."""
        return self.C * self.K + (self.C - 1) * self.Q

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``thetas (C, K)`` and ``gamma (C - 1, Q)`` of the flat parameter vector."""
        CK = self.C * self.K
        return x[:CK].reshape(self.C, self.K), x[CK:].reshape(self.C - 1, self.Q)

    def log_shares(self, gamma: np.ndarray) -> np.ndarray:
        """``(G, C)`` ``log pi_nc`` (Eq. 1)."""
        a = np.zeros((self.G, self.C))
        a[:, 1:] = self.Xm @ gamma.T
        return a - logsumexp(a, axis=1, keepdims=True)

    def class_loglik(self, thetas: np.ndarray) -> np.ndarray:
        """``(G, C)`` every respondent's log-likelihood of their choices in every class."""
        out = np.empty((self.G, self.C))
        for c in range(self.C):
            ll = self.probs[0].loglik(thetas[c])
            out[:, c] = np.bincount(self.who, weights=ll, minlength=self.G)
        return out

    def estep(self, thetas: np.ndarray, gamma: np.ndarray) -> tuple[float, np.ndarray]:
        """``l`` (1) and the posteriors ``h`` ``(G, C)`` (2)."""
        a = self.class_loglik(thetas) + self.log_shares(gamma)
        lse = logsumexp(a, axis=1)
        return float(lse.sum()), np.exp(a - lse[:, None])

    def scores(self, thetas: np.ndarray, gamma: np.ndarray) -> tuple[float, np.ndarray]:
        """``l`` and the respondents' scores ``(G, P_C)`` (3)."""
        ll, h = self.estep(thetas, gamma)
        pi = np.exp(self.log_shares(gamma))
        Z, start = self.design.Z, self.design.start
        sizes = np.diff(start)
        parts = []
        for c in range(self.C):
            v = Z @ thetas[c]
            m = np.maximum.reduceat(v, start[:-1])
            e = np.exp(v - np.repeat(m, sizes))
            p = e / np.repeat(np.add.reduceat(e, start[:-1]), sizes)
            per = self._chosen_sum - np.asarray(self._by_who @ (p[:, None] * Z))
            parts.append(h[:, c : c + 1] * per)
        r = (h - pi)[:, 1:]
        parts.append((r[:, :, None] * self.Xm[:, None, :]).reshape(self.G, -1))
        return ll, np.concatenate(parts, axis=1)

    def share_jacobian(self, gamma: np.ndarray) -> np.ndarray:
        """``(C, (C - 1) Q)``: the derivative of the mean shares ``mean_n pi_nc`` in
        ``gamma``."""
        pi = np.exp(self.log_shares(gamma))
        D = pi[:, :, None] * (np.eye(self.C)[None] - pi[:, None, :])  # d pi_c / d a_d
        return np.einsum("gcd,gk->cdk", D[:, :, 1:], self.Xm).reshape(self.C, -1) / self.G


class LatentClassLogit(LazyErrors, Estimator):
    """Latent-class conditional logit with the panel likelihood (module doc, Eqs. 1-4).

    Parameters
    ----------
    alternative, reference, case_specific, user_schema, exclude
        The conditional logit's design of every class
        (:class:`~pbo_core.models.mnl.ConditionalLogit`).
    membership
        Respondent features (names of ``user_schema``) of the class-membership logit;
        ``()``: constant shares.
    n_classes
        The number of classes; ``None``: chosen by BIC (Eq. 4) among ``1 .. max_classes``.
    max_classes
        The largest number of classes BIC considers.
    n_starts
        Random starts (partitions of the respondents) per number of classes.
    alpha
        Ridge strength on every class's coefficients and the membership slopes (the
        conditional logit's standardised ridge, ``alpha/2 sum_j (s_j theta_cj)^2``); ``0``:
        maximum likelihood of the classes' coefficients (the membership slopes keep at
        least :data:`MEMBERSHIP_ALPHA`).
    random_state
        Seed (or ``numpy.random.Generator``) of the starts.
    max_iter, tol
        EM iterations after the starts, and L-BFGS's tolerance on the gradient of ``-l / N``
        (max norm).

    Attributes
    ----------
    n_classes_ : int
    class_coef_ : ndarray, shape (C, K)
    membership_coef_ : ndarray, shape (C - 1, Q)
        ``gamma_2 .. gamma_C`` (intercept first).
    shares_ : ndarray, shape (C,)
        The mean membership probability of every class over the training respondents.
    coef_ : ndarray, shape (C K + (C - 1) Q,)
        ``(theta_1, ..., theta_C, gamma_2, ..., gamma_C)``.
    coef_cov_, robust_cov_, cluster_cov_ : ndarray
    se_, robust_se_, cluster_se_ : ndarray
        Computed on first use (:class:`~pbo_core.models.mixed_logit.LazyErrors`).
    share_se_, share_robust_se_, share_cluster_se_ : ndarray, shape (C,)
    posterior_ : ndarray, shape (G, C)
        Every training respondent's class memberships (Eq. 2).
    bic_table_ : DataFrame
        ``n_classes``, ``loglik``, ``n_parameters``, ``bic``, ``aic``, ``converged``,
        ``chosen``.
    loglik_, loglik_null_, loglik_logit_, rho2_, rho2_bar_ : float
    n_situations_, n_respondents_ : int
    converged_ : bool
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **DESIGN_CONSTRAINTS,
        "membership": [NAMES],
        "n_classes": [COUNT, None],
        "max_classes": [COUNT],
        "n_starts": [COUNT],
        "alpha": [NON_NEGATIVE],
        "random_state": list(RANDOM_STATE),
        "max_iter": [NON_NEGATIVE_INT],
        "tol": [POSITIVE],
    }

    def __init__(
        self,
        *,
        alternative: str | None = None,
        reference: str | None = None,
        case_specific: Sequence[str] = (),
        user_schema: Schema | None = None,
        exclude: Sequence[str] = (),
        membership: Sequence[str] = (),
        n_classes: int | None = None,
        max_classes: int = 6,
        n_starts: int = 5,
        alpha: float = 0.0,
        random_state: int | np.random.Generator | None = 0,
        max_iter: int = 500,
        tol: float = 1e-6,
    ) -> None:
        self.alternative = alternative
        self.reference = reference
        self.case_specific = case_specific
        self.user_schema = user_schema
        self.exclude = exclude
        self.membership = membership
        self.n_classes = n_classes
        self.max_classes = max_classes
        self.n_starts = n_starts
        self.alpha = alpha
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol

    # ------------------------------------------------------------------ membership design
    def _membership_rows(self, data: PreferenceData) -> None:
        """Every respondent's membership row ``x_n = (1, u_n)`` of the feature table."""
        names = list(self.membership)
        self._m_labels = ["constant"]
        self._m_names = ["constant"]
        self._Xm_of: dict[Any, np.ndarray] = {}
        if not names:
            return
        if self.user_schema is None or data.users is None or len(data.users) == 0:
            raise DataValidationError(
                f"{data.source}: class membership by respondent features needs the respondent "
                "feature table and its schema"
            )
        unknown = [n for n in names if n not in self.user_schema.names]
        if unknown:
            raise DataValidationError(
                f"{data.source}: membership features {unknown} are not respondent features "
                f"({self.user_schema.names})"
            )
        us = Schema(tuple(self.user_schema[n] for n in names))
        design = LinearDesign(us)
        enc = us.encode(data.users[names], source=f"{data.source} users")
        U = design.transform(enc)
        self._m_labels += design.labels
        self._m_names += design.names
        self._Xm_of = {
            ConditionalLogit._key(r): np.concatenate([[1.0], U[i]])
            for i, r in enumerate(data.users.index)
        }

    # ------------------------------------------------------------------ fit
    def fit(self, data: PreferenceData) -> LatentClassLogit:
        """Estimate Eq. 1 on the choice situations of ``data``, grouped by respondent, with
        ``n_classes`` classes or the number BIC chooses."""
        self._validate_params()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a separable start is fine
            logit = ConditionalLogit(
                alternative=self.alternative,
                reference=self.reference,
                case_specific=self.case_specific,
                user_schema=self.user_schema,
                exclude=self.exclude,
                alpha=float(self.alpha),
            ).fit(data)
        self._membership_rows(data)
        cs = choice_sets(data)
        Z = logit.situation_rows(data, cs)
        resp = data.respondent[cs.pair] if data.respondent is not None else None
        design = panel_design(Z, cs, resp, ConditionalLogit._key)
        G, K, S = design.n_respondents, Z.shape[1], design.n_situations
        if self._Xm_of:
            missing = [r for r in design.respondents if r not in self._Xm_of]
            if missing:
                raise DataValidationError(
                    f"{data.source}: respondent {missing[0]} has no row in the respondent "
                    "feature table"
                )
            Xm = np.array([self._Xm_of[r] for r in design.respondents])
        else:
            Xm = np.ones((G, 1))
        rng = self.random_state
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self._prec = float(self.alpha) * logit.scale_**2
        sm = np.sqrt((Xm * Xm).mean(axis=0))
        self._prec_m = max(float(self.alpha), MEMBERSHIP_ALPHA) * np.where(sm > 1e-12, sm, 1.0) ** 2
        self._prec_m[0] = 0.0  # the membership intercepts are not shrunk
        theta1 = np.where(np.isfinite(logit.coef_), logit.coef_, 0.0)
        Q = Xm.shape[1]
        if self.n_classes is not None:
            C = int(self.n_classes)
            if C > 1 and C > G:
                raise DataValidationError(
                    f"{data.source}: {C} classes need at least {C} respondents; {G} here"
                )
            candidates = [C]
        else:
            top = int(self.max_classes)
            candidates = [
                c for c in range(1, top + 1) if c == 1 or (c <= G and c * K + (c - 1) * Q < S)
            ]
        fits, rows = [], []
        for C in candidates:
            with blas_single_thread():  # small dense algebra: threads only oversubscribe
                f = self._fit_classes(_Classes(design, C, Xm), theta1, rng)
            P = f["model"].n_parameters
            rows.append(
                {
                    "n_classes": C,
                    "loglik": f["ll"],
                    "n_parameters": P,
                    "bic": -2.0 * f["ll"] + P * np.log(max(G, 1)),
                    "aic": -2.0 * f["ll"] + 2.0 * P,
                    "converged": f["converged"],
                }
            )
            fits.append(f)
        table = pd.DataFrame(rows)
        best = int(table["bic"].idxmin())
        table["chosen"] = np.arange(len(table)) == best
        self.bic_table_ = table
        self._finish(data, design, fits[best], logit, cs, resp)
        return self

    def _objective(self, model: _Classes, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``-l / G`` plus the ridge, and its gradient (Eq. 3)."""
        thetas, gamma = model.unpack(x)
        ll, sc = model.scores(thetas, gamma)
        prec = np.concatenate([np.tile(self._prec, model.C), np.tile(self._prec_m, model.C - 1)])
        val = -ll + 0.5 * float((prec * x * x).sum())
        grad = -sc.sum(axis=0) + prec * x
        return val / model.G, grad / model.G

    def _membership_step(
        self, model: _Classes, h: np.ndarray, gamma: np.ndarray, n_iter: int
    ) -> np.ndarray:
        """The shares' M-step: the membership logit on the soft labels ``h`` (``n_iter``
        Newton steps from ``gamma``); constant shares in closed form."""
        C, Q = model.C, model.Q
        if Q == 1:
            pi = np.clip(h.mean(axis=0), 1e-300, None)
            return np.log(pi[1:] / pi[0])[:, None]
        Xm, prec = model.Xm, np.tile(self._prec_m, C - 1)
        XX = (Xm[:, :, None] * Xm[:, None, :]).reshape(len(Xm), Q * Q)

        def value(g: np.ndarray) -> tuple[float, np.ndarray]:
            lp = model.log_shares(g.reshape(C - 1, Q))
            return float(-(h * lp).sum() + 0.5 * (prec * g * g).sum()), lp

        def newton(g: np.ndarray, lp: np.ndarray) -> NewtonStep:
            P1 = np.exp(lp)[:, 1:]
            r = h[:, 1:] - P1
            grad = -np.einsum("gc,gk->ck", r, Xm).ravel() + prec * g
            W = -P1[:, :, None] * P1[:, None, :]
            idx = np.arange(C - 1)
            W[:, idx, idx] += P1
            H = (W.reshape(len(W), -1).T @ XX).reshape(C - 1, C - 1, Q, Q)
            H = H.transpose(0, 2, 1, 3).reshape(len(g), len(g)) + np.diag(prec)
            try:
                s = np.linalg.solve(H, grad)
            except np.linalg.LinAlgError:
                s = np.linalg.pinv(H, hermitian=True) @ grad
            return NewtonStep(s, decrement=float(grad @ s))

        res = newton_minimize(
            value, newton, gamma.ravel(), max_iter=n_iter, tol=1e-8, warn=False, what="membership"
        )
        return np.asarray(res.x).reshape(C - 1, Q)

    def _mstep(
        self, model: _Classes, h: np.ndarray, thetas: np.ndarray, gamma: np.ndarray, n_iter: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every class's weighted logit and the membership logit, ``n_iter`` Newton steps."""
        w_sit = h[model.who]  # (S, C)
        for c in range(model.C):
            prob = model.probs[c]
            prob.weight = w_sit[:, c]
            if prob.weight.sum() > 1e-9:
                thetas[c], _, _ = _fit(
                    prob, self._prec, thetas[c], n_iter, 1e-8, False, hessian=False
                )
        return thetas, self._membership_step(model, h, gamma, n_iter)

    def _em(
        self, model: _Classes, thetas: np.ndarray, gamma: np.ndarray, n_iter: int
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Generalised EM (module doc) for at most ``n_iter`` iterations; stops when an
        iteration gains less than :data:`EM_TOL` per respondent."""
        ll_old = -np.inf
        ll = -np.inf
        for it in range(n_iter):
            ll, h = model.estep(thetas, gamma)
            if it > 0 and ll - ll_old < EM_TOL * model.G:
                break
            ll_old = ll
            thetas, gamma = self._mstep(model, h, thetas, gamma, 1)
        return thetas, gamma, ll

    def _fit_classes(
        self, model: _Classes, theta1: np.ndarray, rng: np.random.Generator
    ) -> dict[str, Any]:
        """The best of ``n_starts`` EM starts with ``model.C`` classes, finished by L-BFGS."""
        C, G, Q = model.C, model.G, model.Q
        if C == 1:
            x0 = theta1.copy()
        else:
            best: tuple[float, np.ndarray, np.ndarray] | None = None
            for _ in range(max(1, int(self.n_starts))):
                part = rng.integers(0, C, G)
                part[rng.permutation(G)[:C]] = np.arange(C)  # every class gets someone
                h = np.eye(C)[part]
                thetas, gamma = self._mstep(
                    model, h, np.tile(theta1, (C, 1)), np.zeros((C - 1, Q)), 5
                )
                thetas, gamma, ll = self._em(model, thetas, gamma, START_ITER)
                if best is None or ll > best[0]:
                    best = (ll, thetas.copy(), gamma.copy())
            assert best is not None
            _, thetas, gamma = best
            thetas, gamma, _ = self._em(model, thetas, gamma, int(self.max_iter))
            x0 = np.concatenate([thetas.ravel(), gamma.ravel()])
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            res = minimize(
                lambda x: self._objective(model, x),
                x0,
                jac=True,
                method="L-BFGS-B",
                options={"gtol": float(self.tol), "maxiter": 2000, "maxcor": 30},
            )
        x = np.asarray(res.x, dtype=float)
        _, grad = self._objective(model, x)
        converged = bool(res.success or np.abs(grad).max() <= 10 * float(self.tol))
        # classes by decreasing mean share; the first one's gamma is 0 again
        thetas, gamma = model.unpack(x)
        full = np.vstack([np.zeros((1, Q)), gamma])
        shares = np.exp(model.log_shares(gamma)).mean(axis=0)
        order = np.argsort(-shares, kind="stable")
        thetas, full = thetas[order], full[order] - full[order][0]
        x = np.concatenate([thetas.ravel(), full[1:].ravel()])
        ll, _ = model.estep(*model.unpack(x))
        return {"model": model, "x": x, "ll": ll, "converged": converged}

    def _finish(
        self,
        data: PreferenceData,
        design: PanelDesign,
        f: dict[str, Any],
        logit: ConditionalLogit,
        cs: Any,
        resp: np.ndarray | None,
    ) -> None:
        model: _Classes = f["model"]
        x = f["x"]
        C, G, P = model.C, model.G, len(x)
        thetas, gamma = model.unpack(x)
        ll, h = model.estep(thetas, gamma)
        self.coef_ = x
        self._errors_cache = None
        self._classes = model
        self.n_classes_ = C
        self.class_coef_ = thetas
        self.membership_coef_ = gamma
        self.shares_ = np.exp(model.log_shares(gamma)).mean(axis=0)
        self.posterior_ = h
        self.converged_ = bool(f["converged"])
        if not self.converged_:
            warnings.warn(
                f"latent-class logit: L-BFGS did not converge with {C} classes; raise max_iter "
                "or alpha (a class whose choices an attribute separates has no finite MLE)",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.loglik_ = float(ll)
        self.loglik_logit_ = float(logit.loglik_)
        self.loglik_null_ = float(-np.log(cs.sizes).sum())
        null = self.loglik_null_
        self.rho2_ = 1.0 - self.loglik_ / null if null < 0 else float("nan")
        self.rho2_bar_ = 1.0 - (self.loglik_ - P) / null if null < 0 else float("nan")
        self.n_situations_ = cs.n_situations
        self.n_respondents_ = G if resp is not None else 0
        self.n_features_in_ = data.X.shape[1]
        self.schema_ = data.get_schema()
        self.logit_ = logit
        self._index = {r: i for i, r in enumerate(design.respondents)} if resp is not None else {}

    def _compute_errors(self) -> Errors:
        self._require_fitted()
        model = self._classes
        _, scores = model.scores(*model.unpack(self.coef_))
        return sandwich_errors(lambda x: self._objective(model, x)[1] * model.G, self.coef_, scores)

    def _share_se(self, cov: np.ndarray) -> np.ndarray:
        """The mean shares' errors by the delta method."""
        model = self._classes
        if model.C == 1:
            return np.zeros(1)
        J = model.share_jacobian(self.membership_coef_)
        g = slice(model.C * model.K, len(self.coef_))
        return np.sqrt(np.maximum(np.diag(J @ cov[g, g] @ J.T), 0.0))

    @property
    def share_se_(self) -> np.ndarray:
        """Classical errors of the class shares."""
        return self._share_se(self.coef_cov_)

    @property
    def share_robust_se_(self) -> np.ndarray:
        """Robust errors of the class shares."""
        return self._share_se(self.robust_cov_)

    @property
    def share_cluster_se_(self) -> np.ndarray:
        """Cluster-robust errors of the class shares."""
        return self._share_se(self.cluster_cov_)

    # ------------------------------------------------------------------ prediction
    def _require_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise RuntimeError("LatentClassLogit is not fitted; call fit(data) first")

    def _design(self, X: np.ndarray, respondent: Any) -> np.ndarray:
        self._require_fitted()
        X = check_input(X, self.n_features_in_, type(self).__name__)
        return self.logit_._design_for(X, respondent)

    def memberships(self, respondent: Any = None) -> np.ndarray:
        """``(C,)`` the respondent's posterior class memberships (Eq. 2; seen in
        training), else their membership probabilities from their recorded features
        (Eq. 1), else the shares."""
        self._require_fitted()
        if respondent is None:
            return self.shares_
        key = ConditionalLogit._key(respondent)
        g = self._index.get(key)
        if g is not None:
            return self.posterior_[g]
        x = self._Xm_of.get(key)
        if x is None:
            return self.shares_
        a = np.concatenate([[0.0], self.membership_coef_ @ x])
        return np.exp(a - logsumexp(a))

    def predict(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Utilities ``(n,)`` at the respondent's mean coefficients ``sum_c h_c theta_c``."""
        return self._design(X, respondent) @ (self.memberships(respondent) @ self.class_coef_)

    def posterior(self, X: np.ndarray, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean ``(n,)`` and covariance ``(n, n)`` of the utilities of ``X`` over the
        respondent's class memberships."""
        D = self._design(X, respondent)
        h = self.memberships(respondent)
        U = D @ self.class_coef_.T  # (n, C)
        m = U @ h
        cov = (U - m[:, None]) @ ((U - m[:, None]) * h).T
        return m, 0.5 * (cov + cov.T)

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray, respondent: Any = None) -> np.ndarray:
        """``P(a > b)`` ``(n,)`` of paired rows: the classes' binary logits mixed by the
        respondent's memberships."""
        d = self._design(Xa, respondent) - self._design(Xb, respondent)
        return expit(d @ self.class_coef_.T) @ self.memberships(respondent)

    def choice_probabilities(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Choice probabilities ``(n,)`` among the items ``X`` offered together: the
        classes' logits mixed by the respondent's memberships."""
        V = self._design(X, respondent) @ self.class_coef_.T  # (n, C)
        logp = V - logsumexp(V, axis=0, keepdims=True)
        return np.exp(logp) @ self.memberships(respondent)

    def rank(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Competition ranks (1 = best) by :meth:`predict`."""
        return competition_rank(self.predict(X, respondent))

    # ------------------------------------------------------------------ explanation
    def coef_table(self, respondent: Any = None, se: str = "cluster") -> pd.DataFrame:
        """One row per class coefficient (``name`` ``"<column> [class c]"``, ``kind``
        ``"class c: attribute"`` / ``constant`` / ``case-specific``), per membership
        coefficient with features (``"<feature> [class c membership]"``, kind ``"class c:
        membership"``; class 1 is the reference) and per class share (``"share [class
        c]"``, kind ``"class share"``: the mean membership probability, its errors by the
        delta method): ``name``, ``feature``, ``kind``, ``coef``, ``se`` (classical),
        ``robust_se``, ``cluster_se``, ``z`` and ``p_value`` (from ``se``: ``"cluster"``
        by respondent, ``"robust"`` or ``"classical"``), ``unit``. ``respondent`` is
        accepted for the common signature."""
        self._require_fitted()
        base = self.logit_.coef_table()
        model = self._classes
        C, K, Q = model.C, model.K, model.Q
        ses = {"se": self.se_, "robust_se": self.robust_se_, "cluster_se": self.cluster_se_}
        rows: dict[str, list[Any]] = {k: [] for k in ("name", "feature", "kind", "unit")}
        for c in range(C):
            rows["name"] += [f"{n} [class {c + 1}]" for n in base["name"]]
            rows["feature"] += [f"Class {c + 1}: {f}" for f in base["feature"]]
            rows["kind"] += [f"class {c + 1}: {k}" for k in base["kind"]]
            rows["unit"] += list(base["unit"])
        n_coef = C * K
        if Q > 1:
            for c in range(1, C):
                rows["name"] += [f"{n} [class {c + 1} membership]" for n in self._m_names]
                rows["feature"] += [
                    f"Class {c + 1} membership (vs class 1): {lab}" for lab in self._m_labels
                ]
                rows["kind"] += [f"class {c + 1}: membership"] * Q
                rows["unit"] += [""] * Q
            n_coef = len(self.coef_)
        table = pd.DataFrame(rows)
        table.insert(3, "coef", self.coef_[:n_coef])
        for i, (col, v) in enumerate(ses.items()):
            table.insert(4 + i, col, v[:n_coef])
        shares = pd.DataFrame(
            {
                "name": [f"share [class {c + 1}]" for c in range(C)],
                "feature": [f"Class {c + 1} share" for c in range(C)],
                "kind": ["class share"] * C,
                "coef": self.shares_,
                "se": self.share_se_,
                "robust_se": self.share_robust_se_,
                "cluster_se": self.share_cluster_se_,
                "unit": [""] * C,
            }
        )
        table = pd.concat([table, shares], ignore_index=True)
        use = table[{"cluster": "cluster_se", "robust": "robust_se", "classical": "se"}[se]]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(use > 0, table["coef"] / use, np.nan)
        table.insert(7, "z", z)
        table.insert(8, "p_value", 2.0 * ndtr(-np.abs(z)))
        return table

    def explain(self, respondent: Any = None) -> pd.DataFrame:
        """The model's explanation: its coefficient table (:meth:`coef_table`)."""
        return self.coef_table(respondent)

    def fit_statistics(self) -> dict[str, Any]:
        """The conditional logit's statistics (log-likelihood, null, rho^2, rho-bar^2,
        sizes, ``alpha``, ``converged``) plus ``n_classes``, ``bic`` (of the chosen
        number), ``bic_table`` (every number of classes tried: a list of records),
        ``membership`` (the features of the shares' logit), ``loglik_logit`` and
        ``se_method``."""
        self._require_fitted()
        chosen = self.bic_table_[self.bic_table_["chosen"]].iloc[0]
        return {
            "loglik": self.loglik_,
            "loglik_null": self.loglik_null_,
            "rho2": self.rho2_,
            "rho2_bar": self.rho2_bar_,
            "n_parameters": len(self.coef_),
            "n_choices": self.n_situations_,
            "n_respondents": self.n_respondents_,
            "aic": 2.0 * len(self.coef_) - 2.0 * self.loglik_,
            "penalty": float(self.alpha),
            "penalty_reason": (
                f"a fixed ridge ({float(self.alpha):g}) on the class-membership slopes keeps "
                "rare feature levels finite"
                if self.membership and float(self.alpha) > 0
                else ""
            ),
            "alpha": float(self.alpha),
            "converged": self.converged_,
            "n_classes": self.n_classes_,
            "bic": float(chosen["bic"]),
            "bic_table": self.bic_table_.to_dict(orient="records"),
            "membership": list(self.membership),
            "loglik_logit": self.loglik_logit_,
            "se_method": self.se_method_,
        }
