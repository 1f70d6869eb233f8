"""Fitted trees, item labels and tables, drawable tree views and their PNG export."""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard._services.studies import respondent_data, study_token
from pbo_core import explain
from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.experiments.tree_choice import (
    CHOICE_RESPONDENTS,
    TreeChoice,
    applicable,
    choose_and_fit,
    ready,
    serve,
)
from pbo_core.experiments.tree_choice import compare_trees as compare_models
from pbo_core.explain import labels, naming
from pbo_core.models.dt import DTSurrogate
from pbo_core.registry import fit_for, get, names


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


def tree_models(study: Study) -> list[str]:
    """The tree models the explorer draws (the registry's ``explorer`` role) that apply to
    ``study``, in registry order."""
    return applicable(study, names(role="explorer"))


@st.cache_resource(
    show_spinner="Fitting the pooled tree on every respondent's comparisons (cached)...",
    max_entries=8,
)
def _fit_pooled(token: Any, method: str, _study: Study) -> Any:
    return get(method).make().fit(_study.data)


def fit_model(study: Study, respondent: Any, method: str, *, min_samples_split: int = 1) -> Any:
    """The drawn model: a per-respondent tree of the respondent's own comparisons (the
    paper DT), or a pooled tree of the registry fitted on the whole study and shown with
    the respondent's posterior (``for_respondent``; the population fit for pooled data)."""
    if method == "dt":
        return fit_tree(study, respondent, min_samples_split=min_samples_split)
    if get(method).scope == "respondent":
        return fit_for(method, study, respondent)
    token = study_token(study)
    model = _BACKGROUND_FITS.get((token, method))  # the winner, fitted by the comparison
    if model is None:
        model = _fit_pooled(token, method, study)
    return fit_for(method, study, respondent, fitted=model)


def compare_trees(study: Study, n_respondents: int = CHOICE_RESPONDENTS) -> TreeChoice:
    """Held-out accuracy (5-fold CV) of the explorer's tree models and the registry's
    ``choice_baseline`` models (:func:`pbo_core.experiments.tree_choice.compare_trees`)."""
    return compare_models(study, names(role="explorer"), None, n_respondents)


