"""``PooledDTSurrogate`` (method ``dt-pooled``): pooled tree structure, personal leaves.

One preference tree is grown on the pooled comparisons of all respondents (the
consistency-score tree of :class:`~pbo_core.models.dt.DTSurrogate`); every respondent's
leaf utilities ``f_r`` have the DT prior multiplied by a Gaussian centred on the pooled
leaf posterior mean ``mu`` (the DT leaf fit on everybody's comparisons):

.. math::

    p(f_r) \\propto N(f_r; 0, \\text{ratio}^{-1} I)\\, N(f_r; \\mu, \\lambda^{-1} I)
    = N\\Big(\\frac{\\lambda}{\\text{ratio} + \\lambda}\\mu,\\;
    (\\text{ratio} + \\lambda)^{-1} I\\Big),

then the probit likelihood of the respondent's own comparisons and the Laplace posterior
conditioned on ``1^T f_r = 0`` (:func:`pbo_core.models.leaves.laplace_fit`). ``lam``
(``shrinkage``) and the tree depth are chosen by cross-validation over whole tasks of the
training comparisons (see :mod:`pbo_core.models.linear_leaves`, of which this is the
constant-leaf case). ``shrinkage=0`` with ``max_depth=None`` on one respondent's data is
exactly :class:`~pbo_core.models.dt.DTSurrogate` (same tree, same leaf posterior).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pbo_core.models.linear_leaves import LinearLeafDTSurrogate, Pooling
from pbo_core.models.tree import StraddlerMode

__all__ = ["PooledDTSurrogate"]


class PooledDTSurrogate(LinearLeafDTSurrogate):
    """Pooled tree with per-respondent constant leaves shrunk toward the pooled leaves.

    Parameters
    ----------
    ratio
        DT prior precision of the leaves (default 1/4).
    pooling
        ``"shrink"`` (default) or ``"none"`` (every respondent the plain DT prior, on the
        pooled tree).
    shrinkage
        Pooling strength ``lam >= 0`` or ``"cv"`` (grid ``shrinkages``).
    max_depth
        Depth, ``None`` or ``"cv"`` (trees up to ``max_leaves`` = 24 leaves).
    min_samples_split, min_split_score, straddlers, n_folds, random_state, backend
        As in :class:`~pbo_core.models.linear_leaves.LinearLeafDTSurrogate`.

    Attributes
    ----------
    tree_, schema_, leaf_mean_, leaf_cov_, item_leaf_, n_leaves_
        The pooled tree and the pooled (population) leaf posterior, as in DTSurrogate.
    respondent_theta_, respondent_cov_
        Every respondent's conditioned leaf posterior ``(R, m)``, ``(R, m, m)``.
    shrinkage_, max_depth_, cv_error_
        The chosen strength and depth and the CV table.
    """

    def __init__(
        self,
        ratio: float = 0.25,
        *,
        pooling: Pooling = "shrink",
        shrinkage: float | Literal["cv"] = "cv",
        shrinkages: Sequence[float] | None = None,
        max_depth: int | Literal["cv"] | None = "cv",
        depths: Sequence[int] | None = None,
        min_samples_split: int = 1,
        min_split_score: float = 0.0,
        straddlers: StraddlerMode = "discard",
        max_leaves: int = 24,
        n_folds: int = 5,
        random_state: int = 0,
        backend: str = "auto",
        max_iter: int = 100,
        tol: float = 1e-9,
    ) -> None:
        super().__init__(
            ratio,
            linear_features=(),
            pooling=pooling,
            shrinkage=shrinkage,
            shrinkages=shrinkages,
            max_depth=max_depth,
            depths=depths,
            min_samples_split=min_samples_split,
            min_split_score=min_split_score,
            straddlers=straddlers,
            max_leaves=max_leaves,
            n_folds=n_folds,
            random_state=random_state,
            backend=backend,
            max_iter=max_iter,
            tol=tol,
        )
