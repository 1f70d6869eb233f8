import json

import numpy as np
import pytest

from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.explain import leaf_summaries, split_rules, to_dot, to_json
from pbo_core.models.dt import DTSurrogate


@pytest.fixture
def fitted():
    schema = Schema(
        (
            Feature("sensitivity", "ordinal", levels=("60%", "70%", "80%", "90%")),
            Feature("party", "categorical", levels=("Democrat", "Republican", "Independent")),
            Feature("cost", "numeric", bounds=(0, 40), unit="BRB"),
        )
    )
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 4, 40), rng.integers(0, 3, 40), rng.uniform(0, 40, 40)])
    u = 2.0 * X[:, 0] + 3.0 * (X[:, 1] == 0) - 0.02 * X[:, 2]
    pairs = np.array(
        [[a, b] if u[a] > u[b] else [b, a] for a, b in rng.integers(0, 40, (120, 2)) if a != b]
    )
    data = PreferenceData(X, pairs, schema=schema)
    return DTSurrogate().fit(data), data, schema


def test_rules_use_labels_and_units(fitted) -> None:
    model, _, _ = fitted
    texts = " ".join(r for pair in split_rules(model) for r in pair)
    assert "sensitivity >= " in texts or "sensitivity = " in texts
    assert any(lvl in texts for lvl in ("70%", "80%", "90%"))
    leaves = leaf_summaries(model)
    assert len(leaves) == model.n_leaves_
    assert sorted(s.rank for s in leaves)[0] == 1
    assert sum(s.n_items for s in leaves) == 40
    # every item satisfies its leaf's conditions' count: the path length
    tree = model.tree_
    for s in leaves:
        assert len(s.conditions) == tree.depth[s.node]


def test_dot_highlights_a_path_and_flags_sensitive_splits(fitted) -> None:
    model, data, _ = fitted
    dot = to_dot(model, highlight=data.X[0], sensitive=("party",))
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    path = model.tree_.decision_path(data.X[0])
    for node in path:
        line = next(ln for ln in dot.splitlines() if ln.strip().startswith(f"n{node} ["))
        assert "penwidth=3" in line
    party_split = any(
        model.schema_.columns[int(c)].name == "party" for c in model.tree_.feature if c >= 0
    )
    assert ("sensitive attribute" in dot) == party_split
    shallow = to_dot(model, max_depth=1)
    assert shallow.count("->") == 2


def test_json_roundtrip(fitted) -> None:
    model, _, _ = fitted
    d = json.loads(to_json(model))
    assert len(d["nodes"]) == model.tree_.n_nodes
    leaves = [n for n in d["nodes"] if "leaf" in n]
    assert len(leaves) == model.n_leaves_
    assert Schema.from_dict(d["schema"]) == model.schema_


def test_sensitive_attributes_match_whole_words() -> None:
    from pbo_core.explain import is_sensitive

    assert is_sensitive("age", ["age"]) and is_sensitive("r_age", ["age"])
    assert is_sensitive("Race/Ethnicity", ["race"])
    assert not is_sensitive("gay_marriage", ["age"])
    assert not is_sensitive("message_actionability", ["age", "race"])
    assert is_sensitive("religious_activity", ["religio"])


# ----------------------------------------------------------------------------- compact boxes
def _box_lines(view, node) -> int:
    """Text lines of a drawn box: its wrapped title and its body as the view shows it."""
    from pbo_core.explain.export import wrap_title

    return len(wrap_title(node.title)) + len(view.node_lines(node, False))


