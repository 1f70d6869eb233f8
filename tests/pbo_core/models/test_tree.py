import itertools
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbo_core.data import Feature, Schema
from pbo_core.models.tree import SplitCache, best_split, build_tree
from pbo_core.models.tree.build import _recursion_room
from tests.pbo_core.models.tree_reference import consistency_score, mean_z


# ---------------------------------------------------------------- consistency score
def test_consistency_score_golden() -> None:
    # pair 1: winner right, loser left -> +1; pair 2: same side -> 0; pair 3: reversed -> -1
    w = np.array([3.0, 2.0, 0.0])
    lo = np.array([1.0, 1.8, 4.0])
    assert mean_z(w, lo, 1.5) == pytest.approx(0.0)
    # threshold 1.9: pair1 +1, pair2 (2.0 >= 1.9, 1.8 < 1.9) +1, pair3 -1 -> 1/3
    assert consistency_score(w, lo, 1.9) == pytest.approx(1 / 3)
    # at the threshold counts as right ("at or above")
    assert mean_z([2.0], [1.0], 2.0) == 1.0
    assert consistency_score([], [], 0.5) == 0.0


finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@given(
    st.lists(st.tuples(finite, finite), min_size=1, max_size=30),
    finite,
)
def test_score_in_unit_interval_and_sign_flips(pairs, t) -> None:
    w = np.array([p[0] for p in pairs])
    lo = np.array([p[1] for p in pairs])
    s = consistency_score(w, lo, t)
    assert 0.0 <= s <= 1.0
    assert mean_z(lo, w, t) == pytest.approx(-mean_z(w, lo, t))


# ---------------------------------------------------------------- split search vs brute force
def brute_force_best(Xw, Xl, is_cat, n_cat):
    n, d = Xw.shape
    best = 0.0
    for c in range(d):
        if is_cat[c]:
            cats = range(int(n_cat[c]))
            for r in range(1, int(n_cat[c])):
                for right in itertools.combinations(cats, r):
                    z = np.isin(Xw[:, c], right).astype(int) - np.isin(Xl[:, c], right)
                    best = max(best, abs(z.sum()) / n)
        else:
            u = np.unique(np.concatenate([Xw[:, c], Xl[:, c]]))
            for t in (u[1:] + u[:-1]) / 2:
                best = max(best, consistency_score(Xw[:, c], Xl[:, c], t))
    return best


@st.composite
def node_data(draw):
    n = draw(st.integers(1, 25))
    d = draw(st.integers(1, 4))
    is_cat = np.array(draw(st.lists(st.booleans(), min_size=d, max_size=d)))
    n_cat = np.array([draw(st.integers(2, 6)) if c else 0 for c in is_cat])
    cols_w, cols_l = [], []
    for c in range(d):
        if is_cat[c]:
            gen = st.integers(0, int(n_cat[c]) - 1)
        else:
            gen = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])  # ties are likely
        cols_w.append(draw(st.lists(gen, min_size=n, max_size=n)))
        cols_l.append(draw(st.lists(gen, min_size=n, max_size=n)))
    Xw = np.array(cols_w, dtype=float).T
    Xl = np.array(cols_l, dtype=float).T
    return Xw, Xl, is_cat, n_cat


@given(node_data())
def test_vectorised_split_matches_brute_force(data) -> None:
    Xw, Xl, is_cat, n_cat = data
    span = np.where(is_cat, np.maximum(n_cat - 1, 1), 3.0)
    split = best_split(Xw, Xl, is_cat, n_cat, span)
    expected = brute_force_best(Xw, Xl, is_cat, n_cat)
    if expected == 0:
        assert split is None
        return
    assert split is not None
    assert split.score == pytest.approx(expected)
    c = split.column
    if is_cat[c]:
        right = [k for k in range(int(n_cat[c])) if (split.right_mask >> k) & 1]
        z = np.isin(Xw[:, c], right).astype(int) - np.isin(Xl[:, c], right)
    else:
        z = (Xw[:, c] >= split.threshold).astype(int) - (Xl[:, c] >= split.threshold)
    assert z.sum() == pytest.approx(split.sum_z)
    assert abs(z.sum()) / len(z) == pytest.approx(split.score)


