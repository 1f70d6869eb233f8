"""Readable item names for tree leaves, tables and reports.

An item is named by its id and its most telling text: a message, a name column, or its
attribute values in schema order. The dashboard, the CLI report and the user/item
hierarchy view all name items through these functions, so a leaf lists the same names
everywhere.
"""

from __future__ import annotations

from pbo_core.data import PreferenceData

__all__ = ["clip", "item_labels", "item_names"]


def clip(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters (an ellipsis marks the cut)."""
    return text if len(text) <= n else text[: n - 1] + "…"


def item_labels(data: PreferenceData, max_len: int = 70) -> list[str]:
    """A label per item: its id and its most telling text or every attribute."""
    return [clip(t, max_len) for t in _item_texts(data, n_features=None)]


def item_names(data: PreferenceData, max_len: int = 44) -> list[str]:
    """Short item names for tree leaves: id and name/message start, or 3 attributes."""
    return [clip(t, max_len) for t in _item_texts(data, n_features=3)]


def _item_texts(data: PreferenceData, n_features: int | None) -> list[str]:
    ids = data.ids()
    items = data.items
    schema = data.get_schema()
    for col in ("message", "name_en", "name"):
        if items is not None and col in items.columns:
            text = items[col].astype(str).tolist()
            break
    else:
        dec = schema.decode(data.X)
        feats = schema.features[:n_features] if n_features else schema.features
        if n_features:  # short: values only, in schema order
            text = [
                ", ".join(f.format_value(row[f.name]) for f in feats) for _, row in dec.iterrows()
            ]
        else:
            text = [
                ", ".join(f"{f.display}: {f.format_value(row[f.name])}" for f in feats)
                for _, row in dec.iterrows()
            ]
    return [f"{i} — {t}" for i, t in zip(ids, text, strict=True)]