@pytest.fixture(scope="module")
def linear_trips():
    """A linear-leaf tree on trips (price, time and an attribute with no effect), with its
    data: two leaves whose slopes in guilders and hours carry 95 % intervals."""
    from pbo_core.models.linear_leaves import LinearLeafDTSurrogate

    rng = np.random.default_rng(0)
    schema = Schema(
        (
            Feature("price", "numeric", bounds=(5, 40), label="Price", unit="guilders"),
            Feature("time", "numeric", bounds=(30, 180), label="Travel time", unit="min"),
            Feature("seat", "numeric", bounds=(0, 10), label="Seat colour code", unit="points"),
            Feature("zone", "categorical", levels=("north", "south"), label="Zone"),
        )
    )
    n = 160
    X = np.column_stack(
        [
            rng.uniform(5, 40, n),
            rng.uniform(30, 180, n),
            rng.uniform(0, 10, n),
            rng.integers(0, 2, n),
        ]
    )
    u = -0.2 * X[:, 0] - 0.02 * X[:, 1] + 1.5 * X[:, 3]
    i, j = rng.integers(0, n, (2, 2500))
    keep = i != j
    i, j = i[keep], j[keep]
    wins = u[i] - u[j] + np.sqrt(2) * rng.standard_normal(len(i)) > 0
    pairs = np.column_stack([np.where(wins, i, j), np.where(wins, j, i)])
    data = PreferenceData(X, pairs, schema=schema)
    model = LinearLeafDTSurrogate(linear_features="all", max_depth=1, slope_ratio=0.01)
    return model.fit(data), data


def test_compact_leaves_read_at_a_glance_and_the_full_view_keeps_every_line(
    fitted, linear_trips
) -> None:
    from pbo_core.explain import tree_view
    from pbo_core.explain.export import BRIEF_LINES

    model, data, _ = fitted
    names = [f"item {k} with a rather long descriptive name" for k in range(data.n_items)]
    compact = tree_view(model, data=data, item_names=names)
    assert compact.detail == "compact"
    for n in (n for n in compact.nodes if n.kind == "leaf"):
        body = compact.node_lines(n, False)
        assert _box_lines(compact, n) <= 4 and len(body) <= BRIEF_LINES
        assert body[0].startswith("utility ") and body[1].endswith(("items", "item"))
        if n.items:  # one example item, named without its counts; all on click
            assert body[2].startswith("e.g. item ") and "won" not in body[2]
    full = compact.with_detail("full")
    big = max((n for n in full.nodes if n.kind == "leaf"), key=lambda n: len(n.items))
    assert len(full.node_lines(big, False)) > 3  # every line and the first items
    # the exports show what the view shows
    assert "e.g. item" in compact.to_svg() and "e.g. item" not in full.to_svg()
    assert "e.g. item" in compact.to_dot() and "e.g. item" not in full.to_dot()
    assert compact.to_dict()["detail"] == "compact"

    lin, lin_data = linear_trips
    view = tree_view(lin, data=lin_data, money="price", time="time")
    for n in (n for n in view.nodes if n.kind == "leaf"):
        body = view.node_lines(n, False)
        assert _box_lines(view, n) <= 4
        assert " · " in body[0] and "items" in body[0]  # utility and item count, one line
        # the value of time first (named once: the money attribute is in the title)
        assert body[1].startswith("value of time ") and "(money:" not in body[1]
        assert set(body[2:]) <= set(n.lines)  # a slope, as in the full box
        assert len(n.lines) > len(body)  # every slope in the full box and on click
        assert view.to_dict()["nodes"][[m.id for m in view.nodes].index(n.id)]["details"] == list(
            n.lines
        )
    svg = view.to_svg()
    for g in svg.split('<g class="node"')[1:]:
        if "Leaf " in g:
            assert g.count("<text") <= 4


def test_numbers_whose_interval_includes_zero_are_muted(linear_trips) -> None:
    from pbo_core.explain import tree_view
    from pbo_core.explain.export import MUTED

    lin, lin_data = linear_trips
    view = tree_view(lin, data=lin_data, money="price", time="time", detail="full")
    seat = [t for n in view.nodes for t in n.lines if t.startswith("Seat colour code")]
    assert seat and all(t.endswith("(sign unsure)") for t in seat)
    for n in (n for n in view.nodes if n.kind == "leaf"):
        muted = {t for t in n.muted if t in n.lines}  # (and their shortened forms)
        assert muted == {t for t in n.lines if t.endswith("(sign unsure)")}
        assert not any(t.startswith(("Price", "Travel time")) for t in n.muted)
    svg = view.to_svg()
    assert f'fill="{MUTED}" font-style="italic">Seat colour code' in svg
    assert f"<i><font color='{MUTED}'>Seat colour code" in view.to_dot()
    # a compact box names the slopes that are sure first
    compact = view.with_detail("compact")
    for n in (n for n in compact.nodes if n.kind == "leaf"):
        assert not any(t.startswith("Seat colour code") for t in compact.node_lines(n, False))