def test_twelve_category_rule_is_exact() -> None:
    # the net-wins rule must find the best of all 2^11 - 1 partitions (Sushi minor group)
    rng = np.random.default_rng(3)
    Xw = rng.integers(0, 12, size=(40, 1)).astype(float)
    Xl = rng.integers(0, 12, size=(40, 1)).astype(float)
    split = best_split(Xw, Xl, np.array([True]), np.array([12]), np.array([11.0]))
    assert split is not None
    assert split.score == pytest.approx(brute_force_best(Xw, Xl, [True], [12]))


def test_ties_prefer_the_wider_gap_then_the_lower_column() -> None:
    # one pair; both columns separate it perfectly; column 1's gap is wider
    Xw = np.array([[0.6, 0.9]])
    Xl = np.array([[0.4, 0.1]])
    span = np.ones(2)
    split = best_split(Xw, Xl, np.zeros(2, bool), np.zeros(2, int), span)
    assert split.column == 1 and split.threshold == pytest.approx(0.5)
    # equal gaps: the lower column wins
    Xw = np.array([[0.6, 0.6]])
    Xl = np.array([[0.4, 0.4]])
    assert best_split(Xw, Xl, np.zeros(2, bool), np.zeros(2, int), span).column == 0


# ---------------------------------------------------------------- tree growth
def numeric_schema(d: int) -> Schema:
    return Schema.numeric(np.tile([0.0, 1.0], (d, 1)))


def test_straddlers_are_excluded_from_descendants_but_kept_for_leaves() -> None:
    # x in [0,1]; utility = x. Items: 0.1, 0.3, 0.6, 0.9.
    X = np.array([[0.1], [0.3], [0.6], [0.9]])
    pairs = np.array([[2, 1], [3, 0], [3, 2], [1, 0]])  # all consistent with f = x
    # root: all four pairs have winner above loser; the best root threshold is the
    # widest-gap one separating the most pairs: t = 0.45 separates (0.6, 0.3) and (0.9, 0.1)
    tree = build_tree(X, pairs, numeric_schema(1))
    assert tree.threshold[0] == pytest.approx(0.45)
    assert tree.n_pairs[0] == 4 and tree.score[0] == pytest.approx(0.5)
    left, right = tree.children_left[0], tree.children_right[0]
    # the two straddlers are gone below the root: each child keeps its one within pair
    assert tree.n_pairs[left] == 1 and tree.n_pairs[right] == 1
    assert tree.n_leaves == 4
    np.testing.assert_array_equal(tree.apply(X), [0, 1, 2, 3])
    # with straddlers kept (masked), each straddler joins its winner's child (both right)
    keep = build_tree(X, pairs, numeric_schema(1), straddlers="keep")
    assert keep.n_pairs[keep.children_left[0]] == 1
    assert keep.n_pairs[keep.children_right[0]] == 3


def test_keep_straddlers_masks_the_split_column() -> None:
    # one pair that differs only on column 0: after the root split on column 0 the
    # retained pair is masked there, so it cannot split again
    X = np.array([[0.2, 0.5], [0.8, 0.5]])
    pairs = np.array([[1, 0]])
    keep = build_tree(X, pairs, numeric_schema(2), straddlers="keep")
    assert keep.n_leaves == 2
    assert keep.n_pairs[keep.children_right[0]] == 1  # the winner's child keeps the pair


def test_growth_controls() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((60, 3))
    u = X @ np.array([3.0, -2.0, 1.0])
    i, j = rng.integers(0, 60, (2, 200))
    ok = i != j
    pairs = np.where((u[i] > u[j])[:, None], np.c_[i, j], np.c_[j, i])[ok]
    full = build_tree(X, pairs, numeric_schema(3))
    assert full.n_leaves > 4
    shallow = build_tree(X, pairs, numeric_schema(3), max_depth=2)
    assert shallow.max_depth <= 2 and shallow.n_leaves <= 4
    strict = build_tree(X, pairs, numeric_schema(3), min_split_score=0.99)
    assert strict.n_leaves < full.n_leaves
    big = build_tree(X, pairs, numeric_schema(3), min_samples_split=50)
    assert np.all(big.n_pairs[big.children_left != -1] >= 50)


