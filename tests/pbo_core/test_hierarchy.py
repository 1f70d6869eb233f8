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


def _choice_items(rng: np.random.Generator, n_items: int) -> tuple[np.ndarray, Schema]:
    """Items with a categorical mode and coarse numeric columns (many tied values)."""
    schema = Schema(
        (
            Feature("mode", "categorical", levels=("a", "b", "c", "d")),
            Feature("cost", "numeric", bounds=(0.0, 10.0)),
            Feature("time", "numeric", bounds=(0.0, 5.0)),
        )
    )
    X = np.column_stack(
        [
            rng.integers(0, 4, n_items),
            rng.integers(0, 11, n_items).astype(float),
            rng.integers(0, 6, n_items) * 1.0,
        ]
    ).astype(float)
    return X, schema


def _random_pairs(rng: np.random.Generator, X: np.ndarray, n: int) -> np.ndarray:
    pairs = rng.integers(0, len(X), (n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    # mostly the cheaper item wins, so the trees have splits to find
    util = -X[:, 1] + 0.5 * X[:, 0] + rng.normal(0, 2, len(X))
    swap = util[pairs[:, 0]] < util[pairs[:, 1]]
    pairs[swap] = pairs[swap][:, ::-1]
    return pairs


@pytest.mark.parametrize("seed", range(6))
def test_group_tree_extension_is_the_tree_grown_on_group_plus_user(seed: int) -> None:
    from pbo_core.hierarchy import GroupTreeExtension
    from pbo_core.models.tree import build_tree

    rng = np.random.default_rng(seed)
    X, schema = _choice_items(rng, 120)
    group = _random_pairs(rng, X, 150)
    depth = [2, 3, 5, None][seed % 4]
    tree = build_tree(X, group, schema, max_depth=depth)
    values = rng.normal(size=len(X))
    ext = GroupTreeExtension(tree, X, group, schema, max_depth=depth, item_values=values)
    changed = 0
    for _ in range(40):
        user = _random_pairs(rng, X, int(rng.integers(1, 7)))
        ref = build_tree(X, np.vstack([group, user]), schema, max_depth=depth)
        got, leaf_mean = ext.extend(user)
        changed += len(ref.feature) != len(tree.feature) or not np.array_equal(
            ref.threshold, tree.threshold, equal_nan=True
        )
        for f in ("children_left", "children_right", "feature", "right_mask", "n_pairs"):
            np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)
        for f in ("threshold", "sum_z", "score"):
            np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)
        assert len(got.leaf_pairs) == len(ref.leaf_pairs)
        for a, b in zip(got.leaf_pairs, ref.leaf_pairs, strict=True):
            np.testing.assert_array_equal(a, b)
        leaf = ref.apply(X)
        want = np.bincount(leaf, values, minlength=ref.n_leaves) / np.maximum(
            np.bincount(leaf, minlength=ref.n_leaves), 1
        )
        np.testing.assert_array_equal(leaf_mean, want)
    assert changed > 0  # some user answers changed a split: subtrees were regrown


def test_a_shared_warm_start_fits_what_a_warm_start_on_its_own_fits() -> None:
    from pbo_core.hierarchy import WarmStartDT
    from tests.benchmarks.hierarchy_scale import simulated_study

    study = simulated_study(300, seed=2)
    resp = study.respondents()
    extended = 0
    for depth in (0, 2):  # the pooled warm start (one group) and user groups
        h = UserItemHierarchy(max_depth=depth, min_users_leaf=20).fit(study, np.arange(250))
        for u in range(250, 290):
            rows = np.flatnonzero(study.data.respondent == resp[u])
            leaf = int(h.assign(study.users.loc[[resp[u]]])[0])
            for k in (0, 2, 4, 8):
                data = study.data.select_pairs(rows[:k], drop_unused_items=True)
                shared = h.warm_start_surrogate(leaf, data.X)
                shared.fit(data)  # the group's tree, extended by the user's answers
                alone = WarmStartDT(  # grown afresh on group + user
                    group=h.item_tree(leaf),
                    group_X=study.data.X,
                    group_pairs=h.group_pairs_[leaf],
                    schema=study.schema,
                    max_depth=h.item_max_depth,
                ).fit(data)
                for f in ("feature", "threshold", "n_pairs", "sum_z"):
                    np.testing.assert_array_equal(
                        getattr(shared.tree_, f), getattr(alone.tree_, f), err_msg=f
                    )
                np.testing.assert_array_equal(shared.predict(data.X), alone.predict(data.X))
                extended += k > 0 and "extension" in shared._shared
    assert extended > 0
