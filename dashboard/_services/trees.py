"""Fitted trees, item labels and tables, drawable tree views and their PNG export."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard._services.studies import respondent_data, study_token
from pbo_core import explain
from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.experiments.accuracy import ACCURACY_METHODS, study_kind
from pbo_core.explain import labels, naming
from pbo_core.explain.evidence import PerRespondent, heldout_accuracy
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


#: Tree models the explorer draws: registry key -> label.
TREE_MODELS: dict[str, str] = {
    "dt": "Paper DT (constant leaves)",
    "dt-linear": "Linear-leaf tree (dt-linear)",
    "dt-pooled": "Pooled DT (constant leaves, shrunk)",
}
#: Baselines scored beside the trees in the study-level comparison (cheap, tuned by CV).
CHOICE_BASELINES = ("logit-shrink", "logit-pooled")
#: Respondents whose comparisons the study-level comparison uses (the first N).
CHOICE_RESPONDENTS = 30


def tree_models(study: Study) -> list[str]:
    """The tree models that apply to ``study`` (registry keys, explorer order)."""
    kind = study_kind(study)
    return [m for m in TREE_MODELS if kind in ACCURACY_METHODS[m].studies]


def _tasks(study: Study) -> np.ndarray | None:
    t = study.extras.get("pair_task")
    return None if t is None or len(t) != study.data.n_pairs else np.asarray(t)


@st.cache_resource(
    show_spinner="Fitting the pooled tree on every respondent's comparisons (cached)...",
    max_entries=8,
)
def _fit_pooled(token: Any, method: str, _study: Study) -> Any:
    return ACCURACY_METHODS[method].fit(_study.data, _tasks(_study))


def fit_model(study: Study, respondent: Any, method: str, *, min_samples_split: int = 1) -> Any:
    """The drawn model: the paper DT of the respondent's own comparisons (``"dt"``), or a
    pooled tree of the registry fitted on the whole study and shown with the respondent's
    posterior (``for_respondent``; the population fit for pooled data)."""
    if method == "dt":
        return fit_tree(study, respondent, min_samples_split=min_samples_split)
    model = _fit_pooled(study_token(study), method, study)
    if respondent is not None and study.data.respondent is not None:
        model = model.for_respondent(respondent, respondent_data(study, respondent).X)
    return model


@dataclass(frozen=True)
class TreeChoice:
    """Held-out accuracy of the tree models (and two baselines) on a study; the winner."""

    best: str
    table: pd.DataFrame
    n_respondents: int
    n_comparisons: int

    def reason(self) -> str:
        """Why ``best`` is the default, in one sentence with its figures."""
        row = self.table.set_index("key").loc[self.best]
        who = (
            f"the first {self.n_respondents} respondents' {self.n_comparisons} comparisons"
            if self.n_respondents
            else f"{self.n_comparisons} comparisons"
        )
        return (
            f"Default: **{TREE_MODELS[self.best]}**, the tree model with the best held-out "
            f"accuracy on this study, {100 * row['heldout']:.1f}% (95% CI "
            f"{100 * row['ci_low']:.1f}–{100 * row['ci_high']:.1f}), 5-fold cross-validation "
            f"over whole choice tasks on {who}; see the Held-out evidence tab."
        )


def compare_trees(study: Study, n_respondents: int = CHOICE_RESPONDENTS) -> TreeChoice:
    """Held-out accuracy (5-fold CV over tasks) of the tree models and two baselines on
    the first ``n_respondents`` respondents of ``study`` (all of a pooled study)."""
    data, tasks = study.data, _tasks(study)
    n_resp = 0
    if data.respondent is not None:
        keep = study.respondents()[:n_respondents]
        mask = np.isin(data.respondent, keep)
        data = data.select_pairs(mask, drop_unused_items=True)
        tasks = tasks[mask] if tasks is not None else None
        n_resp = len(keep)
    fitters: dict[str, Callable[[PreferenceData, np.ndarray | None], Any]] = {}
    by_resp = []
    names = [*tree_models(study), *CHOICE_BASELINES]
    if data.respondent is None:
        names = [n for n in names if n != "logit-shrink"]
    for name in names:
        m = ACCURACY_METHODS[name]
        if name == "dt" and data.respondent is not None:  # the paper's DT is per respondent
            fitters[name] = lambda d, t: PerRespondent(DTSurrogate).fit(d)
            by_resp.append(name)
            continue
        fitters[name] = m.fit
        if m.respondent_predict and data.respondent is not None:
            by_resp.append(name)
    table = heldout_accuracy(data, {}, tasks=tasks, fitters=fitters, by_respondent=by_resp)
    table.insert(0, "key", table["method"])
    table["method"] = [TREE_MODELS.get(k, f"{k} (baseline)") for k in table["key"]]
    trees = table[table["key"].isin(TREE_MODELS) & table["heldout"].notna()]
    best = str(trees.loc[trees["heldout"].idxmax(), "key"]) if len(trees) else "dt"
    return TreeChoice(best, table, n_resp, data.n_pairs)


#: One background comparison at a time (the machine's cores are shared with the pages).
_JOB_LOCK = threading.Lock()


def _in_background(fn: Callable[..., Any], *args: Any) -> Future:
    """Run ``fn(*args)`` in a daemon thread (never delays the app's exit); its Future."""
    fut: Future = Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            with _JOB_LOCK:
                fut.set_result(fn(*args))
        except BaseException as exc:  # the page re-raises it from Future.result()
            fut.set_exception(exc)

    threading.Thread(target=run, name="tree-choice", daemon=True).start()
    return fut


def _choice_and_fit(study: Study, n_respondents: int, token: Any) -> TreeChoice:
    choice = compare_trees(study, n_respondents)
    if choice.best != "dt":  # the winner's full fit, so the page draws it at once
        _fit_pooled(token, choice.best, study)
    return choice


def _fingerprint(study: Study) -> tuple[Any, ...]:
    """The study's key and a hash of its comparisons (the same data, wherever loaded from)."""
    d = study.data
    h = hashlib.sha1(np.ascontiguousarray(d.pairs).tobytes())
    h.update(np.ascontiguousarray(d.X).tobytes())
    return (study.key, d.n_pairs, d.n_items, h.hexdigest())


@st.cache_resource(show_spinner=False, max_entries=16)
def _choice_job(fingerprint: Any, n_respondents: int, _study: Study, _token: Any) -> Future:
    return _in_background(_choice_and_fit, _study, n_respondents, _token)


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


def tradeoff_table(model: Any) -> pd.DataFrame:
    """Value of time and the other trade-offs per leaf (numbered as drawn) and overall."""
    if not labels.has_slopes(model):
        return pd.DataFrame()
    return labels.tradeoff_table(labels.tradeoffs(model), leaf_numbers(model))


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


def leaf_table(model: Any, data: PreferenceData | None = None) -> pd.DataFrame:
    """One row per leaf (numbered in rank order): rank, posterior, conditions and, given
    ``data``, every item by name with the comparisons it won and lost; linear leaves add
    their slopes in the attributes' units and the value of time with its 95 % CI."""
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
            vot = labels.value_of_time(model).get(s.leaf)
            if vot is not None:
                row["value of time [95% CI]"] = labels.ratio_text(vot.ratio, vot.unit)
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
