import numpy as np
import pandas as pd
import pytest

from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.explain.export import describe_hierarchy, hierarchy_to_dot
from pbo_core.hierarchy import UserItemHierarchy, consistency, grow_user_tree, net_counts


def test_eq15_on_a_hand_computed_case() -> None:
    # 3 items -> pairs (0,1), (0,2), (1,2); two users
    # user 0: 0>1, 0>2, 1>2 ; user 1: 1>0, 2>0, 1>2
    pairs = np.array([[0, 1], [0, 2], [1, 2], [1, 0], [2, 0], [1, 2]])
    users = np.array([0, 0, 0, 1, 1, 1])
    D = net_counts(pairs, users, 2, 3)
    np.testing.assert_array_equal(D, [[1, 1, 1], [-1, -1, 1]])
    # together: |1-1| + |1-1| + |1+1| = 2 ; apart: 3 + 3 = 6
    assert consistency(D) == 2.0
    assert consistency(D[:1]) + consistency(D[1:]) == 6.0
    U = np.array([[0.0], [1.0]])
    tree = grow_user_tree(U, D, np.array([False]), min_users_leaf=1)
    assert tree.n_leaves == 2
    assert tree.split[0].gain == 6.0 and tree.split[0].threshold == 0.5


def population(n_users: int = 120, seed: int = 0) -> Study:
    """Two groups with opposite tastes, told apart by 'diet' (not by 'age')."""
    rng = np.random.default_rng(seed)
    item_schema = Schema((Feature("spicy", "numeric", bounds=(0, 1)),))
    X = np.linspace(0, 1, 6)[:, None]
    diet = rng.integers(0, 2, n_users)  # 0 = mild lovers, 1 = spice lovers
    age = rng.uniform(18, 80, n_users)
    pairs, resp = [], []
    for u in range(n_users):
        util = X[:, 0] if diet[u] == 1 else -X[:, 0]
        for a, b in rng.integers(0, 6, (20, 2)):
            if a != b:
                pairs.append([a, b] if util[a] > util[b] else [b, a])
                resp.append(u)
    users = pd.DataFrame(
        {"diet": np.where(diet == 1, "spicy", "mild"), "age": age},
        index=pd.Index(np.arange(n_users), name="respondent"),
    )
    user_schema = Schema(
        (
            Feature("diet", "categorical", levels=("mild", "spicy")),
            Feature("age", "numeric", bounds=(18, 80)),
        )
    )
    data = PreferenceData(X, np.array(pairs), schema=item_schema, respondent=np.array(resp))
    return Study("food", "Food", item_schema, data, users=users, user_schema=user_schema)


def test_opposite_groups_are_split_on_the_right_user_feature() -> None:
    study = population()
    h = UserItemHierarchy(max_depth=3, min_users_leaf=10).fit(study)
    first = h.user_tree_.split[0]
    assert h.user_schema_.names[first.column] == "diet"
    spicy = h.assign(pd.DataFrame({"diet": ["spicy"], "age": [40.0]}))[0]
    mild = h.assign(pd.DataFrame({"diet": ["mild"], "age": [40.0]}))[0]
    assert spicy != mild
    X = study.data.X
    assert h.item_tree(spicy).predict(X[[5]])[0] > h.item_tree(spicy).predict(X[[0]])[0]
    assert h.item_tree(mild).predict(X[[0]])[0] > h.item_tree(mild).predict(X[[5]])[0]
    text = describe_hierarchy(h)
    assert "diet" in text and "users group" in text
    dot = hierarchy_to_dot(h)
    assert dot.count("<b>User group ") == h.user_tree_.n_leaves  # one box per user group


def test_warm_start_moves_a_new_users_prior_toward_the_group() -> None:
    study = population()
    h = UserItemHierarchy(max_depth=2, min_users_leaf=10).fit(study)
    leaf = h.assign(pd.DataFrame({"diet": ["spicy"], "age": [30.0]}))[0]
    X = study.data.X
    model = h.warm_start_surrogate(leaf, X)
    # a new user with a single uninformative comparison: the group's taste dominates
    model.fit(PreferenceData(X, np.array([[2, 3]]), schema=study.schema))
    pred = model.predict(X)
    assert pred[5] > pred[0]
    # ... and the user's own answers pull the other way as they accumulate
    against = np.array([[0, 5], [0, 4], [1, 5], [0, 3], [1, 4]] * 6)
    model.fit(PreferenceData(X, against, schema=study.schema))
    assert model.predict(X)[0] > model.predict(X)[5]


def test_needs_user_features() -> None:
    study = population()
    study.users = None
    with pytest.raises(ValueError, match="no user features"):
        UserItemHierarchy().fit(study)


def private_items_population(n_users: int = 80, seed: int = 1) -> Study:
    """Every user has private items (like SwissMetro profiles) of two shared kinds."""
    rng = np.random.default_rng(seed)
    item_schema = Schema(
        (Feature("kind", "numeric", bounds=(0, 1)), Feature("owner", "numeric", bounds=(0, 1e3)))
    )
    diet = rng.integers(0, 2, n_users)
    X, pairs, resp = [], [], []
    for u in range(n_users):
        a, b = len(X), len(X) + 1  # this user's own two items: kind 0 and kind 1
        X += [[0.0, u], [1.0, u]]
        for _ in range(5):
            pairs.append([b, a] if diet[u] == 1 else [a, b])
            resp.append(u)
    users = pd.DataFrame(
        {"diet": np.where(diet == 1, "spicy", "mild")},
        index=pd.Index(np.arange(n_users), name="respondent"),
    )
    user_schema = Schema((Feature("diet", "categorical", levels=("mild", "spicy")),))
    data = PreferenceData(
        np.array(X), np.array(pairs), schema=item_schema, respondent=np.array(resp)
    )
    return Study("private", "Private", item_schema, data, users=users, user_schema=user_schema)


def test_split_items_find_groups_when_items_are_never_shared() -> None:
    study = private_items_population()
    # on the items themselves no pair is compared by two users: Eq. 15 cannot split
    plain = UserItemHierarchy(max_depth=2, min_users_leaf=5).fit(study)
    assert plain.user_tree_.n_leaves == 1
    kind = study.data.X[:, 0].astype(int)
    h = UserItemHierarchy(max_depth=2, min_users_leaf=5).fit(study, split_items=kind)
    assert h.user_tree_.n_leaves == 2
    assert h.user_schema_.names[h.user_tree_.split[0].column] == "diet"
    # item trees are still grown on the group's own (private) items
    spicy = int(h.assign(pd.DataFrame({"diet": ["spicy"]}))[0])
    tree = h.item_tree(spicy)
    assert tree.predict(np.array([[1.0, 3.0]]))[0] > tree.predict(np.array([[0.0, 3.0]]))[0]
    # the loader hint is the default
    study.extras["hierarchy_split_items"] = kind
    assert UserItemHierarchy(max_depth=2, min_users_leaf=5).fit(study).user_tree_.n_leaves == 2
    with pytest.raises(ValueError, match="one non-negative code per item"):
        UserItemHierarchy().fit(study, split_items=kind[:-1])
