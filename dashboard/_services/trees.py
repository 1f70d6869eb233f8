"""Fitted trees, item labels and tables, DOT to SVG."""

from __future__ import annotations

import shutil
from typing import Any

import pandas as pd
import streamlit as st

from dashboard._services.studies import respondent_data, study_token
from pbo_core import explain
from pbo_core.data import PreferenceData, Study
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
    """A short label per item: its id and its most telling text or attributes."""
    ids = data.ids()
    items = data.items
    schema = data.get_schema()
    if items is not None and "message" in items.columns:
        text = items["message"].astype(str).tolist()
    elif items is not None and "name_en" in items.columns:
        text = items["name_en"].astype(str).tolist()
    else:
        dec = schema.decode(data.X)
        text = [
            ", ".join(f"{schema[c].display}: {format_value(v)}" for c, v in row.items())
            for _, row in dec.iterrows()
        ]
    out = []
    for i, t in zip(ids, text, strict=True):
        t = t if len(t) <= max_len else t[: max_len - 1] + "…"
        out.append(f"{i} — {t}")
    return out


def format_value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, list):
        return "{" + ", ".join(map(str, v)) + "}" if v else "none"
    return str(v)


def items_table(model: Any, data: PreferenceData) -> pd.DataFrame:
    """Items with readable attributes, predicted utility, competition rank and leaf."""
    schema = data.get_schema()
    dec = schema.decode(data.X)
    for f in schema.features:
        if f.kind == "multi_hot":
            dec[f.name] = [", ".join(v) for v in dec[f.name]]
    dec = dec.rename(columns={f.name: f.display for f in schema.features})
    dec.insert(0, "item", data.ids())
    dec["utility"] = model.predict(data.X)
    dec["rank"] = model.rank(data.X)
    if hasattr(model, "tree_"):
        dec["leaf"] = model.apply(data.X)
    return dec.sort_values(["rank", "item"], kind="stable").reset_index(drop=True)


def leaf_table(model: DTSurrogate) -> pd.DataFrame:
    """One row per leaf: conditions, mean, sd, rank, items."""
    rows = [
        {
            "leaf": s.leaf,
            "rank": s.rank,
            "utility": s.mean,
            "sd": s.sd,
            "items": s.n_items,
            "conditions": " AND ".join(s.conditions) or "(all items)",
        }
        for s in explain.leaf_summaries(model)
    ]
    return pd.DataFrame(rows).sort_values(["rank", "leaf"]).reset_index(drop=True)


def dot_available() -> bool:
    """True when Graphviz's ``dot`` program is installed (needed for SVG downloads)."""
    return shutil.which("dot") is not None


@st.cache_data(show_spinner=False, max_entries=128)
def dot_to_svg(dot: str) -> str | None:
    """SVG of a DOT graph, or ``None`` when Graphviz's ``dot`` program is missing."""
    import graphviz

    try:
        return graphviz.Source(dot).pipe(format="svg").decode("utf-8")
    except graphviz.ExecutableNotFound:
        return None