class _Worker:
    """One worker process for the background comparisons, one call at a time.

    A process, not a thread: the comparison is up to a minute of mostly Python-level CPU,
    and in a thread it held the web server's interpreter lock while pages were drawn.
    ``spawn`` (no fork of a threaded server); the process runs
    :func:`pbo_core.experiments.tree_choice.serve` at the lowest CPU priority, below the
    pages, and is a daemon: stopping the server terminates it and never waits for a
    comparison. A worker that dies makes the waiting call raise (the page shows it).
    """

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=serve, args=(child,), name="dtpbo-tree-choice", daemon=True
        )
        self.process.start()
        child.close()
        self._lock = threading.Lock()
        self.broken = False

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the worker process (blocks; one call at a time)."""
        with self._lock:
            try:
                self._conn.send((fn, args))
                ok, value = self._conn.recv()
            except (EOFError, OSError):  # the process died: this worker is done
                self.broken = True
                raise
        if not ok:
            raise value
        return value


_WORKER: list[_Worker] = []
_WORKER_LOCK = threading.Lock()


def _worker() -> _Worker:
    """The worker process; a new one if there is none yet or the last one died."""
    with _WORKER_LOCK:
        if not _WORKER or _WORKER[0].broken or not _WORKER[0].process.is_alive():
            _WORKER[:] = [_Worker()]
        return _WORKER[0]


def _submit(fn: Callable[..., Any], *args: Any) -> Future:
    """Run ``fn(*args)`` in the worker process; its Future (resolved by a daemon thread)."""
    fut: Future = Future()
    fut.set_running_or_notify_cancel()

    def run() -> None:
        try:
            fut.set_result(_worker().call(fn, *args))
        except BaseException as exc:  # the page re-raises it from Future.result()
            fut.set_exception(exc)

    threading.Thread(target=run, name="tree-choice-wait", daemon=True).start()
    return fut


def start_worker() -> float:
    """Start the background worker process and let it import the models (the launcher's
    preload calls this, so a first visitor's comparison does not start a Python process
    and its imports beside the page being drawn). Returns the seconds taken."""
    t0 = time.perf_counter()
    _submit(ready).result()
    return time.perf_counter() - t0


#: Winners fitted by the background comparison: (study token, method) -> model.
_BACKGROUND_FITS: dict[tuple[Any, str], Any] = {}


def _choice_in_background(study: Study, n_respondents: int, token: Any) -> Future:
    """Start :func:`pbo_core.experiments.tree_choice.choose_and_fit` in the worker process;
    a Future of its :class:`TreeChoice` (the winner's fit is kept for :func:`fit_model`)."""
    job = _submit(choose_and_fit, study, names(role="explorer"), None, n_respondents)
    out: Future = Future()
    out.set_running_or_notify_cancel()

    def done(f: Future) -> None:
        try:
            choice, model = f.result()
        except BaseException as exc:  # the page re-raises it from Future.result()
            out.set_exception(exc)
            return
        if model is not None:
            _BACKGROUND_FITS[(token, choice.best)] = model
        out.set_result(choice)

    job.add_done_callback(done)
    return out


def _fingerprint(study: Study) -> tuple[Any, ...]:
    """The study's key and a hash of its comparisons (the same data, wherever loaded from)."""
    d = study.data
    h = hashlib.sha1(np.ascontiguousarray(d.pairs).tobytes())
    h.update(np.ascontiguousarray(d.X).tobytes())
    return (study.key, d.n_pairs, d.n_items, h.hexdigest())


@st.cache_resource(show_spinner=False, max_entries=16)
def _choice_job(fingerprint: Any, n_respondents: int, _study: Study, _token: Any) -> Future:
    return _choice_in_background(_study, n_respondents, _token)


def background_choice() -> bool:
    """Is the background comparison on (``DTPBO_NO_TREE_CHOICE=1`` turns it off: the page
    then starts on the paper DT and compares only when the Held-out evidence tab opens)?"""
    return os.environ.get("DTPBO_NO_TREE_CHOICE", "") != "1"


def tree_choice(study: Study, wait: bool = False) -> TreeChoice | None:
    """The study's most accurate tree model (held-out), computed once in the background.

    ``None`` while the comparison runs or when it is off (:func:`background_choice`);
    ``wait=True`` starts it if needed and blocks until it is done. A failed comparison
    raises its error.
    """
    if not wait and not background_choice():
        key = (_fingerprint(study), CHOICE_RESPONDENTS)
        done = _DONE.get(key)
        return done
    job = _choice_job(_fingerprint(study), CHOICE_RESPONDENTS, study, study_token(study))
    if not wait and not job.done():
        return None
    choice = job.result()
    _DONE[(_fingerprint(study), CHOICE_RESPONDENTS)] = choice
    return choice


#: Finished comparisons (so a page without the background job still uses a done one).
_DONE: dict[Any, TreeChoice] = {}


def tradeoff_table(model: Any, money: str | None = None) -> pd.DataFrame:
    """Value of time and the other trade-offs per leaf (numbered as drawn) and overall,
    divided by the money attribute ``money`` (default: the one measured in money)."""
    if not labels.has_slopes(model):
        return pd.DataFrame()
    return labels.tradeoff_table(labels.tradeoffs(model, money=money), leaf_numbers(model))


def money_choice(study: Study) -> tuple[list[str | None], str | None, str]:
    """The money attributes a page offers (numeric attributes, ``None`` = no trade-offs),
    the study's own one (:func:`pbo_core.explain.labels.money_attribute`) and why."""
    default, why = labels.money_attribute(study)
    return [*labels.money_candidates(study.schema), None], default, why


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


def leaf_numbers(model: Any) -> np.ndarray:
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


def leaf_table(
    model: Any, data: PreferenceData | None = None, money: str | None = None
) -> pd.DataFrame:
    """One row per leaf (numbered in rank order): rank, posterior, conditions and, given
    ``data``, every item by name with the comparisons it won and lost; linear leaves add
    their slopes in the attributes' units (95 % CIs) and the value of time with its 95 %
    CI, divided by the money attribute ``money``."""
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
        if labels.has_slopes(model):
            row["slopes (utility per unit)"] = "; ".join(labels.leaf_slope_lines(model, s.leaf))
            vot = labels.value_of_time(model, money).get(s.leaf)
            if vot is not None:
                row[f"value of time (money: {vot.money}) [95% CI]"] = labels.ratio_text(
                    vot.ratio, vot.unit, money=vot.money
                )
        row["conditions"] = " AND ".join(s.conditions) or "(all items)"
        rows.append(row)
    return pd.DataFrame(rows).sort_values("leaf").reset_index(drop=True)


def tree_view(
    model: Any,
    data: PreferenceData | None = None,
    *,
    highlight: np.ndarray | None = None,
    sensitive: Sequence[str] = (),
    title: str | None = None,
    money: str | None = None,
) -> explain.TreeView:
    """The drawable tree with each leaf's items named (from ``data``); trade-offs divide
    by the money attribute ``money``."""
    return explain.tree_view(
        model,
        data=data,
        item_names=data_item_names(data) if data is not None else None,
        highlight=highlight,
        sensitive=sensitive,
        title=title,
        money=money,
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
