"""Fitted trees, item labels and tables, drawable tree views and their PNG export."""

from __future__ import annotations

import functools
import os
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import _work
from dashboard._services import jobs
from dashboard._services.studies import respondent_data, study_token
from pbo_core import explain, registry
from pbo_core.data import PreferenceData, Study
from pbo_core.experiments.fingerprint import study_fingerprint
from pbo_core.experiments.tree_choice import (
    CHOICE_RESPONDENTS,
    TreeChoice,
    applicable,
    fit_whole,
    respondent_evidence,
)
from pbo_core.experiments.tree_choice import compare_trees as compare_models
from pbo_core.explain import labels, naming
from pbo_core.explain.estimates import fit_estimates
from pbo_core.models.dt import DTSurrogate
from pbo_core.plan import AnalysisPlan, plan_of
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


_FINGERPRINTS: dict[Any, str] = {}


def fingerprint(study: Study) -> str:
    """:func:`pbo_core.experiments.fingerprint.study_fingerprint`, once per loaded study."""
    token = study_token(study)
    if token not in _FINGERPRINTS:
        _FINGERPRINTS[token] = study_fingerprint(study)
    return _FINGERPRINTS[token]


def _size(study: Study) -> str:
    d = study.data
    if d.respondent is None:
        return f"{d.n_pairs:,} comparisons"
    return f"{len(study.respondents()):,} respondents' {d.n_pairs:,} comparisons"


def _choice_key(study: Study) -> str:
    """The job key of the comparison on ``study`` (its trees, sample and plan)."""
    trees = names(role="explorer")
    plan = repr(plan_of(study).to_dict())
    return jobs.job_key("choice", fingerprint(study), trees, CHOICE_RESPONDENTS, plan)


def choice_job(study: Study, priority: int = jobs.VISITOR) -> jobs.Job:
    """The held-out comparison of the explorer's tree models on ``study`` (a job; its
    result is a :class:`TreeChoice`, kept on disk per study version)."""
    trees = names(role="explorer")
    return jobs.service().submit(
        _choice_key(study),
        f"Comparing the tree models on {study.title} (the analysis plan's hold-out)",
        compare_models,
        study,
        trees,
        None,
        CHOICE_RESPONDENTS,
        estimate=8.0,
        priority=priority,
    )


def study_plan(study: Study) -> AnalysisPlan:
    """The study's analysis plan (:func:`pbo_core.plan.plan_of`)."""
    return plan_of(study)


def estimates_job(study: Study, priority: int = jobs.VISITOR) -> jobs.Job:
    """The plan's estimates model (the conditional logit) fitted on every choice (a job;
    its result is an :class:`~pbo_core.explain.estimates.Estimates`, the table of
    ``python -m pbo_core.experiments estimates``)."""
    plan = plan_of(study)
    return jobs.service().submit(
        jobs.job_key("estimates", fingerprint(study), repr(plan.to_dict())),
        f"Fitting the {get(plan.estimates).label} on {_size(study)}",
        fit_estimates,
        study,
        estimate=6.0,
        priority=priority,
    )


def fit_job(study: Study, method: str, priority: int = jobs.VISITOR) -> jobs.Job:
    """``method`` (a pooled tree of the registry) fitted on the whole study (a job)."""
    return jobs.service().submit(
        jobs.job_key("fit", fingerprint(study), method),
        f"Fitting the {get(method).label} on {_size(study)}",
        fit_whole,
        study,
        method,
        estimate=10.0,
        priority=priority,
    )


def evidence_job(study: Study, respondent: Any, method: str) -> jobs.Job:
    """Held-out evidence of ``method`` beside the GP and the logit on one respondent's
    data (a job; the study-level comparison's folds and fits when the respondent is in
    its sample)."""
    return jobs.service().submit(
        jobs.job_key("evidence", fingerprint(study), repr(respondent), method, CHOICE_RESPONDENTS),
        f"Cross-validating the {get(method).label}, the GP and the logit on respondent "
        f"{respondent}'s comparisons",
        respondent_evidence,
        study,
        respondent,
        method,
        CHOICE_RESPONDENTS,
        estimate=4.0,
    )


def fit_model(
    study: Study, respondent: Any, method: str, *, min_samples_split: int = 1
) -> Any | jobs.Job:
    """The drawn model: a per-respondent tree of the respondent's own comparisons (the
    paper DT), or a pooled tree of the registry fitted on the whole study and shown with
    the respondent's posterior (``for_respondent``; the population fit for pooled data).
    A pooled tree is fitted by a job: while it runs, the :class:`~jobs.Job` is returned
    (its progress is drawn by the page)."""
    if method == "dt":
        return fit_tree(study, respondent, min_samples_split=min_samples_split)
    if get(method).scope == "respondent":
        return fit_for(method, study, respondent)
    job = fit_job(study, method)
    if job.state != "done":
        return job
    return _for_respondent(
        study_token(study), method, repr(respondent), job.result, study, respondent
    )


