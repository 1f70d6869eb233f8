"""The one evaluation core: held-out accuracy of registry models on a split, and its summaries.

Everything that reports how well a model predicts comparisons it did not see is a thin
summary of :func:`score_model` on a :class:`~pbo_core.splits.Split`: the accuracy
experiments (``conjoint-accuracy``, ``sushi-generalization``, ``straddler-ablation``), the
Tree explorer's held-out evidence and its default model (:func:`compare`), leave-one-out
feature sensitivity on the command line, in the report and on the dashboard
(:func:`ablation_rows`, :func:`summarize_ablation`).

Scoring
-------
A comparison ``(w, l)`` predicted with utilities ``u`` scores 1 when ``u_w > u_l``, 1/2 on
a tie and 0 otherwise (:func:`pbo_core.metrics.pair_scores`, the project's one pair
accuracy). For every tested fold ``f`` of the split, a **pooled** model
(``scope="pooled"``) is fitted once on the fold's training comparisons and predicts every
unit (with the unit's own utilities when it has them, ``respondent_predict``, unless the
unit is a respondent it never saw); a **per-respondent** model is fitted on each unit's own
training comparisons (its items only, as :meth:`~pbo_core.data.PreferenceData.for_respondent`
gives them). A unit's test accuracy is the mean score of its tested comparisons,

.. math::

    \\mathrm{acc}_r = \\frac{1}{|T_r|} \\sum_{(w,l) \\in T_r}
        \\big( [u_w > u_l] + \\tfrac12 [u_w = u_l] \\big),                      \\qquad (1)

and its training accuracy the same over its training comparisons (averaged over folds).

Summaries
---------
Units are respondents; with a single unit (data without respondents, one respondent) its
tested comparisons are the units. Per model: mean, sd, median and a 95 % percentile
bootstrap CI of (1) over units, and the paired difference to the best baseline (the
highest mean among the registry's ``reference`` entries) with its CI (:func:`summarize`).
"""

from __future__ import annotations

import hashlib
import time
import weakref
import zlib
from collections.abc import Callable, MutableMapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Schema, Study
from pbo_core.errors import NotApplicableError
from pbo_core.metrics import (
    bootstrap_ci,
    fit_scale,
    pair_scores,
    paired_difference,
    ratio_ci,
    situation_log_probs,
    situation_top1,
)
from pbo_core.metrics import summarize as _summ
from pbo_core.models.mnl import ChoiceSets, ConditionalLogit, choice_sets
from pbo_core.plan import AnalysisPlan, plan_of
from pbo_core.registry import ModelSpec, get, make_for, names, not_applicable
from pbo_core.splits import Split, auto_kind, make_split

__all__ = [
    "BASELINE_ROW",
    "BEST_BASELINE_RULE",
    "NotApplicableError",
    "ablation_rows",
    "best_baseline",
    "best_baseline_of",
    "compare",
    "drop_features",
    "evidence_caution",
    "evidence_split",
    "evidence_table",
    "format_table",
    "heldout_caution",
    "min_detectable",
    "plan_accuracy",
    "plan_best_baseline",
    "plan_evidence_models",
    "plan_models",
    "plan_sensitivity",
    "plan_sensitivity_models",
    "plan_split",
    "sample_text",
    "scorable",
    "score_model",
    "score_models",
    "sensitivity_caution",
    "sensitivity_effect",
    "shown_evidence",
    "summarize",
    "summarize_ablation",
    "summarize_sensitivity",
    "summary_caution",
    "unit_word",
]

#: The ``feature removed`` value of the all-features row of a sensitivity table.
BASELINE_ROW = "None (baseline)"
#: The change (percentage points of accuracy) a held-out sample should be able to detect:
#: a sensitivity row whose interval includes 0 and whose minimum detectable change is
#: larger is labelled underpowered, and a held-out sample whose accuracy intervals cannot
#: detect it is cautioned (:func:`heldout_caution`).
DETECTABLE_CHANGE_PP = 5.0
#: ``z_{0.975} + z_{0.80}``: a change of this many standard errors is detected with 80 %
#: power by a two-sided 5 % test.
_MDC_Z = 1.959963984540054 + 0.8416212335729143
_Z975 = 1.959963984540054


def min_detectable(half_width: float | np.ndarray) -> float | np.ndarray:
    """The change detected with 80 % power at the 5 % level by an estimate whose 95 % CI
    has half-width ``h`` (same units): ``(z_0.975 + z_0.8) h / z_0.975`` (Eq. 2 of
    :func:`summarize_sensitivity`)."""
    return _MDC_Z * np.asarray(half_width, dtype=float) / _Z975


def heldout_caution(
    half_widths: Sequence[float], n_units: int, unit: str = "respondents"
) -> str | None:
    """The caution every output that shows held-out figures prints when its sample is
    too small to detect a :data:`DETECTABLE_CHANGE_PP` difference, or ``None``.

    ``half_widths`` are the half-widths (accuracy as a fraction) of the models' 95 % CIs
    of held-out accuracy; their median gives the minimum detectable difference
    (:func:`min_detectable`, in percentage points)."""
    h = np.asarray([v for v in half_widths if v is not None and np.isfinite(v)], dtype=float)
    if h.size == 0:
        return None
    return _caution(n_units, unit, 100 * float(min_detectable(float(np.median(h)))))


def _caution(n_units: int, unit: str, mdc_pp: float) -> str | None:
    if not np.isfinite(mdc_pp) or mdc_pp <= DETECTABLE_CHANGE_PP:
        return None
    return (
        f"Caution: {n_units:,} held-out {unit} are too few to detect a "
        f"{DETECTABLE_CHANGE_PP:g}-point difference in accuracy (the smallest difference "
        f"detected with 80% power at the 5% level is about {mdc_pp:.0f} points): smaller "
        "differences are noise here. A larger evaluation sample (the plan's respondents) "
        "narrows the intervals."
    )


def sensitivity_caution(table: pd.DataFrame, unit: str = "respondents") -> str | None:
    """:func:`heldout_caution` of a sensitivity table (:func:`summarize_ablation`'s): the
    median minimum detectable change of its rows."""
    if table.empty or "min detectable (pp)" not in table:
        return None
    mdc = pd.to_numeric(table["min detectable (pp)"], errors="coerce").dropna()
    if mdc.empty:
        return None
    n = int(table["respondents"].iloc[0]) if "respondents" in table else 0
    return _caution(n, unit, float(mdc.median()))


def summary_caution(summary: dict[str, dict[str, Any]], unit: str = "respondents") -> str | None:
    """:func:`heldout_caution` of a :func:`summarize` result (its models' CIs)."""
    if not summary:
        return None
    half = [(s["test_acc_ci95"][1] - s["test_acc_ci95"][0]) / 2 for s in summary.values()]
    n = max(int(s["n"]) for s in summary.values())
    return heldout_caution(half, n, unit)


def evidence_caution(table: pd.DataFrame, unit: str = "respondents") -> str | None:
    """:func:`heldout_caution` of an :func:`evidence_table` (the models that were scored)."""
    ok = table[table["heldout"].notna()] if len(table) else table
    if ok.empty:
        return None
    half = ((ok["ci_high"] - ok["ci_low"]) / 2).tolist()
    return heldout_caution(half, int(ok["n_heldout"].max()), unit)


def drop_features(data: PreferenceData, schema: Schema, names_: Sequence[str]) -> PreferenceData:
    """The same items and comparisons without the named features' columns."""
    keep_schema = schema.without(names_)
    drop = set(schema.column_indices(names_).tolist())
    cols = [i for i in range(schema.n_columns) if i not in drop]
    return PreferenceData(
        X=data.X[:, cols],
        pairs=data.pairs,
        schema=keep_schema,
        items=data.items,
        item_ids=data.item_ids,
        respondent=data.respondent,
        users=data.users,
        source=data.source,
        task=data.task,
        situations=data.situations,
    )


def _without(data: PreferenceData, feature: str | None) -> PreferenceData:
    return data if feature is None else drop_features(data, data.get_schema(), [feature])


