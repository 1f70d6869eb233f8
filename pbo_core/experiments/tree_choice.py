"""Which tree model is most accurate on a study: the held-out comparison behind a default.

The Tree explorer opens on the tree with the best held-out accuracy on the study. This
module computes that choice with the evaluation core (:func:`pbo_core.evaluation.compare`)
on the study's analysis plan: its split, seed and evaluation sample
(:func:`pbo_core.evaluation.plan_split`), the registry's ``explorer`` trees beside the
plan's baseline and the ``choice_baseline`` models
(:func:`pbo_core.evaluation.plan_evidence_models`). The figures are those
``conjoint-accuracy`` prints and the report shows.

:func:`fit_whole` fits a pooled winner on the whole study, so a caller can draw it;
:func:`respondent_evidence` scores the model a page shows on one respondent's data, with
the comparison's own folds and fits when the respondent is in its sample. They import no
user-interface code, take and return only picklable objects and report their progress,
so the dashboard runs them as jobs in worker processes (``dashboard._work``): CPU that
must not hold the web server's interpreter lock while pages are drawn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pbo_core.data import Study
from pbo_core.evaluation import (
    compare,
    evidence_split,
    plan_evidence_models,
    plan_split,
    sample_text,
)
from pbo_core.experiments.fingerprint import fits_memo as _fits
from pbo_core.experiments.fingerprint import study_fingerprint
from pbo_core.plan import AnalysisPlan, plan_of
from pbo_core.registry import get, make_for, not_applicable
from pbo_core.splits import Split

#: ``progress(fraction, step)``: how far a job is (0..1) and what it is doing.
Progress = Callable[[float, str], None]

__all__ = [
    "CHOICE_RESPONDENTS",
    "TreeChoice",
    "applicable",
    "choice_split",
    "choose_and_fit",
    "compare_trees",
    "fit_whole",
    "respondent_evidence",
    "study_fingerprint",
]

#: Respondents the comparison uses: ``None``, the analysis plan's evaluation sample (a
#: number overrides it, a smaller sample for tests).
CHOICE_RESPONDENTS: int | None = None


@dataclass(frozen=True)
class TreeChoice:
    """Held-out accuracy of the tree models (and baselines) on a study; the winner.

    ``table`` is :func:`pbo_core.evaluation.evidence_table`: one row per model, ``key``
    (registry name), ``method`` (its label), ``family``, ``train``, ``heldout``,
    ``ci_low``, ``ci_high``, ``n_heldout``, ``error``. ``split`` says how comparisons were
    held out (one sentence).
    """

    best: str
    table: pd.DataFrame
    n_respondents: int
    n_comparisons: int
    split: str = ""
    #: Respondents and comparisons of the whole study (the sample's size is shown beside).
    study_respondents: int = 0
    study_comparisons: int = 0
    #: The evaluation sample in words (:func:`pbo_core.evaluation.sample_text`).
    sample_words: str = ""
    #: The analysis plan in one line (:meth:`pbo_core.plan.AnalysisPlan.line`).
    plan: str = ""

    def sample(self) -> str:
        """The sample the comparison ran on, with the study's size when it is a part:
        "the first 2,000 of 4,654 respondents (12,345 held-out comparisons)"."""
        return f"{self.sample_words} ({self.n_comparisons:,} held-out comparisons)"

    def reason(self, key: str | None = None) -> str:
        """Why ``key`` (default ``best``) is the default, in one sentence with its figures."""
        key = self.best if key is None else key
        row = self.table.set_index("key").loc[key]
        who = self.sample()
        among = "tree model" if key == self.best else "study-level tree model"
        return (
            f"Default: {row['method']}, the {among} with the best held-out accuracy on "
            f"this study, {100 * row['heldout']:.1f}% (95% CI {100 * row['ci_low']:.1f}–"
            f"{100 * row['ci_high']:.1f}), on {who}; {self.split}. See the Held-out "
            "evidence tab."
        )

    def best_among(self, keys: Sequence[str]) -> str | None:
        """The one of ``keys`` with the best held-out mean in :attr:`table` (``None``: none
        of them was scored). The Tree explorer opens on the best of the pooled trees: the
        study-level model, drawn with the population's leaves and slopes."""
        rows = self.table[self.table["key"].isin(list(keys)) & self.table["heldout"].notna()]
        if rows.empty:
            return None
        return str(rows.loc[rows["heldout"].idxmax(), "key"])

    def scored(self, key: str) -> bool:
        """Was ``key`` scored (a held-out figure, not a reason)?"""
        rows = self.table[self.table["key"] == key]
        return bool(len(rows)) and bool(rows["heldout"].notna().iloc[0])

    def figure(self, key: str) -> str:
        """``"86.4% [85.2–87.6]"``: ``key``'s held-out accuracy and its 95 % CI."""
        row = self.table.set_index("key").loc[key]
        return f"{100 * row['heldout']:.1f}% [{100 * row['ci_low']:.1f}–{100 * row['ci_high']:.1f}]"

    def evidence_line(self, key: str, baseline: str | None = None) -> str:
        """The held-out evidence in one line: ``key``'s accuracy beside ``baseline``'s
        (the plan's, the conditional logit), each with its 95 % CI, and the sample:
        "Held-out accuracy: Linear-leaf tree 86.4% [85.2–87.6] · Conditional logit
        (MNL) 85.9% [84.6–87.1] · on all 1,191 respondents (4,390 held-out comparisons)".
        A model that was not scored is named with its reason."""
        by = self.table.set_index("key")
        parts = []
        for k in dict.fromkeys(k for k in (key, baseline) if k is not None):
            if k not in by.index:
                continue
            label = by.loc[k, "method"]
            if self.scored(k):
                parts.append(f"{label} {self.figure(k)}")
            else:
                parts.append(f"{label}: not scored ({by.loc[k, 'error']})")
        return "Held-out accuracy: " + " · ".join([*parts, f"on {self.sample()}"])


