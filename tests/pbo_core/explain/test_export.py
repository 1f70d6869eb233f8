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
