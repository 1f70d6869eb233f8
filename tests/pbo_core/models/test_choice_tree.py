"""The choice-model tree (pbo_core.models.choice_tree): segments of respondents by their
features, a conditional logit per segment, pruned by held-out likelihood."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.models.choice_tree import ChoiceModelTree, ChoiceTreeNodes, _Fit, _Split
from pbo_core.plan import AnalysisPlan
from pbo_core.registry import make_for

ITEMS = Schema(
    (
        Feature("mode", "categorical", levels=("A", "B", "C")),
        Feature("cost", "numeric", bounds=(0, 10), unit="CHF"),
        Feature("time", "numeric", bounds=(0, 60), unit="min"),
    )
)
USERS = Schema(
    (
        Feature("age", "numeric", bounds=(18, 80), label="Age"),
        Feature("region", "categorical", levels=("n", "s", "e", "w", "c"), label="Region"),
        Feature("car", "binary", levels=("no", "yes"), label="Car"),
        Feature("noise", "numeric", bounds=(0, 1)),
    )
)


def _users(rng: np.random.Generator, R: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": rng.uniform(18, 80, R).round(),
            "region": rng.choice(list("nsewc"), R),
            "car": rng.choice(["no", "yes"], R),
            "noise": rng.uniform(0, 1, R),
        },
        index=np.arange(R),
    )


def _segment(users: pd.DataFrame, kind: str) -> np.ndarray:
    """Planted segment of every respondent: ``quad`` (age < 40 x south/east region),
    ``bands`` (age < 30, 30-50, >= 50), ``two`` (car owners or not), ``none`` (one
    segment)."""
    young = (users["age"] < 40).to_numpy()
    south = users["region"].isin(["s", "e"]).to_numpy()
    if kind == "quad":
        return 2 * young + south
    if kind == "bands":
        return np.digitize(users["age"].to_numpy(), [30, 50])
    if kind == "two":
        return (users["car"] == "yes").to_numpy().astype(int)
    return np.zeros(len(users), dtype=int)


#: The planted coefficients: cost slope and B's constant (vs A) of every segment; time
#: -0.05 per minute and C's constant 0 everywhere.
COST = {"quad": [-0.2, -0.2, -1.0, -1.0], "bands": [-1.5, -0.6, -0.1], "two": [-0.3, -1.2]}
ASC_B = {"quad": [-0.5, 1.5, -0.5, 1.5], "bands": [0.0, 0.0, 0.0], "two": [1.0, -0.5]}


def _choices(
    rng: np.random.Generator, users: pd.DataFrame, kind: str, T: int = 10
) -> PreferenceData:
    """Each respondent makes ``T`` choices among modes A, B, C (random cost and time),
    with the cost slope and constants of their planted segment."""
    seg = _segment(users, kind)
    cost = {**COST, "none": [-0.8]}[kind]
    asc_b = {**ASC_B, "none": [0.0]}[kind]
    X, pairs, resp, task = [], [], [], []
    for r, s in zip(users.index, seg, strict=True):
        for t in range(T):
            base = len(X)
            rows = [[k, rng.uniform(0, 10), rng.uniform(0, 60)] for k in range(3)]
            X += rows
            v = np.array([asc_b[s] * (k == 1) + cost[s] * c - 0.05 * m for k, c, m in rows])
            p = np.exp(v - v.max())
            ch = rng.choice(3, p=p / p.sum())
            for k in range(3):
                if k != ch:
                    pairs.append((base + ch, base + k))
                    resp.append(r)
                    task.append(t)
    return PreferenceData(
        np.array(X, dtype=float),
        np.array(pairs),
        schema=ITEMS,
        respondent=np.array(resp),
        task=np.array(task),
        users=users,
    )


def _tree(**kw: object) -> ChoiceModelTree:
    return ChoiceModelTree(alternative="mode", user_schema=USERS, **kw)  # type: ignore[arg-type]


def test_recovers_a_planted_segmentation() -> None:
    rng = np.random.default_rng(1)
    users = _users(rng, 400)
    model = _tree(random_state=np.random.default_rng(2)).fit(_choices(rng, users, "quad"))
    assert model.n_leaves_ == 4
    leaf = model.assign(users)
    seg = _segment(users, "quad")
    for k in range(4):  # every leaf is one planted segment
        assert np.bincount(seg[leaf == k], minlength=4).max() == (leaf == k).sum()
    assert {r.split(" AND ")[0].split()[0] for r in model.rules_} <= {"Age", "Region"}
    # the young segments' cost slopes are the steep ones
    cost = {k: m.coef_[m.column_names_.index("cost")] for k, m in enumerate(model.leaf_models_)}
    young = {k for k in range(4) if (seg[leaf == k] >= 2).all()}
    assert max(cost[k] for k in young) < min(cost[k] for k in set(cost) - young)
    assert model.tree_.max_depth == 2 and len(model.leaf_table()) == 4


def _by_respondents(data: PreferenceData, share: float, seed: int) -> tuple[PreferenceData, ...]:
    """``data`` split into a training part and a validation part of whole respondents."""
    resp = np.unique(data.respondent)
    held = np.random.default_rng(seed).permutation(resp)[: int(share * len(resp))]
    val = np.isin(data.respondent, held)
    return data.select_pairs(~val), data.select_pairs(val)


@pytest.mark.parametrize("pruning", ["folds", "validation"])
def test_recovers_two_planted_segments_and_their_coefficients(pruning: str) -> None:
    """Car owners and the others differ in their cost slope and B's constant: the tree
    splits once, on the car, and each leaf's logit is its segment's (within sampling
    error), whether pruned by folds of training respondents or by a validation set."""
    rng = np.random.default_rng(31)
    users = _users(rng, 500)
    data = _choices(rng, users, "two")
    model = _tree(random_state=np.random.default_rng(32))
    if pruning == "folds":
        model.fit(data)
    else:
        train, val = _by_respondents(data, 0.2, 33)
        model.fit(train, validation=val)
    assert model.n_leaves_ == 2 and model.tree_.max_depth == 1
    assert model.tree_.split[0] is not None
    assert model.split_schema_ is not None
    assert model.split_schema_.names[model.tree_.split[0].column] == "car"
    seg = _segment(users, "two")
    leaf = model.assign(users)
    for k, m in enumerate(model.leaf_models_):
        (truth,) = np.unique(seg[leaf == k])  # every leaf is one planted segment
        cost = m.coef_[m.column_names_.index("cost")]
        asc = m.coef_[m.column_names_.index("ASC B")]
        time = m.coef_[m.column_names_.index("time")]
        se = m.cluster_se_
        assert abs(cost - COST["two"][truth]) < 4 * se[m.column_names_.index("cost")] + 0.05
        assert abs(asc - ASC_B["two"][truth]) < 4 * se[m.column_names_.index("ASC B")] + 0.05
        assert abs(time + 0.05) < 0.02


def test_keeps_one_segment_without_planted_ones_on_a_validation_set() -> None:
    rng = np.random.default_rng(35)
    users = _users(rng, 500)
    train, val = _by_respondents(_choices(rng, users, "none"), 0.2, 36)
    model = _tree().fit(train, validation=val)
    assert model.n_leaves_ == 1 and model.rules_ == ["all respondents"]
    assert model.cv_loglik_ is not None and len(model.cv_loglik_) >= 2


def test_predicts_respondents_it_never_saw() -> None:
    rng = np.random.default_rng(3)
    users = _users(rng, 400)
    data = _choices(rng, users, "quad")
    train = data.select_pairs(data.respondent < 300)  # 100 respondents never seen
    model = _tree().fit(train)
    assert model.n_leaves_ >= 2
    for r in (310, 350, 399):
        leaf = model.leaf_of(r)
        assert leaf is not None
        u = model.predict(data.X, respondent=r)
        assert np.allclose(u, model.leaf_models_[leaf].predict(data.X))
        assert leaf == model.assign(users.loc[[r]])[0]
    # a respondent without a feature row, or none: the pooled logit
    assert np.allclose(model.predict(data.X, respondent="nobody"), model.root_.predict(data.X))
    assert np.allclose(model.predict(data.X), model.root_.predict(data.X))
    p = model.prob_prefer(data.X[:5], data.X[5:10], respondent=310)
    assert p.shape == (5,) and ((p > 0) & (p < 1)).all()


def test_does_not_split_on_noise() -> None:
    rng = np.random.default_rng(5)
    users = _users(rng, 400)
    model = _tree(random_state=np.random.default_rng(6)).fit(_choices(rng, users, "none"))
    assert model.n_leaves_ == 1
    assert model.rules_ == ["all respondents"]
    assert model.cv_loglik_ is not None and len(model.cv_loglik_) >= 2


def test_rules_merge_repeated_conditions() -> None:
    rng = np.random.default_rng(7)
    users = _users(rng, 450)
    model = _tree(min_respondents_leaf=40).fit(_choices(rng, users, "bands"))
    assert model.n_leaves_ >= 3
    for rule in model.rules_:  # one condition on age per rule
        assert sum("Age" in c for c in rule.split(" AND ")) == 1
    assert any(" <= Age < " in r for r in model.rules_)  # the middle band


def test_nested_thresholds_read_as_one_condition() -> None:
    """ "Age < 23.5", not "Age < 36.5 AND Age < 28.5 AND Age < 23.5"."""
    model = _tree()
    empty = _Fit(np.zeros(1), 0.0, np.zeros(0, dtype=np.int64))
    splits = [_Split(0, t, frozenset(), False, 1.0) for t in (36.5, 28.5, 23.5)]
    # node 0 -> (1, 2); 1 -> (3, 4); 3 -> (5, 6): always the left side
    model.tree_ = ChoiceTreeNodes(
        left=[1, 3, -1, 5, -1, -1, -1],
        right=[2, 4, -1, 6, -1, -1, -1],
        split=[splits[0], splits[1], None, splits[2], None, None, None],
        depth=[0, 1, 1, 2, 2, 3, 3],
        fit=[empty] * 7,
    )
    model.split_schema_ = USERS
    assert model._rule(5) == "Age < 23.5"
    assert model._rule(6) == "23.5 <= Age < 28.5"
    assert model._rule(2) == "Age >= 36.5"


def test_the_registry_entry_takes_the_plan() -> None:
    rng = np.random.default_rng(9)
    users = _users(rng, 60)
    data = _choices(rng, users, "none", T=4)
    study = Study(
        "sim",
        "Simulated",
        ITEMS,
        data,
        users=users,
        user_schema=USERS,
        plan=AnalysisPlan(alternative="mode", reference="A", case_specific=("age", "car")),
    )
    model = make_for("mnl-tree", study)
    assert model.alternative == "mode" and model.reference == "A"
    assert tuple(model.case_specific) == ("age", "car") and model.user_schema is USERS
    model.fit(data)
    # splits on every respondent feature; by default the segments' logits hold the
    # constants and attribute slopes (the respondent features enter through the splits)
    assert model.split_schema_ is not None
    assert model.split_schema_.names == ["age", "region", "car", "noise"]
    assert model.n_leaves_ == 1  # 60 respondents: no two leaves of 50
    plain = make_for("mnl", study, case_specific=()).fit(data)
    assert np.array_equal(model.root_.coef_, plain.coef_)
    assert not any(n.startswith("age [") for n in model.root_.column_names_)
    # leaf_terms="all": every segment's logit is the plan's, case-specific variables too;
    # the root is then the plan's baseline, bit for bit
    full = make_for("mnl-tree", study, leaf_terms="all").fit(data)
    mnl = make_for("mnl", study).fit(data)
    assert np.array_equal(full.root_.coef_, mnl.coef_)
    assert any(n.startswith("age [") for n in full.root_.column_names_)
    for r in (0, 7, 59):
        assert np.array_equal(full.predict(data.X, respondent=r), mnl.predict(data.X, r))


def test_segments_are_shrunk_toward_their_parent() -> None:
    """Each segment's logit is Eq. 1's fit: centred on its parent's estimate; a larger
    shrinkage keeps it closer; the growth's estimate is the segment's logit's."""
    rng = np.random.default_rng(21)
    users = _users(rng, 400)
    data = _choices(rng, users, "quad")
    dist = {}
    for lam in (3.0, 3000.0):
        model = _tree(shrinkage=lam, n_folds=0).fit(data)  # no pruning: the full tree
        assert model.n_leaves_ >= 2 and model.shrinkage_ == lam
        parent = model.tree_.parents()
        for node, leaf in model.leaf_of_node_.items():
            m = model.leaf_models_[leaf]
            assert np.array_equal(m.center, model.tree_.fit[parent[node][0]].theta)
            assert m.alpha_ == lam
            assert np.allclose(m.coef_, model.tree_.fit[node].theta, atol=0.02)
        root = model.root_.coef_
        dist[lam] = np.mean([np.abs(m.coef_ - root).sum() for m in model.leaf_models_])
    assert dist[3000.0] < 0.5 * dist[3.0]


