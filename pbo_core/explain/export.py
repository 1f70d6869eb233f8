"""Explanations of fitted DT surrogates: readable rules, leaf summaries, Graphviz DOT,
JSON, and the user/item hierarchy as text and DOT.

Export code lives here, apart from the model code (as ``sklearn.tree.export``).
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from pbo_core.data import PreferenceData, Schema
from pbo_core.explain import labels
from pbo_core.explain.naming import item_names
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
            out.append(
                (
                    labels.describe_categories(schema, c, right),
                    labels.describe_categories(schema, c, left),
                )
            )
        else:
            t = float(tree.threshold[node])
            out.append(
                (
                    labels.describe_threshold(schema, c, t, right=True),
                    labels.describe_threshold(schema, c, t, right=False),
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
    #: The leaf's number shown to people: its position in the rank order (1 = best; ties
    #: in the order of the model's leaves), so leaf numbers and ranks are one numbering.
    number: int = 0


def leaf_summaries(model: DTSurrogate, schema: Schema | None = None) -> list[LeafSummary]:
    """Conditions (root to leaf), posterior mean/sd, competition rank of every leaf."""
    tree = model.tree_
    rules = split_rules(model, schema)
    ranks = competition_rank(model.leaf_mean_)
    sd = np.sqrt(np.maximum(np.diag(model.leaf_cov_), 0.0))
    counts = np.bincount(model.item_leaf_, minlength=model.n_leaves_)
    order = np.lexsort((np.arange(model.n_leaves_), ranks))
    number = np.empty(model.n_leaves_, dtype=int)
    number[order] = np.arange(1, model.n_leaves_ + 1)
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
                int(number[leaf]),
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


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 comparison"``, ``"2 comparisons"`` (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


@dataclass(frozen=True)
class ViewNode:
    """One box of a drawn tree (split, leaf, or user group of a hierarchy).

    ``title`` is the bold first line, ``lines`` the rest (every detail); ``summary``
    replaces them when the subtree below is collapsed; ``items`` lists every item of a
    leaf (name and its observed wins/losses); ``tooltip`` explains the counts
    (straddlers) in words. ``brief`` is the box's text in a compact view (at most
    :data:`BRIEF_LINES` lines under the title: a leaf's utility and item count and the one
    or two slopes or trade-offs that set it apart; ``None``: ``lines``); ``muted`` names
    the lines drawn in grey (a number whose 95 % interval includes 0).
    """

    id: int
    parent: int
    edge: str
    kind: str
    title: str
    lines: tuple[str, ...] = ()
    summary: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    tooltip: str = ""
    fill: str = "#f2f2f2"
    warn: str = ""
    on_path: bool = False
    depth: int = 0
    brief: tuple[str, ...] | None = None
    muted: tuple[str, ...] = ()


#: Item names shown inside a leaf box before "and N more" (full view).
LEAF_ITEMS_SHOWN = 3
#: Lines under the title of a box in the compact view (the title makes the box's fourth).
BRIEF_LINES = 3
#: Slopes or trade-offs a compact leaf names (those that set it apart from the others).
BRIEF_SLOPES = 2
#: Characters of a compact box's line (a longer slope's attribute name is shortened with
#: "…", its numbers never; every line in full on click, in the tooltip and in tables).
BRIEF_CHARS = 46
#: The fill of muted text (drawn in italics): a number whose 95 % interval includes 0.
#: Dark enough to read on every leaf colour, from red to green.
MUTED = "#4f4f4f"
#: How much a view shows in each box: ``"compact"`` (at most four lines) or ``"full"``.
Detail = Literal["compact", "full"]
#: Characters per line of a box's wrapped title, and of an item name inside a leaf box
#: (the full names are in ``items``: tooltips, the dashboard's leaf panel and Leaves tab).
TITLE_WRAP = 34
ITEM_CHARS = 32
_ITEM_RE = re.compile(r"^(.*) \((won (\d+), lost (\d+)|not compared)\)$")


def _short_item(text: str) -> str:
    m = _ITEM_RE.match(text)
    if m is None:
        return text if len(text) <= ITEM_CHARS + 10 else text[: ITEM_CHARS + 9] + "…"
    name = m.group(1)
    name = name if len(name) <= ITEM_CHARS else name[: ITEM_CHARS - 1] + "…"
    seen = f"{m.group(3)} won, {m.group(4)} lost" if m.group(3) is not None else "not compared"
    return f"{name} ({seen})"


def _example_item(text: str) -> str:
    """An item's name without its wins and losses, shortened to :data:`ITEM_CHARS`."""
    m = _ITEM_RE.match(text)
    name = m.group(1) if m is not None else text
    return name if len(name) <= ITEM_CHARS else name[: ITEM_CHARS - 1] + "…"


def clip_line(line: str, width: int = BRIEF_CHARS) -> str:
    """A ``"name: numbers"`` line at most ``width`` characters: the name before the last
    ``": "`` is shortened with "…", the numbers after it never (a line without one is
    kept as it is)."""
    if len(line) <= width or ": " not in line:
        return line
    name, rest = line.rsplit(": ", 1)
    keep = max(8, width - len(rest) - 3)
    return name if len(name) <= keep else f"{name[: keep - 1]}…: {rest}"


def wrap_title(title: str, width: int = TITLE_WRAP) -> list[str]:
    """A box title broken into lines of at most ``width`` characters (at spaces)."""
    return textwrap.wrap(title, width, break_long_words=False, break_on_hyphens=False) or [""]


