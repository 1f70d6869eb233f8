"""The choice-model tree: respondent segments by recorded features, a conditional logit in each.

A market-segmentation tree (Kass 1980; Zeileis, Hothorn & Hornik 2008's model-based
recursive partitioning, partykit's ``mob`` with logit leaves): the *respondents* are split
on their recorded features (trip purpose, age, GA card, ...), and every segment (leaf)
holds its own conditional logit (:class:`~pbo_core.models.mnl.ConditionalLogit`): the
analysis plan's baseline ``mnl`` with its alternative-specific constants and attribute
slopes, **shrunk toward its parent segment's logit** (a hierarchical prior, as in Bayesian
model-based trees). A respondent, seen in training or not, is routed by their features and
predicted with their leaf's logit.

What a segment's logit holds
----------------------------
``leaf_terms="attributes"`` (default): the constants and the attribute slopes; the
respondent features enter through the splits, as in the published market-segmentation
trees (Aouad, Elmachtoub, Ferreira & McNellis 2023; code rtm2130/MST) and in ``mob``,
where the partitioning variables are not regressors of the segment models.
``leaf_terms="all"``: the plan's case-specific variables too (every respondent feature of
the plan in every segment's utility as well as in its splits; the published trees'
"customer features also in the leaves"). With the plan's respondent features in every
segment the segments refit dozens of coefficients each (76 on SwissMetro), the root
already holds the features' main effects, and on held-out *respondents* no split pays
(docs/case-studies.md); with other tasks of the same respondents held out it is the most
accurate tree.

The root
--------
The root is the baseline with the segments' terms: the conditional logit with the plan's
parameters (the maximum likelihood, or the penalty the plan asks for or the baseline
needs) fitted on all training data (``root_``); with ``leaf_terms="all"`` it is ``mnl``'s
own fit, bit for bit. When no split earns its place the tree *is* that fit.

Segments shrunk toward their parent
-----------------------------------
Node ``t`` holds the choice situations ``S_t`` of its respondents and an estimate
``theta_t``. A child ``c`` of ``t`` maximises its log-likelihood (Eq. 2 of
:mod:`pbo_core.models.mnl`) under a Gaussian prior centred on its parent,

.. math::

    \\hat\\theta_c = \\arg\\max_\\theta \\; \\ell_c(\\theta)
        - \\tfrac{\\lambda}{2} \\sum_j s_j^2 (\\theta_j - \\hat\\theta_{t,j})^2,     \\qquad (1)

with ``s_j^2`` the root's Fisher information of coefficient ``j`` per choice situation
(``segment_scale_``: the diagonal of Eq. 3 of :mod:`pbo_core.models.mnl` at the root's
estimate over the number of situations), so ``lambda`` counts the choice situations of
prior weight in every coefficient's own units: a segment of ``n`` situations moves about
``n / (n + lambda)`` of the way from its parent's estimate to its own. (The column scales
of ``mnl``'s ridge, root mean squares of the deviations from the chosen alternative, are
about three times that information on three alternatives, and made a ``lambda`` of 1,000
weigh like 3,000 situations.) ``lambda`` (the ``shrinkage``) is chosen with the pruning
(below) among :data:`SHRINKAGES`.

Growth
------
Splitting ``t`` into ``L`` and ``R`` gains the penalised log-likelihood

.. math::

    G(L, R) = \\sum_{c \\in \\{L, R\\}} \\Big[\\ell_c(\\hat\\theta_c)
              - \\tfrac{\\lambda}{2} \\|S(\\hat\\theta_c - \\hat\\theta_t)\\|^2\\Big]
              - \\ell_t(\\hat\\theta_t) \\; \\ge 0.                               \\qquad (2)

Every candidate split is screened by the score test of (2) at ``theta_t`` (one Newton
step, partykit's fluctuation idea on the scores): with respondent ``r``'s score ``g_r``
and information ``H_r`` at ``theta_t`` (sums over their situations, Eq. 3 of
:mod:`pbo_core.models.mnl`), a side ``c`` gains about

.. math::

    \\tilde G_c = \\tfrac12\\, g_c^\\top (H_c + \\lambda S^2)^{-1} g_c, \\qquad
    g_c = \\sum_{r \\in c} g_r, \\; H_c = \\sum_{r \\in c} H_r,                   \\qquad (3)

which prefix sums over respondents sorted by a feature give for every threshold at once.
Candidates: thresholds ``x >= c`` of numeric, ordinal and binary features (cut points at
the midpoints of the distinct values, at most ``max_cuts`` quantile cuts); a categorical
feature with more than two levels has its levels ordered by the one-dimensional statistic

.. math::

    s_k = \\frac{u^\\top C^{-1} g_k}{n_k},                                              \\qquad (4)

the level's mean whitened score (``C C^T = H_t + lambda S^2``, ``g_k`` the level's score
sum, ``n_k`` its situations) along ``u``, the leading eigenvector of
``sum_k C^{-1} g_k g_k^T C^{-T} / n_k``, and the ordered levels are cut like an ordinal
feature (a Breiman-style ordering). The ``n_exact`` best features by (3) get their
children fitted (Newton from ``theta_t``), and the largest exact gain (2) is the node's
split, when both sides keep ``min_respondents_leaf`` respondents. Nodes are split
best-first (largest gain first) up to ``max_leaves`` leaves and depth ``max_depth``.

Pruning and the shrinkage
-------------------------
Cost-complexity pruning (Breiman et al. 1984) on the penalised log-likelihood: the subtree
``T`` minimising

.. math::

    -\\sum_{l \\in \\mathrm{leaves}(T)} \\ell_l(\\hat\\theta_l)
    + \\sum_{n \\in T \\setminus \\{0\\}} \\tfrac{\\lambda}{2}
      \\|S(\\hat\\theta_n - \\hat\\theta_{\\mathrm{pa}(n)})\\|^2 + \\beta |T|       \\qquad (5)

for the weakest-link sequence ``beta_0 = 0 < beta_1 < ...`` of the full tree. ``lambda``
and ``beta`` are chosen together by the held-out log-likelihood of whole respondents
(training respondents only): the respondents are dealt into ``n_folds`` folds (a seeded
permutation); for every ``lambda`` a tree is grown on the others and pruned at each
candidate ``beta`` (the geometric means of consecutive ``beta_i`` of that ``lambda``'s
full tree), and each held-out respondent's choices are scored with the logit of the node
their features route them to. ``lambda`` and ``beta`` are chosen together:
``prune_rule="1.5se"`` (default) keeps the smallest pruned tree, over every ``lambda``,
whose held-out log-likelihood is within 1.5 standard errors (of the per-respondent
difference) of the best pair's; ``"1se"`` and ``"2se"`` within one and two, ``"max"`` the
best pair. On features unrelated to the choices the root wins: no split, the baseline's
fit. The best of about twenty shrinkages and subtrees is optimistic on noise: on 41
simulated studies without segments (400 respondents, 10 choices each; the simulation of
``tests/pbo_core/models/test_choice_tree.py``) the best subtree beat the root by at most
1.32 standard errors of their paired difference (two beat it by more than one, so the
one-standard-error rule would have split on noise), while on Sushi B, where users'
segments had raised held-out pairwise accuracy significantly (by 0.4 points, with the
earlier one-standard-error tree), the best subtree beat the root by 1.8 (so two standard
errors would have kept the root): the threshold in between is the default.

With a validation set (``fit(data, validation=...)``: an analyst's held-out choices, other
tasks of the training respondents or other respondents) no fold is refitted: for every
``lambda`` the tree grown on all training data is pruned at each candidate ``beta``, and
the pair with the best validation log-likelihood wins (``prune_rule`` as above, the
standard error over the validation respondents). The growth and the segments' fits never
see the validation choices.

Why the grown tree needs the pruning
------------------------------------
The gains (2) count every choice as independent evidence, but a respondent's choices are
alike: a split that isolates a few respondents with idiosyncratic tastes gains many nats in
training and nothing on new respondents. Held out by whole respondents (the folds above,
or a validation set of other respondents) the pruning removes such splits; held out by
tasks of the same respondents, the same splits carry over (the respondents are known), and
the pruning keeps deep trees.

Cost caps
---------
``max_depth`` 4, ``max_leaves`` 12, ``max_cuts`` 16 cut points per numeric feature,
``n_exact`` 3 features fitted exactly per node, ``n_folds`` 4 pruning folds, 3 shrinkages:
at most ``2 max_leaves - 1`` nodes searched per tree, ``3 (n_folds + 1)`` trees, each
node's screening one pass over its respondents (the measured time: docs/case-studies.md).

Prediction
----------
``predict(X, respondent=r)``: the systematic utilities of the logit of ``r``'s leaf, with
``r``'s case-specific variables (any respondent of the feature table the model was fitted
with); ``respondent=None`` or a respondent without a feature row: the root (the
baseline's fit). :meth:`ChoiceModelTree.assign` routes a feature table.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from scipy import sparse

from pbo_core.data import DataValidationError, PreferenceData, Schema
from pbo_core.metrics import competition_rank
from pbo_core.models.base import (
    COUNT,
    NAMES,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    RANDOM_STATE,
    ArrayOf,
    Estimator,
    Options,
)
from pbo_core.models.mnl import (
    CV_TOL,
    DESIGN_CONSTRAINTS,
    ConditionalLogit,
    _CaseSpecific,
    _fit,
    _lse,
    _Problem,
    choice_sets,
)
from pbo_core.plan import MAX_CASE_SPECIFIC_LEVELS
from pbo_core.rules import describe_path

__all__ = ["LEAF_TERMS", "SHRINKAGES", "ChoiceModelTree", "ChoiceTreeNodes"]

#: The shrinkages ``lambda`` of Eq. 1 the pruning's cross-validation chooses from (prior
#: weight of a segment's parent, in choice situations): close to the parent, between,
#: nearly free.
SHRINKAGES: tuple[float, ...] = (1000.0, 100.0, 10.0)
#: What every segment's logit holds (``leaf_terms``): the alternatives' constants and the
#: attributes' slopes (the respondent features enter through the splits), or all the
#: plan's terms (the case-specific variables too: respondent features in every segment's
#: utility as well as in its splits).
LEAF_TERMS: tuple[str, ...] = ("attributes", "all")
#: Standard errors of the paired held-out difference a simpler tree may fall short of the
#: best by (``prune_rule``; ``"max"``: none).
PRUNE_RULES: dict[str, float] = {"1.5se": 1.5, "1se": 1.0, "2se": 2.0, "max": 0.0}


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
    pen: float = 0.0  # the prior's penalty toward the parent's estimate (Eq. 1)


@dataclass
class ChoiceTreeNodes:
    """A grown tree's nodes (``left[i] == -1`` for leaves).

    Attributes
    ----------
    left, right : list of int
    split : list of _Split or None
    depth : list of int
    fit : list of _Fit
        The node's estimate, training log-likelihood, respondents and penalty (Eq. 1).
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

    def parents(self) -> dict[int, tuple[int, bool]]:
        """Child node -> (parent, is the right child)."""
        return {
            c: (p, side)
            for p in range(len(self.left))
            if self.left[p] != -1
            for c, side in ((self.left[p], False), (self.right[p], True))
        }

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
    """Design rows of every choice situation and their respondents; ``case``: where the
    rows' case-specific columns come from (the non-reference alternative of every row,
    ``-1`` for the reference, and the respondents' case-specific rows ``(R, q)``), so the
    node fits sum their Hessian blocks per respondent (:class:`_CaseSpecific`)."""

    def __init__(
        self,
        Z: np.ndarray,
        start: np.ndarray,
        chosen: np.ndarray,
        sit_resp: np.ndarray,
        case: tuple[np.ndarray, np.ndarray, int] | None = None,
    ):
        self.Z = Z
        self.start = start
        self.sizes = np.diff(start)
        self.offset = chosen - start[:-1]
        self.sit_resp = sit_resp
        self.case = case

    def problem(self, sit: np.ndarray) -> _Problem:
        """The unit-weight likelihood of the situations ``sit``."""
        rows, st, ch = self.subset(sit)
        layout = None
        if self.case is not None:
            alt, Ucase, p1 = self.case
            who_ids, who = np.unique(self.sit_resp[sit], return_inverse=True)
            layout = _CaseSpecific(p1=p1, alt=alt[rows], who=who.astype(np.int64), U=Ucase[who_ids])
        return _Problem(self.Z[rows], st, ch, np.ones(len(sit)), layout)

    def subset(self, sit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows, starts and chosen rows of the situations ``sit``."""
        sz = self.sizes[sit]
        st = np.concatenate([[0], np.cumsum(sz)]).astype(np.int64)
        rows = np.repeat(self.start[sit] - st[:-1], sz) + np.arange(st[-1])
        return rows, st, st[:-1] + self.offset[sit]


# ----------------------------------------------------------------------------- the model
class ChoiceModelTree(Estimator):
    """Respondent segments by their features, a conditional logit per segment shrunk toward
    its parent's (Eqs. 1-5); the root is the plan's baseline ``mnl``.

    Parameters
    ----------
    alternative, reference, case_specific, user_schema, exclude
        The conditional logit of the root and of every segment, as the plan's baseline
        takes them (:class:`ConditionalLogit`): the attribute naming the alternatives
        (constants per level but ``reference``), the respondent features entering every
        non-reference alternative's utility (case-specific variables; used with
        ``leaf_terms="all"`` only), the schema of the respondent feature table
        ``data.users`` (``None``: inferred from it) and attributes left out.
    split_features
        The respondent features the tree may split on (default: every feature of the
        respondent feature table but categorical ones with more than
        :data:`~pbo_core.plan.MAX_CASE_SPECIFIC_LEVELS` levels, the plan's rule for
        case-specific variables: 26 cantons or 47 prefectures ordered by their scores
        would find a split in noise).
    leaf_terms
        What every segment's logit holds: ``"attributes"`` (default: constants and
        attribute slopes; the respondent features enter through the splits) or ``"all"``
        (the case-specific variables too). See :data:`LEAF_TERMS`.
    alpha
        The root's ridge strength, as the baseline takes it (``0``, default: maximum
        likelihood, penalised only when not identified; ``"cv"``: by inner CV).
    shrinkage
        ``lambda`` of Eq. 1 (``"cv"``: chosen among ``shrinkages`` with the pruning).
    shrinkages
        The grid of ``"cv"`` (default :data:`SHRINKAGES`).
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
        ``"1.5se"`` (default: the smallest tree within 1.5 standard errors of the best
        held-out log-likelihood), ``"1se"`` or ``"2se"`` (within one or two), ``"max"``
        (the best).
    random_state
        Seed or :class:`numpy.random.Generator` of the pruning folds (and the root's inner
        CV when it is a seed).
    max_iter, tol
        Newton controls of the node fits.

    Attributes
    ----------
    root_ : ConditionalLogit
        The baseline's fit (with the segments' terms) on all training data: the root.
    leaf_models_ : list of ConditionalLogit
        One per leaf: its segment's logit, shrunk toward its parent's estimate (``center``)
        at ``shrinkage_`` (the root itself when the tree has one leaf).
    rules_ : list of str
        Readable rule per leaf (repeated conditions on one feature merged).
    n_leaves_ : int
    tree_ : ChoiceTreeNodes
        The pruned tree (nodes, splits, fits).
    leaf_of_node_ : dict
        Node -> leaf index.
    alpha_, shrinkage_ : float
    prune_beta_ : float
        The chosen ``beta`` of Eq. 5.
    cv_loglik_ : ndarray or None
        Held-out log-likelihood per candidate ``beta`` at the chosen shrinkage.
    cv_shrinkage_ : dict
        Best held-out log-likelihood per shrinkage tried.
    n_respondents_leaf_ : ndarray
        Training respondents per leaf.
    split_schema_ : Schema
        The features split on.
    """

    #: Its utilities are its segments' logits: probabilities are their softmax.
    logit_utilities = True

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **DESIGN_CONSTRAINTS,
        "split_features": [NAMES],
        "alpha": [NON_NEGATIVE, Options("cv")],
        "shrinkage": [POSITIVE, Options("cv")],
        "shrinkages": [ArrayOf(POSITIVE), None],
        "max_depth": [NON_NEGATIVE_INT],
        "max_leaves": [COUNT],
        "min_respondents_leaf": [COUNT],
        "max_cuts": [COUNT],
        "n_exact": [COUNT],
        "n_folds": [NON_NEGATIVE_INT],
        "prune_rule": [Options(*PRUNE_RULES)],
        "leaf_terms": [Options(*LEAF_TERMS)],
        "random_state": list(RANDOM_STATE),
        "max_iter": [COUNT],
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
        split_features: Sequence[str] = (),
        leaf_terms: Literal["attributes", "all"] = "attributes",
        alpha: float | Literal["cv"] = 0.0,
        shrinkage: float | Literal["cv"] = "cv",
        shrinkages: Sequence[float] | None = None,
        max_depth: int = 4,
        max_leaves: int = 12,
        min_respondents_leaf: int = 50,
        max_cuts: int = 16,
        n_exact: int = 3,
        n_folds: int = 4,
        prune_rule: Literal["1.5se", "1se", "2se", "max"] = "1.5se",
        random_state: int | np.random.Generator = 0,
        max_iter: int = 50,
        tol: float = 1e-6,
    ) -> None:
        self.alternative = alternative
        self.reference = reference
        self.case_specific = case_specific
        self.user_schema = user_schema
        self.exclude = exclude
        self.split_features = split_features
        self.leaf_terms = leaf_terms
        self.alpha = alpha
        self.shrinkage = shrinkage
        self.shrinkages = shrinkages
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
    def _logit(self, **params: Any) -> ConditionalLogit:
        """The conditional logit of the root (``alpha``) or of a segment (``params``)."""
        seed = self.random_state if isinstance(self.random_state, int) else 0
        case = tuple(self.case_specific) if self.leaf_terms == "all" else ()
        return ConditionalLogit(
            alternative=self.alternative,
            reference=self.reference,
            case_specific=case,
            user_schema=self.user_schema if case else None,
            exclude=self.exclude,
            alpha=params.pop("alpha", self.alpha),
            random_state=seed,
            **params,
        )

    def _split_schema(self, data: PreferenceData) -> Schema | None:
        users = data.users
        if users is None or len(users) == 0 or data.respondent is None:
            return None
        schema = self.user_schema
        if schema is None:
            schema = Schema.infer(users)
        if self.split_features:
            names = [n for n in self.split_features if n in schema.names]
        else:  # the plan's rule for respondent features: categorical ones of few levels
            names = [
                f.name
                for f in schema.features
                if f.kind != "categorical" or len(f.levels) <= MAX_CASE_SPECIFIC_LEVELS
            ]
        names = [n for n in names if n in users.columns]
        return Schema(tuple(schema[n] for n in names)) if names else None

    def _grid(self) -> list[float]:
        if isinstance(self.shrinkage, str):
            if self.shrinkage != "cv":
                raise ValueError(f"shrinkage must be a number or 'cv', got {self.shrinkage!r}")
            return [float(v) for v in (self.shrinkages or SHRINKAGES)]
        if not float(self.shrinkage) > 0:
            raise ValueError(f"shrinkage must be > 0, got {self.shrinkage}")
        return [float(self.shrinkage)]

    # ------------------------------------------------------------------ fit
    def fit(
        self, data: PreferenceData, validation: PreferenceData | None = None
    ) -> ChoiceModelTree:
        """Grow, prune and fit the segments on ``data`` (its ``users`` hold the features).

        ``validation``: choices held out for the pruning only (an analyst's validation
        set: other tasks of the same respondents, or other respondents); the shrinkage and
        ``beta`` of Eq. 5 are then chosen by its log-likelihood instead of the
        cross-validation of whole training respondents, and the tree is grown and its
        segments fitted on ``data`` alone."""
        self._validate_params()
        grid = self._grid()
        rng = (
            self.random_state
            if isinstance(self.random_state, np.random.Generator)
            else np.random.default_rng(self.random_state)
        )
        self.root_ = self._logit().fit(data)
        self.alpha_ = float(self.root_.alpha_)
        self.shrinkage_ = grid[0]
        self.n_features_in_ = data.X.shape[1]
        self.split_schema_ = self._split_schema(data)
        self.cv_loglik_: np.ndarray | None = None
        self.cv_shrinkage_: dict[float, float] = {}
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
        root = self.root_
        case, layout = None, None
        if root._user_design is not None:  # the case-specific rows, as the root built them
            rows = np.array([root._U[ConditionalLogit._key(r)] for r in resp_ids])
            case = rows[sit_resp][cs.situation]
            layout = (self._alt_index(data.X[cs.item]), rows, self._p1())
        Z = root._rows(data.X[cs.item], case)
        arr = _Arrays(Z, cs.start, cs.chosen, sit_resp.astype(np.int64), layout)
        R = len(resp_ids)
        val = self._validation_arrays(validation) if validation is not None else None
        k = 0 if val is not None else min(int(self.n_folds), R)
        fold = rng.permutation(R) % k if k >= 2 else np.zeros(R, dtype=np.int64)
        # Eq. 1's scales: the root's information per choice situation, so that lambda
        # counts situations of prior weight in every coefficient's own units
        _, H = arr.problem(np.arange(len(arr.sizes))).gradient_hessian(root.coef_)
        info = np.diag(H) / max(1, len(arr.sizes))
        self.segment_scale_ = np.sqrt(np.where(info > 1e-12, info, 1e-12))
        grow = _Grower(self, arr, U, ss, root.scale_, self.alpha_, self.segment_scale_)
        root_fit = grow.root(np.arange(R), root.coef_)
        # every (shrinkage, beta) with its held-out log-likelihood per held-out unit
        trees: list[tuple[float, ChoiceTreeNodes, list[float], np.ndarray]] = []
        for lam in grid:
            grow.lam = lam
            full = grow.grow(root_fit)
            if (k < 2 and val is None) or len(full.leaves()) == 1:
                trees.append((lam, full, [float("inf") if k >= 2 else 0.0], np.zeros((1, 0))))
                continue
            if val is not None:
                cands, held = self._heldout_on(grow, full, *val)
            else:
                cands, held = self._heldout_folds(grow, full, fold, k)
            self.cv_shrinkage_[lam] = float(held.sum(axis=1).max())
            trees.append((lam, full, cands, held))
        lam, full, beta, total = self._pick(trees)
        self.shrinkage_, self.prune_beta_ = lam, beta
        self.cv_loglik_ = total if len(total) else None
        tree = _prune(full, beta)
        if len(tree.leaves()) == 1:
            self.prune_beta_ = float("inf")
        return self._finish(data, tree, resp_ids)

    def _heldout_folds(
        self, grow: _Grower, full: ChoiceTreeNodes, fold: np.ndarray, k: int
    ) -> tuple[list[float], np.ndarray]:
        """The candidate ``beta`` of Eq. 5 at the grower's shrinkage and the held-out
        log-likelihood ``(candidates, R)`` of every training respondent, scored by the
        tree grown without their fold and pruned at each ``beta``."""
        R = len(fold)
        cands = self._beta_candidates(full)
        held = np.zeros((len(cands), R))
        for f in range(k):
            train, test = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
            tree = grow.grow(grow.root(train, self.root_.coef_, key=f))
            node_ll = grow.heldout(tree, test)  # (nodes, R) held-out ll through each node
            for c, b in enumerate(cands):
                for leaf in _prune(tree, b).leaves():
                    held[c, test] += node_ll[leaf, test]
        return cands, held

    def _validation_arrays(self, validation: PreferenceData) -> tuple[_Arrays, np.ndarray] | None:
        """The design rows of the validation choices and the encoded features of their
        respondents (``None``: no choice of a respondent with a feature row)."""
        if validation.respondent is None or validation.n_pairs == 0:
            return None
        cs = choice_sets(validation)
        resp = validation.respondent[cs.pair]
        keys = [ConditionalLogit._key(r) for r in resp.tolist()]
        known = np.array([k in self._U_all for k in keys], dtype=bool)
        if not known.any():
            return None
        ids, sit_resp = np.unique(resp[known], return_inverse=True)
        U = np.array([self._U_all[ConditionalLogit._key(r)] for r in ids])
        keep = np.flatnonzero(known)
        start = np.concatenate([[0], np.cumsum(cs.sizes[keep])]).astype(np.int64)
        rows = np.concatenate([np.arange(cs.start[s], cs.start[s + 1]) for s in keep])
        root = self.root_
        case, layout = None, None
        if root._user_design is not None:
            urows = np.array([root._user_row(r) for r in ids])
            case = np.repeat(urows[sit_resp], cs.sizes[keep], axis=0)
            layout = (self._alt_index(validation.X[cs.item[rows]]), urows, self._p1())
        Z = root._rows(validation.X[cs.item[rows]], case)
        chosen = start[:-1] + (cs.chosen[keep] - cs.start[keep])
        return _Arrays(Z, start, chosen, sit_resp.astype(np.int64), layout), U

    def _p1(self) -> int:
        """Columns of the root's design before its case-specific ones."""
        return int(sum(k != "case-specific" for k in self.root_.column_kinds_))

    def _alt_index(self, X: np.ndarray) -> np.ndarray:
        """``(n,)`` the non-reference alternative of every item (``-1``: the reference)."""
        A = self.root_._alt_onehot(X)
        return np.where(A.any(axis=1), A.argmax(axis=1), -1).astype(np.int64)

    def _heldout_on(
        self, grow: _Grower, full: ChoiceTreeNodes, arr: _Arrays, U: np.ndarray
    ) -> tuple[list[float], np.ndarray]:
        """The candidate ``beta`` of Eq. 5 at the grower's shrinkage and the
        log-likelihood ``(candidates, respondents)`` of the validation choices ``arr``
        (their respondents' features ``U``) under the full tree pruned at each."""
        cands = self._beta_candidates(full)
        node_ll = grow.heldout(full, np.arange(len(U)), arr, U)
        held = np.zeros((len(cands), len(U)))
        for c, b in enumerate(cands):
            for leaf in _prune(full, b).leaves():
                held[c] += node_ll[leaf]
        return cands, held

    @staticmethod
    def _beta_candidates(full: ChoiceTreeNodes) -> list[float]:
        betas = _weakest_links(full)
        cands = [0.0, *[float(np.sqrt(a * b)) for a, b in itertools.pairwise(betas)]]
        return [c for c in cands if np.isfinite(c)] + [float("inf")]

    def _pick(
        self, trees: list[tuple[float, ChoiceTreeNodes, list[float], np.ndarray]]
    ) -> tuple[float, ChoiceTreeNodes, float, np.ndarray]:
        """The shrinkage, full tree and ``beta`` of the largest held-out total (``"max"``)
        or of the smallest pruned tree within :data:`PRUNE_RULES` standard errors of it
        (of the paired per-unit difference; ties: the larger total), over every shrinkage
        and ``beta`` together; and the chosen shrinkage's totals per ``beta``."""
        scored = [(t, c) for t, (_, _, _, h) in enumerate(trees) if h.size for c in range(len(h))]
        if not scored:  # nothing to score: the first shrinkage, unpruned (or the root)
            lam, full, cands, _ = trees[0]
            return lam, full, cands[0], np.zeros(0)
        total = {(t, c): float(trees[t][3][c].sum()) for t, c in scored}
        bt, bc = max(scored, key=lambda tc: total[tc])
        pick = (bt, bc)
        if PRUNE_RULES[self.prune_rule] > 0:
            best = trees[bt][3][bc]
            n = len(best)

            def size(tc: tuple[int, int]) -> int:
                return len(_prune(trees[tc[0]][1], trees[tc[0]][2][tc[1]]).leaves())

            ok = []
            for tc in scored:
                d = trees[tc[0]][3][tc[1]] - best
                se = float(np.std(d, ddof=1) * np.sqrt(n)) if n > 1 else 0.0
                if total[tc] >= total[(bt, bc)] - PRUNE_RULES[self.prune_rule] * se:
                    ok.append(tc)
            pick = min(ok, key=lambda tc: (size(tc), -total[tc]))
        lam, full, cands, held = trees[pick[0]]
        return lam, full, cands[pick[1]], held.sum(axis=1)

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
            parent = tree.parents()
            self.leaf_models_ = []
            counts = []
            for n in leaves:
                ids = resp_ids[tree.fit[n].resp]
                counts.append(len(ids))
                sub = data.select_pairs(np.isin(data.respondent, ids))
                model = self._logit(
                    alpha=self.shrinkage_,
                    center=tree.fit[parent[n][0]].theta,
                    scale=self.segment_scale_,
                    max_iter=max(100, self.max_iter),
                )
                self.leaf_models_.append(model.fit(sub))
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
        parent = tree.parents()
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
        """The leaf ``respondent`` is routed to (``None``: no feature row; the root)."""
        self._require_fitted()
        if respondent is None or self.n_leaves_ == 1:
            return 0 if self.n_leaves_ == 1 and respondent is not None else None
        u = self._U_all.get(ConditionalLogit._key(respondent))
        if u is None:
            return None
        return self.leaf_of_node_[self.tree_.route(u)[-1]]

    def model_for(self, respondent: Any = None) -> ConditionalLogit:
        """The logit that predicts ``respondent`` (their leaf's, else the root)."""
        leaf = self.leaf_of(respondent)
        return self.root_ if leaf is None else self.leaf_models_[leaf]

    def predict(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Systematic utilities ``(n,)`` of items ``X`` under ``respondent``'s leaf logit,
        with their case-specific variables."""
        self._require_fitted()
        return self.model_for(respondent).predict(X, respondent)

    def posterior(self, X: np.ndarray, respondent: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of the utilities under ``respondent``'s leaf logit."""
        self._require_fitted()
        return self.model_for(respondent).posterior(X, respondent)

    def prob_prefer(self, Xa: np.ndarray, Xb: np.ndarray, respondent: Any = None) -> np.ndarray:
        """``P(a > b)`` of paired rows under ``respondent``'s leaf logit."""
        self._require_fitted()
        return self.model_for(respondent).prob_prefer(Xa, Xb, respondent)

    def choice_probabilities(self, X: np.ndarray, respondent: Any = None) -> np.ndarray:
        """Choice probabilities ``(n,)`` among the items ``X`` offered together, under
        ``respondent``'s leaf logit (Eq. 2 of :mod:`pbo_core.models.mnl`)."""
        self._require_fitted()
        return self.model_for(respondent).choice_probabilities(X, respondent)

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
    """Best-first growth of Eq. 2 with the screening of Eqs. 3-4 on fixed arrays, at the
    shrinkage ``lam``."""

    def __init__(
        self,
        model: ChoiceModelTree,
        arr: _Arrays,
        U: np.ndarray,
        schema: Schema,
        scale: np.ndarray,
        alpha: float,
        segment_scale: np.ndarray,
    ):
        self.m = model
        self.arr = arr
        self.U = U
        self.schema = schema
        self.R = len(U)
        self.p = arr.Z.shape[1]
        self.s2 = np.asarray(scale, dtype=float) ** 2
        self.i2 = np.asarray(segment_scale, dtype=float) ** 2
        self.alpha = alpha
        self.lam = 1.0
        self.tol = max(float(model.tol), CV_TOL)
        self.sit_of_resp = np.split(
            np.argsort(arr.sit_resp, kind="stable"),
            np.cumsum(np.bincount(arr.sit_resp, minlength=self.R))[:-1],
        )
        self._roots: dict[Any, _Fit] = {}

    @property
    def prec(self) -> np.ndarray:
        """The prior precision of Eq. 1 per coefficient, ``lambda s_j^2``."""
        return self.lam * self.i2

    # -- node fits
    def _sits(self, resp: np.ndarray) -> np.ndarray:
        return (
            np.sort(np.concatenate([self.sit_of_resp[r] for r in resp]))
            if len(resp)
            else (np.zeros(0, dtype=np.int64))
        )

    def _problem(self, sit: np.ndarray) -> tuple[_Problem, np.ndarray]:
        rows, _, _ = self.arr.subset(sit)
        return self.arr.problem(sit), rows

    def root(self, resp: np.ndarray, theta0: np.ndarray, key: Any = None) -> _Fit:
        """The root's fit on respondents ``resp`` (the baseline's ridge toward 0);
        ``key=None``: all of them, whose fit is ``theta0`` (the baseline's)."""
        prob, _ = self._problem(self._sits(resp))
        if key is None:
            return _Fit(theta0, float(prob.loglik(theta0).sum()), resp)
        if key not in self._roots:
            prec = self.alpha * self.s2
            theta, _, _ = _fit(prob, prec, theta0, self.m.max_iter, self.tol, False)
            self._roots[key] = _Fit(theta, float(prob.loglik(theta).sum()), resp)
        return self._roots[key]

    def child(self, resp: np.ndarray, parent: np.ndarray) -> _Fit:
        """Eq. 1: the segment ``resp``'s fit shrunk toward its parent's estimate."""
        prob, _ = self._problem(self._sits(resp))
        prec = self.prec
        theta, _, _ = _fit(prob, prec, parent, self.m.max_iter, self.tol, False, parent)
        d = theta - parent
        pen = 0.5 * float((prec * d * d).sum())
        return _Fit(theta, float(prob.loglik(theta).sum()), resp, pen)

    # -- screening (Eq. 3)
    def _per_respondent(self, fit: _Fit) -> tuple[np.ndarray, np.ndarray]:
        """Scores ``(n, p)`` and informations ``(n, p, p)`` of the node's respondents at
        its estimate."""
        sit = self._sits(fit.resp)
        prob, _ = self._problem(sit)
        sizes = np.diff(prob.start)
        v = prob.utilities(fit.theta)
        P = np.exp(v - np.repeat(_lse(v, prob.start), sizes))
        zbar = np.add.reduceat(P[:, None] * prob.Z, prob.start[:-1], axis=0)
        scores = prob.Z[prob.chosen] - zbar
        p, n = self.p, len(fit.resp)
        local = np.full(self.R, -1, dtype=np.int64)
        local[fit.resp] = np.arange(n)
        sr = local[self.arr.sit_resp[sit]]
        g = np.zeros((n, p))
        np.add.at(g, sr, scores)
        D = (prob.Z - np.repeat(zbar, sizes, axis=0)) * np.sqrt(P)[:, None]
        rr = np.repeat(sr, sizes)
        order = np.argsort(rr, kind="stable")
        bounds = np.searchsorted(rr[order], np.arange(n + 1))
        H = np.empty((n, p, p))
        Ds = D[order]
        for i in range(n):  # H_r = D_r^T D_r over the rows of r's situations
            block = Ds[bounds[i] : bounds[i + 1]]
            H[i] = block.T @ block
        return g, H

    def _side_gain(self, G: np.ndarray, H: np.ndarray) -> np.ndarray:
        A = H + np.diag(self.prec)[None] + 1e-9 * np.eye(self.p)[None]
        try:
            x = np.linalg.solve(A, G[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            x = np.einsum("kij,kj->ki", np.linalg.pinv(A, hermitian=True), G)
        return 0.5 * np.einsum("ki,ki->k", G, x)

    def _scan(
        self, bins: np.ndarray, nb: int, g: np.ndarray, H: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Approximate gains (3) of the cuts between consecutive bins ``0..nb-1``, and
        the left side's respondent counts."""
        p, n = self.p, len(bins)
        member = sparse.csr_matrix((np.ones(n), (bins, np.arange(n))), shape=(nb, n))
        Gb = np.asarray(member @ g)
        Hb = np.asarray(member @ H.reshape(n, p * p)).reshape(nb, p, p)
        Nb = np.bincount(bins, minlength=nb)
        GL, HL = np.cumsum(Gb, 0)[:-1], np.cumsum(Hb, 0)[:-1]
        NL = np.cumsum(Nb)[:-1]
        gain = self._side_gain(GL, HL) + self._side_gain(Gb.sum(0) - GL, Hb.sum(0) - HL)
        return gain, NL

    def best_split(self, fit: _Fit, depth: int) -> _Split | None:
        m = self.m
        n = len(fit.resp)
        mn = int(m.min_respondents_leaf)
        if depth >= m.max_depth or n < 2 * max(mn, 1):
            return None
        g, H = self._per_respondent(fit)
        Ht = H.sum(0) + np.diag(self.prec)
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
                gain, NL = self._scan(bins, len(levels), g, H)
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
                gain, NL = self._scan(bins, len(cuts) + 1, g, H)
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
            a = self.child(fit.resp[~go], fit.theta)
            b = self.child(fit.resp[go], fit.theta)
            sp.gain = a.loglik - a.pen + b.loglik - b.pen - fit.loglik  # Eq. 2
            sp.children = (a, b)
            if sp.gain > 1e-9 and (best is None or sp.gain > best.gain):
                best = sp
        return best

    def _order_levels(self, inv: np.ndarray, L: int, g: np.ndarray, Ht: np.ndarray) -> np.ndarray:
        """Levels ordered by the statistic (4)."""
        Gk = np.zeros((L, self.p))
        np.add.at(Gk, inv, g)
        nk = np.maximum(np.bincount(inv, minlength=L).astype(float), 1.0)
        try:
            C = np.linalg.cholesky(Ht + 1e-9 * np.eye(self.p))
            A = np.linalg.solve(C, Gk.T).T  # (L, p) whitened score sums
        except np.linalg.LinAlgError:
            A = Gk
        # the leading eigenvector of M = A^T diag(1/n_k) A = B^T B (B = A / sqrt(n_k)) is
        # B^T w for the leading eigenvector w of the small L x L Gram matrix B B^T
        B = A / np.sqrt(nk)[:, None]
        _, w = np.linalg.eigh(B @ B.T)
        u = B.T @ w[:, -1]
        s = (A @ u) / nk
        return np.argsort(s, kind="stable")

    def _goes_right(self, sp: _Split, resp: np.ndarray) -> np.ndarray:
        x = self.U[resp, sp.column]
        if sp.categorical:
            return np.isin(x.astype(np.int64), list(sp.right))
        return x >= sp.threshold

    # -- best-first growth
    def grow(self, root: _Fit) -> ChoiceTreeNodes:
        """The tree grown from ``root`` (:meth:`root`) at the shrinkage ``lam``."""
        tree = ChoiceTreeNodes()

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

    def heldout(
        self,
        tree: ChoiceTreeNodes,
        test: np.ndarray,
        arr: _Arrays | None = None,
        U: np.ndarray | None = None,
    ) -> np.ndarray:
        """``(nodes, R)``: held-out log-likelihood of respondents ``test`` at every node on
        their path (0 elsewhere); ``arr`` and ``U``: choices and features of other
        respondents (a validation set; default the grower's own)."""
        own = arr is None
        arr = self.arr if arr is None else arr
        U = self.U if U is None else U
        out = np.zeros((len(tree.left), len(U)))
        paths: dict[int, list[int]] = {}
        for r in test.tolist():
            for node in tree.route(U[r]):
                paths.setdefault(node, []).append(r)
        if own:
            sit_of = self.sit_of_resp
        else:
            order = np.argsort(arr.sit_resp, kind="stable")
            sit_of = np.split(order, np.cumsum(np.bincount(arr.sit_resp, minlength=len(U)))[:-1])
        for node, rs in paths.items():
            sit = np.sort(np.concatenate([sit_of[r] for r in rs]))
            ll = arr.problem(sit).loglik(tree.fit[node].theta)
            np.add.at(out[node], arr.sit_resp[sit], ll)
        return out


# ----------------------------------------------------------------------------- pruning
def _subtree_leaves(tree: ChoiceTreeNodes, node: int) -> list[int]:
    if tree.left[node] == -1:
        return [node]
    return _subtree_leaves(tree, tree.left[node]) + _subtree_leaves(tree, tree.right[node])


def _subtree_penalty(tree: ChoiceTreeNodes, node: int) -> float:
    """The priors' penalties of the nodes strictly below ``node`` (Eq. 5)."""
    if tree.left[node] == -1:
        return 0.0
    return sum(
        tree.fit[c].pen + _subtree_penalty(tree, c) for c in (tree.left[node], tree.right[node])
    )


def _weakest_links(tree: ChoiceTreeNodes) -> list[float]:
    """The increasing ``beta`` sequence of Eq. 5 (weakest-link pruning), ``0`` first."""
    t = ChoiceTreeNodes(list(tree.left), list(tree.right), list(tree.split), tree.depth, tree.fit)
    out = [0.0]
    while t.left[0] != -1:
        best, links = np.inf, []
        for node in sorted(_nodes_from(t, 0)):
            if t.left[node] == -1:
                continue
            leaves = _subtree_leaves(t, node)
            below = sum(t.fit[leaf].loglik for leaf in leaves) - _subtree_penalty(t, node)
            g = (below - t.fit[node].loglik) / (len(leaves) - 1)
            if g < best - 1e-12:
                best, links = g, [node]
            elif abs(g - best) <= 1e-12:
                links.append(node)
        for node in links:
            t.left[node] = t.right[node] = -1
        out.append(max(best, out[-1]))
    return out


def _nodes_from(tree: ChoiceTreeNodes, node: int) -> set[int]:
    if tree.left[node] == -1:
        return {node}
    return {node} | _nodes_from(tree, tree.left[node]) | _nodes_from(tree, tree.right[node])


def _prune(tree: ChoiceTreeNodes, beta: float) -> ChoiceTreeNodes:
    """The subtree minimising Eq. 5 at ``beta`` (unreachable nodes dropped)."""
    left, right, split = list(tree.left), list(tree.right), list(tree.split)

    def cost(node: int) -> float:
        own = -tree.fit[node].loglik + beta
        if tree.left[node] == -1:
            return own
        below = sum(cost(c) + tree.fit[c].pen for c in (tree.left[node], tree.right[node]))
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