@st.cache_resource(show_spinner=False, max_entries=64)
def _for_respondent(
    token: Any, method: str, respondent: str, _fitted: Any, _study: Study, _respondent: Any
) -> Any:
    return fit_for(method, _study, _respondent, fitted=_fitted)


def compare_trees(study: Study, n_respondents: int = CHOICE_RESPONDENTS) -> TreeChoice:
    """Held-out accuracy (5-fold CV) of the explorer's tree models and the registry's
    ``choice_baseline`` models (:func:`pbo_core.experiments.tree_choice.compare_trees`),
    in this process."""
    return compare_models(study, names(role="explorer"), None, n_respondents)


def start_worker() -> float:
    """Start the job service's worker processes and let them import the models (the
    launcher's preload calls this, so a first visitor's job does not start a Python
    process and its imports beside the page being drawn). Returns the seconds taken."""
    return jobs.service().start_workers()


def background_choice() -> bool:
    """Is the comparison started on a first visit (``DTPBO_NO_TREE_CHOICE=1`` turns it off:
    the page then starts on the paper DT and compares only when the Held-out evidence tab
    opens)?"""
    return os.environ.get("DTPBO_NO_TREE_CHOICE", "") != "1"


def tree_choice(study: Study, wait: bool = False) -> TreeChoice | None:
    """The study's most accurate tree model (held-out), computed once by a job.

    ``None`` while the comparison runs, when it failed or was cancelled (the pages then
    open on the paper DT and show the comparison's job: its one sentence and "Try again",
    ``dashboard._progress.result``) or when it is off (:func:`background_choice`) and not
    done yet; ``wait=True`` starts it if needed and blocks until it is done (a failed
    comparison then raises its error).
    """
    if not wait and not background_choice():
        done = jobs.service().get(_choice_key(study))
        return done.result if done is not None and done.state == "done" else None
    job = choice_job(study)
    if wait:
        return job.wait()
    return job.result if job.state == "done" else None


def default_model(study: Study, choices: Sequence[str]) -> tuple[str, TreeChoice | None]:
    """The model the Tree explorer opens on (the study-level model) and the comparison
    (``None`` until done).

    Once the held-out comparison is done: the most accurate of the pooled trees among
    ``choices`` (:meth:`TreeChoice.best_among`; fitted once on the whole study and drawn
    with the population's leaves and slopes), as soon as its whole-study fit is done (it
    is started here); until then, and on a study no pooled tree applies to, the paper DT
    (on every comparison of the study, or on one respondent's in the respondent view).
    """
    fallback = "dt" if "dt" in choices else choices[0]
    choice = tree_choice(study)
    if choice is None:
        return fallback, None
    pooled = [m for m in choices if get(m).scope == "pooled"]
    best = choice.best_among(pooled) or (choice.best if choice.best in choices else None)
    if best is None:
        return fallback, choice
    if get(best).scope == "pooled" and fit_job(study, best).state != "done":
        return fallback, choice
    return best, choice


def scope_title(study: Study, respondent: Any, method: str) -> str:
    """What the tree drawn is, for its title: the whole study, or one respondent's
    personal tree (a tree of their own comparisons, or their own leaves on the splits the
    study's comparisons chose)."""
    if respondent is None:
        n = len(study.respondents()) if study.data.respondent is not None else 0
        return f"{study.title} — whole study" + (f" ({n:,} respondents)" if n > 1 else "")
    if get(method).scope == "pooled":
        return f"{study.title} — respondent {respondent}'s leaves on the study's splits"
    return f"{study.title} — respondent {respondent}'s personal tree"


def tradeoff_table(model: Any, money: str | None = None, time: str | None = None) -> pd.DataFrame:
    """Value of time (of the plan's travel-time attribute ``time``) and the other
    trade-offs per leaf (numbered as drawn) and overall, divided by the money attribute
    ``money`` (default: the one measured in money)."""
    if not labels.has_slopes(model):
        return pd.DataFrame()
    rows = labels.tradeoffs(model, money=money, time=time)
    return labels.tradeoff_table(rows, leaf_numbers(model))


def money_choice(study: Study) -> tuple[list[str | None], str | None, str]:
    """The money attributes a page offers (numeric attributes, ``None`` = no trade-offs),
    the study's own one (:func:`pbo_core.explain.labels.money_attribute`) and why."""
    default, why = labels.money_attribute(study)
    return [*labels.money_candidates(study.schema), None], default, why


def time_choice(study: Study) -> tuple[list[str | None], str | None, str]:
    """The travel-time attributes a page offers (numeric attributes, ``None`` = no value
    of time), the analysis plan's (:func:`pbo_core.explain.labels.time_attribute`) and why."""
    default, why = labels.time_attribute(study)
    nums = [f.name for f in study.schema.features if f.kind == "numeric"]
    return [*nums, None], default, why


