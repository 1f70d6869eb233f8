"""The compiled tree kernels give exactly the numpy implementation's trees."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbo_core.data import Feature, Schema
from pbo_core.models.tree import build_tree

FIELDS = (
    "children_left",
    "children_right",
    "feature",
    "threshold",
    "right_mask",
    "n_pairs",
    "score",
    "sum_z",
)


@st.composite
def problems(draw):
    n_items = draw(st.integers(2, 30))
    kinds = draw(
        st.lists(st.sampled_from(["numeric", "ordinal", "categorical"]), min_size=1, max_size=4)
    )
    feats, cols = [], []
    for j, k in enumerate(kinds):
        if k == "numeric":
            feats.append(Feature(f"f{j}", "numeric", bounds=(0, 3)))
            cols.append(
                draw(
                    st.lists(
                        st.sampled_from([0.0, 0.5, 1.0, 2.0, 2.5, 3.0]),
                        min_size=n_items,
                        max_size=n_items,
                    )
                )
            )
        else:
            levels = tuple(f"l{i}" for i in range(draw(st.integers(2, 7))))
            feats.append(Feature(f"f{j}", k, levels=levels))
            cols.append(
                draw(st.lists(st.integers(0, len(levels) - 1), min_size=n_items, max_size=n_items))
            )
    X = np.array(cols, dtype=float).T
    n_pairs = draw(st.integers(0, 60))
    pairs = np.array(
        [
            p
            for p in draw(
                st.lists(
                    st.tuples(st.integers(0, n_items - 1), st.integers(0, n_items - 1)),
                    min_size=n_pairs,
                    max_size=n_pairs,
                )
            )
            if p[0] != p[1]
        ],
        dtype=np.int64,
    ).reshape(-1, 2)
    controls = draw(
        st.sampled_from([{}, {"max_depth": 2}, {"min_samples_split": 4}, {"min_split_score": 0.3}])
    )
    return Schema(tuple(feats)), X, pairs, controls


@given(problems())
def test_compiled_tree_equals_numpy_tree(problem) -> None:
    schema, X, pairs, controls = problem
    fast = build_tree(X, pairs, schema, **controls)
    ref = build_tree(X, pairs, schema, backend="numpy", **controls)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name), err_msg=name)
    assert len(fast.leaf_pairs) == len(ref.leaf_pairs)
    for a, b in zip(fast.leaf_pairs, ref.leaf_pairs, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fast.apply(X), ref.leaf_id[ref.apply_nodes_numpy(X)])


def test_backend_choice_is_made_in_one_place_and_reported() -> None:
    from pbo_core.models.dt import DTSurrogate
    from pbo_core.models.tree import resolve_backend

    assert resolve_backend("auto", "discard") == "numba"
    assert resolve_backend("auto", "keep") == "numpy"
    assert resolve_backend("numpy", "discard") == "numpy"
    with pytest.raises(ValueError, match="discard-mode"):
        resolve_backend("numba", "keep")
    with pytest.raises(ValueError, match="backend must be"):
        resolve_backend("fast", "discard")  # type: ignore[arg-type]
    rng = np.random.default_rng(0)
    X = rng.random((30, 3))
    pairs = np.array(
        [
            (i, j) if X[i].sum() > X[j].sum() else (j, i)
            for i, j in rng.integers(0, 30, (60, 2))
            if i != j
        ]
    )
    from pbo_core.data import PreferenceData

    data = PreferenceData(X, pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (3, 1))))
    a = DTSurrogate().fit(data)
    b = DTSurrogate(backend="numpy").fit(data)
    assert a.backend_ == "numba" and b.backend_ == "numpy"
    assert not hasattr(a, "_split_cache")  # the memo exists only where it is used
    np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)
    np.testing.assert_allclose(a.leaf_mean_, b.leaf_mean_)
    assert DTSurrogate(straddlers="keep").fit(data).backend_ == "numpy"
