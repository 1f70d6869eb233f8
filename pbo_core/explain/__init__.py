"""Explanations: readable rules and exports, the report, graph diagnostics.

Modules: :mod:`~pbo_core.explain.labels` (readable text: split rules, attribute tables,
slopes, trade-offs), :mod:`~pbo_core.explain.export` (rules, leaf summaries, DOT, JSON,
user/item hierarchies), :mod:`~pbo_core.explain.report` (the self-contained HTML report)
and :mod:`~pbo_core.explain.diagnostics` (comparison-graph components, Hessian rank,
condition number, effective degrees of freedom). Held-out evidence and feature sensitivity
are :mod:`pbo_core.evaluation`.
"""

from pbo_core.explain.diagnostics import GraphDiagnostics, diagnose
from pbo_core.explain.export import (
    SENSITIVE_DEFAULT,
    Detail,
    LeafSummary,
    TreeView,
    ViewNode,
    choice_tree_view,
    describe_hierarchy,
    hierarchy_to_dot,
    hierarchy_view,
    is_sensitive,
    leaf_slope_order,
    leaf_summaries,
    plural,
    split_rules,
    to_dot,
    to_json,
    tree_view,
)

__all__ = [
    "SENSITIVE_DEFAULT",
    "Detail",
    "GraphDiagnostics",
    "LeafSummary",
    "TreeView",
    "ViewNode",
    "choice_tree_view",
    "describe_hierarchy",
    "diagnose",
    "hierarchy_to_dot",
    "hierarchy_view",
    "is_sensitive",
    "leaf_slope_order",
    "leaf_summaries",
    "plural",
    "split_rules",
    "to_dot",
    "to_json",
    "tree_view",
]
