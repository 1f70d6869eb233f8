"""Leave-one-out feature sensitivity as resumable grid cells (DT-PBO Table 10 layout).

The one sensitivity engine is :mod:`pbo_core.evaluation`
(:func:`~pbo_core.evaluation.ablation_rows`, :func:`~pbo_core.evaluation.summarize_ablation`):
every registry model is refitted on one
split once with all features and once without each feature ``f``, and for evaluation
unit ``r`` the change is paired on the same held-out comparisons,

.. math::

    \\Delta_{r,f} = \\mathrm{acc}_r(\\text{without } f) - \\mathrm{acc}_r(\\text{all}),
    \\qquad (1)

reported per model as the mean of (1) over units with a 95 % percentile bootstrap CI. The
command line (``python -m pbo_core.experiments sensitivity``) runs it through
:func:`~pbo_core.experiments.runner.run_grid` (one cell per model, feature and chunk of
respondents; resumable); the dashboard and the report call the engine directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pbo_core.experiments.accuracy import accuracy_cells
from pbo_core.experiments.runner import Cell
from pbo_core.splits import Split

__all__ = ["ablation_cells"]


def ablation_cells(
    base: Cell, methods: Sequence[str], split: Split, features: Sequence[str]
) -> list[dict[str, Any]]:
    """One accuracy cell per model, feature removed (and chunk of respondents); the
    all-features cells carry ``drop_feature=None`` so every row is tagged."""
    out: list[dict[str, Any]] = []
    for f in [None, *features]:
        out += accuracy_cells(dict(base, drop_feature=f), methods, split)
    return out