def default_sensitive(study: Study) -> list[str]:
    """Features flagged as sensitive by default (gender, race, religion, ...).

    Matches whole words of the feature name (``"age"`` flags ``age`` but not
    ``gay_marriage`` or ``message_actionability``); longer keys match word prefixes
    (``"religio"`` flags ``religion`` and ``religious_activity``).
    """
    keys = explain.SENSITIVE_DEFAULT
    return [f.name for f in study.schema.features if explain.is_sensitive(f.name, keys)]


#: Items above which naming them (and formatting their attributes) is a job: Ecdat Car's
#: 21,873 vehicles took 8.5 s of the page's script (their labels 5.5 s, names 3.0 s).
BIG_ITEMS = 2000

#: Texts of recently shown data, by ``id(data)``: ``(data, {what: value})`` (kept alive).
_TEXTS: OrderedDict[int, tuple[PreferenceData, dict[Any, Any]]] = OrderedDict()


def _texts(data: PreferenceData) -> dict[Any, Any]:
    hit = _TEXTS.get(id(data))
    if hit is None or hit[0] is not data:
        hit = (data, {})
        _TEXTS[id(data)] = hit
        while len(_TEXTS) > 16:
            _TEXTS.popitem(last=False)
    return hit[1]


def texts_job(study: Study, respondent: Any) -> jobs.Job | None:
    """Naming the items of the data shown and formatting their attributes, as a job when
    there are more than :data:`BIG_ITEMS` of them (``None`` when there are fewer: they are
    named at once); its results fill the caches :func:`item_labels`,
    :func:`data_item_names` and :func:`items_table` read."""
    data = respondent_data(study, respondent)
    if data.n_items <= BIG_ITEMS:
        return None
    job = jobs.service().submit(
        jobs.job_key("names", fingerprint(study), repr(respondent)),
        f"Naming the {data.n_items:,} items and formatting their attributes",
        _work.item_texts,
        data,
        estimate=max(2.0, data.n_items / 2500),
    )
    if job.state == "done":
        cache = _texts(data)
        for k, v in job.result.items():
            cache.setdefault(k, v)
    return job


def item_labels(data: PreferenceData, max_len: int = 70) -> list[str]:
    """A label per item: its id and its most telling text or attributes (cached)."""
    cache = _texts(data)
    if ("labels", max_len) not in cache:
        cache[("labels", max_len)] = naming.item_labels(data, max_len)
    return cache[("labels", max_len)]


def data_item_names(data: PreferenceData, max_len: int = 44) -> list[str]:
    """Short item names for tree leaves: id and name/message start, or 3 attributes
    (cached)."""
    cache = _texts(data)
    if ("names", max_len) not in cache:
        cache[("names", max_len)] = naming.item_names(data, max_len)
    return cache[("names", max_len)]


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
    cache = _texts(data)
    if "attributes" not in cache:
        cache["attributes"] = _work.formatted_items(data)
    dec = cache["attributes"].copy()
    dec["utility"] = model.predict(data.X)
    dec["rank"] = model.rank(data.X)
    if hasattr(model, "tree_"):
        dec["leaf"] = leaf_numbers(model)[model.apply(data.X)]
    dec["won"] = np.bincount(data.pairs[:, 0], minlength=data.n_items)
    dec["lost"] = np.bincount(data.pairs[:, 1], minlength=data.n_items)
    return dec.sort_values(["rank", "item"], kind="stable").reset_index(drop=True)


def leaf_table(
    model: Any,
    data: PreferenceData | None = None,
    money: str | None = None,
    time: str | None = None,
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
            vot = labels.value_of_time(model, money, time).get(s.leaf)
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
    time: str | None = None,
    named: bool = True,
    detail: explain.Detail = "compact",
) -> explain.TreeView:
    """The drawable tree with each leaf's items named (from ``data``; ``named=False``: by
    their ids, while :func:`texts_job` names many items); trade-offs divide by the money
    attribute ``money``; the value of time is the plan's ``time``'s; ``detail``: compact
    boxes (a leaf at most four lines) or full ones."""
    return explain.tree_view(
        model,
        data=data,
        item_names=data_item_names(data) if data is not None and named else None,
        highlight=highlight,
        sensitive=sensitive,
        title=title,
        money=money,
        time=time,
        detail=detail,
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
    """Compile (or load from numba's on-disk cache) the models' kernels once per process
    (:func:`pbo_core.registry.warm_up`).

    The first fit of a fresh install compiles them (18.6 s of CPU on this 2-core
    machine; ``cache=True`` keeps them on disk afterwards: 0.3 s). Call this at app start
    under a status message so no page waits silently. Returns the seconds it took.
    """
    return registry.warm_up()
