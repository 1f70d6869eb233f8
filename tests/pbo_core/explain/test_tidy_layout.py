"""The tidy tree layout of :class:`pbo_core.explain.TreeView`: compact, ordered, centred."""

from __future__ import annotations

import html
import itertools

import pytest

from data_loaders.registry import load_study
from pbo_core.explain import tree_view
from pbo_core.explain.naming import item_names
from pbo_core.models.dt import DTSurrogate


@pytest.fixture(scope="module")
def pmr_view():
    data = load_study("pmr-demo").data
    return tree_view(DTSurrogate().fit(data), data=data, item_names=item_names(data), title="t")


def strip_width(view, gap: float = 14.0) -> float:
    """Width of the layout that gives every subtree a strip as wide as its leaves."""
    kids = view.children()
    span: dict[int, float] = {}
    for n in reversed(view.nodes):
        inner = sum(span[c] for c in kids[n.id]) + gap * max(len(kids[n.id]) - 1, 0)
        span[n.id] = max(view.box(n)[0], inner)
    return span[view.nodes[0].id]


def test_big_tree_is_packed_ordered_and_centred(pmr_view) -> None:
    lay = pmr_view.layout()
    kids = pmr_view.children()
    width = max(x + w / 2 for x, _, w, _, _ in lay.values()) - min(
        x - w / 2 for x, _, w, _, _ in lay.values()
    )
    # subtrees tuck under their neighbours: much narrower than one strip per subtree
    assert width < 0.8 * strip_width(pmr_view)
    for n in pmr_view.nodes:
        ch = kids[n.id]
        if not ch:
            continue
        xs = [lay[c][0] for c in ch]
        assert xs == sorted(xs)  # "yes" child left of "no", as drawn before
        assert lay[n.id][0] == pytest.approx((xs[0] + xs[-1]) / 2)  # parent centred
    # no two boxes of one level overlap, with the 14 px gap kept
    by_top: dict[float, list[tuple[float, float]]] = {}
    for x, y, w, _h, _c in lay.values():
        by_top.setdefault(y, []).append((x - w / 2, x + w / 2))
    for spans in by_top.values():
        spans.sort()
        assert all(a[1] + 14.0 - 1e-6 <= b[0] for a, b in itertools.pairwise(spans))
    assert min(x - w / 2 for x, _, w, _, _ in lay.values()) == pytest.approx(4.0)


def test_collapsed_subtrees_are_laid_out_as_one_box(pmr_view) -> None:
    full = pmr_view.layout()
    shallow = pmr_view.layout(max_depth=2)
    assert len(shallow) < len(full)
    assert max(x + w / 2 for x, _, w, _, _ in shallow.values()) < max(
        x + w / 2 for x, _, w, _, _ in full.values()
    )


def test_outline_gives_every_box_its_own_row_indented_by_level(pmr_view) -> None:
    from pbo_core.explain.export import OUTLINE_INDENT

    lay = pmr_view.layout(style="outline")
    assert set(lay) == {n.id for n in pmr_view.nodes}  # nothing collapsed: every box
    by_id = {n.id: n for n in pmr_view.nodes}
    rows = sorted(lay, key=lambda i: lay[i][1])
    # depth first, the "yes" side before the "no" side: a parent's row precedes its children
    kids = pmr_view.children()
    for i in rows:
        for a, b in itertools.pairwise(kids[i]):
            assert lay[i][1] < lay[a][1] < lay[b][1]
    # rows never overlap, and each is indented one step per level below the root
    for a, b in itertools.pairwise(rows):
        assert lay[a][1] + lay[a][3] <= lay[b][1]
    level = {pmr_view.nodes[0].id: 0}
    for i in rows[1:]:
        level[i] = level[by_id[i].parent] + 1
        x, _, w, _, _ = lay[i]
        assert x - w / 2 == pytest.approx(4.0 + OUTLINE_INDENT * level[i])
    # the 34-leaf tree that is ~7,000 px wide top-down fits a page column as an outline
    tree_width = max(x + w / 2 for x, _, w, _, _ in pmr_view.layout().values())
    width = max(x + w / 2 for x, _, w, _, _ in lay.values())
    assert width < 940 < tree_width


def test_outline_svg_names_every_box_with_its_edge(pmr_view) -> None:
    svg = pmr_view.to_svg(style="outline", max_depth=2)
    shown = pmr_view.layout(style="outline", max_depth=2)
    assert svg.count('<g class="node"') == len(shown)
    for i in shown:
        n = next(n for n in pmr_view.nodes if n.id == i)
        first = pmr_view.outline_lines(n, collapsed=i in shown and shown[i][4])[0]
        assert html.escape(first) in svg
        if n.edge:
            assert first.startswith(f"{n.edge}: ")
    with pytest.raises(ValueError, match="style"):
        pmr_view.layout(style="sideways")
