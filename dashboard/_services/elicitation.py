"""Live elicitation sessions and their charts' tables."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from dashboard._charts import (
    favourite_trace_chart,
    leaf_utility_chart,
    partition_chart,
    spec_template,
    surface_grid,
)
from dashboard._services import jobs
from dashboard._services.studies import get_study, study_token
from dashboard._services.trees import format_value, items_table, leaf_table
from data_loaders.registry import Wording, study_info
from pbo_core import explain
from pbo_core.benchmarks import available_benchmarks, get_benchmark
from pbo_core.data import PreferenceData
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.linear_leaves import SlopePrior
from pbo_core.registry import get
from pbo_core.session import ElicitationSession, study_item_set
from pbo_core.strategies.linear_leaves import pooled_slope_prior


def two_d_benchmarks() -> list[str]:
    """Bundled benchmark functions of two variables (for the partition picture)."""
    return [f for f in available_benchmarks() if get_benchmark(f).dim == 2]


@st.cache_resource(show_spinner="Fitting the study's respondents as a prior...", max_entries=8)
def _study_prior(token: Any, _study: Any) -> SlopePrior:
    del token  # cache key only (the study object itself is not hashed)
    return pooled_slope_prior(_study.data)


def rule_label(name: str) -> str:
    """A query rule as the Live elicitation page names it (the registry's label)."""
    return get(name).label + (" (study prior)" if get(name).takes_prior else "")


def study_prior(study: Any) -> SlopePrior | None:
    """Population slope prior of a study's respondents (``None`` with fewer than two)."""
    if study.data.respondent is None or len(study.respondents()) < 2:
        return None
    return _study_prior(study_token(study), study)


def new_elicitation(kind: str, source: str, method: str, seed: int, max_items: int | None) -> Any:
    """A fresh :class:`~pbo_core.session.ElicitationSession` on a study or a benchmark.

    On a study with respondents, ``dt-linear`` and ``linear-eubo`` start from the pooled
    fit of the study's respondents (:func:`study_prior`).
    """
    if kind == "benchmark":
        return ElicitationSession.for_benchmark(source, method, seed=seed)
    study, error = get_study(source)
    if study is None:
        raise LookupError(error)
    options: dict[str, Any] = {}
    if get(method).takes_prior:
        prior = study_prior(study)
        if prior is not None:
            options["slope_prior"] = prior
    return ElicitationSession.for_items(
        **study_item_set(study, max_items=max_items, seed=seed),
        strategy=method,
        seed=seed,
        strategy_options=options,
    )


@st.cache_data(show_spinner=False, max_entries=16)
def benchmark_grid(function: str, n: int = 60) -> pd.DataFrame:
    """The true surface of a 2-D benchmark on an ``n x n`` grid (cached)."""
    f = get_benchmark(function)
    return surface_grid(lambda X: f.fn(X), f.bounds, n)


_BOX_COLUMNS = ["x1", "x1_end", "x2", "x2_end", "leaf", "utility", "sd", "rank"]


def no_leaf_boxes() -> pd.DataFrame:
    """An empty leaf-box table (surrogates without leaves)."""
    return pd.DataFrame(columns=_BOX_COLUMNS)


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
                "leaf": s.number,  # as the tree and the favourite card number it
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


# What an answer redraws from a finite session's fixed items (the options' tables and
# names) is computed once per session and item: decoding a row through the schema builds
# pandas objects (3-5 ms a row), which every answer used to pay a dozen times.
_DISPLAY: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()
_DISPLAY_LOCK = threading.Lock()


def _memo(sess: Any, index: int | None) -> dict[Any, Any] | None:
    """The display memo of a finite session (``None``: nothing to keep for this row)."""
    if index is None or not sess.problem.finite:
        return None
    with _DISPLAY_LOCK:
        try:
            return _DISPLAY.setdefault(sess, {})
        except TypeError:  # not weak-referenceable: compute every time
            return None


def _decoded(sess: Any, index: int | None, x: np.ndarray | None) -> pd.Series:
    """Row ``index`` (or the encoded row ``x``) of a session, decoded (labels, units)."""
    memo = _memo(sess, index)
    if memo is None:
        row = sess.X[int(index)] if x is None and index is not None else x
        return sess.schema.decode(np.atleast_2d(row)).iloc[0]
    table = memo.get("decoded")
    if table is None:  # every item at once: one decode instead of one per row
        table = memo["decoded"] = sess.schema.decode(np.atleast_2d(sess.X))
    return table.iloc[int(index)]


def _option_rows(schema: Any, dec: pd.Series) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {"attribute": [], "value": []}
    for f in schema.features:
        v = dec[f.name]
        rows["attribute"].append(f.display)
        rows["value"].append(f.format_value(v) if f.kind == "numeric" else format_value(v))
    return rows


def _option_columns(sess: Any, x: np.ndarray | None, index: int | None) -> dict[str, list[str]]:
    memo = _memo(sess, index)
    if memo is not None and ("option", index) in memo:
        return memo[("option", index)]  # type: ignore[no-any-return]
    rows = _option_rows(sess.schema, _decoded(sess, index, x))
    if memo is not None:
        memo[("option", index)] = rows
    return rows


def option_table(sess: Any, x: np.ndarray, index: int | None = None) -> pd.DataFrame:
    """Readable attributes of one option: label, value with unit.

    ``index``: the option's row of a finite session (then computed once per session).
    """
    return pd.DataFrame(_option_columns(sess, x, index), columns=["attribute", "value"])


def option_arrow(sess: Any, x: np.ndarray, index: int | None = None) -> pa.Table:
    """:func:`option_table` as an Arrow table, what ``st.dataframe`` sends (kept per
    session and item: the page does not convert the same table again after each answer)."""
    memo = _memo(sess, index)
    if memo is not None and ("option_arrow", index) in memo:
        return memo[("option_arrow", index)]
    table = pa.table(_option_columns(sess, x, index))
    if memo is not None:
        memo[("option_arrow", index)] = table
    return table


def favourite_arrow(sess: Any, index: int) -> pa.Table:
    """The favourite's attributes as one row (attribute names as columns), as Arrow."""
    memo = _memo(sess, index)
    if memo is not None and ("favourite_arrow", index) in memo:
        return memo[("favourite_arrow", index)]
    cols = _option_columns(sess, sess.X[int(index)], index)
    table = pa.Table.from_arrays(
        [pa.array([v], pa.string()) for v in cols["value"]], names=list(cols["attribute"])
    )
    if memo is not None:
        memo[("favourite_arrow", index)] = table
    return table


# ----------------------------------------------------------------------------- wording, names
BENCHMARK_WORDING = Wording("Which point has the higher utility?", noun="point")

#: Item-table columns that name an item, most telling first.
_NAME_COLUMNS = ("name_en", "name", "title", "label", "message")


def wording(kind: str, source: str) -> Wording:
    """The question wording of a study (``extras["question"]`` first, then its registry
    entry's, :attr:`data_loaders.registry.StudyInfo.wording`) or a benchmark."""
    if kind == "benchmark":
        return BENCHMARK_WORDING
    try:
        w = study_info(source).wording  # the study registry's entry says how to ask
    except KeyError:
        w = Wording()
    study, _ = get_study(source)
    q = study.extras.get("question") if study is not None else None
    return Wording(str(q), w.pick, w.noun, w.favourite) if q else w


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def attribute_summary(
    schema: Any, x: np.ndarray | None, max_len: int = 90, *, decoded: pd.Series | None = None
) -> str:
    """A one-line description of an encoded row by its attributes.

    Numeric values with their unit, categorical values by themselves ("Car"), yes/no
    features by their label when yes (no ones are left out). ``decoded``: the row already
    decoded by ``schema`` (then ``x`` is not read).
    """
    dec = decoded if decoded is not None else schema.decode(np.atleast_2d(x)).iloc[0]
    parts = []
    for f in schema.features:
        v = dec[f.name]
        if f.kind == "binary":
            if str(v).lower() in ("yes", "1", "true"):
                parts.append(f.display)
            continue
        if f.kind == "multi_hot":
            if v:
                parts.append(f"{f.display}: {', '.join(map(str, v))}")
            continue
        text = format_value(v)
        if f.kind == "numeric":
            # the schema's reading: number with unit, or the meaning of a special code
            special = any(float(v) == code for code, _ in f.special)
            parts.append(
                f"{f.display}: {f.format_value(v)}"
                if special
                else f"{f.display} {f.format_value(v)}"
            )
        elif f.name in ("mode", "name", "brand", "type"):
            parts.append(text)
        else:
            parts.append(f"{f.display}: {text}")
    return _short(" · ".join(parts) or "(no attributes)", max_len)


def item_name(sess: Any, index: int | None, x: np.ndarray | None = None, max_len: int = 90) -> str:
    """How an option is shown: its name from the study (sushi name, message text...) or a
    summary of its attributes; never a bare id (kept per session and item)."""
    memo = _memo(sess, index)
    if memo is None:
        return _item_name(sess, index, x, max_len)
    key = ("name", index, max_len)
    if key not in memo:
        memo[key] = _item_name(sess, index, x, max_len)
    return str(memo[key])


def _item_name(sess: Any, index: int | None, x: np.ndarray | None, max_len: int) -> str:
    if index is not None and sess.items is not None:
        for col in _NAME_COLUMNS:
            if col in sess.items.columns:
                return _short(str(sess.items[col].iloc[int(index)]), max_len)
    row = sess.X[int(index)] if x is None and index is not None else x
    if row is None:
        return "new point"
    if not sess.problem.finite:
        return ", ".join(
            f"{n} = {v:.3g}" for n, v in zip(sess.schema.names, np.asarray(row), strict=True)
        )
    if index is not None:
        return attribute_summary(sess.schema, None, max_len, decoded=_decoded(sess, index, None))
    return attribute_summary(sess.schema, row, max_len)


def favourite_trace(sess: Any, names: list[str] | None = None) -> pd.DataFrame:
    """The favourite after each answer (name, posterior mean, mean -+ sd, changed?).

    ``names``: short names of the rows (see :func:`item_names`), computed when omitted.
    """
    rows = []
    prev = None
    for p in sess.favourite_trace:
        rows.append(
            {
                "answer": p.n_answers,
                "favourite": names[p.row]
                if names is not None and p.row < len(names)
                else item_name(sess, p.row, max_len=40),
                "mean": p.mean,
                "sd": p.sd,
                "lo": p.mean - p.sd,
                "hi": p.mean + p.sd,
                "changed": prev is not None and p.row != prev,
            }
        )
        prev = p.row
    cols = ["answer", "favourite", "mean", "sd", "lo", "hi", "changed"]
    return pd.DataFrame(rows, columns=cols)


@st.cache_data(show_spinner=False, max_entries=16)
def _finite_names(sid: str, _sess: Any, max_len: int) -> list[str]:
    return [item_name(_sess, k, max_len=max_len) for k in range(len(_sess.X))]


def item_names(sid: str, sess: Any, max_len: int = 40) -> list[str] | None:
    """Short names of every item of a finite session (cached per session); ``None`` for
    continuous problems (their points are named by their coordinates)."""
    return _finite_names(sid, sess, max_len) if sess.problem.finite else None


@st.cache_resource(show_spinner=False)
def chart_templates() -> dict[str, dict[str, Any]]:
    """Spec templates of the page's per-answer charts (built once; see
    :func:`dashboard._charts.spec_template`)."""
    return {
        "trace": spec_template(favourite_trace_chart, ("trace",)),
        "partition": spec_template(partition_chart, ("grid", "boxes", "points")),
        "leaves": spec_template(leaf_utility_chart, ("boxes",)),
    }


def state_token(sid: str, sess: Any) -> tuple[str, tuple[str, ...]]:
    """What identifies a session's state (its id and its actions): a cache key."""
    return (sid, tuple(sess.actions))


@st.cache_data(show_spinner=False, max_entries=64)
def session_tree(token: tuple[str, tuple[str, ...]], _sess: Any, title: str) -> tuple[Any, str]:
    """The drawable tree view (favourite's path highlighted) and JSON of a session's tree,
    cached per state."""
    del token  # cache key only
    fav = _sess.favourite
    highlight = _sess.X[fav] if fav is not None else None
    view = explain.tree_view(_sess.model, highlight=highlight, title=title)
    return view, explain.to_json(_sess.model)


@st.cache_data(show_spinner=False, max_entries=64)
def session_leaf_table(token: tuple[str, tuple[str, ...]], _sess: Any) -> pd.DataFrame:
    """The leaf table of a session's tree (cached per state)."""
    del token
    return leaf_table(_sess.model)


@st.cache_data(show_spinner=False, max_entries=64)
def session_items(token: tuple[str, tuple[str, ...]], _sess: Any) -> pd.DataFrame:
    """Items with predicted utility and rank (cached per state)."""
    del token
    table = session_items_table(_sess)
    names = {str(i): item_name(_sess, k, max_len=60) for k, i in enumerate(_sess.ids())}
    table.insert(1, "name", [names[str(i)] for i in table["item"]])
    return table


@st.cache_data(show_spinner=False, max_entries=32)
def _distinct_items(token: Any, _study: Any) -> int:
    del token
    return len(np.unique(np.asarray(_study.data.ids()).astype(str)))


def n_distinct_items(study: Any) -> int:
    """Number of distinct items of a study (cached)."""
    return _distinct_items(study_token(study), study)


# ----------------------------------------------------------------------------- answer clock
#: A file the server appends one JSON line to per answer (its server-side time); unset:
#: nothing is written. ``tests/benchmarks/concurrent_visitors.py`` sets it.
ANSWER_LOG_ENV = "DTPBO_ANSWER_LOG"
#: Keys of the widgets that answer a question (the buttons' keys start so; see the view).
ANSWER_KEYS = ("el_pick_", "el_tie_", "el_skip_")
_LOG = logging.getLogger(__name__)
_arrivals: dict[str, float] = {}  # browser session id -> monotonic time its click arrived
_log_lock = threading.Lock()


def _is_answer_click(msg: Any) -> bool:
    if msg.WhichOneof("type") != "rerun_script":
        return False
    for w in msg.rerun_script.widget_states.widgets:
        if w.WhichOneof("value") == "trigger_value" and w.trigger_value:
            user_key = w.id.rsplit("-", 1)[-1]
            if user_key.startswith(ANSWER_KEYS):
                return True
    return False


def install_arrival_clock() -> bool:
    """Note the moment an answer click reaches the server (once per process).

    Streamlit queues a click's rerun behind the browser session's running script and, with
    many visitors, behind the other sessions' threads; the answer's callback starts only
    then. This wraps ``AppSession.handle_backmsg`` (called on the server's event loop as
    the websocket message arrives) to keep ``time.monotonic()`` per browser session when
    the message presses an answer button, so :func:`start_answer_clock` can count that
    wait. Returns whether the clock is installed (``False`` when Streamlit's internals
    moved: the answer's time then starts at its callback).
    """
    try:
        from streamlit.runtime.app_session import AppSession
    except ImportError:  # pragma: no cover - Streamlit is a dependency
        return False
    original = getattr(AppSession, "handle_backmsg", None)
    if original is None:
        return False
    if getattr(original, "_dtpbo_clock", False):
        return True

    def handle_backmsg(self: Any, msg: Any) -> Any:
        try:
            if _is_answer_click(msg):
                _arrivals[self.id] = time.monotonic()
        except Exception:  # the clock never stands in the way of a click
            pass
        return original(self, msg)

    handle_backmsg._dtpbo_clock = True  # type: ignore[attr-defined]
    AppSession.handle_backmsg = handle_backmsg  # type: ignore[method-assign]
    return True


def _browser_session_id() -> str | None:
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
    except Exception:  # pragma: no cover
        return None
    return None if ctx is None else str(ctx.session_id)


def start_answer_clock() -> dict[str, float]:
    """Start timing an answer (call first in the answer's callback).

    Returns ``{"arrived": t, "started": t}`` (``time.monotonic()``): when the click reached
    the server (:func:`install_arrival_clock`; the callback's start when unknown) and when
    its callback started; the page keeps it and passes it to :func:`finish_answer_clock`.
    """
    now = time.monotonic()
    jobs.note_answer()  # the precompute holds its next job while answers arrive
    sid = _browser_session_id()
    arrived = _arrivals.pop(sid, None) if sid is not None else None
    if arrived is None or arrived > now:
        arrived = now
    return {"arrived": arrived, "started": now}


def finish_answer_clock(clock: dict[str, float], **fields: Any) -> dict[str, Any]:
    """The answer's server-side times, in seconds, from the ``clock`` of
    :func:`start_answer_clock` and the marks added to it since (``clock[name] =
    time.monotonic()``), until now: ``queue_s`` (click arrived -> callback started),
    ``server_s`` (click arrived -> now, the whole time the server took), one ``<mark>_s``
    per mark (click arrived -> mark). Appended as one JSON line (with ``fields`` and the
    process id) to the file named by :data:`ANSWER_LOG_ENV`, when set."""
    now = time.monotonic()
    t0 = clock["arrived"]
    row: dict[str, Any] = {
        **fields,
        "pid": os.getpid(),
        "queue_s": round(clock["started"] - t0, 4),
        **{f"{k}_s": round(v - t0, 4) for k, v in clock.items() if k not in ("arrived", "started")},
        "server_s": round(now - t0, 4),
        "wall": round(time.time(), 3),
    }
    path = os.environ.get(ANSWER_LOG_ENV)
    if path:
        try:
            with _log_lock, Path(path).open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
        except OSError as exc:
            _LOG.warning("answer log %s not written: %s", path, exc)
    return row


install_arrival_clock()