def test_categorical_split_and_rules_route_items() -> None:
    schema = Schema(
        (
            Feature("minor", "categorical", levels=tuple(f"c{k}" for k in range(5))),
            Feature("oil", "numeric", bounds=(0, 4)),
        )
    )
    X = np.array([[0, 1.0], [1, 1.0], [2, 1.0], [3, 1.0], [4, 1.0]])
    pairs = np.array([[3, 0], [3, 1], [4, 2], [4, 0], [3, 2]])  # categories 3, 4 win
    tree = build_tree(X, pairs, schema)
    assert tree.feature[0] == 0
    right = [k for k in range(5) if (tree.right_mask[0] >> k) & 1]
    assert right == [3, 4]
    assert tree.apply(X).tolist() == [0, 0, 0, 1, 1]
    _lo, _hi, allowed = tree.node_box(int(tree.children_right[0]))
    assert [k for k in range(5) if (allowed[0] >> k) & 1] == [3, 4]


def test_sample_in_leaf_lands_in_the_leaf() -> None:
    rng = np.random.default_rng(1)
    X = rng.random((40, 2))
    u = np.sin(6 * X[:, 0]) + X[:, 1]
    pairs = np.array(
        [[a, b] if u[a] > u[b] else [b, a] for a, b in rng.integers(0, 40, (80, 2)) if a != b]
    )
    tree = build_tree(X, pairs, numeric_schema(2))
    for leaf in range(tree.n_leaves):
        pts = tree.sample_in_leaf(leaf, 50, rng)
        assert np.all(tree.apply(pts) == leaf)
    lower, upper, _ = tree.boxes
    for node in tree.leaf_nodes:
        lo, hi, _ = tree.node_box(int(node))
        np.testing.assert_array_equal(lo, lower[node])
        np.testing.assert_array_equal(hi, upper[node])


def test_integer_columns_sample_valid_codes() -> None:
    schema = Schema((Feature("level", "ordinal", levels=("a", "b", "c", "d")),))
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    pairs = np.array([[3, 1], [2, 0]])
    tree = build_tree(X, pairs, schema)
    rng = np.random.default_rng(0)
    for leaf in range(tree.n_leaves):
        pts = tree.sample_in_leaf(leaf, 30, rng, schema.is_integer)
        assert np.all(pts == np.round(pts))
        assert np.all(tree.apply(pts) == leaf)


def test_cached_refits_equal_fresh_builds() -> None:
    rng = np.random.default_rng(5)
    X = rng.random((80, 3))
    u = np.cos(5 * X[:, 0]) + X[:, 1] ** 2 - X[:, 2]
    cache = SplitCache()
    pairs = []
    for _step in range(60):
        a, b = rng.choice(80, 2, replace=False)
        pairs.append([a, b] if u[a] > u[b] else [b, a])
        P = np.array(pairs)
        for mode in ("discard",):
            cached = build_tree(
                X, P, numeric_schema(3), straddlers=mode, cache=cache, backend="numpy"
            )
            fresh = build_tree(X, P, numeric_schema(3), straddlers=mode)
            for name in ("children_left", "children_right", "feature", "threshold", "n_pairs"):
                np.testing.assert_array_equal(getattr(cached, name), getattr(fresh, name))
    # a different data set through the same cache must not reuse stale subtrees
    X2 = X[::-1].copy()
    np.testing.assert_array_equal(
        build_tree(X2, P, numeric_schema(3), cache=cache, backend="numpy").threshold,
        build_tree(X2, P, numeric_schema(3)).threshold,
    )


def test_decision_path_ends_in_the_applied_leaf() -> None:
    rng = np.random.default_rng(2)
    X = rng.random((30, 2))
    u = X[:, 0] - X[:, 1]
    pairs = np.array(
        [[a, b] if u[a] > u[b] else [b, a] for a, b in rng.integers(0, 30, (50, 2)) if a != b]
    )
    tree = build_tree(X, pairs, numeric_schema(2))
    nodes = tree.apply_nodes(X)
    for x, node in zip(X, nodes, strict=True):
        path = tree.decision_path(x)
        assert path[0] == 0 and path[-1] == node
        assert all(tree.parent[b] == a for a, b in itertools.pairwise(path))


def test_adjacent_float_values_still_split() -> None:
    # the midpoint of two adjacent doubles rounds onto one of them; the split must still
    # separate the pair (regression: this used to recurse forever)
    a = 0.3
    b = np.nextafter(a, 1.0)
    X = np.array([[a], [b]])
    tree = build_tree(X, np.array([[1, 0]]), numeric_schema(1))
    assert tree.n_leaves == 2
    assert tree.apply(X).tolist() == [0, 1]