def _leaves(model: Any) -> float | None:
    n = getattr(model, "n_leaves_", None)
    return None if n is None else float(n)


def _depth(model: Any) -> float | None:
    depth = getattr(getattr(model, "tree_", None), "max_depth", None)
    return None if depth is None else float(depth)


class _Unit:
    """Accumulates one unit's scores over the folds."""

    def __init__(self) -> None:
        self.test: list[np.ndarray] = []
        self.ties: list[np.ndarray] = []
        self.train: list[float] = []
        self.train_scores: list[np.ndarray] = []
        self.n_train: list[int] = []
        self.leaves: list[float] = []
        self.depth: list[float] = []
        self.fit_s = 0.0
        # held-out choice situations: log P(chosen), top-1 score, log |C| (each, in order),
        # the scale used, and the calibration counts (bins x (n, sum p, sum chosen))
        self.logp: list[np.ndarray] = []
        self.logp_constants: list[np.ndarray] = []
        self.top1: list[np.ndarray] = []
        self.log_size: list[np.ndarray] = []
        self.scale: list[float] = []
        self.calibration = np.zeros((CAL_BINS, 3))

    def add_choices(self, scored: _Scored) -> None:
        """The unit's held-out situations of one fold."""
        if len(scored.logp):
            self.logp.append(scored.logp)
            self.logp_constants.append(scored.logp_constants)
            self.top1.append(scored.top1)
            self.log_size.append(scored.log_size)
            self.calibration += scored.calibration
        if scored.scale is not None:
            self.scale.append(scored.scale)

    def add(self, model: Any, u: np.ndarray, tr: np.ndarray, te: np.ndarray, fit_s: float) -> None:
        if len(te):
            self.test.append(pair_scores(u, te))
            self.ties.append((u[te[:, 0]] == u[te[:, 1]]).astype(float))
        scores = pair_scores(u, tr)
        self.train_scores.append(scores)
        self.train.append(float(np.mean(scores)) if len(tr) else float("nan"))
        self.n_train.append(len(tr))
        for acc, fn in ((self.leaves, _leaves), (self.depth, _depth)):
            v = fn(model)
            if v is not None:
                acc.append(v)
        self.fit_s += fit_s


#: Inner folds of the cross-fitted scale (:func:`_fold_scale`): each refit holds out
#: every other training task (three folds gave the same scales on Train and Electricity,
#: within 3 %, at 1.5 times the cost).
INNER_FOLDS = 2
#: Bins of the calibration table (predicted probability of an alternative vs chosen).
CAL_BINS = 10


class _Scored:
    """One unit's held-out situations of one fold, scored."""

    def __init__(
        self,
        logp: np.ndarray,
        top1: np.ndarray,
        log_size: np.ndarray,
        calibration: np.ndarray,
        scale: float | None,
        logp_constants: np.ndarray | None = None,
    ) -> None:
        self.logp, self.top1, self.log_size = logp, top1, log_size
        self.calibration, self.scale = calibration, scale
        # log P(chosen) under the constants-only logit (equal shares when none)
        self.logp_constants = -log_size if logp_constants is None else logp_constants


_NONE = _Scored(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros((CAL_BINS, 3)), None)


