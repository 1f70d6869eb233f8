"""The choice-model tree: respondent segments by recorded features, a conditional logit in each.

A market-segmentation tree (Kass 1980; Zeileis, Hothorn & Hornik 2008's model-based
recursive partitioning, partykit's ``mob`` with logit leaves): the *respondents* are split
on their recorded features (trip purpose, age, GA card, ...), and every segment (leaf)
holds its own conditional logit (:class:`~pbo_core.models.mnl.ConditionalLogit`, with
alternative-specific constants, no case-specific terms: the segments carry the effect of
the respondent features). A respondent, seen in training or not, is routed by their
features and predicted with their leaf's logit.

Growth
------
A node ``t`` holds the choice situations ``S_t`` of its respondents and its logit's
penalised estimate ``theta_t`` (the conditional logit's likelihood, Eq. 2 of
:mod:`pbo_core.models.mnl`, with its standardised ridge at one strength ``alpha`` for every
node, chosen once by that model's inner CV on all training data). Splitting ``t`` into
``L`` and ``R`` gains the training log-likelihood

.. math::

    G(L, R) = \\ell_L(\\hat\\theta_L) + \\ell_R(\\hat\\theta_R)
              - \\ell_t(\\hat\\theta_t).                       \\qquad (1)

Every candidate split is screened by the one-Newton-step (score) approximation of (1)
from ``theta_t``: with respondent ``r``'s score ``g_r`` and information ``H_r`` at
``theta_t`` (sums over their situations, Eq. 3 of :mod:`pbo_core.models.mnl`), a side
``c`` with score ``g_c = sum_{r in c} g_r - w_c P theta_t`` and information
``H_c = sum_{r in c} H_r + w_c P`` (``P`` the ridge precision, ``w_c`` the side's share of
the situations) gains about

.. math::

    \\tilde G(L, R) = \\tfrac12 \\big( g_L^\\top H_L^{-1} g_L + g_R^\\top H_R^{-1} g_R \\big),
    \\qquad (2)

which prefix sums over respondents sorted by a feature give for every threshold at once.
Candidates: thresholds ``x >= c`` of numeric, ordinal and binary features (cut points at
the midpoints of the distinct values, at most ``max_cuts`` quantile cuts); for a
categorical feature with more than two levels, its levels are ordered by the
one-dimensional statistic

.. math::

    s_k = \\frac{u^\\top C^{-1} g_k}{n_k},                                              \\qquad (3)

the level's mean whitened score (``C C^T = H_t + P``, ``g_k`` the level's score sum,
``n_k`` its situations) along ``u``, the leading eigenvector of
``sum_k C^{-1} g_k g_k^T C^{-T} / n_k`` (the direction in which the levels' parameters
disagree most), and the ordered levels are cut like an ordinal feature (a Breiman-style
ordering, exact when the parameters differ in one direction). The ``n_exact`` best
features by (2) get their children's logits fitted (Newton from ``theta_t``), and the
largest exact gain (1) is the node's split, when both sides keep ``min_respondents_leaf``
respondents. Nodes are split best-first (largest gain first) up to ``max_leaves`` leaves
and depth ``max_depth``.

Pruning
-------
Cost-complexity pruning (Breiman et al. 1984) on the log-likelihood: the subtree ``T``
minimising

.. math::

    -\\sum_{l \\in \\mathrm{leaves}(T)} \\ell_l(\\hat\\theta_l) + \\beta |T|             \\qquad (4)

for the weakest-link sequence ``beta_0 = 0 < beta_1 < ...`` of the full tree. ``beta`` is
chosen by the held-out log-likelihood of whole respondents: the training respondents are
dealt into ``n_folds`` folds (a seeded permutation), a tree is grown on the others and
pruned at each candidate ``beta`` (the geometric means of consecutive ``beta_i``), and
each held-out respondent's choices are scored with the logit of the leaf their features
route them to. The rule ``"1se"`` (default) keeps the smallest tree whose held-out
log-likelihood is within one standard error (of the per-respondent difference) of the
best; ``"max"`` the best. On features unrelated to the choices the root wins: no split.

Cost caps
---------
``max_depth`` 4, ``max_leaves`` 12, ``max_cuts`` 16 cut points per numeric feature,
``n_exact`` 3 features fitted exactly per node, ``n_folds`` 4 pruning folds: at most
``2 max_leaves - 1`` nodes searched per tree, ``(n_folds + 1)`` trees, each node's
screening one pass over its respondents. The caps keep a SwissMetro-sized fit (1,191
respondents, 11 features) far below a minute (the measured time: docs/case-studies.md).

Prediction
----------
``predict(X, respondent=r)``: the systematic utilities of the logit of ``r``'s leaf (any
respondent of the feature table the model was fitted with); ``respondent=None`` or a
respondent without a feature row: the pooled logit ``root_`` (all training data, its
strength by inner CV). :meth:`ChoiceModelTree.assign` routes a feature table.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import sparse

from pbo_core.data import DataValidationError, PreferenceData, Schema
from pbo_core.metrics import competition_rank
from pbo_core.models.base import Estimator
from pbo_core.models.mnl import ConditionalLogit, _fit, _Problem, choice_sets
from pbo_core.rules import describe_path

__all__ = ["ChoiceModelTree", "ChoiceTreeNodes"]


# ----------------------------------------------------------------------------- structures
@dataclass
class _Split:
    column: int
    threshold: float  # threshold columns: right side is x >= threshold
    right: frozenset[int]  # categorical columns: the codes that go right
    categorical: bool
    gain: float
    children: tuple[_Fit, _Fit] | None = None


@dataclass
class _Fit:
    theta: np.ndarray
    loglik: float
    resp: np.ndarray  # respondent codes of the node


@dataclass
class ChoiceTreeNodes:
    """A grown tree's nodes (``left[i] == -1`` for leaves).

    Attributes
    ----------
    left, right : list of int
    split : list of _Split or None
    depth : list of int
    fit : list of _Fit
        The node's penalised estimate, training log-likelihood and respondents.
    """

    left: list[int] = field(default_factory=list)
    right: list[int] = field(default_factory=list)
    split: list[_Split | None] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    fit: list[_Fit] = field(default_factory=list)

    @property
    def max_depth(self) -> int:
        """Depth of the deepest leaf."""
        return max(
            (d for d, lft in zip(self.depth, self.left, strict=True) if lft == -1), default=0
        )

    def leaves(self) -> list[int]:
        """Leaf nodes in node order."""
        return [i for i, lft in enumerate(self.left) if lft == -1]

    def route(self, u: np.ndarray) -> list[int]:
        """Nodes on the path of one encoded feature row ``u``, root first."""
        node, path = 0, [0]
        while self.left[node] != -1:
            sp = self.split[node]
            assert sp is not None
            v = u[sp.column]
            go = int(v) in sp.right if sp.categorical else v >= sp.threshold
            node = self.right[node] if go else self.left[node]
            path.append(node)
        return path


# ----------------------------------------------------------------------------- data
class _Arrays:
    """Design rows of every choice situation, their respondents and per-row outer products."""

    def __init__(self, Z: np.ndarray, start: np.ndarray, chosen: np.ndarray, sit_resp: np.ndarray):
        self.Z = Z
        self.start = start
        self.sizes = np.diff(start)
        self.offset = chosen - start[:-1]
        self.sit_resp = sit_resp
        p = Z.shape[1]
        self.ZZ = (Z[:, :, None] * Z[:, None, :]).reshape(len(Z), p * p)
        self.row_sit = np.repeat(np.arange(len(self.sizes)), self.sizes)

    def subset(self, sit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows, starts and chosen rows of the situations ``sit``."""
        sz = self.sizes[sit]
        st = np.concatenate([[0], np.cumsum(sz)]).astype(np.int64)
        rows = np.repeat(self.start[sit] - st[:-1], sz) + np.arange(st[-1])
        return rows, st, st[:-1] + self.offset[sit]


