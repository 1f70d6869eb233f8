"""The compiled (numba) kernels, ready before the first real fit.

Four modules hold numba kernels: :mod:`~pbo_core.models.tree.kernels` (the tree's
growth and routing), :mod:`~pbo_core.models.solver` (the probit leaves' Newton, through
:mod:`~pbo_core.models.leaves`, and the linear leaves' per-respondent Newton, through
:mod:`~pbo_core.models.linear_leaves`), :mod:`~pbo_core.models.probit` (log Phi) and
:mod:`~pbo_core.models.mixed_logit` (the mixed logit's panel likelihood). Each is
compiled on its first call, or loaded from numba's disk cache (``cache=True``) when an
earlier process compiled it. A fresh install compiles them all, once: 18.6 s on this
2-core machine (0.3 s to load them from disk afterwards), which a first fit would
otherwise pay in the middle of an analyst's first view: :func:`pbo_core.registry.warm_up`
compiles them up front.

A kernel compiles once per argument type, and a read-only array (a pandas
copy-on-write view, say) is another type than a writable one. So every Python caller
passes :func:`kernel_array` of its arguments: each kernel has one signature, and
:func:`pbo_core.registry.warm_up` compiles exactly the ones real fits use.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def kernel_array(a: Any, dtype: npt.DTypeLike) -> np.ndarray:
    """``a`` as a C-contiguous, writable array of ``dtype`` (copied only when it is not
    one already): the one argument type of every compiled kernel."""
    return np.require(a, dtype=dtype, requirements=("C", "W"))
