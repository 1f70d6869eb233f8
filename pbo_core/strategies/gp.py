"""GP strategy: the GP-Laplace surrogate with EUBO acquisition (optionally KappaSharp)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from pbo_core.acquisition.eubo import eubo
from pbo_core.acquisition.gp import eubo_value_and_grad, gp_pair_eubo, maximize_gp_eubo
from pbo_core.data import PreferenceData
from pbo_core.models.gp import GPSurrogate, KappaSharpMode, variant_options
from pbo_core.strategies.base import LoopState, QuerySide

__all__ = ["GPStrategy"]


class GPStrategy:
    """GP-Laplace surrogate with EUBO acquisition (optionally with KappaSharp).

    Finite item sets: the item pair with the largest EUBO. Continuous boxes: EUBO is
    maximised over pairs of points (random candidate pairs, half of them anchored at the
    current recommendation, then L-BFGS-B with the analytic gradient). Schemas with
    integer-coded or categorical columns use candidate search only, in the schema space.

    With ``connected=True`` (connected querying, Xu et al. 2024, as KappaSharp's Sec. 6
    baseline runs it: ``x'_t = x_{t-1}``), one side of every query is the previous query's
    new point (after the initial design: the last item added) and EUBO chooses only the
    other side, so the comparison graph stays one chain.

    Parameters
    ----------
    kappasharp
        ``"off"`` or a KappaSharp mode (see :mod:`pbo_core.models.gp.kappasharp`).
    n_raw, n_restarts
        Candidate pairs scored, and how many of the best are polished.
    eubo
        ``"ours"`` (default: ``n_raw``/``n_restarts`` as given, half of the candidate
        pairs anchored at the recommendation) or ``"paper"``: KappaSharp App. G.2's
        optimiser settings, 32 raw samples and 4 restarts, unanchored as in BoTorch's
        ``optimize_acqf`` (overrides ``n_raw`` and ``n_restarts``).
    tau, alpha
        KappaSharp activation threshold and calibration exponent (``None``: 0.30, 0.1).
    connected
        Connected querying (see above).
    variant
        BoTorch 0.6-era behaviours of the GP, ``"none"`` or a ``+``-joined set of
        :data:`~pbo_core.models.gp.FIDELITY_VARIANTS` (``"all"``: every one); see
        :func:`~pbo_core.models.gp.variant_options`.
    name
        Method name stored in results.
    **gp_kwargs
        Passed to :class:`~pbo_core.models.gp.GPSurrogate`.
    """

    ties = "latest-winner"

    def __init__(
        self,
        kappasharp: KappaSharpMode = "off",
        n_raw: int = 1024,
        n_restarts: int = 8,
        name: str = "gp",
        eubo: str = "ours",
        tau: float | None = None,
        alpha: float | None = None,
        connected: bool = False,
        variant: str | None = None,
        **gp_kwargs: object,
    ) -> None:
        if eubo not in ("ours", "paper"):
            raise ValueError(f"eubo must be 'ours' or 'paper', got {eubo!r}")
        if tau is not None:
            gp_kwargs["kappasharp_tau"] = float(tau)
        if alpha is not None:
            gp_kwargs["kappasharp_alpha"] = float(alpha)
        gp_kwargs = {**variant_options(variant), **gp_kwargs}
        self.model = GPSurrogate(kappasharp=kappasharp, **gp_kwargs)  # type: ignore[arg-type]
        self.eubo = eubo
        self.n_raw, self.n_restarts = (32, 4) if eubo == "paper" else (n_raw, n_restarts)
        self.name = name
        self.n_leaves = 0
        self.connected = connected
        self._previous: int | None = None

    @property
    def fit_failures_(self) -> list[int]:
        """Fits whose hyperparameter optimisation failed (see ``GPSurrogate.fit_failure``)."""
        return list(getattr(self.model, "fit_failures_", []))

    @property
    def merged_items_(self) -> int:
        """Items merged into others (duplicates) at the last fit."""
        return int(getattr(self.model, "merged_items_", 0))

    def activation_trace(self) -> list[dict]:
        """KappaSharp's record per fit (step, decisiveness, EMA, active, eta); ``[]`` if off."""
        return list(getattr(self.model, "kappasharp_history_", []))

    def fit(self, data: PreferenceData) -> None:
        """Refit the GP (hyperparameters warm-started from the previous fit)."""
        self.model.fit(data)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utilities."""
        return self.model.predict(X)

    def propose(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        """The EUBO-maximising comparison."""
        if self.connected:
            return self._propose_connected(state, rng)
        m = self.model
        if state.problem.finite:
            X = state.data.X
            mean, cov = m.posterior(X)
            v = np.diag(cov)
            ia, ib = np.triu_indices(len(X), k=1)
            vals = eubo(mean[ia], mean[ib], v[ia], v[ib], cov[ia, ib])
            same = np.all(X[ia] == X[ib], axis=1)
            vals[same] = -np.inf
            k = int(np.argmax(vals))
            return int(ia[k]), int(ib[k])
        schema = state.problem.schema
        enc = m.encoder_
        if schema.is_integer.any() or schema.is_categorical.any():
            b = schema.bounds
            cand = b[:, 0] + (b[:, 1] - b[:, 0]) * rng.random((2 * self.n_raw, len(b)))
            isint = schema.is_integer
            cand[:, isint] = np.round(cand[:, isint])
            A, B = cand[: self.n_raw], cand[self.n_raw :]
            vals = gp_pair_eubo(m, enc(A), enc(B))
            k = int(np.argmax(vals))
            return A[k], B[k]
        anchors = enc(state.data.X[[state.recommendation]])
        if self.eubo == "paper":
            anchors = np.zeros((0, anchors.shape[1]))
        P = state.data.pairs
        asked = np.stack([enc(state.data.X[P[:, 0]]), enc(state.data.X[P[:, 1]])], axis=1)
        za, zb, _ = maximize_gp_eubo(
            m,
            rng,
            n_raw=self.n_raw,
            n_restarts=self.n_restarts,
            anchors=anchors,
            asked=asked,
        )
        xa, xb = enc.from_unit(za), enc.from_unit(zb)
        if len(anchors) and np.allclose(za, anchors[0], atol=1e-9):
            return state.recommendation, xb
        if len(anchors) and np.allclose(zb, anchors[0], atol=1e-9):
            return xa, state.recommendation
        return xa, xb

    def _propose_connected(
        self, state: LoopState, rng: np.random.Generator
    ) -> tuple[QuerySide, QuerySide]:
        """``(x_{t-1}, argmax_x EUBO(x_{t-1}, x))``: one side is the previous query point."""
        m = self.model
        prev = state.data.n_items - 1 if self._previous is None else self._previous
        X = state.data.X
        if state.problem.finite:
            mean, cov = m.posterior(X)
            v = np.diag(cov)
            others = np.array(
                [
                    j
                    for j in range(len(X))
                    if j != prev and (min(prev, j), max(prev, j)) not in state.asked_pairs
                ]
                or [j for j in range(len(X)) if j != prev]
            )
            vals = eubo(mean[prev], mean[others], v[prev], v[others], cov[prev, others])
            j = int(others[int(np.argmax(vals))])
            self._previous = j
            return prev, j
        schema = state.problem.schema
        enc = m.encoder_
        za = enc(X[[prev]])
        if schema.is_integer.any() or schema.is_categorical.any():
            b = schema.bounds
            cand = b[:, 0] + (b[:, 1] - b[:, 0]) * rng.random((self.n_raw, len(b)))
            isint = schema.is_integer
            cand[:, isint] = np.round(cand[:, isint])
            vals = gp_pair_eubo(m, np.repeat(za, len(cand), axis=0), enc(cand))
            self._previous = state.data.n_items
            return prev, cand[int(np.argmax(vals))]
        p = za.shape[1]
        B = rng.random((self.n_raw, p))
        vals = gp_pair_eubo(m, np.repeat(za, self.n_raw, axis=0), B)
        za = za[0]

        def neg(zb: np.ndarray) -> tuple[float, np.ndarray]:
            val, g = eubo_value_and_grad(m, za, zb)
            return -val, -g[p:]

        best_z, best_v = B[int(np.argmax(vals))], float(np.max(vals))
        for k in np.argsort(-vals)[: self.n_restarts]:
            res = minimize(neg, B[k], jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0)] * p)
            if (
                np.all(np.isfinite(res.x))
                and np.max(np.abs(res.x - za)) > 1e-4
                and -res.fun > best_v
            ):
                best_z, best_v = res.x.copy(), float(-res.fun)
        self._previous = state.data.n_items  # the new point gets the next index
        return prev, enc.from_unit(best_z)