def _calibration(v: np.ndarray, start: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """``(CAL_BINS, 3)``: per bin of predicted probability the alternatives' count, the
    sum of their probabilities and how many were chosen (``v``: log-probabilities of every
    row; ``chosen``: the chosen rows)."""
    p = np.exp(v)
    c = np.zeros(len(v))
    c[chosen] = 1.0
    b = np.clip((p * CAL_BINS).astype(int), 0, CAL_BINS - 1)
    out = np.zeros((CAL_BINS, 3))
    np.add.at(out[:, 0], b, 1.0)
    np.add.at(out[:, 1], b, p)
    np.add.at(out[:, 2], b, c)
    return out


def _row_log_probs(v: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Log-probability of every row under the logit of the row values ``v`` (one
    log-sum-exp per situation)."""
    if not len(v):
        return v
    m = np.maximum.reduceat(v, start[:-1])
    row_s = np.repeat(np.arange(len(start) - 1), np.diff(start))
    return v - (m + np.log(np.add.reduceat(np.exp(v - m[row_s]), start[:-1])))[row_s]


def _subset(sets: ChoiceSets, which: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, start, chosen)`` of the situations ``which`` (indices), rows into
    ``sets.item``; ``start`` and ``chosen`` relative to the selection."""
    sizes = np.diff(sets.start)[which]
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = (
        np.concatenate([np.arange(sets.start[s], sets.start[s + 1]) for s in which])
        if len(which)
        else np.zeros(0, dtype=np.int64)
    )
    chosen = start[:-1] + (sets.chosen[which] - sets.start[which])
    return rows.astype(np.int64), start, chosen


def _scale_kind(model: Any) -> str:
    """How a fitted model's choice probabilities come: ``"logit"`` (its utilities are a
    logit's: the scale is 1), ``"native"`` (it computes them: a mixture of logits) or
    ``"fitted"`` (the logit of its utilities with a scale fitted on training choices)."""
    if getattr(model, "logit_utilities", False):
        return "logit"
    if hasattr(model, "choice_probabilities"):
        return "native"
    return "fitted"


def _fold_scale(
    model: Any,
    sets: ChoiceSets,
    values: np.ndarray,
    train: np.ndarray,
    data: PreferenceData,
    refit: Callable[[np.ndarray], np.ndarray] | None = None,
) -> float | None:
    """The scale of a model's utilities on one fold (:func:`_scale_kind`): ``None`` for
    a model with its own probabilities, 1 for a logit, else fitted on the training
    data only, **cross-fitted**: the training tasks are split in
    :data:`INNER_FOLDS` (alternate tasks), the model refitted without each
    (``refit(pair_mask)``: the utilities of every row of ``sets``) predicts it, and
    the scale maximises the likelihood of those out-of-fold predictions
    (:func:`pbo_core.metrics.fit_scale`). A scale fitted on the model's own training
    predictions would be too confident (a tree that fits its training choices exactly).
    Without ``refit``, or when a half cannot be fitted, the training predictions
    ``values`` are used.
    """
    kind = _scale_kind(model)
    if kind == "native":
        return None
    s_train = np.flatnonzero(train[sets.pair])
    if kind == "logit" or not len(s_train):
        return 1.0
    held_values = values
    if refit is not None:
        tk = data.task_keys()
        tasks = np.unique(sets.task[s_train])
        cross = np.full(len(sets.item), np.nan)
        try:
            for h in range(INNER_FOLDS):
                out = tasks[h::INNER_FOLDS]
                mask = train & ~np.isin(tk, out)
                if mask.sum() < 2 or not len(out):
                    raise ValueError("a half has too few comparisons")
                v = refit(mask)
                held = s_train[np.isin(sets.task[s_train], out)]
                rows, _, _ = _subset(sets, held)
                cross[rows] = v[rows]
            held_values = cross
        except Exception:  # a half the model cannot be fitted on: its training fit
            held_values = values
    rows, start, chosen = _subset(sets, s_train)
    v = held_values[rows]
    if np.isnan(v).any():
        keep = ~np.isnan(np.add.reduceat(v, start[:-1]))
        rows, start, chosen = _subset(sets, s_train[keep])
        v = held_values[rows]
    if not len(v):
        return 1.0
    return fit_scale(v, np.arange(len(v)), start, chosen)


def _refit_pooled(
    mask: np.ndarray,
    *,
    spec: ModelSpec,
    data: PreferenceData,
    sets: ChoiceSets,
    split: Split,
    by_unit: list[np.ndarray],
    own: bool,
) -> np.ndarray:
    """A pooled model refitted on the comparisons ``mask``: every situation row's
    utility (:func:`_pooled_values`)."""
    m = make_for(spec, split.study, schema=data.schema).fit(data.select_pairs(mask))
    return _pooled_values(m, data, sets, split, by_unit, own)


def _refit_own(
    mask: np.ndarray,
    *,
    spec: ModelSpec,
    study: Study,
    own: PreferenceData,
    sets: ChoiceSets,
    learned: dict[str, Any],
) -> np.ndarray:
    """A per-respondent model refitted on its comparisons ``mask``: every situation row's
    utility."""
    m = make_for(spec, study, schema=own.schema, **learned)
    return m.fit(own.select_pairs(mask)).predict(own.X)[sets.item]


def _pooled_values(
    fitted: Any,
    data: PreferenceData,
    sets: ChoiceSets,
    split: Split,
    by_unit: list[np.ndarray],
    own: bool,
) -> np.ndarray:
    """The utilities of every row of ``sets`` under a pooled model: each unit's own
    (``own``: personal predictions) or the population's."""
    population = fitted.predict(data.X)
    prepare = getattr(fitted, "prepare_respondents", None)
    if own and prepare is not None:
        prepare([r for r in split.units if r is not None])
    values = np.full(len(sets.item), np.nan)
    for i, r in enumerate(split.units):
        personal = r is not None and own
        u = _personal(fitted, data.X, data.pairs[split.rows[i]], r) if personal else population
        values[by_unit[i]] = u[sets.item[by_unit[i]]]
    return values


def _scored(
    sets: ChoiceSets,
    values: np.ndarray,
    test: np.ndarray,
    scale: float | None,
    native: Callable[[int], np.ndarray] | None = None,
    constants: np.ndarray | None = None,
) -> _Scored:
    """A unit's held-out situations ``test`` scored: the logit of ``values`` (the
    utilities of every row of ``sets``) with ``scale``, or (``scale`` ``None``) the
    model's own probabilities ``native(s)`` of situation ``s``'s rows; ``constants``:
    every row's utility under the constants-only logit (``None``: equal shares)."""
    if not len(test):
        return _NONE
    rows, start, chosen = _subset(sets, test)
    v = np.nan_to_num(values[rows])
    if scale is None and native is not None:
        logp_rows = np.concatenate([np.log(np.clip(native(int(s)), 1e-300, 1.0)) for s in test])
    else:
        logp_rows = _row_log_probs((1.0 if scale is None else scale) * v, start)
    top1 = situation_top1(v, np.arange(len(v)), start, chosen)
    lc = None
    if constants is not None:
        lc = situation_log_probs(constants[rows], np.arange(len(rows)), start, chosen)
    return _Scored(
        logp_rows[chosen],
        top1,
        np.log(np.diff(start).astype(float)),
        _calibration(logp_rows, start, chosen),
        scale,
        lc,
    )


def _constants_model(split: Split, data: PreferenceData, train: np.ndarray) -> Any:
    """The constants-only logit of a fold (the plan's alternative constants fitted on its
    training choices), the reference of rho-squared against constants only; ``None``
    for unlabelled alternatives (then equal shares are the reference)."""
    plan = plan_of(split.study)
    schema = data.get_schema()
    alt = plan.alternative
    if alt is None or alt not in schema.names:
        return None
    try:
        kept = drop_features(data, schema, [n for n in schema.names if n != alt])
        model = ConditionalLogit(alternative=alt, reference=plan.reference, alpha=0)
        model.fit(kept.select_pairs(train))
    except Exception:  # no constants to fit on these choices
        return None
    keep = schema.column_indices([alt])
    return lambda X: model.predict(np.asarray(X)[:, keep])


def _native(
    fitted: Any, X: np.ndarray, sets: ChoiceSets, respondent: Any
) -> Callable[[int], np.ndarray] | None:
    """``s -> `` the model's own choice probabilities of situation ``s``'s rows (a model
    that computes them: a mixture of logits), else ``None``."""
    fn = getattr(fitted, "choice_probabilities", None)
    if fn is None or getattr(fitted, "logit_utilities", False):
        return None

    def probs(s: int) -> np.ndarray:
        items = sets.item[sets.start[s] : sets.start[s + 1]]
        return np.asarray(fn(X[items], respondent=respondent), dtype=float)

    return probs


def _rows_by_unit(unit_of_row: np.ndarray, n_units: int) -> list[np.ndarray]:
    """The row indices of every unit (``unit_of_row``: -1 for none)."""
    order = np.argsort(unit_of_row, kind="stable")
    bounds = np.searchsorted(unit_of_row[order], np.arange(n_units + 1))
    return [order[bounds[i] : bounds[i + 1]] for i in range(n_units)]


def _situation_units(split: Split, sets: ChoiceSets) -> np.ndarray:
    """The unit index of every situation (through its comparisons' rows)."""
    unit_of_pair = np.full(split.study.data.n_pairs, -1, dtype=np.int64)
    for i, rows in enumerate(split.rows):
        unit_of_pair[rows] = i
    return unit_of_pair[sets.pair]


def _choice_columns(
    logp: Sequence[np.ndarray],
    top1: Sequence[np.ndarray],
    log_size: Sequence[np.ndarray],
    logp_constants: Sequence[np.ndarray] = (),
) -> dict[str, float]:
    """A unit's held-out choice sums: ``test_ll`` (log-likelihood), ``test_top1``,
    ``test_ll0`` (equal shares), ``test_llc`` (the constants-only logit) and
    ``test_choices`` (situations)."""
    lp = np.concatenate(list(logp)) if len(logp) else np.zeros(0)
    t1 = np.concatenate(list(top1)) if len(top1) else np.zeros(0)
    ls = np.concatenate(list(log_size)) if len(log_size) else np.zeros(0)
    lc = np.concatenate(list(logp_constants)) if len(logp_constants) else -ls
    return {
        "test_ll": float(lp.sum()),
        "test_top1": float(t1.sum()),
        "test_ll0": float(-ls.sum()),
        "test_llc": float(lc.sum()),
        "test_choices": len(lp),
    }


def _mean(x: list[float]) -> float | None:
    v = [a for a in x if a is not None and np.isfinite(a)]
    return float(np.mean(v)) if v else None


def _rows(split: Split, spec: ModelSpec, units: dict[int, _Unit]) -> list[dict[str, Any]]:
    """One row per unit, or one per tested comparison when the split has a single unit."""
    nan = float("nan")
    out = []
    for i, acc in units.items():
        r = split.units[i]
        test = np.concatenate(acc.test) if acc.test else np.zeros(0)
        ties = np.concatenate(acc.ties) if acc.ties else np.zeros(0)
        train = _mean(acc.train)
        row = {
            "respondent": "all" if r is None else str(r),
            "method": spec.name,
            "family": spec.family,
            "train_acc": nan if train is None else train,
            "test_acc": float(test.mean()) if len(test) else nan,
            "test_ties": float(ties.mean()) if len(ties) else nan,
            "n_train": round(float(np.mean(acc.n_train))) if acc.n_train else 0,
            "n_test": len(test),
            "leaves": _mean(acc.leaves),
            "depth": _mean(acc.depth),
            "fit_s": acc.fit_s,
            **_choice_columns(acc.logp, acc.top1, acc.log_size, acc.logp_constants),
            "scale": _mean(acc.scale),
            "calibration": acc.calibration.reshape(-1).tolist(),
        }
        if len(split.units) > 1:
            out.append(row)
            continue
        # a single unit: its comparisons are the resampled units (a test row scores 1,
        # 1/2 or 0, a training row its training score; the means are the unit's)
        for k, (v, tie) in enumerate(zip(test, ties, strict=True)):
            out.append(
                dict(
                    row,
                    respondent=f"test-{k}",
                    train_acc=nan,
                    test_acc=float(v),
                    test_ties=float(tie),
                )
            )
        train_scores = acc.train_scores[0] if len(acc.train_scores) == 1 else np.asarray(acc.train)
        for k, v in enumerate(train_scores):
            out.append(
                dict(
                    row,
                    respondent=f"train-{k}",
                    train_acc=float(v),
                    test_acc=nan,
                    test_ties=nan,
                    **_choice_columns([], [], []),
                )
            )
        # and its held-out situations are the units of the choice metrics
        logp = np.concatenate(acc.logp) if acc.logp else np.zeros(0)
        top1 = np.concatenate(acc.top1) if acc.top1 else np.zeros(0)
        size = np.concatenate(acc.log_size) if acc.log_size else np.zeros(0)
        lc = np.concatenate(acc.logp_constants) if acc.logp_constants else -size
        for k in range(len(logp)):
            out.append(
                dict(
                    row,
                    respondent=f"situation-{k}",
                    train_acc=nan,
                    test_acc=nan,
                    test_ties=nan,
                    **_choice_columns(
                        [logp[k : k + 1]], [top1[k : k + 1]], [size[k : k + 1]], [lc[k : k + 1]]
                    ),
                )
            )
        for r in out:  # the pairs' rows carry no situation
            if r["respondent"].startswith("test-"):
                r.update(_choice_columns([], [], []))
    return out


def score_model(
    split: Split,
    model: str | ModelSpec,
    *,
    chunk: Sequence[int] | None = None,
    drop_feature: str | None = None,
    reuse: bool = True,
    progress: Callable[[int, int], None] | None = None,
    fits: MutableMapping[Any, Any] | None = None,
    choices: bool = True,
) -> pd.DataFrame:
    """Held-out scores of one registry model on ``split`` (rows per unit, see module doc).

    Parameters
    ----------
    split
        The split (:func:`pbo_core.splits.make_split`).
    model
        Registry name or entry.
    chunk
        Per-respondent models: only the units ``lo <= i < hi`` (the resumable unit of a
        grid); pooled models score every unit.
    drop_feature
        Fit and score without that feature's columns (leave-one-out sensitivity).
    reuse
        Cross-validation of a per-respondent model: settings the first fold learns
        (e.g. the GP's kernel hyperparameters) are reused by the other folds of the unit.
    progress
        Called as ``progress(done, total)`` after every fit (a pooled model's folds, a
        per-respondent model's units).
    fits
        A memo of pooled fits by model, feature dropped and training comparisons: a split
        that trains on the same comparisons as an earlier one (the Tree explorer's
        evidence of one respondent of the study-level comparison) reuses its fits.
    choices
        Also score the held-out choice situations (NLL per choice, top-1, rho-squared:
        its scale cross-fitted, two more fits); leave-one-out sensitivity, which reports
        accuracy changes, does without.

    Returns
    -------
    DataFrame with columns ``respondent``, ``method``, ``family``, ``train_acc``,
    ``test_acc``, ``test_ties``, ``n_train``, ``n_test``, ``leaves``, ``depth``, ``fit_s``.

    Raises
    ------
    NotApplicableError
        When the model cannot be scored here (:func:`pbo_core.registry.not_applicable`).
    """
    spec = get(model) if isinstance(model, str) else model
    why = not_applicable(spec, split.study, new_respondents=split.new_respondents)
    if why is not None:
        raise NotApplicableError(f"{spec.name}: {why}")
    data = _without(split.study.data, drop_feature)
    pairs = data.pairs
    units: dict[int, _Unit] = {}
    if spec.scope == "pooled":
        sets = choice_sets(data)
        by_unit = _rows_by_unit(_situation_units(split, sets)[sets.situation], len(split.units))
        sit_unit = _situation_units(split, sets)
        folds = split.test_folds
        for k, f in enumerate(folds):
            train, test = split.train_mask(f), split.test_mask(f)
            t0 = time.perf_counter()
            memo = (spec.name, drop_feature, _mask_key(train))
            fitted = None if fits is None else fits.get(memo)
            if fitted is None:
                fitted = make_for(spec, split.study, schema=data.schema).fit(
                    data.select_pairs(train)
                )
                if fits is not None:
                    fits[memo] = fitted
            fit_s = (time.perf_counter() - t0) / max(1, len(split.units))
            population = fitted.predict(data.X)
            own = spec.feature_predict or (spec.respondent_predict and not split.new_respondents)
            prepare = getattr(fitted, "prepare_respondents", None)
            if own and prepare is not None:  # every unit's posterior in one batched solve
                prepare([r for r in split.units if r is not None])
            values = np.full(len(sets.item), np.nan)  # every situation row's utility
            for i, r in enumerate(split.units):
                rows = split.rows[i]
                personal = r is not None and own
                tr, te = pairs[rows[train[rows]]], pairs[rows[test[rows]]]
                u = _personal(fitted, data.X, pairs[rows], r) if personal else population
                units.setdefault(i, _Unit()).add(fitted, u, tr, te, fit_s)
                values[by_unit[i]] = u[sets.item[by_unit[i]]]
            if not choices:
                if progress is not None:
                    progress(k + 1, len(folds))
                continue
            s_test = np.flatnonzero(test[sets.pair])
            refit = partial(
                _refit_pooled, spec=spec, data=data, sets=sets, split=split, by_unit=by_unit,
                own=own,
            )  # fmt: skip
            scale = _fold_scale(fitted, sets, values, train, data, refit)
            const = _constants_model(split, data, train)
            cvals = None if const is None else const(data.X[sets.item])
            for i, r in enumerate(split.units):
                who = r if r is not None and own else None
                units[i].add_choices(
                    _scored(
                        sets, values, s_test[sit_unit[s_test] == i], scale,
                        _native(fitted, data.X, sets, who), cvals,
                    )
                )  # fmt: skip
            if progress is not None:
                progress(k + 1, len(folds))
        return pd.DataFrame(_rows(split, spec, units))
    if split.new_respondents:
        raise NotApplicableError(
            f"{spec.name}: {not_applicable(spec, split.study, new_respondents=True)}"
        )
    lo, hi = chunk or (0, len(split.units))
    consts = {
        f: _constants_model(split, data, split.train_mask(f)) if choices else None
        for f in split.test_folds
    }
    for i in range(int(lo), int(hi)):
        r = split.units[i]
        rows = split.rows[i]
        own = (
            data
            if r is None or data.respondent is None
            else _without(_respondent_data(split, r), drop_feature)
        )
        learned: dict[str, Any] = {}
        own_sets = choice_sets(own)
        for f in split.test_folds:
            train, test = split.train_mask(f)[rows], split.test_mask(f)[rows]
            t0 = time.perf_counter()
            fitted = make_for(spec, split.study, schema=own.schema, **learned)
            fitted = fitted.fit(own.select_pairs(train))
            fit_s = time.perf_counter() - t0
            if reuse and spec.reuse is not None and not learned and split.n_folds > 1:
                learned = spec.reuse(fitted)
            u = fitted.predict(own.X)
            unit = units.setdefault(i, _Unit())
            unit.add(fitted, u, own.pairs[train], own.pairs[test], fit_s)
            if not choices:
                continue
            values = u[own_sets.item]
            refit = partial(
                _refit_own, spec=spec, study=split.study, own=own, sets=own_sets,
                learned=dict(learned),
            )  # fmt: skip
            scale = _fold_scale(fitted, own_sets, values, train, own, refit)
            const = consts[f]
            unit.add_choices(
                _scored(
                    own_sets, values, np.flatnonzero(test[own_sets.pair]), scale,
                    _native(fitted, own.X, own_sets, None),
                    None if const is None else const(own.X[own_sets.item]),
                )
            )  # fmt: skip
        if progress is not None:
            progress(i + 1 - int(lo), int(hi) - int(lo))
    return pd.DataFrame(_rows(split, spec, units))


#: Per split (by id, dropped with it): each respondent's own data, built once for all the
#: models and left-out features scored on the split (:func:`_respondent_data`).
_OWN_DATA: dict[int, tuple[weakref.ref[Split], dict[Any, PreferenceData]]] = {}


def _respondent_data(split: Split, respondent: Any) -> PreferenceData:
    """``split.study.for_respondent(respondent)``, kept while ``split`` lives: a
    leave-one-out grid scores every per-respondent model once per left-out feature on the
    same respondents, and selecting a respondent's comparisons and items is most of a
    small fit's cost."""
    key = id(split)
    entry = _OWN_DATA.get(key)
    if entry is None or entry[0]() is not split:
        ref = weakref.ref(split, lambda _, k=key: _OWN_DATA.pop(k, None))
        entry = _OWN_DATA[key] = (ref, {})
    memo = entry[1]
    if respondent not in memo:
        memo[respondent] = split.study.for_respondent(respondent)
    return memo[respondent]


def _personal(fitted: Any, X: np.ndarray, pairs: np.ndarray, respondent: Any) -> np.ndarray:
    """A respondent's utilities of the items their ``pairs`` compare (``(n,)``, NaN at
    every other item): predicting all of a study's items for each of its respondents cost
    respondents x items (quadratic in the study's size)."""
    seen = np.unique(pairs)
    u = np.full(len(X), np.nan)
    if len(seen):
        u[seen] = fitted.predict(X[seen], respondent=respondent)
    return u


def _mask_key(mask: np.ndarray) -> str:
    """A short key of a boolean mask (the training comparisons of a fit)."""
    return hashlib.sha1(np.packbits(mask).tobytes() + str(len(mask)).encode()).hexdigest()


def score_models(
    split: Split,
    models: Sequence[str],
    *,
    drop_feature: str | None = None,
    progress: Callable[[float, int, str], None] | None = None,
    fits: MutableMapping[Any, Any] | None = None,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """:func:`score_model` of several models; the rows, and why each failed one failed.

    A model that does not apply or fails to fit is left out of the rows and named in the
    second value with one sentence (its exception's message). ``progress(done, total,
    name)`` counts models, ``done`` with the share of the current model's fits;
    ``fits`` is :func:`score_model`'s memo.
    """
    parts, errors = [], {}
    for k, name in enumerate(models):
        if progress is not None:
            progress(k, len(models), name)

        def within(done: int, total: int, k: int = k, name: str = name) -> None:
            if progress is not None:
                progress(k + done / max(1, total), len(models), name)

        try:
            parts.append(
                score_model(split, name, drop_feature=drop_feature, progress=within, fits=fits)
            )
        except NotApplicableError as exc:
            errors[name] = str(exc).split(": ", 1)[-1]
        except Exception as exc:  # a model that cannot fit these data says why, once
            errors[name] = f"{type(exc).__name__}: {exc}"
    if progress is not None:
        progress(len(models), len(models), "")
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return rows, errors


# ----------------------------------------------------------------------------- summaries
def _method_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def _mean_or_none(x: pd.Series) -> float | None:
    v = pd.to_numeric(x, errors="coerce").dropna()
    return float(v.mean()) if len(v) else None


def summarize(
    rows: pd.DataFrame, *, seed: int = 0, n_boot: int = 2000, reference: str | None = None
) -> dict[str, dict[str, Any]]:
    """Per model: train/test accuracy over units, CI, tree size, paired difference.

    Parameters
    ----------
    rows
        Rows of :func:`score_model` (one per unit x model).
    seed
        Seed of the bootstrap (each model's own stream, so its CI does not depend on which
        other models ran).
    n_boot
        Bootstrap resamples of units.
    reference
        The analysis plan's baseline (``AnalysisPlan.baseline``, ``mnl``): every model
        also gets its paired difference to it, ``paired_diff_vs_plan_baseline`` (``None``
        when it did not run or is not given).

    Returns
    -------
    dict
        ``{model: {"family", "n", "train_acc_mean", "train_acc_sd", "test_acc_mean",
        "test_acc_sd", "test_acc_se", "test_acc_median", "test_acc_ci95", "test_tie_share",
        "mean_leaves", "mean_depth", "paired_diff_vs_best_baseline": {"baseline", "n",
        "mean_diff", "ci95"}, "paired_diff_vs_plan_baseline": (the same)}}``; the paired
        differences are this model minus the baseline with the highest mean test accuracy
        (``None`` when no baseline ran) and minus ``reference``.
    """
    if rows.empty:
        return {}
    order = list(dict.fromkeys(rows["method"]))
    wide = rows.drop_duplicates(["respondent", "method"]).pivot(
        index="respondent", columns="method", values="test_acc"
    )
    out: dict[str, dict[str, Any]] = {}
    means: dict[str, float] = {}
    for name in order:
        g = rows[rows["method"] == name]
        tr = _summ(g["train_acc"].to_numpy(float), rng=_method_rng(seed, name), n_boot=1)
        te = _summ(g["test_acc"].to_numpy(float), rng=_method_rng(seed, name), n_boot=n_boot)
        means[name] = te.mean
        out[name] = {
            "family": str(g["family"].iloc[0]),
            "n": int(te.n),
            "train_acc_mean": tr.mean,
            "train_acc_sd": tr.sd,
            "test_acc_mean": te.mean,
            "test_acc_sd": te.sd,
            "test_acc_se": te.se,
            "test_acc_median": te.median,
            "test_acc_ci95": [te.ci95[0], te.ci95[1]],
            "test_tie_share": _mean_or_none(g["test_ties"]),
            "mean_leaves": _mean_or_none(g["leaves"]),
            "mean_depth": _mean_or_none(g["depth"]),
            "choices": _choice_summary(g, _method_rng(seed + 2, name), n_boot),
        }
    best = best_baseline_of(out)
    planned = reference if reference in out else None
    for name in order:
        for field, base in (("best_baseline", best), ("plan_baseline", planned)):
            if base is None:
                out[name][f"paired_diff_vs_{field}"] = None
                continue
            d = paired_difference(
                wide[name].to_numpy(float),
                wide[base].to_numpy(float),
                rng=_method_rng(seed + 1, name),
                n_boot=n_boot,
            )
            out[name][f"paired_diff_vs_{field}"] = {
                "baseline": base,
                "n": int(d.n),
                "mean_diff": d.mean_diff,
                "ci95": [d.ci[0], d.ci[1]],
            }
            choices = out[name]["choices"]
            if choices is not None and out[base]["choices"] is not None:
                choices[f"nll_diff_vs_{field}"] = _nll_difference(
                    rows, name, base, _method_rng(seed + 3, name), n_boot
                )
    return out


def _units_frame(g: pd.DataFrame) -> pd.DataFrame:
    """One model's rows with held-out choices, one per unit (respondent or situation)."""
    if "test_choices" not in g:
        return g.iloc[:0]
    return g[pd.to_numeric(g["test_choices"], errors="coerce").fillna(0) > 0]


def _choice_summary(
    g: pd.DataFrame, rng: np.random.Generator, n_boot: int
) -> dict[str, Any] | None:
    """The field's held-out metrics of one model (module doc of :mod:`pbo_core.metrics`,
    Eq. 1): NLL per choice and in total, top-1 accuracy and rho-squared against equal
    shares, each with its bootstrap CI over units, the scale used and the calibration
    table; ``None`` without held-out choice situations."""
    u = _units_frame(g)
    if u.empty:
        return None
    ll, n = u["test_ll"].to_numpy(float), u["test_choices"].to_numpy(float)
    ll0, top = u["test_ll0"].to_numpy(float), u["test_top1"].to_numpy(float)
    nll, nll_ci = ratio_ci(-ll, n, rng=rng, n_boot=n_boot)
    top1, top1_ci = ratio_ci(top, n, rng=rng, n_boot=n_boot)
    # rho-squared 1 - LL / LL0 = (LL - LL0) / -LL0: a ratio of two sums over units
    rho, rho_ci = ratio_ci(ll - ll0, -ll0, rng=rng, n_boot=n_boot)
    llc = u["test_llc"].to_numpy(float) if "test_llc" in u else ll0
    rhoc, rhoc_ci = ratio_ci(ll - llc, -llc, rng=rng, n_boot=n_boot)
    cal = np.zeros((CAL_BINS, 3))
    for c in u["calibration"]:
        if isinstance(c, (list, tuple, np.ndarray)) and len(c) == 3 * CAL_BINS:
            cal += np.asarray(c, dtype=float).reshape(CAL_BINS, 3)
    table = [
        {
            "low": b / CAL_BINS,
            "high": (b + 1) / CAL_BINS,
            "n": int(cal[b, 0]),
            "predicted": float(cal[b, 1] / cal[b, 0]),
            "observed": float(cal[b, 2] / cal[b, 0]),
        }
        for b in range(CAL_BINS)
        if cal[b, 0] > 0
    ]
    return {
        "n_choices": int(n.sum()),
        "n_units": len(u),
        "nll_per_choice": nll,
        "nll_per_choice_ci95": list(nll_ci),
        "ll_total": float(ll.sum()),
        "top1_acc": top1,
        "top1_acc_ci95": list(top1_ci),
        "rho2_equal_shares": rho,
        "rho2_equal_shares_ci95": list(rho_ci),
        "rho2_constants": rhoc,
        "rho2_constants_ci95": list(rhoc_ci),
        "scale": _mean_or_none(u["scale"]) if "scale" in u else None,
        "calibration": table,
    }


def _nll_difference(
    rows: pd.DataFrame, name: str, base: str, rng: np.random.Generator, n_boot: int
) -> dict[str, Any]:
    """Held-out NLL per choice of ``name`` minus ``base``'s (negative: ``name`` predicts
    the choices better), paired over the units both scored, with its bootstrap CI."""
    a = _units_frame(rows[rows["method"] == name]).set_index("respondent")
    b = _units_frame(rows[rows["method"] == base]).set_index("respondent")
    both = a.index.intersection(b.index)
    a, b = a.loc[both], b.loc[both]
    d, ci = ratio_ci(
        -a["test_ll"].to_numpy(float), a["test_choices"].to_numpy(float), rng=rng,
        n_boot=n_boot, num_b=-b["test_ll"].to_numpy(float),
        den_b=b["test_choices"].to_numpy(float),
    )  # fmt: skip
    return {"baseline": base, "n": len(both), "mean_diff": d, "ci95": list(ci)}


#: :func:`best_baseline_of` in words (the JSON outputs carry it beside the name).
BEST_BASELINE_RULE = (
    "the textbook baseline (a registry model with the reference role) with the highest mean "
    "held-out accuracy among those scored on the split (conjoint-accuracy's default "
    "baselines)"
)


def best_baseline_of(summary: dict[str, dict[str, Any]]) -> str | None:
    """The one rule that names the best baseline, for ``conjoint-accuracy``, ``sensitivity``,
    the report and the pages: the model of a :func:`summarize` result with the registry's
    ``reference`` role (a declared role, not its family: a new baseline is compared, not
    compared against, until its entry says so) with the highest mean held-out accuracy (on
    a tie the first in registry order, so the order the models were scored in does not
    matter); ``None`` when no such model was scored."""
    references = set(names(role="reference"))
    ok = [
        m
        for m, v in summary.items()
        if m in references and np.isfinite(v.get("test_acc_mean", np.nan))
    ]
    rank = {n: i for i, n in enumerate(names())}
    return (
        max(ok, key=lambda m: (summary[m]["test_acc_mean"], -rank.get(m, len(rank))))
        if ok
        else None
    )


def best_baseline(rows: pd.DataFrame, seed: int = 0) -> str | None:
    """The best baseline (:func:`best_baseline_of`) of the rows of :func:`score_model`."""
    rows = rows[rows["method"].isin(names(role="reference"))] if not rows.empty else rows
    if rows.empty:
        return None
    return best_baseline_of(summarize(rows, seed=seed, n_boot=1))


def format_table(summary: dict[str, dict[str, Any]]) -> str:
    """A summary as a fixed-width text table (printed on stderr by the commands)."""
    lines = [
        f"{'method':18s} {'n':>5s} {'train':>6s} {'test':>6s} {'95% CI':>15s} "
        f"{'median':>6s} {'leaves':>6s} {'diff vs best baseline [95% CI]':>34s}"
    ]
    for name, s in summary.items():
        lo, hi = s["test_acc_ci95"]
        leaves = "" if s["mean_leaves"] is None else f"{s['mean_leaves']:.1f}"
        d = s["paired_diff_vs_best_baseline"]
        diff = (
            ""
            if d is None
            else f"{d['mean_diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] {d['baseline']}"
        )
        lines.append(
            f"{name:18s} {s['n']:5d} {s['train_acc_mean']:6.3f} {s['test_acc_mean']:6.3f} "
            f"[{lo:.3f}, {hi:.3f}] {s['test_acc_median']:6.3f} {leaves:>6s} {diff:>34s}"
        )
    choices = {n: s.get("choices") for n, s in summary.items() if s.get("choices")}
    if choices:  # the field's metrics: per held-out choice situation
        lines.append("")
        lines.append(
            f"{'method':18s} {'choices':>7s} {'NLL/choice':>10s} {'95% CI':>15s} "
            f"{'top-1':>6s} {'95% CI':>15s} {'rho2':>6s} {'rho2c':>6s} "
            f"{'NLL diff vs best baseline [95% CI]':>36s}"
        )
        for name, c in choices.items():
            d = c.get("nll_diff_vs_best_baseline")
            diff = (
                ""
                if not d
                else f"{d['mean_diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] "
                f"{d['baseline']}"
            )
            lo, hi = c["nll_per_choice_ci95"]
            tlo, thi = c["top1_acc_ci95"]
            lines.append(
                f"{name:18s} {c['n_choices']:7d} {c['nll_per_choice']:10.3f} [{lo:.3f}, {hi:.3f}] "
                f"{c['top1_acc']:6.3f} [{tlo:.3f}, {thi:.3f}] {c['rho2_equal_shares']:6.3f} "
                f"{c.get('rho2_constants', float('nan')):6.3f} "
                f"{diff:>36s}"
            )
    return "\n".join(lines)


def evidence_table(
    summary: dict[str, dict[str, Any]], errors: dict[str, str] | None = None
) -> pd.DataFrame:
    """One row per model as pages show it: ``key``, ``method`` (its label), ``family``,
    ``train``, ``heldout``, ``ci_low``, ``ci_high``, ``n_heldout``, the field's held-out
    metrics ``nll`` (per choice), ``nll_low``, ``nll_high``, ``top1`` and ``n_choices``,
    and ``error`` (why it could not be scored, else ``""``)."""
    rows = []
    nan = float("nan")
    for key, s in summary.items():
        c = s.get("choices") or {}
        rows.append(
            {
                "key": key,
                "method": get(key).label,
                "family": s["family"],
                "train": s["train_acc_mean"],
                "heldout": s["test_acc_mean"],
                "ci_low": s["test_acc_ci95"][0],
                "ci_high": s["test_acc_ci95"][1],
                "n_heldout": s["n"],
                "nll": c.get("nll_per_choice", nan),
                "nll_low": (c.get("nll_per_choice_ci95") or [nan, nan])[0],
                "nll_high": (c.get("nll_per_choice_ci95") or [nan, nan])[1],
                "top1": c.get("top1_acc", nan),
                "n_choices": c.get("n_choices", 0),
                "error": "",
            }
        )
    for key, why in (errors or {}).items():
        spec = get(key)
        rows.append(
            {
                "key": key,
                "method": spec.label,
                "family": spec.family,
                "train": nan,
                "heldout": nan,
                "ci_low": nan,
                "ci_high": nan,
                "n_heldout": 0,
                "nll": nan,
                "nll_low": nan,
                "nll_high": nan,
                "top1": nan,
                "n_choices": 0,
                "error": why,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "key",
            "method",
            "family",
            "train",
            "heldout",
            "ci_low",
            "ci_high",
            "n_heldout",
            "nll",
            "nll_low",
            "nll_high",
            "top1",
            "n_choices",
            "error",
        ],
    )


def scorable(split: Split, models: Sequence[str]) -> list[str]:
    """The registry models among ``models`` (order kept, once each) that can be scored on
    ``split``: fitted models that apply to the study and to its kind of hold-out."""
    fit = set(names(fits=True))
    return [
        m
        for m in dict.fromkeys(models)
        if m in fit
        and not_applicable(get(m), split.study, new_respondents=split.new_respondents) is None
    ]


def compare(
    split: Split,
    models: Sequence[str],
    *,
    seed: int = 0,
    n_boot: int = 2000,
    progress: Callable[[float, int, str], None] | None = None,
    fits: MutableMapping[Any, Any] | None = None,
) -> tuple[pd.DataFrame, str | None]:
    """Held-out evidence of ``models`` on ``split`` and the best tree among them.

    Returns the :func:`evidence_table` (models that could not be scored carry their
    reason) and the tree model with the highest held-out mean (``None`` when no tree
    could be scored). ``progress`` and ``fits`` as :func:`score_models`.
    """
    rows, errors = score_models(split, models, progress=progress, fits=fits)
    table = evidence_table(summarize(rows, seed=seed, n_boot=n_boot), errors)
    trees = table[(table["family"] == "tree") & table["heldout"].notna()]
    best = str(trees.loc[trees["heldout"].idxmax(), "key"]) if len(trees) else None
    return table, best


#: Other respondents whose comparisons train a pooled model in :func:`shown_evidence`.
EVIDENCE_OTHERS = 29


def evidence_split(
    study: Study, respondent: Any = None, *, n_folds: int = 5, kind: str = "auto"
) -> Split:
    """5-fold cross-validation on the data a page shows: one respondent's choice tasks
    (the comparisons of the first :data:`EVIDENCE_OTHERS` other respondents train pooled
    models in every fold), or, for ``respondent=None``, ``kind`` (``"auto"``: the split
    the study's shape calls for, :func:`pbo_core.splits.auto_kind`)."""
    if respondent is not None and study.data.respondent is not None:
        return make_split(
            study, "tasks", n_folds=n_folds, respondents=[respondent], others=EVIDENCE_OTHERS
        )
    if kind == "auto":
        kind, _ = auto_kind(study)
    if kind in ("study", "pairs", "items"):
        kind = "pooled" if study.data.respondent is None else "tasks"
    return make_split(study, kind, n_folds=n_folds)


def shown_evidence(
    study: Study,
    respondent: Any = None,
    model: str = "dt",
    baselines: Sequence[str] = ("gp", "logit-pooled"),
    *,
    seed: int = 0,
    kind: str = "auto",
) -> tuple[pd.DataFrame, Split]:
    """Held-out evidence for the model a page shows, beside the GP and the textbook logit,
    on the data shown (:func:`evidence_split`); the table and the split."""
    split = evidence_split(study, respondent, kind=kind)
    models = [model, *[b for b in baselines if b != model]]
    table, _ = compare(split, models, seed=seed)
    return table, split


# ----------------------------------------------------------------------------- sensitivity
def _tag(rows: pd.DataFrame, feature: str | None) -> pd.DataFrame:
    return rows.assign(**{"feature removed": BASELINE_ROW if feature is None else feature})


def ablation_rows(
    split: Split,
    models: Sequence[str],
    features: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    chunk: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Rows of every model with all features and without each one (tagged ``feature
    removed``), in this process."""
    feats = list(features) if features is not None else split.study.schema.names
    jobs = [(m, f) for m in models for f in [None, *feats]]
    parts = []
    for k, (m, f) in enumerate(jobs):
        parts.append(_tag(score_model(split, m, drop_feature=f, chunk=chunk, choices=False), f))
        if progress is not None:
            progress(k + 1, len(jobs))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def summarize_sensitivity(rows: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Average per-unit tables; DT-PBO Table 10 layout sorted by the test change.

    ``rows`` stacks tables (each starting with its :data:`BASELINE_ROW`) with columns
    ``feature removed``, ``train acc (%)``, ``delta train (pp)``, ``test acc (%)``,
    ``delta test (pp)``. With several tables the test change gets a 95 % percentile
    bootstrap CI over them (``delta test CI low (pp)``, ``... high (pp)``) and ``within
    noise`` says whether that CI contains 0. One table: NaN CIs, ``within noise`` ``None``.
    ``min detectable (pp)`` is the change detected with 80 % power at the 5 % level,

    .. math::

        \\mathrm{MDC} = (z_{0.975} + z_{0.8}) \\, \frac{h}{z_{0.975}},            \\qquad (2)

    with ``h`` the CI's half-width; ``underpowered`` says that the CI contains 0 *and* the
    minimum detectable change exceeds :data:`DETECTABLE_CHANGE_PP`: such a row is no
    finding either way. A CI that excludes 0 is a finding however wide it is (never
    underpowered).
    """
    cols = ["train acc (%)", "delta train (pp)", "test acc (%)", "delta test (pp)"]
    avg = rows.groupby("feature removed", sort=False)[cols].mean().reset_index()
    n_tables = int((rows["feature removed"] == BASELINE_ROW).sum())
    lo, hi, noise = [], [], []
    for k, name in enumerate(avg["feature removed"]):
        d = rows.loc[rows["feature removed"] == name, "delta test (pp)"].to_numpy(float)
        d = d[np.isfinite(d)]
        if name == BASELINE_ROW or n_tables < 2 or len(d) < 2:
            lo.append(np.nan)
            hi.append(np.nan)
            noise.append(None)
            continue
        c_lo, c_hi = bootstrap_ci(d, rng=np.random.default_rng([seed, k]))
        lo.append(c_lo)
        hi.append(c_hi)
        noise.append(bool(c_lo <= 0.0 <= c_hi))
    avg["delta test CI low (pp)"] = lo
    avg["delta test CI high (pp)"] = hi
    avg["within noise"] = noise
    half = (np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float)) / 2
    mdc = min_detectable(half)
    avg["min detectable (pp)"] = mdc
    avg["underpowered"] = [
        None if not np.isfinite(m) else bool(z and m > DETECTABLE_CHANGE_PP)
        for m, z in zip(mdc, noise, strict=True)
    ]
    base = avg[avg["feature removed"] == BASELINE_ROW]
    body = avg[avg["feature removed"] != BASELINE_ROW].sort_values("delta test (pp)", kind="stable")
    return pd.concat([base, body], ignore_index=True)


def sensitivity_effect(table: pd.DataFrame) -> pd.Series:
    """What each row of a sensitivity table shows, in the words every chart uses:
    ``"accuracy drops"`` / ``"accuracy rises"`` (the CI excludes 0, however wide),
    ``"within noise (CI contains 0)"`` (and the sample could have detected
    :data:`DETECTABLE_CHANGE_PP`), ``"underpowered (cannot detect 5 pp)"`` (the CI
    contains 0 and the sample could not) or, without CIs, ``"accuracy drops"`` /
    ``"no drop (no CI: one split)"``."""
    d = table["delta test (pp)"].to_numpy(float)
    has_ci = "delta test CI low (pp)" in table and table["delta test CI low (pp)"].notna().any()
    if not has_ci:
        return pd.Series(
            np.where(d < 0, "accuracy drops", "no drop (no CI: one split)"), index=table.index
        )
    noisy = table["within noise"].fillna(True).astype(bool).to_numpy()
    weak = (
        table["underpowered"].fillna(False).astype(bool).to_numpy()
        if "underpowered" in table
        else np.zeros(len(table), dtype=bool)
    )
    out = np.where(d < 0, "accuracy drops", "accuracy rises").astype(object)
    out[noisy] = "within noise (CI contains 0)"
    out[weak & noisy] = f"underpowered (cannot detect {DETECTABLE_CHANGE_PP:g} pp)"
    return pd.Series(out, index=table.index)


def summarize_ablation(rows: pd.DataFrame, seed: int = 0) -> dict[str, pd.DataFrame]:
    """One Table 10 block per model: accuracies, the paired change and its 95 % CI.

    For unit ``r`` and feature ``f`` the change is paired on the same held-out
    comparisons, ``Delta_{r,f} = acc_r(without f) - acc_r(all)``. Returns ``{model:
    table}`` in the order the models appear in ``rows``; each table has the columns of
    :func:`summarize_sensitivity` plus ``method`` and ``respondents`` (units with a
    baseline test accuracy; 1 for a single-unit split, whose rows are its comparisons).
    """
    out: dict[str, pd.DataFrame] = {}
    if rows.empty:
        return out
    for name in dict.fromkeys(rows["method"]):
        g = rows[rows["method"] == name]
        base = g[g["feature removed"] == BASELINE_ROW].set_index("respondent")
        parts = []
        for feat, h in g.groupby("feature removed", sort=False):
            h = h.set_index("respondent")
            b = base.reindex(h.index)
            parts.append(
                pd.DataFrame(
                    {
                        "unit": h.index,
                        "feature removed": feat,
                        "train acc (%)": 100 * h["train_acc"].to_numpy(float),
                        "delta train (pp)": np.nan
                        if feat == BASELINE_ROW
                        else 100 * (h["train_acc"] - b["train_acc"]).to_numpy(float),
                        "test acc (%)": 100 * h["test_acc"].to_numpy(float),
                        "delta test (pp)": np.nan
                        if feat == BASELINE_ROW
                        else 100 * (h["test_acc"] - b["test_acc"]).to_numpy(float),
                    }
                )
            )
        stacked = pd.concat(parts, ignore_index=True)
        table = summarize_sensitivity(stacked.drop(columns="unit"), seed=seed)
        table.insert(0, "method", name)
        per_pair = base.index.astype(str).str.match(r"(test|train|situation)-\d+$").all()
        n_units = int(np.isfinite(base["test_acc"].to_numpy(float)).sum())
        table["respondents"] = 1 if per_pair and len(base) else n_units
        out[str(name)] = table
    return out


# ----------------------------------------------------------------------------- the plan's
def plan_split(
    study: Study, plan: AnalysisPlan | None = None, *, sensitivity: bool = False
) -> Split:
    """The held-out split of ``study``'s analysis plan (:func:`pbo_core.plan.plan_of`): its
    kind (``"auto"``: the data's shape decides), seed, held-out tasks and evaluation sample
    (``sensitivity``: the sensitivity sample, the first N of it). Every page, command and
    the report evaluate on this split, so a figure is one number everywhere."""
    plan = plan or plan_of(study)
    n = plan.respondents
    if sensitivity and plan.sensitivity_respondents is not None:
        n = plan.sensitivity_respondents if n is None else min(n, plan.sensitivity_respondents)
    kind = plan.split
    resolved = auto_kind(study)[0] if kind == "auto" else kind
    per_resp = study.data.respondent is not None and resolved in ("tasks", "respondents", "pairs")
    return make_split(
        study,
        kind,
        seed=plan.seed,
        test_tasks=plan.test_tasks if resolved == "tasks" else None,
        respondents=n if per_resp else None,
    )


def unit_word(split: Split) -> str:
    """What a split's held-out units are: ``"respondents"``, or ``"comparisons"`` for
    pooled data or a single respondent (their held-out comparisons are the units)."""
    if split.study.data.respondent is None or len(split.units) <= 1:
        return "comparisons"
    return "respondents"


def sample_text(split: Split) -> str:
    """The evaluation sample in words, with the study's size when it is a part: "the first
    2,000 of 4,654 respondents", "1,191 respondents", "2,929 comparisons"."""
    study = split.study
    if study.data.respondent is None or len(split.units) <= 1:
        return f"{int(split.test.sum()):,} held-out comparisons of the pooled data"
    total = len(study.respondents())
    n = len(split.units)
    if split.new_respondents:
        return f"{n:,} of {total:,} respondents (whole respondents held out)"
    return f"the first {n:,} of {total:,} respondents" if n < total else f"{n:,} respondents"


def plan_models(
    split: Split, role: str = "accuracy", plan: AnalysisPlan | None = None
) -> list[str]:
    """The default models of ``role`` on ``split`` (registry order), the plan's baseline
    always among them when it applies: the one rule every page and command uses."""
    plan = plan or plan_of(split.study)
    return scorable(split, [*names(role=role, fits=True), plan.baseline])


def plan_accuracy(
    study: Study,
    models: Sequence[str] | None = None,
    plan: AnalysisPlan | None = None,
    *,
    progress: Callable[[float, int, str], None] | None = None,
    fits: MutableMapping[Any, Any] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, str], Split]:
    """Held-out accuracy of ``models`` (default :func:`plan_models`) on the plan's split:
    :func:`summarize` with the plan's seed, why each model that could not be scored was
    left out, and the split. ``conjoint-accuracy``, the Tree explorer's evidence and the
    report print this summary."""
    plan = plan or plan_of(study)
    split = plan_split(study, plan)
    chosen = list(models) if models is not None else plan_models(split, "accuracy", plan)
    rows, errors = score_models(split, chosen, progress=progress, fits=fits)
    return summarize(rows, seed=plan.seed, reference=plan.baseline), errors, split


def plan_best_baseline(
    split: Split,
    plan: AnalysisPlan | None = None,
    *,
    progress: Callable[[float, int, str], None] | None = None,
) -> str | None:
    """The best baseline on ``split`` by ``conjoint-accuracy``'s rule
    (:func:`best_baseline_of`) among the baselines it scores by default
    (:func:`plan_models`), each fitted with every attribute."""
    plan = plan or plan_of(split.study)
    candidates = [m for m in plan_models(split, "accuracy", plan) if "reference" in get(m).roles]
    if not candidates:
        return None
    rows, _ = score_models(split, candidates, progress=progress)
    return best_baseline(rows, seed=plan.seed)


def plan_sensitivity_models(
    split: Split, plan: AnalysisPlan | None = None, best: str | None = None
) -> list[str]:
    """The models of the plan's leave-one-out sensitivity: the plan's own list, else the
    registry's ``sensitivity`` trees, ``best`` (the best baseline on the split,
    :func:`plan_best_baseline`) and the plan's baseline (the accuracy reference), those
    that can be scored on ``split``. The page, the command and the report use this rule."""
    plan = plan or plan_of(split.study)
    wanted = list(plan.sensitivity_models) or [
        *names(role="sensitivity", fits=True),
        *([best] if best else []),
        plan.baseline,
    ]
    return scorable(split, wanted)


def plan_sensitivity(
    study: Study,
    models: Sequence[str] | None = None,
    plan: AnalysisPlan | None = None,
    *,
    features: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, Any]], Split]:
    """Leave-one-out sensitivity on the plan's sensitivity sample: one Table 10 block per
    model (:func:`summarize_ablation`), the all-attributes accuracy (:func:`summarize`, the
    plan's seed: on the evaluation sample it is the accuracy figure) and the split."""
    plan = plan or plan_of(study)
    split = plan_split(study, plan, sensitivity=True)
    if models is not None:
        chosen = list(models)
    else:
        best = None if plan.sensitivity_models else plan_best_baseline(split, plan)
        chosen = plan_sensitivity_models(split, plan, best)
    rows = ablation_rows(split, chosen, features, progress=progress)
    if rows.empty:
        return {}, {}, split
    base = rows[rows["feature removed"] == BASELINE_ROW]
    return summarize_ablation(rows, seed=plan.seed), summarize(base, seed=plan.seed), split


def plan_evidence_models(
    split: Split, plan: AnalysisPlan | None = None, *, shown: str | None = None
) -> list[str]:
    """The models of the held-out evidence beside a tree: the registry's ``explorer``
    trees (and ``shown``, the tree a page draws) and ``choice_baseline`` baselines with
    the plan's baseline, those that can be scored on ``split``. The Tree explorer's
    comparison, its evidence tab and the report list these."""
    plan = plan or plan_of(split.study)
    wanted = [
        *([shown] if shown else []),
        *names(role="explorer", fits=True),
        plan.baseline,
        *names(role="choice_baseline", fits=True),
    ]
    return scorable(split, wanted)