def _tied_thresholds(Xw: np.ndarray, Xl: np.ndarray) -> tuple[float, list[tuple]]:
    """Brute force: every threshold split of the largest |sum Z|, with its straddlers."""
    d = Xw.shape[1]
    out = []
    for c in range(d):
        vals = np.unique(np.r_[Xw[:, c], Xl[:, c]])
        for t in 0.5 * (vals[1:] + vals[:-1]):
            z = (Xw[:, c] >= t).astype(int) - (Xl[:, c] >= t).astype(int)
            out.append((abs(z.sum()), c, t, int(np.abs(z).sum())))
    top = max(o[0] for o in out)
    return top, [o for o in out if o[0] == top]


@pytest.mark.parametrize("seed", range(6))
def test_split_tie_rules_pick_among_the_tied_splits(seed) -> None:
    rng = np.random.default_rng(seed)
    Xw = rng.integers(0, 4, (12, 3)).astype(float)  # few values: many tied splits
    Xl = rng.integers(0, 4, (12, 3)).astype(float)
    is_cat = np.zeros(3, bool)
    n_cat = np.zeros(3, np.int64)
    span = np.full(3, 3.0)
    top, tied = _tied_thresholds(Xw, Xl)
    if top == 0:
        assert best_split(Xw, Xl, is_cat, n_cat, span, ties="first") is None
        return
    keys = {(c, round(t, 9)): s for _, c, t, s in tied}
    gap = best_split(Xw, Xl, is_cat, n_cat, span)
    for ties in ("first", "straddlers", "random"):
        r = np.random.default_rng(0) if ties == "random" else None
        s = best_split(Xw, Xl, is_cat, n_cat, span, ties=ties, rng=r)
        assert abs(s.sum_z) == top and s.score == pytest.approx(gap.score)
        assert (s.column, round(s.threshold, 9)) in keys
    first = best_split(Xw, Xl, is_cat, n_cat, span, ties="first")
    assert (first.column, first.threshold) == min((c, t) for _, c, t, _ in tied)
    fewest = best_split(Xw, Xl, is_cat, n_cat, span, ties="straddlers")
    assert keys[(fewest.column, round(fewest.threshold, 9))] == min(keys.values())
    drawn = {
        (s.column, s.threshold)
        for s in (
            best_split(Xw, Xl, is_cat, n_cat, span, ties="random", rng=np.random.default_rng(k))
            for k in range(40)
        )
    }
    assert drawn <= {(c, t) for _, c, t, _ in tied}
    if len(tied) > 1:
        assert len(drawn) > 1


def test_split_tie_rules_reach_the_dt_and_need_a_generator_for_random() -> None:
    from pbo_core.data import PreferenceData
    from pbo_core.models.dt import DTSurrogate

    rng = np.random.default_rng(1)
    X = rng.integers(0, 5, (30, 3)).astype(float)
    pairs = rng.choice(30, (40, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    schema = Schema.numeric(np.tile([0.0, 4.0], (3, 1)))
    data = PreferenceData(X, pairs, schema=schema)
    default = DTSurrogate().fit(data)
    for ties in ("first", "straddlers"):
        m = DTSurrogate(split_ties=ties).fit(data)
        assert m.backend_ == "numpy" and m.n_leaves_ >= 1
    a = DTSurrogate(split_ties="random", split_rng=np.random.default_rng(5)).fit(data)
    b = DTSurrogate(split_ties="random", split_rng=np.random.default_rng(5)).fit(data)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))  # seeded
    assert default.backend_ == "numba"
    with pytest.raises(ValueError, match="Generator"):
        DTSurrogate(split_ties="random").fit(data)
    with pytest.raises(ValueError, match="split_ties"):
        DTSurrogate(split_ties="widest").fit(data)


def test_overlapping_builders_never_lower_each_others_recursion_limit() -> None:
    """The recursion limit is one per process: a builder that finishes while another is
    still deep in its recursion must not restore the old limit under it."""
    before = sys.getrecursionlimit()
    with _recursion_room(before + 5_000):
        with _recursion_room(before + 100):  # a second, smaller builder
            assert sys.getrecursionlimit() == before + 5_000
        assert sys.getrecursionlimit() == before + 5_000  # still room for the first
        outer = _recursion_room(before + 9_000)
        outer.__enter__()
    # the first left while the third is still inside: its room stays
    assert sys.getrecursionlimit() == before + 9_000
    outer.__exit__(None, None, None)
    assert sys.getrecursionlimit() == before
