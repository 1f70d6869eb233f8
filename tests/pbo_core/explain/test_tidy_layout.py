"""The tidy tree layout of :class:`pbo_core.explain.TreeView`: compact, ordered, centred."""

from __future__ import annotations

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