def applicable(study: Study, keys: Sequence[str]) -> list[str]:
    """The registry names among ``keys`` that can be fitted on ``study`` (order kept)."""
    return [m for m in keys if not_applicable(get(m), study) is None]


def _plan(study: Study, n_respondents: int | None) -> AnalysisPlan:
    plan = plan_of(study)
    if n_respondents is None:
        return plan
    n = n_respondents if plan.respondents is None else min(plan.respondents, n_respondents)
    return dataclasses.replace(plan, respondents=n)


def choice_split(study: Study, n_respondents: int | None = CHOICE_RESPONDENTS) -> Split:
    """The analysis plan's split (:func:`pbo_core.evaluation.plan_split`); a number
    ``n_respondents`` makes its sample the first N respondents of the plan's."""
    return plan_split(study, _plan(study, n_respondents))


def _models_progress(progress: Progress | None, lo: float = 0.0, hi: float = 1.0) -> Any:
    """:func:`pbo_core.evaluation.compare`'s progress as ``progress(fraction, step)``."""
    if progress is None:
        return None

    def report(done: float, total: int, name: str) -> None:
        what = f"cross-validating {get(name).label}" if name else "summarising"
        progress(lo + (hi - lo) * done / max(1, total), what)

    return report


def compare_trees(
    study: Study,
    trees: Sequence[str] | None = None,
    baselines: Sequence[str] | None = None,
    n_respondents: int | None = CHOICE_RESPONDENTS,
    *,
    progress: Progress | None = None,
) -> TreeChoice:
    """Held-out accuracy (the plan's split, :func:`choice_split`) of ``trees`` and
    ``baselines``.

    Parameters
    ----------
    study
        The study.
    trees
        Tree models (registry names; default the ``explorer`` role); those that do not
        apply to the study are skipped. The winner is the tree with the best held-out
        mean.
    baselines
        Baselines scored beside them (default the plan's baseline and the
        ``choice_baseline`` role); those with personal utilities are skipped when the
        split has a single unit.
    n_respondents
        ``None``: the plan's evaluation sample; a number: its first N respondents.
    progress
        ``progress(fraction, step)`` as the models' folds are fitted.
    """
    plan = _plan(study, n_respondents)
    split = plan_split(study, plan)
    default = plan_evidence_models(split, plan)
    trees = list(trees) if trees is not None else [m for m in default if get(m).tree]
    base = list(baselines) if baselines is not None else [m for m in default if not get(m).tree]
    if len(split.units) <= 1:
        base = [b for b in base if not get(b).respondent_predict]
    models = [*applicable(study, trees), *[b for b in base if b not in trees]]
    table, best = compare(
        split, models, seed=plan.seed, progress=_models_progress(progress), fits=_fits(study)
    )
    n_resp = 0 if study.data.respondent is None else len(split.units)
    if best is None:
        best = "dt"
    total = 0 if study.data.respondent is None else len(study.respondents())
    return TreeChoice(
        best,
        table,
        n_resp,
        int(split.test.sum()),
        split.reason,
        total,
        int(study.data.n_pairs),
        sample_text(split),
        plan.line(),
    )


