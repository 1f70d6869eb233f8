"""The choice-model tree as pages show it: the drawn tree (pbo_core.explain.export.
choice_tree_view) and the segment table (pbo_core.explain.baseline.segment_table)."""

from __future__ import annotations

import numpy as np

from pbo_core.explain import choice_tree_view, labels
from pbo_core.explain.baseline import segment_table
from tests.pbo_core.models.test_choice_tree import _choices, _tree, _users


def test_the_tree_and_table_show_each_segments_slopes_and_value_of_time() -> None:
    rng = np.random.default_rng(1)
    users = _users(rng, 400)
    model = _tree(random_state=np.random.default_rng(2)).fit(_choices(rng, users, "quad"))
    assert model.n_leaves_ == 4
    view = choice_tree_view(model, money="cost", time="time", title="t")
    kinds = [n.kind for n in view.nodes]
    assert kinds.count("leaf") == 4 and kinds.count("split") == 3 and view.title == "t"
    assert [n.edge for n in view.nodes if n.parent == 0] == ["yes", "no"]  # yes first
    for n in view.nodes:
        if n.kind == "split":
            assert n.title.endswith("?") and n.lines[1].startswith("(no: ")
            continue
        k = int(n.title.split()[-1]) - 1
        m = model.leaf_models_[k]
        assert n.lines[0].startswith(f"{model.n_respondents_leaf_[k]} respondents")
        assert list(n.lines[1:3]) == labels.coefficient_slope_lines(m, short=True)
        assert n.lines[3] == labels.coefficient_value_of_time(m, "cost", "time").text(short=True)
        # each segment's constants with their intervals: B's differs by segment here
        consts = labels.coefficient_constant_lines(m, short=True)
        assert list(n.lines[4:]) == consts and len(consts) == 2
        j = m.column_names_.index("ASC B")
        assert consts[0].startswith(f"Constant: B (vs A): {m.coef_[j]:+.2f}"[:22])
        assert " ±" in consts[0]
        assert model.rules_[k] in n.tooltip and "Constant: B (vs A)" in n.tooltip
    table = segment_table(model, "cost", "time")
    assert list(table["segment"]) == [1, 2, 3, 4]
    assert table["respondents"].sum() == 400
    cost = table.filter(like="cost").iloc[:, 0]
    for k, text in enumerate(cost):  # estimate (cluster-robust s.e.) of the leaf's logit
        m = model.leaf_models_[k]
        j = m.column_names_.index("cost")
        assert text == f"{m.coef_[j]:.3g} ({m.cluster_se_[j]:.2g})"
    vot = table["value of time [95% CI]"]
    assert vot.str.contains(r"per hour|not identified").all()
    # no money or time role: no value of time, anywhere
    assert "value of time [95% CI]" not in segment_table(model).columns
    bare = choice_tree_view(model)
    assert not any("Value of time" in line for n in bare.nodes for line in n.lines)
