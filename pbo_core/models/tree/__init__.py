"""The preference tree: split search, array-based tree, growth (DT-PBO Sec. 3.1, App. C).

Modules: :mod:`~pbo_core.models.tree.splits` (consistency scores, best split),
:mod:`~pbo_core.models.tree.arrays` (:class:`Tree`), :mod:`~pbo_core.models.tree.build`
(:func:`build_tree`, back-end choice, :class:`SplitCache`) and
:mod:`~pbo_core.models.tree.kernels` (numba kernels).
"""

from pbo_core.models.tree.arrays import Tree
from pbo_core.models.tree.build import (
    GROWTH_CONSTRAINTS,
    Backend,
    SplitCache,
    build_tree,
    resolve_backend,
)
from pbo_core.models.tree.splits import (
    MAX_CATEGORIES,
    SPLIT_TIES,
    Split,
    SplitTies,
    StraddlerMode,
    best_split,
)

__all__ = [
    "GROWTH_CONSTRAINTS",
    "MAX_CATEGORIES",
    "SPLIT_TIES",
    "Backend",
    "Split",
    "SplitCache",
    "SplitTies",
    "StraddlerMode",
    "Tree",
    "best_split",
    "build_tree",
    "resolve_backend",
]
