"""Fitted trees, item labels and tables, drawable tree views and their PNG export."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard._services.studies import respondent_data, study_token
from pbo_core import explain
from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.explain import naming
from pbo_core.models.dt import DTSurrogate


@st.cache_resource(show_spinner="Fitting the tree...", max_entries=64)
def _fit_tree(
    token: Any,
    respondent: str,
    max_depth: int | None,
    min_samples_split: int,
    straddlers: str,
    _study: Study,
    _respondent: Any,
) -> DTSurrogate:
    data = respondent_data(_study, _respondent)
    return DTSurrogate(
        max_depth=max_depth, min_samples_split=min_samples_split, straddlers=straddlers
    ).fit(data)


def fit_tree(
    study: Study,
    respondent: Any,
    *,
    max_depth: int | None = None,
    min_samples_split: int = 1,
    straddlers: str = "discard",
) -> DTSurrogate:
    """The DT of a respondent (or the pooled data), cached per settings."""
    return _fit_tree(
        study_token(study),
        repr(respondent),
        max_depth,
        int(min_samples_split),
        straddlers,
        study,
        respondent,
    )


def default_sensitive(study: Study) -> list[str]:
    """Features flagged as sensitive by default (gender, race, religion, ...).

    Matches whole words of the feature name (``"age"`` flags ``age`` but not
    ``gay_marriage`` or ``message_actionability``); longer keys match word prefixes
    (``"religio"`` flags ``religion`` and ``religious_activity``).
    """
    keys = explain.SENSITIVE_DEFAULT
    return [f.name for f in study.schema.features if explain.is_sensitive(f.name, keys)]


def item_labels(data: PreferenceData, max_len: int = 70) -> list[str]:
    """A label per item: its id and its most telling text or attributes."""
    return naming.item_labels(data, max_len)


def data_item_names(data: PreferenceData, max_len: int = 44) -> list[str]:
    """Short item names for tree leaves: id and name/message start, or 3 attributes."""
    return naming.item_names(data, max_len)


def format_value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, list):
        return "{" + ", ".join(map(str, v)) + "}" if v else "none"
    return str(v)


def leaf_numbers(model: DTSurrogate) -> np.ndarray:
    """The displayed number (rank order, 1 = best) of each model leaf index."""
    return np.array([s.number for s in explain.leaf_summaries(model)], dtype=int)


def items_table(model: Any, data: PreferenceData) -> pd.DataFrame:
    """Items with readable attributes, predicted utility, competition rank and leaf."""
    schema = data.get_schema()
    dec = schema.decode(data.X)
    for f in schema.features:
        dec[f.name] = [f.format_value(v) for v in dec[f.name]]
    dec = dec.rename(columns={f.name: f.display for f in schema.features})
    dec.insert(0, "item", data.ids())
    dec["utility"] = model.predict(data.X)
    dec["rank"] = model.rank(data.X)
    if hasattr(model, "tree_"):
        dec["leaf"] = leaf_numbers(model)[model.apply(data.X)]
    dec["won"] = np.bincount(data.pairs[:, 0], minlength=data.n_items)
    dec["lost"] = np.bincount(data.pairs[:, 1], minlength=data.n_items)
    return dec.sort_values(["rank", "item"], kind="stable").reset_index(drop=True)


def leaf_table(model: DTSurrogate, data: PreferenceData | None = None) -> pd.DataFrame:
    """One row per leaf (numbered in rank order): rank, posterior, conditions and, given
    ``data``, every item by name with the comparisons it won and lost."""
    names = data_item_names(data, max_len=60) if data is not None else None
    by_leaf: dict[int, list[str]] = {}
    won = lost = None
    if data is not None:
        leaf_of = model.apply(data.X)
        won = np.bincount(data.pairs[:, 0], minlength=data.n_items)
        lost = np.bincount(data.pairs[:, 1], minlength=data.n_items)
        for i, lf in enumerate(leaf_of):
            by_leaf.setdefault(int(lf), []).append(i)
    rows = []
    for s in explain.leaf_summaries(model):
        row: dict[str, Any] = {
            "leaf": s.number,
            "rank": s.rank,
            "utility": s.mean,
            "sd": s.sd,
            "items": s.n_items,
        }
        if data is not None and names is not None and won is not None and lost is not None:
            members = by_leaf.get(s.leaf, [])
            row["won"] = int(won[members].sum()) if members else 0
            row["lost"] = int(lost[members].sum()) if members else 0
            row["item names (won/lost)"] = "; ".join(
                f"{names[i]} ({int(won[i])}/{int(lost[i])})" for i in members
            )
        row["conditions"] = " AND ".join(s.conditions) or "(all items)"
        rows.append(row)
    return pd.DataFrame(rows).sort_values("leaf").reset_index(drop=True)


def tree_view(
    model: DTSurrogate,
    data: PreferenceData | None = None,
    *,
    highlight: np.ndarray | None = None,
    sensitive: Sequence[str] = (),
    title: str | None = None,
) -> explain.TreeView:
    """The drawable tree with each leaf's items named (from ``data``)."""
    return explain.tree_view(
        model,
        data=data,
        item_names=data_item_names(data) if data is not None else None,
        highlight=highlight,
        sensitive=sensitive,
        title=title,
    )


#: Widest PNG export in pixels (a 100-leaf tree at scale 2 would be ~40k px wide).
PNG_MAX_WIDTH = 12_000


@functools.lru_cache(maxsize=16)
def svg_to_png(svg: str, scale: float = 2.0) -> bytes:
    """PNG of an SVG document (vl-convert's bundled resvg renderer: no system tools).

    The scale shrinks so the image is at most :data:`PNG_MAX_WIDTH` pixels wide. Cached
    with ``functools`` (not Streamlit) so a download button's deferred callable, which runs
    outside the script thread, can call it.
    """
    import vl_convert

    m = re.search(r'<svg[^>]*\swidth="([0-9.]+)"', svg)
    width = float(m.group(1)) if m else 1000.0
    scale = max(0.25, min(scale, PNG_MAX_WIDTH / max(width, 1.0)))
    return bytes(vl_convert.svg_to_png(svg, scale=scale))


@st.cache_resource(show_spinner=False)
def warm_up() -> float:
    """Compile (or load from numba's on-disk cache) the tree kernels once per process.

    The first tree fit of a fresh install compiles the numba split-search kernels (~15 s on
    a small machine; ``cache=True`` keeps them on disk afterwards). Call this at app start
    under a status message so no page waits silently. Returns the seconds it took.
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(12, 2))
    u = X[:, 0] - X[:, 1]
    pairs = np.array([[a, b] if u[a] > u[b] else [b, a] for a, b in rng.integers(0, 12, (40, 2))])
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    schema = Schema(
        (Feature("a", "numeric", bounds=(0, 1)), Feature("b", "numeric", bounds=(0, 1)))
    )
    data = PreferenceData(X, pairs, schema=schema)
    DTSurrogate(backend="numba").fit(data)  # keep-mode trees grow in NumPy, no compile
    return time.perf_counter() - t0