def test_a_value_of_time_that_is_not_identified_is_said_once() -> None:
    """Only the travel time matters (the price slope's interval includes 0): the title
    says the value of time is not identified; no box repeats it, compact or full."""
    from pbo_core.explain import tree_view
    from pbo_core.models.linear_leaves import LinearLeafDTSurrogate

    rng = np.random.default_rng(1)
    schema = Schema(
        (
            Feature("price", "numeric", bounds=(5, 40), label="Price", unit="guilders"),
            Feature("time", "numeric", bounds=(30, 180), label="Travel time", unit="min"),
        )
    )
    X = np.column_stack([rng.uniform(5, 40, 60), rng.uniform(30, 180, 60)])
    u = -0.03 * X[:, 1]
    i, j = rng.integers(0, 60, (2, 300))
    keep = i != j
    i, j = i[keep], j[keep]
    wins = u[i] - u[j] + np.sqrt(2) * rng.standard_normal(len(i)) > 0
    pairs = np.column_stack([np.where(wins, i, j), np.where(wins, j, i)])
    data = PreferenceData(X, pairs, schema=schema)
    model = LinearLeafDTSurrogate(linear_features="all", max_depth=1, slope_ratio=0.01).fit(data)
    for detail in ("compact", "full"):
        view = tree_view(model, data=data, title="Trips", money="price", time="time", detail=detail)
        assert "overall value of time (money: Price) not identified" in view.title
        shown = [t for n in view.nodes for t in view.node_lines(n, False)]
        assert not any("not identified" in t for t in shown)
        assert view.to_svg().count("not identified") == 1


def test_a_leaf_names_the_slopes_that_set_it_apart_first() -> None:
    """Two leaves of equal item counts: the slope in which a leaf departs most from the
    average (in its posterior sd) comes first; sure slopes before unsure ones."""
    from pbo_core.explain import leaf_slope_order

    class Slopes:
        n_leaves_ = 2
        item_leaf_ = np.array([0, 0, 1, 1])
        means = np.array([[-1.0, -0.50, 0.05], [-1.0, -0.10, -0.05]])
        covs = np.stack([np.diag([0.01, 0.0004, 0.01])] * 2)

        def slope_posterior(self, respondent=None, weights=None):
            if weights is None:
                return self.means, self.covs
            w = np.asarray(weights, dtype=float) / np.sum(weights)
            return w @ self.means, np.tensordot(w**2, self.covs, axes=1)

    order = leaf_slope_order(Slopes(), 0)
    assert order[0] == (1, True)  # its second slope is 20 sd from the average
    assert order[1] == (0, True)  # shared by both leaves: sure, but sets nothing apart
    assert order[2] == (2, False)  # the interval includes 0: last (and muted)


def test_long_lines_keep_their_numbers_and_wide_trees_open_as_outlines(fitted) -> None:
    from pbo_core.explain import tree_view
    from pbo_core.explain.export import BRIEF_CHARS, clip_line

    line = "Red flag syndrome includes respiratory_distress_or_wheezing: +0.6 ±8.1 (sign unsure)"
    short = clip_line(line)
    assert len(short) <= BRIEF_CHARS and short.endswith(": +0.6 ±8.1 (sign unsure)")
    assert short.startswith("Red flag syndrome") and "…" in short
    assert clip_line("utility +1.00 ± 0.20") == "utility +1.00 ± 0.20"
    model, data, _ = fitted
    view = tree_view(model, data=data)
    n_leaves = sum(n.kind == "leaf" for n in view.nodes)
    lay = view.layout()
    width = max(x + w / 2 for x, _, w, _, _ in lay.values())
    assert view.wide() == (width > 1340 or n_leaves > 16)
    assert view.wide(max_depth=1) is False  # two boxes below the root
    # an outline row per compact line at most; the leaf's title leads its first row
    for n in (n for n in view.nodes if n.kind == "leaf"):
        rows = view.outline_lines(n, False)
        assert rows[0].split(": ", 1)[-1].startswith(n.title) and len(rows) <= 3
