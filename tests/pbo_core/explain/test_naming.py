"""Item names: formatted column by column, exactly as row by row."""

from __future__ import annotations

import pytest

from data_loaders.registry import load_study
from pbo_core.explain import naming


def _row_by_row(data, n_features):
    """The former implementation: every value formatted in its ``iterrows()`` row."""
    schema = data.get_schema()
    dec = schema.decode(data.X)
    feats = schema.features[:n_features] if n_features else schema.features
    if n_features:
        text = [", ".join(f.format_value(r[f.name]) for f in feats) for _, r in dec.iterrows()]
    else:
        text = [
            ", ".join(f"{f.display}: {f.format_value(r[f.name])}" for f in feats)
            for _, r in dec.iterrows()
        ]
    return [f"{i} — {t}" for i, t in zip(data.ids(), text, strict=True)]


@pytest.mark.parametrize("key", ["train", "electricity"])
def test_labels_and_names_equal_the_row_by_row_texts(key: str) -> None:
    data = load_study(key).data
    data = data.select_pairs(data.pairs[:, 0] < 400, drop_unused_items=True)  # quick
    assert naming.item_labels(data, 10_000) == _row_by_row(data, None)
    assert naming.item_names(data, 10_000) == _row_by_row(data, 3)
    clipped = naming.item_names(data, 20)
    assert all(len(t) <= 20 for t in clipped) and any(t.endswith("…") for t in clipped)
