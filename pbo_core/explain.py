"""Explanations of fitted DT surrogates: readable rules, Graphviz DOT, JSON, and
leave-one-out feature sensitivity (DT-PBO Table 10).

Export code lives here, apart from the model code (as ``sklearn.tree.export``).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Schema
from pbo_core.dt import DTSurrogate
from pbo_core.metrics import pairwise_accuracy
from pbo_core.surrogate import competition_rank

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


# ----------------------------------------------------------------------------- sensitivity
def accuracy(model: Any, data: PreferenceData) -> float:
    """Pairwise accuracy of a fitted surrogate on ``data`` (ties count one half)."""
    if data.n_pairs == 0:
        return float("nan")
    return float(pairwise_accuracy(model.predict(data.X), data.pairs))


def drop_features(data: PreferenceData, schema: Schema, names: Sequence[str]) -> PreferenceData:
    """The same items and pairs without the named features' columns."""
    keep_schema = schema.without(names)
    drop = set(schema.column_indices(names).tolist())
    cols = [i for i in range(schema.n_columns) if i not in drop]
    return PreferenceData(
        X=data.X[:, cols],
        pairs=data.pairs,
        schema=keep_schema,
        items=data.items,
        item_ids=data.item_ids,
        respondent=data.respondent,
        users=data.users,
        source=data.source,
    )


def leave_one_out(
    train: PreferenceData,
    test: PreferenceData,
    schema: Schema,
    model_factory: Callable[[], Any] = DTSurrogate,
    features: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Refit without each feature; train/test accuracy and deltas (Table 10 layout).

    Returns a table with columns ``feature removed``, ``train acc (%)``,
    ``delta train (pp)``, ``test acc (%)``, ``delta test (pp)``: the baseline row first,
    then features sorted by test delta (largest drop first).
    """
    features = list(features) if features is not None else schema.names

    def score(tr: PreferenceData, te: PreferenceData) -> tuple[float, float]:
        m = model_factory().fit(tr)
        return 100 * accuracy(m, tr), 100 * accuracy(m, te)

    base_tr, base_te = score(train, test)
    rows = [
        {
            "feature removed": "None (baseline)",
            "train acc (%)": base_tr,
            "delta train (pp)": np.nan,
            "test acc (%)": base_te,
            "delta test (pp)": np.nan,
        }
    ]
    for f in features:
        tr, te = score(drop_features(train, schema, [f]), drop_features(test, schema, [f]))
        rows.append(
            {
                "feature removed": f,
                "train acc (%)": tr,
                "delta train (pp)": tr - base_tr,
                "test acc (%)": te,
                "delta test (pp)": te - base_te,
            }
        )
    df = pd.DataFrame(rows)
    body = df.iloc[1:].sort_values("delta test (pp)", kind="stable")
    return pd.concat([df.iloc[:1], body], ignore_index=True)
