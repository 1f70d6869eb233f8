"""Explanations of fitted DT surrogates: readable rules, leaf summaries, Graphviz DOT,
JSON, and the user/item hierarchy as text and DOT.

Export code lives here, apart from the model code (as ``sklearn.tree.export``).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pbo_core.data import Schema
from pbo_core.hierarchy import UserItemHierarchy
from pbo_core.metrics import competition_rank
from pbo_core.models.dt import DTSurrogate

#: Attributes commonly flagged as sensitive: whole words of feature names, or word
#: prefixes for keys longer than three letters ("religio" -> religion, religious_activity).
SENSITIVE_DEFAULT = ("gender", "race", "ethnic", "religio", "sex", "age")


def is_sensitive(feature_name: str, sensitive: Sequence[str]) -> bool:
    """Does a feature name match one of ``sensitive``?

    Words are the name's alphanumeric runs, case-insensitive. A key matches a word that
    equals it, or that starts with it when the key is longer than three letters; so
    ``"age"`` flags ``age`` and ``r_age`` but not ``gay_marriage`` or
    ``message_actionability``. A key of several words (``"race/ethnicity"``) matches when
    every one of its words matches.
    """
    words = re.findall(r"[a-z0-9]+", feature_name.lower())

    def hit(k: str) -> bool:
        return any(w == k or (len(k) > 3 and w.startswith(k)) for w in words)

    for s in sensitive:
        want = re.findall(r"[a-z0-9]+", s.lower())
        if want and all(hit(k) for k in want):
            return True
    return False


def split_rules(tree_model: DTSurrogate, schema: Schema | None = None) -> list[tuple[str, str]]:
    """``(right_rule, left_rule)`` text of every node ('' for leaves)."""
    tree = tree_model.tree_
    schema = schema or tree_model.schema_
    out: list[tuple[str, str]] = []
    for node in range(tree.n_nodes):
        c = int(tree.feature[node])
        if c < 0:
            out.append(("", ""))
            continue
        if tree.is_categorical[c]:
            mask = int(tree.right_mask[node])
            ncat = int(tree.n_categories[c])
            right = [k for k in range(ncat) if (mask >> k) & 1]
            left = [k for k in range(ncat) if not (mask >> k) & 1]
            out.append((schema.describe_categories(c, right), schema.describe_categories(c, left)))
        else:
            t = float(tree.threshold[node])
            out.append(
                (
                    schema.describe_threshold(c, t, right=True),
                    schema.describe_threshold(c, t, right=False),
                )
            )
    return out


@dataclass(frozen=True)
class LeafSummary:
    """One leaf: its conditions, posterior and rank."""

    leaf: int
    node: int
    conditions: tuple[str, ...]
    mean: float
    sd: float
    rank: int
    n_items: int


def leaf_summaries(model: DTSurrogate, schema: Schema | None = None) -> list[LeafSummary]:
    """Conditions (root to leaf), posterior mean/sd, competition rank of every leaf."""
    tree = model.tree_
    rules = split_rules(model, schema)
    ranks = competition_rank(model.leaf_mean_)
    sd = np.sqrt(np.maximum(np.diag(model.leaf_cov_), 0.0))
    counts = np.bincount(model.item_leaf_, minlength=model.n_leaves_)
    out = []
    for leaf, node in enumerate(tree.leaf_nodes):
        conds = []
        n = int(node)
        while n > 0:
            par = int(tree.parent[n])
            right = n == tree.children_right[par]
            conds.append(rules[par][0] if right else rules[par][1])
            n = par
        out.append(
            LeafSummary(
                leaf,
                int(node),
                tuple(reversed(conds)),
                float(model.leaf_mean_[leaf]),
                float(sd[leaf]),
                int(ranks[leaf]),
                int(counts[leaf]),
            )
        )
    return out


def _colour(value: float, lo: float, hi: float) -> str:
    """Red (low) - yellow - green (high) fill for a utility."""
    t = 0.5 if hi <= lo else (value - lo) / (hi - lo)
    t = min(max(t, 0.0), 1.0)
    r = round(255 * min(1.0, 2 * (1 - t)) * 0.85 + 38)
    g = round(255 * min(1.0, 2 * t) * 0.75 + 60)
    return f"#{min(r, 255):02x}{min(g, 255):02x}70"


def to_dot(
    model: DTSurrogate,
    schema: Schema | None = None,
    *,
    highlight: np.ndarray | None = None,
    max_depth: int | None = None,
    sensitive: Sequence[str] = (),
    title: str | None = None,
) -> str:
    """Graphviz DOT of a fitted tree.

    Internal nodes show the split rule, the number of comparisons in the node's
    split-search set and the consistency score; leaves show mean +- sd (in noise units),
    the competition rank and the number of items, filled by utility. ``highlight`` (one
    encoded item) draws its path in bold; ``max_depth`` collapses deeper subtrees into a
    summary node; splits on features whose name contains one of ``sensitive`` are flagged.
    """
    tree = model.tree_
    schema = schema or model.schema_
    rules = split_rules(model, schema)
    leaves = {s.node: s for s in leaf_summaries(model, schema)}
    lo, hi = float(model.leaf_mean_.min()), float(model.leaf_mean_.max())
    path = set(tree.decision_path(highlight)) if highlight is not None else set()
    sens = tuple(s.lower() for s in sensitive)
    lines = [
        "digraph tree {",
        '  graph [rankdir=TB, fontname="Helvetica"];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    if title:
        lines.append(f'  labelloc="t"; label="{html.escape(title)}";')

    def subtree_leaves(node: int) -> list[int]:
        stack, found = [node], []
        while stack:
            n = stack.pop()
            if tree.children_left[n] == -1:
                found.append(n)
            else:
                stack += [int(tree.children_left[n]), int(tree.children_right[n])]
        return found

    stack = [0]
    while stack:
        node = stack.pop()
        bold = ', penwidth=3, color="#1f4e79"' if node in path else ""
        collapse = max_depth is not None and tree.depth[node] >= max_depth
        if tree.children_left[node] == -1 or collapse:
            if tree.children_left[node] == -1:
                s = leaves[node]
                label = (
                    f"<b>leaf {s.leaf}</b><br/>utility {s.mean:+.2f} &plusmn; {s.sd:.2f}"
                    f"<br/>rank {s.rank} &middot; {s.n_items} item{'s' if s.n_items != 1 else ''}"
                )
                fill = _colour(s.mean, lo, hi)
            else:
                sub = [leaves[n] for n in subtree_leaves(node)]
                means = [s.mean for s in sub]
                label = (
                    f"<b>{len(sub)} leaves</b><br/>utility {min(means):+.2f} .. {max(means):+.2f}"
                    f"<br/>best rank {min(s.rank for s in sub)}"
                )
                fill = _colour(float(np.mean(means)), lo, hi)
            lines.append(f'  n{node} [label=<{label}>, fillcolor="{fill}"{bold}];')
            continue
        right_rule = rules[node][0]
        c = int(tree.feature[node])
        flag = is_sensitive(schema.features[schema.columns[c].feature].name, sens)
        warn = "<br/><font color='#b00020'>&#9888; sensitive attribute</font>" if flag else ""
        label = (
            f"<b>{html.escape(right_rule)}?</b><br/>{int(tree.n_pairs[node])} comparisons"
            f" &middot; score {tree.score[node]:.2f}{warn}"
        )
        lines.append(f'  n{node} [label=<{label}>, fillcolor="#f2f2f2"{bold}];')
        left, right = int(tree.children_left[node]), int(tree.children_right[node])
        for child, text in ((right, "yes"), (left, "no")):
            eb = ', penwidth=3, color="#1f4e79"' if node in path and child in path else ""
            lines.append(f'  n{node} -> n{child} [label="{text}"{eb}];')
        stack += [left, right]
    lines.append("}")
    return "\n".join(lines)


def to_json(model: DTSurrogate, schema: Schema | None = None) -> str:
    """JSON description of a fitted tree (nodes, rules, leaf posteriors)."""
    tree = model.tree_
    schema = schema or model.schema_
    rules = split_rules(model, schema)
    leaves = {s.node: s for s in leaf_summaries(model, schema)}
    nodes: list[dict[str, Any]] = []
    for node in range(tree.n_nodes):
        d: dict[str, Any] = {
            "id": node,
            "depth": int(tree.depth[node]),
            "n_pairs": int(tree.n_pairs[node]),
        }
        if tree.children_left[node] == -1:
            s = leaves[node]
            d.update(
                leaf=s.leaf,
                mean=s.mean,
                sd=s.sd,
                rank=s.rank,
                n_items=s.n_items,
                conditions=list(s.conditions),
            )
        else:
            d.update(
                rule=rules[node][0],
                else_rule=rules[node][1],
                score=float(tree.score[node]),
                yes=int(tree.children_right[node]),
                no=int(tree.children_left[node]),
            )
        nodes.append(d)
    return json.dumps({"schema": schema.to_dict(), "nodes": nodes}, indent=2)


# ----------------------------------------------------------------------------- user groups
def describe_hierarchy(h: UserItemHierarchy) -> str:
    """Both levels of a user/item hierarchy as indented text."""
    t = h.user_tree_
    lines: list[str] = []

    def walk(node: int, indent: str) -> None:
        if t.left[node] == -1:
            leaf = t.leaf_of_node[node]
            model = h.item_trees_[leaf]
            lines.append(
                f"{indent}users group {leaf} ({t.n_users[node]} users): "
                f"item tree with {model.n_leaves_} leaves"
            )
            for s in sorted(leaf_summaries(model), key=lambda s: s.rank)[:3]:
                cond = " and ".join(s.conditions) or "all items"
                lines.append(f"{indent}    rank {s.rank}: {cond} (utility {s.mean:+.2f})")
            return
        for child, right in ((t.right[node], True), (t.left[node], False)):
            lines.append(f"{indent}if {h.rule(node, right)}:")
            walk(child, indent + "    ")

    walk(0, "")
    return "\n".join(lines)


def hierarchy_to_dot(h: UserItemHierarchy) -> str:
    """DOT of a user/item hierarchy: each user leaf is a cluster holding its item tree."""
    t = h.user_tree_
    out = [
        "digraph hierarchy {",
        '  compound=true; graph [fontname="Helvetica"];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
    ]
    anchors: dict[int, str] = {}
    for node in range(len(t.left)):
        if t.left[node] == -1:
            leaf = t.leaf_of_node[node]
            body = to_dot(h.item_trees_[leaf]).splitlines()[4:-1]
            body = [
                ln.replace("  n", f"  g{leaf}n", 1).replace("-> n", f"-> g{leaf}n") for ln in body
            ]
            out.append(f"  subgraph cluster_{leaf} {{")
            out.append(
                f'    label="user group {leaf}: {t.n_users[node]} users"; '
                'style="rounded"; color="#1f4e79";'
            )
            out += ["  " + ln for ln in body]
            out.append("  }")
            anchors[node] = f"g{leaf}n0"
        else:
            sp = h.user_tree_.split[node]
            label = (
                f"<b>{html.escape(h.rule(node, True))}?</b><br/>"
                f"{t.n_users[node]} users &middot; gain {sp.gain:.0f}"
            )
            out.append(f'  u{node} [label=<{label}>, fillcolor="#dde8f5"];')
            anchors[node] = f"u{node}"
    for node in range(len(t.left)):
        if t.left[node] != -1:
            for child, text in ((t.right[node], "yes"), (t.left[node], "no")):
                extra = f', lhead="cluster_{t.leaf_of_node[child]}"' if t.left[child] == -1 else ""
                out.append(f'  u{node} -> {anchors[child]} [label="{text}"{extra}];')
    out.append("}")
    return "\n".join(out)
