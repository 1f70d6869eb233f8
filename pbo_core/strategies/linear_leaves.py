"""Linear-leaf strategies: a Bayesian linear(-leaf) probit surrogate with analytic qEUBO.

The surrogate is :class:`~pbo_core.models.linear_leaves.LinearLeafDTSurrogate` fitted to
one respondent's comparisons. Its Laplace posterior over the parameters ``theta`` is
Gaussian and the utility of a point is linear in ``theta``, ``u(x) = phi(x)^T theta``
(leaf level, leaf slopes about the leaf centroid, shared slopes), so the utilities of any
set of candidates are jointly Gaussian,

.. math::

    u(X_c) \\sim N(\\Phi_c \\bar\\theta,\\; \\Phi_c S \\Phi_c^\\top),          \\qquad (1)

and the qEUBO of a pair (q = 2) is analytic (:func:`~pbo_core.acquisition.eubo.eubo`):

.. math::

    \\mathrm{EUBO}(a, b) = \\mu_b + \\mu_d \\Phi(\\mu_d / s_d) + s_d \\varphi(\\mu_d / s_d),
    \\quad \\mu_d = \\mu_a - \\mu_b,\\; s_d^2 = \\Sigma_{aa} + \\Sigma_{bb} - 2 \\Sigma_{ab}. (2)

Unlike the constant-leaf DT (:class:`~pbo_core.strategies.dt.DTStrategy`), two points of
one leaf differ in mean and variance once the leaves have slopes, so qEUBO itself ranks
within-leaf and between-leaf pairs on one scale: no separate within-leaf rule is needed.
The acquisition reads only the model's public posterior (``model.posterior``).

Candidates
----------
Finite item sets: every item; the pair with the largest EUBO (2) among the pairs of
distinct items not asked yet (all pairs once every pair was asked), ties drawn with the
strategy's Generator. Continuous boxes, following DT-PBO's leaf sampling
(:meth:`~pbo_core.models.tree.Tree.sample_in_leaf`): ``n_raw`` points spread uniformly
over the leaves, plus in every leaf the corner that maximises the leaf's posterior-mean
utility (the mean is linear inside a leaf, so its maximiser over the leaf's box is a
corner, found one column at a time), plus the current recommendation; the design is the
raw coordinates (every box column is numeric, so ``LinearDesign`` is the identity).

Priors
------
Without earlier respondents every parameter has the model's base prior (levels
``N(0, 1/ratio)``, slopes ``N(0, 1/(slope_ratio s_j^2))`` on the RMS scale of the pair
differences). When a study has earlier respondents, pass ``slope_prior``
(:meth:`LinearLeafDTSurrogate.population_prior` of the pooled fit of those respondents): the
shared slopes then start from the population's slopes with the population's spread, the
hierarchical-Bayes prior of adaptive conjoint designs (e.g. Toubia, Hauser & Simester
2004). The respondent's own tree and leaf levels still come from their own answers.

Methods of the registry: ``dt-linear`` (tree with linear leaves, slopes on every
attribute, shared slopes plus leaf deviations) and ``linear-eubo`` (a single leaf: the
textbook Bayesian linear probit with the same EUBO).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pbo_core.acquisition.eubo import eubo
from pbo_core.data import PreferenceData
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate, SlopePrior
from pbo_core.strategies.base import LoopState, QuerySide, random_query

__all__ = ["LinearLeafStrategy", "pooled_slope_prior"]

#: Relative gap of an EUBO to the best one below which two pairs count as tied.
_TIE_RTOL = 1e-12


def pooled_slope_prior(data: PreferenceData) -> SlopePrior:
    """The population prior of the shared slopes from earlier respondents' comparisons.

    ``data`` holds several respondents (``data.respondent``); they are fitted together as
    a single-leaf Bayesian linear probit with a slope on every attribute, each respondent
    shrunk toward the pooled slopes with the strength chosen by CV over whole tasks
    (:meth:`~pbo_core.models.linear_leaves.LinearLeafDTSurrogate.population_prior`).
    """
    # one leaf: its level never enters a comparison, so the level pull (shrinkage) is moot
    model = LinearLeafDTSurrogate(
        linear_features="all",
        slopes="shared",
        max_depth=0,
        pooling="shrink",
        shrinkage=0.0,
        slope_ratio="cv",
    )
    return model.fit(data).population_prior()


class LinearLeafStrategy:
    """A linear-leaf (or single-leaf linear) probit surrogate with analytic qEUBO.

    Parameters
    ----------
    name
        Method name stored in results.
    slope_prior
        Population prior of the shared slopes (see module docstring), or ``None``.
    n_raw
        Continuous boxes: candidate points sampled over the leaves (spread evenly, at
        least 8 per leaf).
    model
        A ready surrogate instead of ``LinearLeafDTSurrogate(**model_kwargs)``.
    **model_kwargs
        Passed to :class:`~pbo_core.models.linear_leaves.LinearLeafDTSurrogate`; the
        defaults here are ``linear_features="all"`` (a slope on every attribute, one per
        level of a categorical one), ``slope_ratio=1`` and ``max_depth=1`` (two leaves:
        the best depth of the pilot in docs/linear-leaf-pbo.md).
    """

    ties = "latest-winner"

    def __init__(
        self,
        name: str = "dt-linear",
        *,
        slope_prior: SlopePrior | None = None,
        n_raw: int = 256,
        model: LinearLeafDTSurrogate | None = None,
        **model_kwargs: Any,
    ) -> None:
        if n_raw < 2:
            raise ValueError(f"n_raw must be >= 2, got {n_raw}")
        self.name = name
        self.n_raw = int(n_raw)
        if model is None:
            opts: dict[str, Any] = {"linear_features": "all", "slope_ratio": 1.0, "max_depth": 1}
            opts.update(model_kwargs)
            model = LinearLeafDTSurrogate(slope_prior=slope_prior, **opts)
        elif slope_prior is not None or model_kwargs:
            raise TypeError("pass either a ready model or its options, not both")
        self.model = model
        self._fitted = False

    @property
    def n_leaves(self) -> int:
        """Leaves of the current tree."""
        return int(self.model.n_leaves_) if self._fitted else 0

    def fit(self, data: PreferenceData) -> None:
        """Refit the surrogate (before the first comparison: the prior alone)."""
        self.model.fit(data)
        self._fitted = True

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utilities."""
        return self.model.predict(X)

    # ------------------------------------------------------------------ propose
    def propose(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        """The pair with the largest EUBO (2) among the candidates."""
        if state.problem.finite:
            return self._finite(state, rng)
        return self._box(state, rng)

    def _best_pair(
        self,
        X: np.ndarray,
        rng: np.random.Generator,
        asked: set[tuple[int, int]] | None = None,
    ) -> tuple[int, int] | None:
        """Rows ``(i, j)`` of ``X`` with the largest EUBO (distinct rows; unasked first)."""
        mean, cov = self.model.posterior(X)
        v = np.diag(cov)
        ia, ib = np.triu_indices(len(X), k=1)
        keep = np.any(X[ia] != X[ib], axis=1)
        if asked:
            fresh = np.array(
                [(int(a), int(b)) not in asked for a, b in zip(ia, ib, strict=True)], dtype=bool
            )
            if (keep & fresh).any():
                keep &= fresh
        if not keep.any():
            return None
        ia, ib = ia[keep], ib[keep]
        vals = eubo(mean[ia], mean[ib], v[ia], v[ib], cov[ia, ib])
        top = vals.max()
        tied = np.flatnonzero(vals >= top - _TIE_RTOL * max(1.0, abs(top)))
        k = int(tied[rng.integers(tied.size)]) if tied.size > 1 else int(tied[0])
        return int(ia[k]), int(ib[k])

    def _finite(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        pick = self._best_pair(state.data.X, rng, state.asked_pairs)
        return pick if pick is not None else random_query(state, rng)

    def _box(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        cand = self.box_candidates(state, rng)
        rec = state.data.X[state.recommendation]
        C = np.vstack([rec[None, :], cand])
        pick = self._best_pair(C, rng)
        if pick is None:
            return random_query(state, rng)
        sides: list[QuerySide] = [state.recommendation if i == 0 else C[i] for i in pick]
        return sides[0], sides[1]

    def box_candidates(self, state: LoopState, rng: np.random.Generator) -> np.ndarray:
        """Candidate points of a continuous box: leaf samples and mean-maximising corners."""
        tree = self.model.tree_
        schema = state.problem.schema
        isint = schema.is_integer
        m = tree.n_leaves
        per = max(8, -(-self.n_raw // m))
        lower, upper, allowed = tree.boxes
        b = schema.bounds
        out = []
        for leaf in range(m):
            pts = tree.sample_in_leaf(leaf, per, rng, isint)
            node = int(tree.leaf_nodes[leaf])
            lo = np.maximum(lower[node], b[:, 0])
            hi = np.minimum(upper[node], b[:, 1])
            corner = self._mean_corner(pts[0], lo, hi, allowed[node], upper[node] < b[:, 1], state)
            out.append(pts)
            if corner is not None:
                out.append(corner[None, :])
        return np.vstack(out)

    def _mean_corner(
        self,
        x0: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        allowed: np.ndarray,
        open_hi: np.ndarray,
        state: LoopState,
    ) -> np.ndarray | None:
        """The leaf-box corner with the largest posterior mean, one column at a time.

        Inside a leaf the mean is a sum of per-column linear terms (one-hot terms for a
        categorical column), so each column's best value does not depend on the others.
        An open upper side (a split threshold ``x < t``) is approached to within 1e-9.
        """
        schema = state.problem.schema
        isint, iscat, ncat = schema.is_integer, schema.is_categorical, schema.n_categories
        trials, where = [], []
        for c in range(len(x0)):
            if iscat[c]:
                vals = np.flatnonzero((int(allowed[c]) >> np.arange(int(ncat[c]))) & 1)
                vals = vals.astype(float)
            elif isint[c]:
                top = np.floor(hi[c]) if not open_hi[c] else np.ceil(hi[c]) - 1.0
                vals = np.unique([np.ceil(lo[c]), max(np.ceil(lo[c]), top)])
            else:
                top = hi[c] - 1e-9 * max(1.0, hi[c] - lo[c]) if open_hi[c] else hi[c]
                vals = np.array([lo[c], max(lo[c], top)])
            for v in vals:
                x = x0.copy()
                x[c] = v
                trials.append(x)
                where.append((c, v))
        if not trials:
            return None
        mu = self.model.predict(np.asarray(trials))
        best = x0.copy()
        gain = np.full(len(x0), -np.inf)
        for (c, v), u in zip(where, mu, strict=True):
            if u > gain[c]:
                gain[c], best[c] = u, v
        leaf0 = self.model.apply(x0[None, :])[0]
        if self.model.apply(best[None, :])[0] != leaf0:
            return None  # a boundary rounding left the leaf: the samples cover it
        return best