_LINE_H = 14
_PAD = 8
#: Outline layout: indentation per level (px) and characters per line of a row.
OUTLINE_INDENT = 22.0
OUTLINE_WRAP = 96
#: Leaves above which the dashboard opens a tree as an outline (a top-down drawing of
#: more leaves is wider than a page at a legible scale).
OUTLINE_LEAVES = 16
#: A top-down drawing wider than this at 100 % (px) opens as an outline too: in a page's
#: ~1,100 px column it would open below the smallest legible scale (9 px text).
OUTLINE_WIDTH = 1340


def _text_width(text: str, bold: bool = False) -> float:
    """Approximate rendered width (px) of ``text`` at 11 px Helvetica."""
    return len(text) * (6.9 if bold else 6.2)


def _tidy_offsets(
    visible: Sequence[int],
    kids: dict[int, list[int]],
    shut: set[int],
    width: dict[int, float],
    gap: float,
) -> dict[int, float]:
    """Tidy-tree placement (Reingold-Tilford with per-level contours, variable box widths).

    Bottom-up, each subtree keeps its contour: per level below its root, the leftmost
    and rightmost box edge relative to the root's centre. Siblings are placed left to
    right, each pushed right just enough that at every level they share it clears the
    siblings already placed by ``gap``; the parent is centred over its first and last
    child. A narrow deep subtree thus tucks under a wide shallow neighbour instead of
    getting a strip as wide as its widest level. Returns each child's centre offset from
    its parent's centre.
    """
    contour: dict[int, list[tuple[float, float]]] = {}
    rel: dict[int, float] = {}
    for i in reversed(visible):  # children before parents
        ch = [] if i in shut else kids[i]
        half = width[i] / 2
        if not ch:
            contour[i] = [(-half, half)]
            continue
        merged = list(contour[ch[0]])
        offs = [0.0]
        for c in ch[1:]:
            cc = contour[c]
            shift = max(merged[d][1] - cc[d][0] for d in range(min(len(merged), len(cc))))
            shift += gap
            offs.append(shift)
            for d, (lo, hi) in enumerate(cc):
                if d < len(merged):
                    merged[d] = (merged[d][0], hi + shift)
                else:
                    merged.append((lo + shift, hi + shift))
        mid = (offs[0] + offs[-1]) / 2
        for c, o in zip(ch, offs, strict=True):
            rel[c] = o - mid
        contour[i] = [(-half, half), *((lo - mid, hi - mid) for lo, hi in merged)]
    return rel