def fit_whole(study: Study, method: str, *, progress: Progress | None = None) -> Any:
    """Registry model ``method`` fitted on every comparison of ``study`` (a pooled tree the
    Tree explorer draws with each respondent's posterior)."""
    if progress is not None:
        n = study.data.n_pairs
        progress(0.0, f"fitting {get(method).label} on all {n:,} comparisons")
    return make_for(method, study).fit(study.data)


def choose_and_fit(
    study: Study,
    trees: Sequence[str] | None = None,
    baselines: Sequence[str] | None = None,
    n_respondents: int | None = CHOICE_RESPONDENTS,
) -> tuple[TreeChoice, Any]:
    """:func:`compare_trees`, then the winner fitted on the whole study.

    Returns ``(choice, model)``; ``model`` is ``None`` when the winner is fitted per
    respondent (the paper's DT: by the caller, in milliseconds).
    """
    choice = compare_trees(study, trees, baselines, n_respondents)
    spec = get(choice.best)
    if spec.scope == "respondent":
        return choice, None
    return choice, fit_whole(study, choice.best)


def evidence_split_for(
    study: Study, respondent: Any, n_respondents: int | None = CHOICE_RESPONDENTS
) -> Split:
    """The folds of one respondent's evidence: when the respondent is in the study-level
    comparison's sample (:func:`choice_split`), that split tested on them alone (the same
    folds and training comparisons, so the same pooled fits); otherwise
    :func:`pbo_core.evaluation.evidence_split` (the first other respondents train)."""
    if respondent is not None and study.data.respondent is not None:
        cs = choice_split(study, n_respondents)
        if cs.kind == "tasks":
            hit = [i for i, r in enumerate(cs.units) if str(r) == str(respondent)]
            if hit:
                i = hit[0]
                n = len(cs.units)
                return dataclasses.replace(
                    cs,
                    units=cs.units[i : i + 1],
                    rows=[cs.rows[i]],
                    reason=(
                        f"this respondent's held-out choice tasks of the study-level "
                        f"comparison; the pooled models also learn from the other {n - 1:,} "
                        "respondents of its sample, the same hold-out and fits"
                    ),
                )
    return evidence_split(study, respondent)


def respondent_evidence(
    study: Study,
    respondent: Any,
    model: str,
    n_respondents: int | None = CHOICE_RESPONDENTS,
    *,
    progress: Progress | None = None,
) -> tuple[pd.DataFrame, str]:
    """Held-out evidence of ``model`` beside the plan's evidence models
    (:func:`pbo_core.evaluation.plan_evidence_models`) on one respondent's data
    (:func:`evidence_split_for`; pooled fits of the study-level comparison are reused);
    the :func:`pbo_core.evaluation.evidence_table` and how the comparisons were held out."""
    plan = _plan(study, n_respondents)
    split = evidence_split_for(study, respondent, n_respondents)
    models = plan_evidence_models(split, plan, shown=model)
    table, _ = compare(
        split, models, seed=plan.seed, progress=_models_progress(progress), fits=_fits(study)
    )
    return table, split.reason
