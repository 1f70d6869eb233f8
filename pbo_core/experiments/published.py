"""The published SwissMetro protocol: ``python -m pbo_core.experiments published-swissmetro``.

The protocol of the market-segmentation trees paper (Aouad, Elmachtoub, Ferreira &
McNellis 2023, "Market segmentation trees", M&SOM 25(2); code and data preparation in
github.com/rtm2130/MST, ``scripts/prepare_data.py`` and ``scripts/cmt.py``), run on the
bundled SwissMetro study (all trip purposes, ``CHOICE > 0``: 10,719 choices of 1,191
respondents):

* **rows** (the paper's): 10 random splits of the *choice rows* into 75 % training,
  12.5 % validation and 12.5 % test. A respondent's nine answers fall on both sides, so a
  model that can tell respondents apart by their features recognises test respondents it
  was trained on.
* **respondents** (the honest one, beside it): the same with whole respondents held out,
  so every test choice is a new respondent's.

The validation part is used for pruning and tuning only (``fit(train, validation=val)``
for a model whose ``fit`` takes it; the others use their own inner cross-validation on the
training part); every model is scored on the test part by the held-out negative
log-likelihood per choice

.. math::

    \\mathrm{NLL} = -\\frac{1}{|T|} \\sum_{s \\in T} \\log P_s(c_s),         \\qquad (1)

``P_s`` the model's choice probabilities over situation ``s``'s available alternatives,
and by its top-1 accuracy (the chosen alternative has the largest probability; a tie of
``k`` counts ``1/k``). Means over the splits come with Student-``t`` 95 % intervals over
the splits, and every model's difference to ``mnl`` with the published utility with the
interval of the paired differences. The published code scores
``log(max(P, 0.01))``; that figure (``nll_clipped``) is reported beside ours, which clips
nothing.

Utilities
---------
``published``: the leaf utility of the published MNL: alternative constants (Swissmetro
the reference), travel time, cost and headway (generic slopes, as Biogeme's ``01logit``;
the published ``mnlogit`` fit has one slope per alternative), over each task's available
alternatives (the published fit enters availability as a 0/1 attribute with a
coefficient); Train and Swissmetro cost 0 for GA holders (the loader's coding; the
published data keep the annual GA price as their trip cost). ``features``: the same plus
the study plan's 11 respondent features as case-specific variables (the published "MNL
with interactions" row's kind of model; for the tree the published "customer features
also in its leaves").

The models
----------
``mnl`` (:class:`~pbo_core.models.mnl.ConditionalLogit`, ridge strength by its inner CV on
the training part) and ``mnl-tree`` (:class:`~pbo_core.models.choice_tree.ChoiceModelTree`
with depth <= ``max_depth``, ``2^max_depth`` segments at most, ``min_segment`` respondents
per segment, every respondent feature as a split candidate (origin and destination
cantons too, as in the published trees), the shrinkage and pruning by the validation
log-likelihood), each with both utilities; any other pooled registry model named in
``methods`` is fitted as the study's plan sets it (a model fitted one respondent at a
time, or one that cannot predict respondents it never saw when those are held out, is
skipped with the reason). Its choice probabilities (:func:`probability_kind`): a logit's
utilities as they are; a model's own probabilities (a mixture of logits); else the
logit of its utilities times the scale that maximises the validation part's
likelihood,

.. math::

    P_s(j) = \\frac{e^{\\kappa u_j}}{\\sum_{k \\in C_s} e^{\\kappa u_k}}, \\qquad
    \\hat\\kappa = \\arg\\max_\\kappa \\sum_{s \\in V} \\log P_s(c_s),          \\qquad (2)

the protocol's tuning on validation only. A model predicts a respondent with
``predict(X, respondent=r)`` when it predicts from recorded features, or, with choice
rows held out, from the respondent's own training choices.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from pbo_core.data import PreferenceData, Study
from pbo_core.experiments.runner import Cell
from pbo_core.metrics import fit_scale, situation_log_probs, situation_top1
from pbo_core.models.mnl import ChoiceSets, choice_sets
from pbo_core.registry import get, make_for, not_applicable

__all__ = [
    "PROTOCOLS",
    "PUBLISHED",
    "UTILITIES",
    "PublishedRecord",
    "format_published",
    "heldout_scores",
    "method_rows",
    "probability_kind",
    "protocol_split",
    "published_cell",
    "published_cells",
    "summarize_published",
    "validation_scale",
]

#: The two ways of holding out: choice rows (the paper's) or whole respondents.
PROTOCOLS: tuple[str, ...] = ("rows", "respondents")
#: Shares of the validation and test parts (the rest trains), as the paper's splits.
VALIDATION_SHARE = TEST_SHARE = 0.125
#: The utilities ``mnl`` and ``mnl-tree`` are run with (see the module docstring).
UTILITIES: dict[str, str] = {
    "published": "alternative constants, travel time, cost, headway; available alternatives only",
    "features": "the same plus the plan's respondent features as case-specific variables",
}
#: Attributes of the bundled study the published utility leaves out.
PUBLISHED_EXCLUDE: tuple[str, ...] = ("airline_seats",)
#: The models that run with both utilities.
PLANNED = ("mnl", "mnl-tree")
#: Shrinkage grids of the tree (choice situations of prior weight, Eq. 1 of
#: :mod:`pbo_core.models.choice_tree`): more segments with fewer coefficients each can
#: move further from their parent.
TREE_SHRINKAGES = {"published": (1000.0, 100.0, 30.0, 10.0, 3.0), "features": (300.0, 100.0, 30.0)}
#: The published code's floor on a probability before its logarithm.
PUBLISHED_CLIP = 0.01


@dataclass(frozen=True)
class PublishedRecord:
    """A published held-out figure on SwissMetro.

    Attributes
    ----------
    model
        The model as its source names it.
    nll
        Held-out negative log-likelihood per choice (the source's scoring).
    top1
        Top-1 accuracy when published.
    source
        Where it is published and on which split.
    row
        The ``(method, utility)`` of this command it compares with, if any.
    short
        Its name in the table's "published" column.
    """

    model: str
    nll: float
    top1: float | None
    source: str
    row: tuple[str, str] | None = None
    short: str = ""


_MST = "[1]"
_CL = "[2]"
#: The sources of :data:`PUBLISHED`.
SOURCES = {
    _MST: "Aouad, Elmachtoub, Ferreira & McNellis (2023), Market segmentation trees, "
    "M&SOM 25(2) (code: github.com/rtm2130/MST): 10 random 75/12.5/12.5 splits of the "
    "choice rows, mean of log(max(P, 0.01))",
    _CL: "choice-learn's L-MNL example (notebooks/models/learning_mnl.ipynb): Sifringer "
    "et al.'s train/test split, 1,802 test choices with all three modes available; "
    "printed totals / 1,802",
}
#: The published records (the segmentation-trees paper as published; choice-learn's
#: figures are its notebook's printed totals over its 1,802 test choices).
PUBLISHED: tuple[PublishedRecord, ...] = (
    PublishedRecord("MNL", 0.799, None, _MST, ("mnl", "published"), "MNL"),
    PublishedRecord(
        "MNL with interactions (MNLINT)", 0.701, None, _MST, ("mnl", "features"), "MNLINT"
    ),
    PublishedRecord("choice-model tree, depth 3", 0.656, None, _MST),
    PublishedRecord(
        "choice-model tree, depth 7", 0.613, None, _MST, ("mnl-tree", "published"), "CMT d7"
    ),
    PublishedRecord("choice-model tree, pruned", 0.628, None, _MST),
    PublishedRecord(
        "choice-model tree, customer features also in its leaves (CMT+)",
        0.560,
        None,
        _MST,
        ("mnl-tree", "features"),
        "CMT+",
    ),
    PublishedRecord("TasteNet", 0.604, 0.760, _MST),
    PublishedRecord("k-means segments + MNL (MNLKM)", 0.633, None, _MST),
    PublishedRecord("CART segments + MNL (MNLDT)", 0.637, None, _MST),
    PublishedRecord("conditional logit", 0.795, None, _CL),
    PublishedRecord("L-MNL", 0.647, None, _CL),
)

LoadSwissmetro = Callable[..., Study]


# ----------------------------------------------------------------------------- splits
def protocol_split(
    data: PreferenceData, protocol: str, split: int, seed: int
) -> tuple[PreferenceData, PreferenceData, PreferenceData]:
    """Training, validation and test parts of ``data`` (75 / 12.5 / 12.5 % of the choice
    tasks, ``protocol="rows"``, or of the respondents, ``"respondents"``), drawn with
    ``default_rng([seed, split, protocol index])``."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    if protocol == "rows":
        unit = data.task_keys()
    elif data.respondent is None:
        raise ValueError(f"{data.source}: holding out respondents needs respondent ids")
    else:
        unit = data.respondent
    units = np.unique(unit)
    rng = np.random.default_rng([seed, split, PROTOCOLS.index(protocol)])
    order = rng.permutation(len(units))
    n_test = int(len(units) * TEST_SHARE)
    n_val = int(len(units) * VALIDATION_SHARE)
    test = units[order[:n_test]]
    val = units[order[n_test : n_test + n_val]]
    part = np.where(np.isin(unit, test), 2, np.where(np.isin(unit, val), 1, 0))
    train, valid, held = (data.select_pairs(part == k) for k in range(3))
    return train, valid, held


# ----------------------------------------------------------------------------- scoring
def _personal(method: str, protocol: str) -> bool:
    """Whether ``method`` predicts a respondent with ``predict(X, respondent=r)``: from
    their recorded features, or (choice rows held out) from their own training choices."""
    spec = get(method)
    return spec.feature_predict or (spec.respondent_predict and protocol == "rows")


def _utilities(model: Any, data: PreferenceData, personal: bool) -> tuple[ChoiceSets, np.ndarray]:
    """``data``'s choice situations and every row's utility under ``model`` (each
    respondent's own with ``personal``, else the population's)."""
    cs = choice_sets(data)
    if not personal or data.respondent is None:
        return cs, np.asarray(model.predict(data.X), dtype=float)[cs.item]
    prepare = getattr(model, "prepare_respondents", None)
    resp = data.respondent[cs.pair]
    ids = pd.unique(resp)
    if prepare is not None:
        prepare(list(ids))
    values = np.empty(len(cs.item))
    situation = cs.situation
    for r in ids:
        rows = np.flatnonzero(resp[situation] == r)
        values[rows] = model.predict(data.X[cs.item[rows]], respondent=r)
    return cs, values


def probability_kind(model: Any) -> str:
    """How a fitted model's choice probabilities come: ``"logit"`` (its utilities are a
    logit's), ``"native"`` (it computes them: ``choice_probabilities``) or ``"fitted"``
    (the logit of its utilities with a scale fitted on the validation part)."""
    if getattr(model, "logit_utilities", False):
        return "logit"
    return "native" if hasattr(model, "choice_probabilities") else "fitted"


def validation_scale(model: Any, val: PreferenceData, personal: bool) -> float:
    """The scale of a model's utilities (Eq. 2 of :mod:`pbo_core.metrics`) that maximises
    the validation part's likelihood: 1 for a logit; the protocol tunes on validation
    only."""
    if probability_kind(model) != "fitted" or val.n_pairs == 0:
        return 1.0
    cs, v = _utilities(model, val, personal)
    return fit_scale(v, np.arange(len(v)), cs.start, cs.chosen)


def heldout_scores(
    model: Any, data: PreferenceData, *, personal: bool = True, scale: float = 1.0
) -> pd.DataFrame:
    """One row per choice situation of ``data``: ``respondent``, ``log_p`` (the log of
    the model's probability of the chosen alternative among the situation's available
    ones: its own probabilities, or the logit of its utilities times ``scale``) and
    ``top1`` (1 when the chosen alternative has the largest utility, ``1/k`` when ``k``
    tie for it, else 0)."""
    cs, v = _utilities(model, data, personal)
    n = cs.n_situations
    resp = data.respondent[cs.pair] if data.respondent is not None else np.full(n, None)
    rows = np.arange(len(v))
    top1 = situation_top1(v, rows, cs.start, cs.chosen)
    if probability_kind(model) == "native":
        logp = np.empty(n)
        for s in range(n):
            a, b = int(cs.start[s]), int(cs.start[s + 1])
            who = resp[s] if personal else None
            p = np.asarray(model.choice_probabilities(data.X[cs.item[a:b]], respondent=who))
            logp[s] = math.log(max(float(p[int(cs.chosen[s]) - a]), np.finfo(float).tiny))
    else:
        logp = situation_log_probs(v, rows, cs.start, cs.chosen, scale)
    return pd.DataFrame({"respondent": resp, "log_p": logp, "top1": top1})


# ----------------------------------------------------------------------------- models
def method_rows(methods: Sequence[str], utilities: Sequence[str]) -> list[tuple[str, str]]:
    """``(method, utility)`` of every row: ``mnl`` and ``mnl-tree`` with each of
    ``utilities``, every other method with the study's plan (utility ``"plan"``)."""
    bad = [u for u in utilities if u not in UTILITIES]
    if bad:
        raise ValueError(f"unknown utilities {bad}; choose from {list(UTILITIES)}")
    rows: list[tuple[str, str]] = []
    for m in methods:
        get(m)  # a KeyError naming the known entries
        rows += [(m, u) for u in utilities] if m in PLANNED else [(m, "plan")]
    return rows


def make_method(
    method: str,
    utility: str,
    study: Study,
    *,
    max_depth: int,
    min_segment: int,
    prune_rule: str = "max",
) -> Any:
    """A fresh estimator of ``method`` on ``study`` with ``utility`` (see the module
    docstring)."""
    if method not in PLANNED:
        return make_for(method, study)
    kw: dict[str, Any] = {"exclude": PUBLISHED_EXCLUDE}
    if method == "mnl":
        if utility == "published":
            kw["case_specific"] = ()
        return make_for("mnl", study, **kw)
    return make_for(
        "mnl-tree",
        study,
        **kw,
        leaf_terms="attributes" if utility == "published" else "all",
        split_features=list(study.user_schema.names) if study.user_schema else (),
        max_depth=max_depth,
        max_leaves=2**max_depth,
        min_respondents_leaf=min_segment,
        shrinkages=TREE_SHRINKAGES[utility],
        prune_rule=prune_rule,
    )


def why_not(method: str, study: Study, protocols: Sequence[str] = PROTOCOLS) -> str | None:
    """Why ``method`` cannot run under these protocols (one sentence), or ``None``."""
    spec = get(method)
    reason = not_applicable(spec, study, new_respondents="respondents" in protocols)
    if reason is None and spec.scope != "pooled":
        reason = (
            "fitted on one respondent's choices at a time; the protocol fits one model on "
            "the training part"
        )
    return reason


# ----------------------------------------------------------------------------- cells
@lru_cache(maxsize=4)
def _study(load: LoadSwissmetro, respondents: int | None, seed: int) -> Study:
    """The bundled SwissMetro study, all trip purposes (``respondents``: a seeded sample)."""
    full = load()
    if respondents is None or respondents >= len(full.respondents()):
        return full
    ids = np.sort(np.random.default_rng([seed, 54]).choice(full.respondents(), respondents, False))
    return load(respondents=ids.tolist())


def published_cells(
    base: Cell,
    rows: Sequence[tuple[str, str]],
    protocols: Sequence[str],
    splits: int,
) -> list[dict[str, Any]]:
    """One cell per (protocol, split, method, utility)."""
    return [
        dict(base, protocol=p, split=k, method=m, utility=u)
        for p in protocols
        for k in range(splits)
        for m, u in rows
    ]


def published_cell(cell: Cell, *, load_swissmetro: LoadSwissmetro) -> pd.DataFrame:
    """Fit one model on one split and score it on the test part: one row."""
    study = _study(load_swissmetro, cell.get("respondents"), int(cell["seed"]))
    train, val, test = protocol_split(
        study.data, str(cell["protocol"]), int(cell["split"]), int(cell["seed"])
    )
    model = make_method(
        str(cell["method"]),
        str(cell["utility"]),
        study,
        max_depth=int(cell["max_depth"]),
        min_segment=int(cell["min_segment"]),
        prune_rule=str(cell.get("prune_rule", "max")),
    )
    t0 = time.perf_counter()
    if "validation" in inspect.signature(model.fit).parameters:
        model.fit(train, validation=val)
    else:
        model.fit(train)
    seconds = time.perf_counter() - t0
    personal = _personal(str(cell["method"]), str(cell["protocol"]))
    scale = validation_scale(model, val, personal)
    scores = heldout_scores(model, test, personal=personal, scale=scale)
    p = np.exp(scores["log_p"].to_numpy())
    tree = getattr(model, "tree_", None)
    return pd.DataFrame(
        [
            {
                **{k: cell[k] for k in ("protocol", "split", "method", "utility")},
                "nll": float(-scores["log_p"].mean()),
                "nll_clipped": float(-np.log(np.maximum(p, PUBLISHED_CLIP)).mean()),
                "top1": float(scores["top1"].mean()),
                "n_test": len(scores),
                "n_train": int(choice_sets(train).n_situations),
                "segments": int(getattr(model, "n_leaves_", 1)),
                "depth": int(tree.max_depth) if tree is not None else 0,
                "shrinkage": float(getattr(model, "shrinkage_", float("nan"))),
                "probabilities": probability_kind(model),
                "scale": scale,
                "fit_seconds": seconds,
            }
        ]
    )


# ----------------------------------------------------------------------------- summary
def _interval(x: np.ndarray) -> tuple[float, float, float]:
    """Mean and Student-``t`` 95 % interval of ``x`` (the splits)."""
    n = len(x)
    m = float(np.mean(x))
    if n < 2:
        return m, float("nan"), float("nan")
    half = float(student_t.ppf(0.975, n - 1) * np.std(x, ddof=1) / math.sqrt(n))
    return m, m - half, m + half


def _label(method: str, utility: str) -> str:
    if utility == "features":
        return f"{method} + respondent features" + (" in leaves" if method == "mnl-tree" else "")
    return method


def summarize_published(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (protocol, method, utility): mean NLL per choice and top-1 accuracy with their
    95 % intervals over the splits, the clipped NLL, segments, depth, fit time, the paired
    difference in NLL to ``mnl`` with the published utility, and the published figure the
    row compares with (``rows`` protocol)."""
    out = []
    ref_key = ("mnl", "published")
    for (protocol, method, utility), g in rows.groupby(
        ["protocol", "method", "utility"], sort=False
    ):
        g = g.sort_values("split")
        nll, lo, hi = _interval(g["nll"].to_numpy())
        top, tlo, thi = _interval(g["top1"].to_numpy())
        rec: dict[str, Any] = {
            "protocol": protocol,
            "method": method,
            "utility": utility,
            "label": _label(str(method), str(utility)),
            "splits": len(g),
            "nll": nll,
            "nll_ci95": [lo, hi],
            "nll_clipped": float(g["nll_clipped"].mean()),
            "top1": top,
            "top1_ci95": [tlo, thi],
            "segments": float(g["segments"].mean()),
            "max_depth": int(g["depth"].max()),
            "fit_seconds": float(g["fit_seconds"].mean()),
            "n_test": float(g["n_test"].mean()),
        }
        ref = rows[
            (rows["protocol"] == protocol)
            & (rows["method"] == ref_key[0])
            & (rows["utility"] == ref_key[1])
        ].set_index("split")["nll"]
        if (method, utility) != ref_key and len(ref):
            both = g.set_index("split")["nll"].align(ref, join="inner")
            d = both[0].to_numpy() - both[1].to_numpy()
            dm, dlo, dhi = _interval(d)
            rec["minus_mnl"] = {"mean": dm, "ci95": [dlo, dhi], "splits": len(d)}
        pub = [r for r in PUBLISHED if r.row == (method, utility)]
        if protocol == "rows" and pub:
            rec["published"] = {
                "model": pub[0].model,
                "short": pub[0].short,
                "nll": pub[0].nll,
                "top1": pub[0].top1,
                "source": SOURCES[pub[0].source],
            }
        out.append(rec)
    return out


def _ci(lo: float, hi: float, digits: int = 3) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def format_published(summary: Sequence[dict[str, Any]], skipped: dict[str, str]) -> str:
    """The command's table: per protocol our rows with the published figure beside them,
    then the published records not run here, their sources and the skipped models."""
    lines = []
    titles = {
        "rows": "Choice rows held out (the published protocol)",
        "respondents": "Whole respondents held out",
    }
    for protocol in PROTOCOLS:
        recs = [r for r in summary if r["protocol"] == protocol]
        if not recs:
            continue
        lines.append(
            f"{titles[protocol]}: {recs[0]['splits']} split(s); held-out NLL per choice and "
            "top-1 accuracy, mean [95 % CI over the splits]"
        )
        head = (
            f"{'model':<41}{'NLL':>6} {'[95% CI]':<16}{'clip':>6} {'top-1':>6} "
            f"{'segments':>8} {'depth':>5}  {'minus mnl [95% CI]':<25} published"
        )
        lines += [head, "-" * (len(head) + 12)]
        for r in recs:
            d = r.get("minus_mnl")
            diff = f"{d['mean']:+.3f} {_ci(*d['ci95'])}" if d else ""
            pub = r.get("published")
            ptxt = f"{pub['nll']:.3f} {pub['short']}" if pub else ""
            lines.append(
                f"{r['label']:<41}{r['nll']:6.3f} {_ci(*r['nll_ci95']):<16}"
                f"{r['nll_clipped']:6.3f} {r['top1']:6.3f} {r['segments']:8.1f} "
                f"{r['max_depth']:5d}  {diff:<25} {ptxt}".rstrip()
            )
        lines.append("")
    lines.append(
        "clip: the published scoring, mean of -log(max(P, 0.01)). Published records not run here:"
    )
    shown = {r["published"]["model"] for r in summary if r.get("published")}
    for rec in PUBLISHED:
        if rec.model in shown:
            continue
        top = f", top-1 {rec.top1:.1%}" if rec.top1 is not None else ""
        lines.append(f"  {rec.nll:.3f} {rec.model}{top} {rec.source}")
    lines += [f"{k} {v}" for k, v in SOURCES.items()]
    for m, why in skipped.items():
        lines.append(f"skipped {m}: {why}.")
    return "\n".join(lines)