@dataclass(frozen=True)
class TreeView:
    """A drawable tree: boxes with readable text, rendered to SVG, DOT or JSON.

    Layout is computed here (a tidy tree, :func:`_tidy_offsets`: subtrees packed by their
    per-level contours, parents centred above their children), so SVG and PNG need no
    Graphviz program; the dashboard's interactive view lays out the same way in the
    browser (``dashboard/static/tree_view.js``).
    """

    nodes: tuple[ViewNode, ...]
    title: str = ""
    #: ``"compact"``: each box shows its ``brief`` (a leaf at most four lines, its items
    #: on click, in its tooltip and in tables); ``"full"``: every line and the first
    #: items. Every renderer (browser, SVG, PNG, DOT) follows it.
    detail: Detail = "compact"

    # ---------------------------------------------------------------- structure
    def children(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            if n.parent >= 0:
                out[n.parent].append(n.id)
        return out

    def with_detail(self, detail: Detail) -> TreeView:
        """The same tree showing ``detail`` in its boxes."""
        if detail not in ("compact", "full"):
            raise ValueError(f"detail must be 'compact' or 'full', got {detail!r}")
        return dataclasses.replace(self, detail=detail)

    def node_lines(self, node: ViewNode, collapsed: bool) -> list[str]:
        """The text under a box's title as drawn: the collapsed summary, the compact
        ``brief`` (plus one example item when it leaves room) or every line and the first
        items; a warning last."""
        if collapsed and node.summary:
            body = list(node.summary)
        elif self.detail == "compact" and node.brief is not None:
            body = list(node.brief)
            if node.items and len(body) < BRIEF_LINES:
                body.append(f"e.g. {_example_item(node.items[0])}")
        else:
            body = list(node.lines)
            if not collapsed and node.items:
                body += [f"• {_short_item(t)}" for t in node.items[:LEAF_ITEMS_SHOWN]]
                if len(node.items) > LEAF_ITEMS_SHOWN:
                    body.append(f"and {len(node.items) - LEAF_ITEMS_SHOWN} more")
        if node.warn:
            body.append(node.warn)
        return body

    def outline_lines(self, node: ViewNode, collapsed: bool) -> list[str]:
        """The node as one outline row: edge, title and its first facts, wrapped.

        ``"yes: Message actionability = emergency ...? · 211 comparisons · score 0.51"``;
        a leaf adds its utility and item count, a collapsed split its summary.
        """
        head = f"{node.edge}: " if node.edge else ""
        if not collapsed and self.detail == "compact" and node.brief is not None:
            # a compact box: its lines beside the title while the row has room, a muted
            # line (a number whose interval includes 0) on a row of its own; at most as
            # many rows as the box has lines
            rows = [head + node.title]
            for line in node.brief:
                joined = f"{rows[-1]} · {line}"
                fits = len(joined) <= OUTLINE_WRAP and line not in node.muted
                if fits and (len(rows) == 1 or rows[-1] not in node.muted):
                    rows[-1] = joined
                else:
                    rows.append(line)
            return rows
        body = list(node.summary if collapsed and node.summary else node.lines)
        facts = body[:2] if node.kind == "leaf" or collapsed else body[:1]
        text = head + " · ".join([node.title, *(f for f in facts if not f.startswith("("))])
        return textwrap.wrap(text, OUTLINE_WRAP, break_long_words=False) or [""]

    def wide(self, max_depth: int | None = None) -> bool:
        """Is the top-down drawing too wide to read whole (wider than
        :data:`OUTLINE_WIDTH` at 100 %, or more than :data:`OUTLINE_LEAVES` leaves shown)?
        Pages then open it as an outline."""
        lay = self.layout(max_depth=max_depth)
        width = max((x + w / 2 for x, _, w, _, _ in lay.values()), default=0.0)
        shown = sum(1 for i, (*_, shut) in lay.items() if shut or self._by_id()[i].kind == "leaf")
        return width > OUTLINE_WIDTH or shown > OUTLINE_LEAVES

    def _by_id(self) -> dict[int, ViewNode]:
        return {n.id: n for n in self.nodes}

    def outline_box(self, node: ViewNode, collapsed: bool = False) -> tuple[float, float]:
        lines = self.outline_lines(node, collapsed)
        extra = [node.warn] if node.warn else []
        w = max([_text_width(lines[0], True), *(_text_width(t) for t in [*lines[1:], *extra])])
        return w + 2 * _PAD, _LINE_H * (len(lines) + len(extra)) + _PAD

    def box(self, node: ViewNode, collapsed: bool = False) -> tuple[float, float]:
        body = self.node_lines(node, collapsed)
        head = wrap_title(node.title)
        w = max([*(_text_width(t, True) for t in head), *(_text_width(t) for t in body)])
        return max(w + 2 * _PAD, 60.0), _LINE_H * (len(head) + len(body)) + _PAD

    def layout(
        self,
        collapsed: Sequence[int] = (),
        max_depth: int | None = None,
        style: Literal["tree", "outline"] = "tree",
    ) -> dict[int, tuple[float, float, float, float, bool]]:
        """``{node: (x_centre, y_top, width, height, collapsed)}`` of the visible nodes.

        ``style="tree"``: top-down tidy tree. ``"outline"``: one row per node in
        depth-first order (the "yes" side first), indented :data:`OUTLINE_INDENT` px per
        level, so a tree of any number of leaves is as wide as its longest row.
        """
        if style == "outline":
            return self._outline_layout(collapsed, max_depth)
        if style != "tree":
            raise ValueError(f"style must be 'tree' or 'outline', got {style!r}")
        kids = self.children()
        by_id = {n.id: n for n in self.nodes}
        shut = set(collapsed)
        if max_depth is not None:
            shut |= {n.id for n in self.nodes if n.depth >= max_depth and kids[n.id]}
        size: dict[int, tuple[float, float]] = {}
        visible: list[int] = []
        stack = [self.nodes[0].id] if self.nodes else []
        while stack:
            i = stack.pop()
            visible.append(i)
            size[i] = self.box(by_id[i], i in shut and bool(kids[i]))
            if i not in shut:
                stack += kids[i][::-1]
        gap_x, gap_y = 14.0, 34.0
        level_h: dict[int, float] = {}
        level_of: dict[int, int] = {}
        for i in visible:
            n = by_id[i]
            lvl = 0 if n.parent < 0 else level_of[n.parent] + 1
            level_of[i] = lvl
            level_h[lvl] = max(level_h.get(lvl, 0.0), size[i][1])
        top = {0: 24.0 if self.title else 4.0}
        for lvl in range(1, max(level_h, default=0) + 1):
            top[lvl] = top[lvl - 1] + level_h[lvl - 1] + gap_y
        out: dict[int, tuple[float, float, float, float, bool]] = {}
        if not visible:
            return out
        rel = _tidy_offsets(visible, kids, shut, {i: size[i][0] for i in visible}, gap_x)
        x_of = {visible[0]: 0.0}
        for i in visible:  # parents before children
            for c in [] if i in shut else kids[i]:
                x_of[c] = x_of[i] + rel[c]
        left = min(x_of[i] - size[i][0] / 2 for i in visible)
        for i in visible:
            out[i] = (
                x_of[i] - left + 4.0,
                top[level_of[i]],
                *size[i],
                i in shut and bool(kids[i]),
            )
        return out

    def _visible(self, collapsed: Sequence[int], max_depth: int | None) -> tuple[list[int], set]:
        """Visible nodes in depth-first order and the set of shut (collapsed) ones."""
        kids = self.children()
        shut = set(collapsed)
        if max_depth is not None:
            shut |= {n.id for n in self.nodes if n.depth >= max_depth and kids[n.id]}
        shut = {i for i in shut if kids[i]}
        visible: list[int] = []
        stack = [self.nodes[0].id] if self.nodes else []
        while stack:
            i = stack.pop()
            visible.append(i)
            if i not in shut:
                stack += kids[i][::-1]
        return visible, shut

    def _outline_layout(
        self, collapsed: Sequence[int], max_depth: int | None
    ) -> dict[int, tuple[float, float, float, float, bool]]:
        by_id = {n.id: n for n in self.nodes}
        visible, shut = self._visible(collapsed, max_depth)
        level: dict[int, int] = {}
        out: dict[int, tuple[float, float, float, float, bool]] = {}
        y = 24.0 if self.title else 4.0
        for i in visible:
            n = by_id[i]
            level[i] = 0 if n.parent < 0 else level[n.parent] + 1
            w, h = self.outline_box(n, i in shut)
            out[i] = (4.0 + level[i] * OUTLINE_INDENT + w / 2, y, w, h, i in shut)
            y += h + 4.0
        return out

    # ---------------------------------------------------------------- renderers
    def to_svg(
        self,
        collapsed: Sequence[int] = (),
        max_depth: int | None = None,
        style: Literal["tree", "outline"] = "tree",
    ) -> str:
        """A standalone SVG document (text as text, a tooltip per box)."""
        lay = self.layout(collapsed, max_depth, style)
        outline = style == "outline"
        by_id = {n.id: n for n in self.nodes}
        width = max((x + w / 2 for x, _, w, _, _ in lay.values()), default=100) + 8
        height = max((y + h for _, y, _, h, _ in lay.values()), default=40) + 8
        width = max(width, _text_width(self.title, True) + 16)
        esc = html.escape
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}"'
            f' viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, Arial, sans-serif"'
            ' font-size="11">',
            f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
        ]
        if self.title:
            parts.append(
                f'<text x="{width / 2:.0f}" y="16" text-anchor="middle" font-size="13"'
                f' font-weight="bold">{esc(self.title)}</text>'
            )
        for i, (x, y, cw, ch, _c) in lay.items():
            n = by_id[i]
            if n.parent < 0 or n.parent not in lay:
                continue
            px, py, pw, ph, _ = lay[n.parent]
            y0, y1 = py + ph, y
            if outline:  # an elbow from below the parent's left edge to the row's left
                bold = n.on_path and by_id[n.parent].on_path
                stroke = 'stroke="#1f4e79" stroke-width="3"' if bold else 'stroke="#888"'
                x0, ym = px - pw / 2 + OUTLINE_INDENT / 2, y + ch / 2
                parts.append(
                    f'<path d="M{x0:.1f},{y0:.1f} V{ym:.1f} H{x - cw / 2:.1f}" fill="none"'
                    f" {stroke}/>"
                )
                continue
            bold = n.on_path and by_id[n.parent].on_path
            stroke = (
                'stroke="#1f4e79" stroke-width="3"' if bold else 'stroke="#666" stroke-width="1"'
            )
            parts.append(
                f'<path d="M{px:.1f},{y0:.1f} C{px:.1f},{(y0 + y1) / 2:.1f} {x:.1f},'
                f'{(y0 + y1) / 2:.1f} {x:.1f},{y1:.1f}" fill="none" {stroke}/>'
            )
            if n.edge:
                parts.append(
                    f'<text x="{(px + x) / 2:.1f}" y="{(y0 + y1) / 2 - 2:.1f}" text-anchor="middle"'
                    f' font-size="11" fill="#333">{esc(n.edge)}</text>'
                )
        for i, (x, y, w, h, shut) in lay.items():
            n = by_id[i]
            stroke = 'stroke="#1f4e79" stroke-width="3"' if n.on_path else 'stroke="#555"'
            parts.append(f'<g class="node" data-id="{i}"><title>{esc(n.tooltip)}</title>')
            parts.append(
                f'<rect x="{x - w / 2:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="6"'
                f' fill="{n.fill}" {stroke}/>'
            )
            ty = y + _PAD / 2 + 11
            if outline:
                rows = self.outline_lines(n, shut)
                for k, line in enumerate(rows):
                    weight = ' font-weight="bold"' if k == 0 else ""
                    if k and line in n.muted:
                        weight = f' fill="{MUTED}" font-style="italic"'
                    parts.append(
                        f'<text x="{x - w / 2 + _PAD:.1f}" y="{ty + k * _LINE_H:.1f}"{weight}>'
                        f"{esc(line)}</text>"
                    )
                if n.warn:
                    parts.append(
                        f'<text x="{x - w / 2 + _PAD:.1f}" y="{ty + len(rows) * _LINE_H:.1f}"'
                        f' fill="#b00020">{esc(n.warn)}</text>'
                    )
                parts.append("</g>")
                continue
            head = wrap_title(n.title)
            for k, line in enumerate(head):
                parts.append(
                    f'<text x="{x:.1f}" y="{ty + k * _LINE_H:.1f}" text-anchor="middle"'
                    f' font-weight="bold">{esc(line)}</text>'
                )
            for k, line in enumerate(self.node_lines(n, shut), start=len(head)):
                colour = (
                    ' fill="#b00020"'
                    if line == n.warn
                    else (f' fill="{MUTED}" font-style="italic"' if line in n.muted else "")
                )
                parts.append(
                    f'<text x="{x:.1f}" y="{ty + k * _LINE_H:.1f}" text-anchor="middle"{colour}>'
                    f"{esc(line)}</text>"
                )
            parts.append("</g>")
        parts.append("</svg>")
        return "\n".join(parts)

    def to_dot(self, max_depth: int | None = None) -> str:
        """Graphviz DOT with the same boxes and text (for Graphviz users and tools)."""
        kids = self.children()
        lines = [
            "digraph tree {",
            '  graph [rankdir=TB, fontname="Helvetica"];',
            '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
            '  edge [fontname="Helvetica", fontsize=10];',
        ]
        if self.title:
            lines.append(f'  labelloc="t"; label="{html.escape(self.title)}";')
        by_id = {n.id: n for n in self.nodes}
        stack = [self.nodes[0].id] if self.nodes else []
        while stack:
            i = stack.pop()
            n = by_id[i]
            shut = max_depth is not None and n.depth >= max_depth and bool(kids[i])
            body = "".join(
                "<br/>"
                + (
                    f"<font color='#b00020'>{html.escape(t)}</font>"
                    if t == n.warn
                    else (
                        f"<i><font color='{MUTED}'>{html.escape(t)}</font></i>"
                        if t in n.muted
                        else html.escape(t)
                    )
                )
                for t in self.node_lines(n, shut)
            )
            bold = ', penwidth=3, color="#1f4e79"' if n.on_path else ""
            tip = html.escape(n.tooltip, quote=True)
            lines.append(
                f'  n{i} [label=<<b>{html.escape(n.title)}</b>{body}>, fillcolor="{n.fill}",'
                f' tooltip="{tip}"{bold}];'
            )
            if shut:
                continue
            for c in kids[i]:
                cb = ', penwidth=3, color="#1f4e79"' if n.on_path and by_id[c].on_path else ""
                lines.append(f'  n{i} -> n{c} [label="{html.escape(by_id[c].edge)}"{cb}];')
            stack += kids[i][::-1]
        lines.append("}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready nodes with their box sizes (open and collapsed), for the browser."""
        kids = self.children()
        nodes = []
        for n in self.nodes:
            w, h = self.box(n)
            cw, ch = self.box(n, True) if kids[n.id] else (w, h)
            ow, oh = self.outline_box(n)
            ocw, och = self.outline_box(n, True) if kids[n.id] else (ow, oh)
            nodes.append(
                {
                    "id": n.id,
                    "parent": n.parent,
                    "edge": n.edge,
                    "kind": n.kind,
                    "title": n.title,
                    "title_lines": wrap_title(n.title),
                    "lines": self.node_lines(n, False),
                    "summary": self.node_lines(n, True),
                    "details": list(n.lines),
                    "muted": list(n.muted),
                    "items": list(n.items),
                    "tooltip": n.tooltip,
                    "fill": n.fill,
                    "warn": n.warn,
                    "on_path": n.on_path,
                    "depth": n.depth,
                    "w": w,
                    "h": h,
                    "cw": cw,
                    "ch": ch,
                    "outline": self.outline_lines(n, False),
                    "outline_closed": self.outline_lines(n, True),
                    "ow": ow,
                    "oh": oh,
                    "ocw": ocw,
                    "och": och,
                }
            )
        return {"title": self.title, "detail": self.detail, "nodes": nodes}

    def texts(self) -> list[str]:
        """Every string a person sees in the drawn tree (for label checks)."""
        out = [self.title]
        for n in self.nodes:
            out += [n.title, *n.lines, *n.summary, *n.items, n.tooltip, n.edge, n.warn]
        return [t for t in out if t]


def _item_records(
    model: DTSurrogate, data: PreferenceData | None, item_names: Sequence[str] | None
) -> dict[int, list[str]]:
    """Per leaf: "name (w won, l lost)" of each item, most wins first."""
    if data is None:
        return {}
    leaf = model.apply(data.X)
    names = list(item_names) if item_names is not None else [str(i) for i in data.ids()]
    wins = np.bincount(data.pairs[:, 0], minlength=data.n_items)
    losses = np.bincount(data.pairs[:, 1], minlength=data.n_items)
    out: dict[int, list[tuple[int, int, str]]] = {}
    for i in range(data.n_items):
        w, lo = int(wins[i]), int(losses[i])
        seen = f"won {w}, lost {lo}" if w + lo else "not compared"
        out.setdefault(int(leaf[i]), []).append((-w, lo, f"{names[i]} ({seen})"))
    return {k: [t for *_, t in sorted(v)] for k, v in out.items()}


def _items_line(n: int) -> str:
    """``"3 items"``; a leaf none of the shown items falls in says so (a pooled tree's
    leaf can hold other respondents' items only)."""
    return plural(n, "item") if n else "no shown item falls here"


#: Two-sided 95 % normal quantile: a slope is "sure" when its interval excludes 0.
_Z95 = 1.959963984540054


def leaf_slope_order(model: Any, leaf: int) -> list[tuple[int, bool]]:
    """The slope columns of a linear leaf, those that set it apart first: ``(column,
    sure)`` in the order a compact box names them.

    Sure slopes (95 % interval excludes 0) come first; within each group, the larger the
    leaf's departure from the slopes averaged over every leaf (weighted by their items),
    in units of the leaf slope's posterior sd, the earlier; ties (a tree of one leaf) by
    the slope's own ``|mean| / sd``.
    """
    mean, cov = model.slope_posterior()
    m = mean[int(leaf)]
    sd = np.sqrt(np.maximum(np.diagonal(cov[int(leaf)]), 1e-300))
    w = np.bincount(model.item_leaf_, minlength=model.n_leaves_).astype(float)
    avg = model.slope_posterior(weights=w)[0] if w.sum() > 0 else mean.mean(axis=0)
    apart = np.abs(m - avg) / sd
    strength = np.abs(m) / sd
    sure = strength > _Z95
    order = sorted(range(len(m)), key=lambda j: (not sure[j], -round(apart[j], 6), -strength[j]))
    return [(j, bool(sure[j])) for j in order]


def _leaf_lines(
    s: LeafSummary,
    n_leaves: int,
    ranks: Sequence[int],
    model: Any = None,
    money: str | None = None,
    time: str | None = None,
) -> tuple[str, list[str], list[str], list[str]]:
    """A leaf's title, its every line, its compact lines and its muted lines.

    Constant leaves: the utility and the item count. Linear leaves: the level at the
    leaf's average item, the item count, every slope (``±`` the half-width of its 95 %
    interval; muted when the interval includes 0) and an identified value of time; the
    compact box keeps the utility with the item count on one line, the identified value
    of time and the slopes that set the leaf apart (:func:`leaf_slope_order`), at most
    :data:`BRIEF_LINES` lines. A value of time that is not identified is said once, in
    the tree's title, not in every box.
    """
    tied = sum(1 for r in ranks if r == s.rank) > 1
    title = f"Leaf {s.number}" + (f" (tied rank {s.rank})" if tied else "")
    utility = f"utility {s.mean:+.2f} ± {s.sd:.2f}"
    if model is None or not labels.has_slopes(model):
        lines = [utility, _items_line(s.n_items)]
        return title, lines, list(lines), []
    # linear leaf: the level at the leaf's average item, then the slopes and the VOT
    utility = f"utility at centre {s.mean:+.2f} ± {s.sd:.2f}"
    slopes = labels.leaf_slope_lines(model, s.leaf, short=True)
    order = leaf_slope_order(model, s.leaf)
    unsure = [j for j, sure in order if not sure]
    muted = [slopes[j] for j in unsure] + [clip_line(slopes[j]) for j in unsure]
    vot = labels.value_of_time(model, money, time).get(s.leaf)
    vot_line = vot.text(short=True) if vot is not None and vot.ratio.identified else None
    lines = [utility, _items_line(s.n_items), *slopes, *([vot_line] if vot_line else [])]
    brief = [f"{utility} · {_items_line(s.n_items)}"]
    if vot is not None and vot_line:  # the money attribute is named once, in the title
        brief.append(f"value of time {labels.ratio_text(vot.ratio, vot.unit, short=True)}")
    brief += [clip_line(slopes[j]) for j, _ in order[: BRIEF_LINES - len(brief)]][:BRIEF_SLOPES]
    return title, lines, brief[:BRIEF_LINES], list(dict.fromkeys(muted))


def tree_view(
    model: DTSurrogate,
    schema: Schema | None = None,
    *,
    data: PreferenceData | None = None,
    item_names: Sequence[str] | None = None,
    highlight: np.ndarray | None = None,
    sensitive: Sequence[str] = (),
    title: str | None = None,
    money: str | None = None,
    time: str | None = None,
    detail: Detail = "compact",
) -> TreeView:
    """The drawable view of a fitted tree.

    Splits read as questions with the "no" side spelled out in the tooltip (and on the
    box for categorical splits), the number of comparisons and the consistency score;
    the tooltip says how many comparisons straddled the split (one item on each side)
    and so reached neither child. Leaves are numbered in rank order (leaf 1 is the best)
    and show mean +- sd (noise units) and, given ``data``, their items by name (from
    ``item_names``, default the item ids) with each item's observed wins and losses.
    ``highlight`` (one encoded item) marks its path. Linear leaves
    (:class:`~pbo_core.models.linear_leaves.LinearLeafDTSurrogate`) also show their
    slopes in the attributes' units and the value of time with its 95 % interval
    (:mod:`pbo_core.explain.labels`; ``money`` names the money attribute the trade-offs
    divide by, default the attribute measured in money; ``time`` the travel-time
    attribute, ``None``: no value of time); the title then ends with the overall value of
    time, the one place a value of time that is not identified is said. ``detail``:
    ``"compact"`` boxes (a leaf at most four lines: :func:`_leaf_lines`) or ``"full"``
    ones (:attr:`TreeView.detail`).
    """
    tree = model.tree_
    schema = schema or model.schema_
    rules = split_rules(model, schema)
    summaries = leaf_summaries(model, schema)
    leaves = {s.node: s for s in summaries}
    ranks = [s.rank for s in summaries]
    lo, hi = float(model.leaf_mean_.min()), float(model.leaf_mean_.max())
    path = set(tree.decision_path(highlight)) if highlight is not None else set()
    sens = tuple(s.lower() for s in sensitive)
    items = _item_records(model, data, item_names)
    under: dict[int, list[LeafSummary]] = {}
    for s in summaries:
        n = s.node
        while n >= 0:
            under.setdefault(n, []).append(s)
            n = int(tree.parent[n]) if n > 0 else -1
    nodes: list[ViewNode] = []
    for node in range(tree.n_nodes):
        par = int(tree.parent[node]) if node > 0 else -1
        edge = "" if par < 0 else ("yes" if node == tree.children_right[par] else "no")
        sub = under[node]
        means = [s.mean for s in sub]
        summary = (
            f"{len(sub)} leaves (collapsed)",
            f"utility {min(means):+.2f} .. {max(means):+.2f}",
            f"best: leaf {min(s.number for s in sub)}",
        )
        if tree.children_left[node] == -1:
            s = leaves[node]
            t, lines, brief, muted = _leaf_lines(s, model.n_leaves_, ranks, model, money, time)
            its = tuple(items.get(s.leaf, ()))
            path_txt = " AND ".join(s.conditions) or "all items"
            tip = f"{t}: {path_txt}. Posterior utility {s.mean:+.2f} ± {s.sd:.2f}."
            if labels.has_slopes(model):
                full = labels.leaf_slope_lines(model, s.leaf)
                vot = labels.value_of_time(model, money, time).get(s.leaf)
                full += [vot.text()] if vot is not None and vot.ratio.identified else []
                tip += " Slopes (utility per unit, noise units): " + "; ".join(full) + "."
            if its:
                tip += f" Items ({len(its)}): " + "; ".join(its[:40])
                tip += f"; and {len(its) - 40} more" if len(its) > 40 else ""
            nodes.append(
                ViewNode(
                    node,
                    par,
                    edge,
                    "leaf",
                    t,
                    tuple(lines),
                    items=its,
                    tooltip=tip,
                    fill=_colour(s.mean, lo, hi),
                    on_path=node in path,
                    depth=int(tree.depth[node]),
                    brief=tuple(brief),
                    muted=tuple(muted),
                )
            )
            continue
        right_rule, left_rule = rules[node]
        c = int(tree.feature[node])
        feat = schema.features[schema.columns[c].feature]
        flag = is_sensitive(feat.name, sens)
        n_here = int(tree.n_pairs[node])
        n_kids = int(tree.n_pairs[tree.children_left[node]]) + int(
            tree.n_pairs[tree.children_right[node]]
        )
        lines = [f"{plural(n_here, 'comparison')} · score {tree.score[node]:.2f}"]
        if tree.is_categorical[c] or feat.kind == "binary":
            lines.append(f"(no: {left_rule})")
        tip = (
            f"Split: {right_rule}? yes / no: {left_rule}. {plural(n_here, 'comparison')} "
            f"reached this node (consistency score {tree.score[node]:.2f})."
        )
        if n_kids < n_here:
            k = n_here - n_kids
            tip += (
                f" {plural(k, 'comparison')} straddled the split (one item on each side) "
                f"and {'was' if k == 1 else 'were'} not passed down, so the children's counts "
                f"add up to {n_kids}, not {n_here}."
            )
        nodes.append(
            ViewNode(
                node,
                par,
                edge,
                "split",
                f"{right_rule}?",
                tuple(lines),
                summary=summary,
                tooltip=tip,
                warn="⚠ sensitive attribute" if flag else "",
                on_path=node in path,
                depth=int(tree.depth[node]),
            )
        )
    # children in drawing order: "yes" (right child) first, as the DOT export always had
    order = {n.id: k for k, n in enumerate(nodes)}
    nodes.sort(key=lambda n: order[n.id] if n.parent < 0 else 0)
    by_parent: dict[int, list[ViewNode]] = {}
    for n in nodes:
        by_parent.setdefault(n.parent, []).append(n)
    for ch in by_parent.values():
        ch.sort(key=lambda n: n.edge != "yes")
    ordered: list[ViewNode] = []
    stack = list(by_parent.get(-1, []))
    while stack:
        n = stack.pop(0)
        ordered.append(n)
        stack = by_parent.get(n.id, []) + stack
    overall = (
        labels.value_of_time(model, money, time).get(None) if labels.has_slopes(model) else None
    )
    if overall is not None:
        vot = labels.ratio_text(overall.ratio, overall.unit, short=True, money=overall.money)
        title = (f"{title} · " if title else "") + (
            f"overall value of time (money: {overall.money}) {vot}"
        )
    return TreeView(tuple(ordered), title or "").with_detail(detail)


def to_dot(
    model: DTSurrogate,
    schema: Schema | None = None,
    *,
    highlight: np.ndarray | None = None,
    max_depth: int | None = None,
    sensitive: Sequence[str] = (),
    title: str | None = None,
    data: PreferenceData | None = None,
    item_names: Sequence[str] | None = None,
) -> str:
    """Graphviz DOT of a fitted tree (the boxes of :func:`tree_view`).

    ``max_depth`` collapses deeper subtrees into a summary box; splits on features whose
    name matches one of ``sensitive`` are flagged.
    """
    view = tree_view(
        model,
        schema,
        data=data,
        item_names=item_names,
        highlight=highlight,
        sensitive=sensitive,
        title=title,
    )
    return view.to_dot(max_depth=max_depth)


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


def hierarchy_view(h: UserItemHierarchy, max_named_items: int = 500) -> TreeView:
    """The user tree with each user group's item tree hanging below its group box.

    Item-tree leaves name the items the group compared, with the group's wins and losses
    (as the Tree explorer's leaves, :func:`~pbo_core.explain.naming.item_names`), when the
    group compared at most ``max_named_items`` items; larger groups (e.g. SwissMetro's
    thousands of profiles) keep the counts only, so the page stays light.
    """
    t = h.user_tree_
    nodes: list[ViewNode] = []
    next_id = 0

    def add(unode: int, parent: int, edge: str, depth: int) -> None:
        nonlocal next_id
        my = next_id
        next_id += 1
        if t.left[unode] == -1:
            leaf = t.leaf_of_node[unode]
            n_users = int(t.n_users[unode])
            model = h.item_trees_[leaf]
            nodes.append(
                ViewNode(
                    my,
                    parent,
                    edge,
                    "group",
                    f"User group {leaf}",
                    (
                        plural(n_users, "user"),
                        f"item tree: {plural(model.n_leaves_, 'leaf', 'leaves')}",
                    ),
                    tooltip=f"User group {leaf}: {plural(n_users, 'user')}; its item tree "
                    "is drawn below.",
                    fill="#dde8f5",
                    depth=depth,
                )
            )
            sub = tree_view(model, **_group_items(h, leaf, model, max_named_items)).nodes
            base = next_id
            next_id += len(sub)
            ids = {n.id: base + k for k, n in enumerate(sub)}
            for n in sub:
                nodes.append(
                    dataclasses.replace(
                        n,
                        id=ids[n.id],
                        parent=my if n.parent < 0 else ids[n.parent],
                        edge=n.edge or "item tree",
                        depth=depth + 1 + n.depth,
                    )
                )
            return
        sp = t.split[unode]
        rule = h.rule(unode, True)
        nodes.append(
            ViewNode(
                my,
                parent,
                edge,
                "split",
                f"{rule}?",
                (f"{plural(int(t.n_users[unode]), 'user')} · gain {sp.gain:.0f}",),
                tooltip=f"User split: {rule}? yes / no: {h.rule(unode, False)}.",
                fill="#dde8f5",
                depth=depth,
            )
        )
        for child, text in ((t.right[unode], "yes"), (t.left[unode], "no")):
            add(int(child), my, text, depth + 1)

    add(0, -1, "", 0)
    return TreeView(tuple(nodes), "")


def _group_items(h: UserItemHierarchy, leaf: int, model: DTSurrogate, limit: int) -> dict[str, Any]:
    """``data=`` and ``item_names=`` of a group's item tree: the items the group compared."""
    pairs = getattr(h, "group_pairs_", {}).get(leaf)
    study = getattr(h, "study_", None)
    if pairs is None or study is None or len(np.unique(pairs)) > limit:
        return {}
    full = study.data
    data = PreferenceData(
        full.X, pairs, schema=model.schema_, items=full.items, item_ids=full.item_ids
    ).select_pairs(np.ones(len(pairs), dtype=bool), drop_unused_items=True)
    return {"data": data, "item_names": item_names(data)}


def hierarchy_to_dot(h: UserItemHierarchy) -> str:
    """DOT of a user/item hierarchy: user splits, user groups and their item trees."""
    return hierarchy_view(h).to_dot()


def _segment_slope_order(model: Any, leaf: int) -> list[tuple[int, bool]]:
    """The attribute slopes of a choice-model tree's segment, those that set it apart
    first (as :func:`leaf_slope_order`): ``(column, sure)``, sure slopes (95 % interval
    from the cluster-robust error excludes 0) first, then by the segment's departure from
    the respondent-weighted average of every segment's slope, in its standard errors."""
    fits = model.leaf_models_
    k = len(fits[leaf].attribute_columns_)
    coef = np.array([np.asarray(f.coef_, dtype=float)[:k] for f in fits])
    w = np.asarray(model.n_respondents_leaf_, dtype=float)
    avg = (w / w.sum()) @ coef if w.sum() > 0 else coef.mean(axis=0)
    se = np.maximum(np.asarray(fits[leaf].cluster_se_, dtype=float)[:k], 1e-300)
    apart, strength = np.abs(coef[leaf] - avg) / se, np.abs(coef[leaf]) / se
    sure = strength > _Z95
    order = sorted(range(k), key=lambda j: (not sure[j], -round(apart[j], 6), -strength[j]))
    return [(j, bool(sure[j])) for j in order]


def choice_tree_view(
    model: Any, money: str | None = None, time: str | None = None, title: str = ""
) -> TreeView:
    """The drawable choice-model tree (:class:`~pbo_core.models.choice_tree.ChoiceModelTree`):
    respondent splits as questions ("yes" first), and every segment with its respondents,
    its choices, its conditional logit's attribute slopes in units with ``±`` the half-width
    of their 95 % interval (cluster-robust errors,
    :func:`~pbo_core.explain.labels.coefficient_slope_lines`), its alternative constants
    (:func:`~pbo_core.explain.labels.coefficient_constant_lines`) and its value of time
    (``money`` and ``time``: the plan's attributes; ``None``: no value of time). Drawn by
    the one :class:`TreeView` renderer, as every tree."""
    tree, ss = model.tree_, model.split_schema_
    nodes: list[ViewNode] = []
    next_id = 0

    def add(node: int, parent: int, edge: str) -> None:
        nonlocal next_id
        my = next_id
        next_id += 1
        n_resp = len(tree.fit[node].resp) if tree.fit else int(model.n_respondents_leaf_[0])
        if tree.left[node] == -1:
            leaf = model.leaf_of_node_[node]
            m = model.leaf_models_[leaf]
            vot = labels.coefficient_value_of_time(m, money, time)
            slopes = labels.coefficient_slope_lines(m, short=True)
            order = _segment_slope_order(model, leaf)
            count = f"{plural(n_resp, 'respondent')} · {plural(int(m.n_situations_), 'choice')}"
            lines = [
                count,
                *slopes,
                *([vot.text(short=True)] if vot is not None else []),
                *labels.coefficient_constant_lines(m, short=True),
            ]
            brief = [count]
            if vot is not None and vot.ratio.identified:
                brief.append(vot.text(short=True))
            brief += [clip_line(slopes[j]) for j, _ in order][: BRIEF_LINES - len(brief)]
            full = (
                labels.coefficient_slope_lines(m)
                + ([vot.text()] if vot is not None else [])
                + labels.coefficient_constant_lines(m)
            )
            nodes.append(
                ViewNode(
                    my,
                    parent,
                    edge,
                    "leaf",
                    f"Segment {leaf + 1}",
                    tuple(lines),
                    tooltip=f"Segment {leaf + 1}: {model.rules_[leaf]}. "
                    + "Slopes (utility per unit, 95% CI from cluster-robust errors): "
                    + "; ".join(full)
                    + ".",
                    fill="#dde8f5",
                    depth=int(tree.depth[node]),
                    brief=tuple(brief),
                    muted=tuple(
                        dict.fromkeys(
                            t
                            for j, sure in order
                            if not sure
                            for t in (slopes[j], clip_line(slopes[j]))
                        )
                    ),
                )
            )
            return
        sp = tree.split[node]
        yes = labels.describe_side(ss, sp.column, sp.threshold, sp.right, True)
        no = labels.describe_side(ss, sp.column, sp.threshold, sp.right, False)
        nodes.append(
            ViewNode(
                my,
                parent,
                edge,
                "split",
                f"{yes}?",
                (f"{plural(n_resp, 'respondent')} · gain {sp.gain:.1f} log-lik.", f"(no: {no})"),
                tooltip=f"Respondent split: {yes}? yes / no: {no}. The split raised the "
                f"segments' penalised log-likelihood by {sp.gain:.1f}.",
                fill="#f2f2f2",
                depth=int(tree.depth[node]),
            )
        )
        add(int(tree.right[node]), my, "yes")
        add(int(tree.left[node]), my, "no")

    add(0, -1, "")
    return TreeView(tuple(nodes), title)