def test_high_cardinality_features_are_not_split_on_by_default() -> None:
    rng = np.random.default_rng(23)
    many = Feature("district", "categorical", levels=tuple(f"d{k}" for k in range(20)))
    schema = Schema((*USERS.features, many))
    users = _users(rng, 120).assign(district=rng.choice([f"d{k}" for k in range(20)], 120))
    data = _choices(rng, users, "none", T=3)
    model = ChoiceModelTree(alternative="mode", user_schema=schema, n_folds=0).fit(data)
    assert model.split_schema_ is not None and "district" not in model.split_schema_.names
    named = ChoiceModelTree(
        alternative="mode", user_schema=schema, split_features=["district"], n_folds=0
    ).fit(data)
    assert named.split_schema_ is not None and named.split_schema_.names == ["district"]


def test_without_features_it_is_the_pooled_logit() -> None:
    rng = np.random.default_rng(11)
    data = _choices(rng, _users(rng, 30), "none", T=4)
    plain = PreferenceData(
        data.X, data.pairs, schema=ITEMS, respondent=data.respondent, task=data.task
    )
    model = _tree().fit(plain)
    assert model.n_leaves_ == 1 and model.leaf_models_[0] is model.root_
    assert np.allclose(model.predict(data.X, respondent=3), model.root_.predict(data.X))


def test_bad_prune_rule() -> None:
    rng = np.random.default_rng(13)
    data = _choices(rng, _users(rng, 400), "quad", T=6)
    with pytest.raises(ValueError, match="prune_rule"):
        _tree(prune_rule="median").fit(data)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shrinkage"):
        _tree(shrinkage=0.0).fit(data)