# ----------------------------------------------------------------------------- the model
class ChoiceModelTree(Estimator):
    """Respondent segments by their features, a conditional logit per segment (Eqs. 1-4).

    Parameters
    ----------
    alternative, reference, exclude
        The leaves' conditional logit: the attribute naming the alternatives (constants per
        level but ``reference``) and attributes left out (:class:`ConditionalLogit`).
    case_specific
        The respondent features the analysis plan names as case-specific variables. Here
        they are the candidate splitting variables (their effect is carried by the
        segments: each leaf has its own constants and slopes); empty: every feature of
        ``user_schema``.
    user_schema
        Schema of the respondent feature table ``data.users`` (``None``: inferred from it).
    alpha
        Ridge strength of every node's logit (``"cv"``: the pooled logit's inner-CV choice).
    max_depth, max_leaves
        Growth caps (defaults 4 and 12).
    min_respondents_leaf
        Fewest respondents in a leaf (default 50).
    max_cuts
        Most cut points tried per numeric feature (quantiles; default 16).
    n_exact
        Features whose best candidate gets its children fitted exactly, per node (default 3).
    n_folds
        Folds of whole respondents for the pruning (default 4; ``0`` or ``1``: no pruning).
    prune_rule
        ``"1se"`` (smallest tree within one standard error of the best held-out
        log-likelihood) or ``"max"``.
    random_state
        Seed or :class:`numpy.random.Generator` of the pruning folds (and the pooled
        logit's inner CV when it is a seed).
    max_iter, tol
        Newton controls of the node fits.

    Attributes
    ----------
    root_ : ConditionalLogit
        The pooled logit (all training data).
    leaf_models_ : list of ConditionalLogit
        One per leaf, fitted on the leaf's respondents at ``alpha_``.
    rules_ : list of str
        Readable rule per leaf (repeated conditions on one feature merged).
    n_leaves_ : int
    tree_ : ChoiceTreeNodes
        The pruned tree (nodes, splits, fits).
    leaf_of_node_ : dict
        Node -> leaf index.
    alpha_ : float
    prune_beta_ : float
        The chosen ``beta`` of Eq. 4.
    cv_loglik_ : ndarray or None
        Held-out log-likelihood per candidate ``beta`` (pruning).
    n_respondents_leaf_ : ndarray
        Training respondents per leaf.
    split_schema_ : Schema
        The features split on.
    """

    def __init__(
        self,
        *,
        alternative: str | None = None,
        reference: str | None = None,
        case_specific: Sequence[str] = (),
        user_schema: Schema | None = None,
        exclude: Sequence[str] = (),
        alpha: float | Literal["cv"] = "cv",
        max_depth: int = 4,
        max_leaves: int = 12,
        min_respondents_leaf: int = 50,
        max_cuts: int = 16,
        n_exact: int = 3,
        n_folds: int = 4,
        prune_rule: Literal["1se", "max"] = "1se",
        random_state: int | np.random.Generator = 0,
        max_iter: int = 50,
        tol: float = 1e-6,
    ) -> None:
        self.alternative = alternative
        self.reference = reference
        self.case_specific = case_specific
        self.user_schema = user_schema
        self.exclude = exclude
        self.alpha = alpha
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.min_respondents_leaf = min_respondents_leaf
        self.max_cuts = max_cuts
        self.n_exact = n_exact
        self.n_folds = n_folds
        self.prune_rule = prune_rule
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol

    # ------------------------------------------------------------------ setup
    def _leaf(self, alpha: float | str) -> ConditionalLogit:
        seed = self.random_state if isinstance(self.random_state, int) else 0
        return ConditionalLogit(
            alternative=self.alternative,
            reference=self.reference,
            exclude=self.exclude,
            alpha=alpha,  # type: ignore[arg-type]
            random_state=seed,
        )

    def _split_schema(self, data: PreferenceData) -> Schema | None:
        users = data.users
        if users is None or len(users) == 0 or data.respondent is None:
            return None
        schema = self.user_schema
        if schema is None:
            schema = Schema.infer(users)
        names = [n for n in (self.case_specific or schema.names) if n in schema.names]
        names = [n for n in names if n in users.columns]
        return Schema(tuple(schema[n] for n in names)) if names else None

    # ------------------------------------------------------------------ fit
    def fit(self, data: PreferenceData) -> ChoiceModelTree:
        """Grow, prune and fit the leaves on ``data`` (its ``users`` hold the features)."""
        rng = (
            self.random_state
            if isinstance(self.random_state, np.random.Generator)
            else np.random.default_rng(self.random_state)
        )
        self.root_ = self._leaf(self.alpha).fit(data)
        self.alpha_ = float(self.root_.alpha_)
        self.n_features_in_ = data.X.shape[1]
        self.split_schema_ = self._split_schema(data)
        self.cv_loglik_: np.ndarray | None = None
        self.prune_beta_ = float("inf")
        self._U_all: dict[Any, np.ndarray] = {}
        self._cache: tuple[Any, dict[int, np.ndarray]] | None = None
        single = ChoiceTreeNodes([-1], [-1], [None], [0], [])
        if self.split_schema_ is None:
            return self._finish(data, single, None)
        ss = self.split_schema_
        users = data.users
        assert users is not None and data.respondent is not None
        enc = ss.encode(users[ss.names], source=f"{data.source} users")
        self._U_all = {ConditionalLogit._key(r): enc[i] for i, r in enumerate(users.index)}
        cs = choice_sets(data)
        resp_ids, sit_resp = np.unique(data.respondent[cs.pair], return_inverse=True)
        missing = [r for r in resp_ids.tolist() if r not in self._U_all]
        if missing:
            raise DataValidationError(
                f"{data.source}: respondent {missing[0]} has no row in the respondent feature table"
            )
        U = np.array([self._U_all[ConditionalLogit._key(r)] for r in resp_ids])
        Z = self.root_._rows(data.X[cs.item], None)
        arr = _Arrays(Z, cs.start, cs.chosen, sit_resp.astype(np.int64))
        R = len(resp_ids)
        grow = _Grower(self, arr, U, ss)
        full = grow.grow(np.arange(R))
        beta = 0.0
        k = min(int(self.n_folds), R)
        if k >= 2 and len(full.leaves()) > 1:
            beta = self._choose_beta(grow, full, R, k, rng)
        self.prune_beta_ = beta
        tree = _prune(full, beta)
        return self._finish(data, tree, resp_ids)

    def _choose_beta(
        self, grow: _Grower, full: ChoiceTreeNodes, R: int, k: int, rng: np.random.Generator
    ) -> float:
        """Eq. 4's ``beta`` by the held-out log-likelihood of whole respondents."""
        betas = _weakest_links(full)
        cands = [0.0, *[float(np.sqrt(a * b)) for a, b in itertools.pairwise(betas)]]
        cands = [c for c in cands if np.isfinite(c)] + [float("inf")]
        fold = rng.permutation(R) % k
        held = np.zeros((len(cands), R))
        for f in range(k):
            train, test = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
            tree = grow.grow(train)
            node_ll = grow.heldout(tree, test)  # (nodes, R) held-out ll through each node
            for c, b in enumerate(cands):
                for leaf in _prune(tree, b).leaves():
                    held[c, test] += node_ll[leaf, test]
        total = held.sum(axis=1)
        self.cv_loglik_ = total
        best = int(np.argmax(total))
        pick = best
        if self.prune_rule == "1se":
            for c in range(len(cands) - 1, -1, -1):  # simplest first
                se = float(np.std(held[c] - held[best], ddof=1) * np.sqrt(R)) if R > 1 else 0.0
                if total[c] >= total[best] - se:
                    pick = c
                    break
        elif self.prune_rule != "max":
            raise ValueError(f"prune_rule must be '1se' or 'max', got {self.prune_rule!r}")
        return cands[pick]

    def _finish(
        self, data: PreferenceData, tree: ChoiceTreeNodes, resp_ids: np.ndarray | None
    ) -> ChoiceModelTree:
        leaves = tree.leaves()
        self.tree_ = tree
        self.leaf_of_node_ = {n: i for i, n in enumerate(leaves)}
        self.n_leaves_ = len(leaves)
        if resp_ids is None or len(leaves) == 1:
            self.leaf_models_ = [self.root_]
            n_r = 0 if data.respondent is None else len(np.unique(data.respondent))
            self.n_respondents_leaf_ = np.array([n_r])
        else:
            self.leaf_models_ = []
            counts = []
            for n in leaves:
                ids = resp_ids[tree.fit[n].resp]
                counts.append(len(ids))
                sub = data.select_pairs(np.isin(data.respondent, ids))
                self.leaf_models_.append(self._leaf(self.alpha_).fit(sub))
            self.n_respondents_leaf_ = np.array(counts)
        self.rules_ = [self._rule(n) for n in leaves]
        return self

    # ------------------------------------------------------------------ rules
    def _rule(self, leaf: int) -> str:
        """Readable rule of ``leaf``: one condition per feature, repeated conditions merged
        (:func:`pbo_core.rules.describe_path`)."""
        tree, ss = self.tree_, self.split_schema_
        if ss is None or leaf == 0:
            return "all respondents"
        parent = {
            c: (p, side)
            for p in range(len(tree.left))
            if tree.left[p] != -1
            for c, side in ((tree.left[p], False), (tree.right[p], True))
        }
        path: list[tuple[int, bool]] = []
        node = leaf
        while node in parent:
            p, side = parent[node]
            path.append((p, side))
            node = p
        steps = []
        for p, right in reversed(path):
            sp = tree.split[p]
            assert sp is not None
            steps.append((sp.column, sp.threshold, sp.right, right))
        parts = describe_path(ss, steps)
        return " AND ".join(parts)

    # ------------------------------------------------------------------ prediction
    def _require_fitted(self) -> None:
        if not hasattr(self, "leaf_models_"):
            raise RuntimeError("ChoiceModelTree is not fitted; call fit(data) first")

    def assign(self, users: pd.DataFrame) -> np.ndarray:
        """Leaf index of every row of a respondent feature table (labels or codes)."""
        self._require_fitted()
        if self.split_schema_ is None or self.n_leaves_ == 1:
            return np.zeros(len(users), dtype=np.int64)
        ss = self.split_schema_
        enc = ss.encode(users[ss.names], source="respondent features")
        return np.array([self.leaf_of_node_[self.tree_.route(u)[-1]] for u in enc])

    def leaf_of(self, respondent: Any) -> int | None:
        """The leaf ``respondent`` is routed to (``None``: no feature row; the pooled logit)."""
        self._require_fitted()
        if respondent is None or self.n_leaves_ == 1:
            return 0 if self.n_leaves_ == 1 and respondent is not None else None
        u = self._U_all.get(ConditionalLogit._key(respondent))
        if u is None:
            return None
        return self.leaf_of_node_[self.tree_.route(u)[-1]]

    def model_for(self, respondent: Any = None) -> ConditionalLogit:
        """The logit that predicts ``respondent`` (their leaf's, else the pooled one)."""
        leaf = self.leaf_of(respondent)
        return self.root_ if leaf is None else self.leaf_models_[leaf]

    def predict(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Systematic utilities ``(n,)`` of items ``X`` under ``respondent``'s leaf logit."""
        self._require_fitted()
        leaf = self.leaf_of(respondent)
        key = -1 if leaf is None else leaf
        if self._cache is None or self._cache[0] is not X:
            self._cache = (X, {})
        memo = self._cache[1]
        if key not in memo:
            memo[key] = (self.root_ if leaf is None else self.leaf_models_[leaf]).predict(X)
        return memo[key]

    def posterior(self, X: np.ndarray, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of the utilities under ``respondent``'s leaf logit."""
        self._require_fitted()
        return self.model_for(respondent).posterior(X)

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray, respondent: Any = None) -> np.ndarray:
        """``P(a > b)`` of paired rows under ``respondent``'s leaf logit."""
        self._require_fitted()
        return self.model_for(respondent).prob_prefer(Xa, Xb)

    def rank(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Competition ranks (1 = best) by utility."""
        return competition_rank(self.predict(X, respondent))

    def leaf_table(self) -> pd.DataFrame:
        """One row per leaf: ``leaf``, ``rule``, ``respondents``, ``choices``, ``loglik``
        and the leaf logit's coefficients (one column each)."""
        self._require_fitted()
        rows = []
        for i, (m, rule) in enumerate(zip(self.leaf_models_, self.rules_, strict=True)):
            row = {
                "leaf": i,
                "rule": rule,
                "respondents": int(self.n_respondents_leaf_[i]),
                "choices": m.n_situations_,
                "loglik": m.loglik_,
            }
            row.update(zip(m.feature_names_, m.coef_.tolist(), strict=True))
            rows.append(row)
        return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- growth
class _Grower:
    """Best-first growth of Eq. 1 with the screening of Eqs. 2-3 on fixed arrays."""

    def __init__(self, model: ChoiceModelTree, arr: _Arrays, U: np.ndarray, schema: Schema):
        self.m = model
        self.arr = arr
        self.U = U
        self.schema = schema
        self.R = len(U)
        self.p = arr.Z.shape[1]
        self.sit_of_resp = np.split(
            np.argsort(arr.sit_resp, kind="stable"),
            np.cumsum(np.bincount(arr.sit_resp, minlength=self.R))[:-1],
        )
        self.nsit = np.bincount(arr.sit_resp, minlength=self.R).astype(float)

    # -- node fits
    def _sits(self, resp: np.ndarray) -> np.ndarray:
        return (
            np.sort(np.concatenate([self.sit_of_resp[r] for r in resp]))
            if len(resp)
            else (np.zeros(0, dtype=np.int64))
        )

    def _problem(self, sit: np.ndarray) -> tuple[_Problem, np.ndarray, np.ndarray]:
        rows, st, ch = self.arr.subset(sit)
        Z = self.arr.Z[rows]
        dev = Z - Z[np.repeat(ch, np.diff(st))]
        scale = np.sqrt((dev * dev).sum(axis=0) / max(1, len(Z) - len(sit)))
        scale = np.where(scale > 1e-12, scale, 1.0)
        return _Problem(Z, st, ch, np.ones(len(sit))), rows, self.m.alpha_ * scale**2

    def fit(self, resp: np.ndarray, theta0: np.ndarray) -> _Fit:
        sit = self._sits(resp)
        prob, _, prec = self._problem(sit)
        theta, _, _ = _fit(prob, prec, theta0, self.m.max_iter, self.m.tol, False)
        return _Fit(theta, float(prob.loglik(theta).sum()), resp)

    # -- screening (Eq. 2)
    def _per_respondent(self, fit: _Fit) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Scores ``(n, p)``, informations ``(n, p, p)`` of the node's respondents at its
        estimate, and the penalty precision."""
        sit = self._sits(fit.resp)
        prob, rows, prec = self._problem(sit)
        P, scores, _ = prob.terms(fit.theta)
        p, n = self.p, len(fit.resp)
        local = np.full(self.R, -1, dtype=np.int64)
        local[fit.resp] = np.arange(n)
        sr = local[self.arr.sit_resp[sit]]
        rr = np.repeat(sr, np.diff(prob.start))
        g = np.zeros((n, p))
        np.add.at(g, sr, scores)
        zbar = prob.Z[prob.chosen] - scores
        Mr = sparse.csr_matrix((P, (rr, np.arange(len(rr)))), shape=(n, len(rr)))
        Ms = sparse.csr_matrix((np.ones(len(sr)), (sr, np.arange(len(sr)))), shape=(n, len(sr)))
        zz = (zbar[:, :, None] * zbar[:, None, :]).reshape(len(sr), p * p)
        H = np.asarray(Mr @ self.arr.ZZ[rows]) - np.asarray(Ms @ zz)
        return g, H.reshape(n, p, p), prec

    def _side_gain(
        self, G: np.ndarray, H: np.ndarray, w: np.ndarray, pen_g: np.ndarray, prec: np.ndarray
    ) -> np.ndarray:
        g = G - w[:, None] * pen_g[None, :]
        A = H + w[:, None, None] * np.diag(prec)[None] + 1e-9 * np.eye(self.p)[None]
        try:
            x = np.linalg.solve(A, g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            x = np.einsum("kij,kj->ki", np.linalg.pinv(A, hermitian=True), g)
        return 0.5 * np.einsum("ki,ki->k", g, x)

    def _scan(
        self,
        bins: np.ndarray,
        nb: int,
        g: np.ndarray,
        H: np.ndarray,
        w_r: np.ndarray,
        pen_g: np.ndarray,
        prec: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Approximate gains (2) of the cuts between consecutive bins ``0..nb-1``, and
        the left side's respondent counts."""
        p = self.p
        Gb = np.zeros((nb, p))
        Hb = np.zeros((nb, p, p))
        Wb = np.zeros(nb)
        Nb = np.bincount(bins, minlength=nb)
        np.add.at(Gb, bins, g)
        np.add.at(Hb, bins, H)
        np.add.at(Wb, bins, w_r)
        GL, HL, WL = np.cumsum(Gb, 0)[:-1], np.cumsum(Hb, 0)[:-1], np.cumsum(Wb)[:-1]
        NL = np.cumsum(Nb)[:-1]
        gain = self._side_gain(GL, HL, WL, pen_g, prec) + self._side_gain(
            Gb.sum(0) - GL, Hb.sum(0) - HL, Wb.sum() - WL, pen_g, prec
        )
        return gain, NL

    def best_split(self, fit: _Fit, depth: int) -> _Split | None:
        m = self.m
        n = len(fit.resp)
        mn = int(m.min_respondents_leaf)
        if depth >= m.max_depth or n < 2 * max(mn, 1):
            return None
        g, H, prec = self._per_respondent(fit)
        w_r = self.nsit[fit.resp] / self.nsit[fit.resp].sum()
        pen_g = prec * fit.theta
        Ht = H.sum(0) + np.diag(prec)
        cands: list[tuple[float, _Split]] = []
        for c in range(self.U.shape[1]):
            x = self.U[fit.resp, c]
            if self.schema.is_categorical[c]:
                codes = x.astype(np.int64)
                levels, inv = np.unique(codes, return_inverse=True)
                if len(levels) < 2:
                    continue
                if len(levels) > 2:
                    order = self._order_levels(inv, len(levels), g, Ht)
                    rank = np.empty(len(levels), dtype=np.int64)
                    rank[order] = np.arange(len(levels))
                    bins = rank[inv]
                else:
                    order, bins = np.arange(2), inv
                gain, NL = self._scan(bins, len(levels), g, H, w_r, pen_g, prec)
                ok = (NL >= mn) & (n - NL >= mn)
                if not ok.any():
                    continue
                gain = np.where(ok, gain, -np.inf)
                k = int(np.argmax(gain))
                right = frozenset(int(v) for v in levels[order[k + 1 :]])
                cands.append((float(gain[k]), _Split(c, np.nan, right, True, float(gain[k]))))
            else:
                uniq = np.unique(x)
                if len(uniq) < 2:
                    continue
                cuts = (uniq[1:] + uniq[:-1]) / 2.0
                if len(cuts) > m.max_cuts:
                    q = np.quantile(x, np.linspace(0, 1, m.max_cuts + 2)[1:-1])
                    cuts = np.unique(cuts[np.clip(np.searchsorted(cuts, q), 0, len(cuts) - 1)])
                bins = np.searchsorted(cuts, x, side="right")
                gain, NL = self._scan(bins, len(cuts) + 1, g, H, w_r, pen_g, prec)
                ok = (NL >= mn) & (n - NL >= mn)
                if not ok.any():
                    continue
                gain = np.where(ok, gain, -np.inf)
                k = int(np.argmax(gain))
                sp = _Split(c, float(cuts[k]), frozenset(), False, float(gain[k]))
                cands.append((float(gain[k]), sp))
        if not cands:
            return None
        cands.sort(key=lambda t: -t[0])
        best: _Split | None = None
        for _, sp in cands[: max(1, int(m.n_exact))]:
            go = self._goes_right(sp, fit.resp)
            lr, rr = fit.resp[~go], fit.resp[go]
            a, b = self.fit(lr, fit.theta), self.fit(rr, fit.theta)
            sp.gain = a.loglik + b.loglik - fit.loglik
            sp.children = (a, b)
            if sp.gain > 1e-9 and (best is None or sp.gain > best.gain):
                best = sp
        return best

    def _order_levels(self, inv: np.ndarray, L: int, g: np.ndarray, Ht: np.ndarray) -> np.ndarray:
        """Levels ordered by the statistic (3)."""
        Gk = np.zeros((L, self.p))
        np.add.at(Gk, inv, g)
        nk = np.maximum(np.bincount(inv, minlength=L).astype(float), 1.0)
        try:
            C = np.linalg.cholesky(Ht + 1e-9 * np.eye(self.p))
            A = np.linalg.solve(C, Gk.T).T  # (L, p) whitened score sums
        except np.linalg.LinAlgError:
            A = Gk
        M = (A / nk[:, None]).T @ A
        _, vec = np.linalg.eigh(M)
        s = (A @ vec[:, -1]) / nk
        return np.argsort(s, kind="stable")

    def _goes_right(self, sp: _Split, resp: np.ndarray) -> np.ndarray:
        x = self.U[resp, sp.column]
        if sp.categorical:
            return np.isin(x.astype(np.int64), list(sp.right))
        return x >= sp.threshold

    # -- best-first growth
    def grow(self, resp: np.ndarray) -> ChoiceTreeNodes:
        tree = ChoiceTreeNodes()
        root = self.fit(resp, np.zeros(self.p))

        def new(f: _Fit, depth: int) -> int:
            tree.left.append(-1)
            tree.right.append(-1)
            tree.split.append(None)
            tree.depth.append(depth)
            tree.fit.append(f)
            return len(tree.left) - 1

        heap: list[tuple[float, int, _Split]] = []

        def consider(node: int) -> None:
            sp = self.best_split(tree.fit[node], tree.depth[node])
            if sp is not None:
                heapq.heappush(heap, (-sp.gain, node, sp))

        consider(new(root, 0))
        n_leaves = 1
        while heap and n_leaves < self.m.max_leaves:
            _, node, sp = heapq.heappop(heap)
            assert sp.children is not None
            a, b = sp.children
            sp.children = None
            tree.split[node] = sp
            li, ri = new(a, tree.depth[node] + 1), new(b, tree.depth[node] + 1)
            tree.left[node], tree.right[node] = li, ri
            n_leaves += 1
            consider(li)
            consider(ri)
        return tree

    def heldout(self, tree: ChoiceTreeNodes, test: np.ndarray) -> np.ndarray:
        """``(nodes, R)``: held-out log-likelihood of respondents ``test`` at every node on
        their path (0 elsewhere)."""
        out = np.zeros((len(tree.left), self.R))
        paths: dict[int, list[int]] = {}
        for r in test.tolist():
            for node in tree.route(self.U[r]):
                paths.setdefault(node, []).append(r)
        for node, rs in paths.items():
            resp = np.asarray(rs, dtype=np.int64)
            sit = self._sits(resp)
            prob, _, _ = self._problem(sit)
            ll = prob.loglik(tree.fit[node].theta)
            np.add.at(out[node], self.arr.sit_resp[sit], ll)
        return out


# ----------------------------------------------------------------------------- pruning
def _subtree_leaves(tree: ChoiceTreeNodes, node: int) -> list[int]:
    if tree.left[node] == -1:
        return [node]
    return _subtree_leaves(tree, tree.left[node]) + _subtree_leaves(tree, tree.right[node])


def _weakest_links(tree: ChoiceTreeNodes) -> list[float]:
    """The increasing ``beta`` sequence of Eq. 4 (weakest-link pruning), ``0`` first."""
    t = ChoiceTreeNodes(list(tree.left), list(tree.right), list(tree.split), tree.depth, tree.fit)
    out = [0.0]
    while t.left[0] != -1:
        best, links = np.inf, []
        for node in range(len(t.left)):
            if t.left[node] == -1 or not _reachable(t, node):
                continue
            leaves = _subtree_leaves(t, node)
            drop = -t.fit[node].loglik + sum(t.fit[leaf].loglik for leaf in leaves)
            g = drop / (len(leaves) - 1)
            if g < best - 1e-12:
                best, links = g, [node]
            elif abs(g - best) <= 1e-12:
                links.append(node)
        for node in links:
            t.left[node] = t.right[node] = -1
        out.append(max(best, out[-1]))
    return out


def _reachable(tree: ChoiceTreeNodes, node: int) -> bool:
    return node in _nodes_from(tree, 0)


def _nodes_from(tree: ChoiceTreeNodes, node: int) -> set[int]:
    if tree.left[node] == -1:
        return {node}
    return {node} | _nodes_from(tree, tree.left[node]) | _nodes_from(tree, tree.right[node])


def _prune(tree: ChoiceTreeNodes, beta: float) -> ChoiceTreeNodes:
    """The subtree minimising Eq. 4 at ``beta`` (unreachable nodes become leaves, unused)."""
    left, right, split = list(tree.left), list(tree.right), list(tree.split)

    def cost(node: int) -> float:
        own = -tree.fit[node].loglik + beta
        if tree.left[node] == -1:
            return own
        below = cost(tree.left[node]) + cost(tree.right[node])
        if own <= below:
            left[node] = right[node] = -1
            split[node] = None
            return own
        return below

    cost(0)
    keep = _nodes_from(ChoiceTreeNodes(left, right, split, tree.depth, tree.fit), 0)
    # renumber the kept nodes in their original order
    order = sorted(keep)
    new = {n: i for i, n in enumerate(order)}
    return ChoiceTreeNodes(
        [new[left[n]] if left[n] != -1 else -1 for n in order],
        [new[right[n]] if right[n] != -1 else -1 for n in order],
        [split[n] for n in order],
        [tree.depth[n] for n in order],
        [tree.fit[n] for n in order],
    )
