"""The compiled tree kernels give exactly the numpy implementation's trees."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbo_core import _fast
from pbo_core.data import Feature, Schema
from pbo_core.tree import build_tree

pytestmark = pytest.mark.skipif(not _fast.AVAILABLE, reason="numba is not installed")

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
    ref = build_tree(X, pairs, schema, use_compiled=False, **controls)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(ref, name), err_msg=name)
    assert len(fast.leaf_pairs) == len(ref.leaf_pairs)
    for a, b in zip(fast.leaf_pairs, ref.leaf_pairs, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fast.apply(X), ref.leaf_id[ref.apply_nodes_numpy(X)])
