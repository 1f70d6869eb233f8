"""Live elicitation sessions and their charts' tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard._charts import surface_grid
from dashboard._services.studies import get_study
from dashboard._services.trees import format_value, items_table
from pbo_core import explain
from pbo_core.benchmarks import available_benchmarks, get_benchmark
from pbo_core.data import PreferenceData
from pbo_core.models.dt import DTSurrogate
from pbo_core.session import ElicitationSession, study_item_set


def two_d_benchmarks() -> list[str]:
    """Bundled benchmark functions of two variables (for the partition picture)."""
    return [f for f in available_benchmarks() if get_benchmark(f).dim == 2]


def new_elicitation(kind: str, source: str, method: str, seed: int, max_items: int | None) -> Any:
    """A fresh :class:`~pbo_core.session.ElicitationSession` on a study or a benchmark."""
    if kind == "benchmark":
        return ElicitationSession.for_benchmark(source, method, seed=seed)
    study, error = get_study(source)
    if study is None:
        raise LookupError(error)
    return ElicitationSession.for_items(
        **study_item_set(study, max_items=max_items, seed=seed), strategy=method, seed=seed
    )


@st.cache_data(show_spinner=False, max_entries=16)
def benchmark_grid(function: str, n: int = 60) -> pd.DataFrame:
    """The true surface of a 2-D benchmark on an ``n x n`` grid (cached)."""
    f = get_benchmark(function)
    return surface_grid(lambda X: f.fn(X), f.bounds, n)


def leaf_boxes(model: DTSurrogate) -> pd.DataFrame:
    """Box of every leaf of a tree over two numeric columns, with its posterior."""
    tree = model.tree_
    lower, upper, _ = tree.boxes
    summ = {s.leaf: s for s in explain.leaf_summaries(model)}
    rows = []
    for leaf, node in enumerate(tree.leaf_nodes):
        s = summ[leaf]
        rows.append(
            {
                "x1": lower[node, 0],
                "x1_end": upper[node, 0],
                "x2": lower[node, 1],
                "x2_end": upper[node, 1],
                "leaf": leaf,
                "utility": s.mean,
                "sd": s.sd,
                "rank": s.rank,
            }
        )
    return pd.DataFrame(rows)


def session_points(sess: Any) -> pd.DataFrame:
    """Asked points, the favourite and the pending question of a 2-D session."""
    X = sess.X
    asked = np.unique(sess.pairs) if len(sess.pairs) else np.arange(0)
    rows = [{"x1": X[i, 0], "x2": X[i, 1], "role": "asked"} for i in asked]
    if len(X):
        r = sess.recommendation
        rows.append({"x1": X[r, 0], "x2": X[r, 1], "role": "favourite"})
    q = sess.next_query()
    for x in (q.a, q.b):
        rows.append({"x1": x[0], "x2": x[1], "role": "question"})
    return pd.DataFrame(rows, columns=["x1", "x2", "role"])


def session_items_table(sess: Any) -> pd.DataFrame:
    """Items of a finite session with predicted utility and rank."""
    data = PreferenceData(sess.X, sess.pairs, schema=sess.schema, item_ids=sess.ids())
    return items_table(sess.model, data)


def option_table(sess: Any, x: np.ndarray) -> pd.DataFrame:
    """Readable attributes of one option: label, value with unit."""
    schema = sess.schema
    dec = schema.decode(np.atleast_2d(x)).iloc[0]
    rows = []
    for f in schema.features:
        v = dec[f.name]
        text = format_value(v)
        if f.unit and f.kind == "numeric":
            text = f"{text}{f.unit}" if f.unit in ("%", "°") else f"{text} {f.unit}"
        rows.append({"attribute": f.display, "value": text})
    return pd.DataFrame(rows)
