"""Explanations: readable rules and exports, feature sensitivity, graph diagnostics.

Modules: :mod:`~pbo_core.explain.labels` (readable text: split rules, attribute tables,
slopes, trade-offs), :mod:`~pbo_core.explain.export` (rules, leaf summaries, DOT, JSON,
user/item hierarchies), :mod:`~pbo_core.explain.sensitivity` (leave-one-out feature sensitivity)
and :mod:`~pbo_core.explain.diagnostics` (comparison-graph components, Hessian rank,
condition number, effective degrees of freedom).
"""

from pbo_core.explain.diagnostics import GraphDiagnostics, diagnose
from pbo_core.explain.export import (
    SENSITIVE_DEFAULT,
    LeafSummary,
    TreeView,
    ViewNode,
    describe_hierarchy,
    hierarchy_to_dot,
    hierarchy_view,
    is_sensitive,
    leaf_summaries,
    plural,
    split_rules,
    to_dot,
    to_json,
    tree_view,
)
from pbo_core.explain.sensitivity import (
    drop_features,
    holdout_split,
    leave_one_out,
    leave_one_out_study,
    summarize_sensitivity,
)

__all__ = [
    "SENSITIVE_DEFAULT",
    "GraphDiagnostics",
    "LeafSummary",
    "TreeView",
    "ViewNode",
    "describe_hierarchy",
    "diagnose",
    "drop_features",
    "hierarchy_to_dot",
    "hierarchy_view",
    "holdout_split",
    "is_sensitive",
    "leaf_summaries",
    "leave_one_out",
    "leave_one_out_study",
    "plural",
    "split_rules",
    "summarize_sensitivity",
    "to_dot",
    "to_json",
    "tree_view",
]
