"""Analysis plans saved with a study: the analyst's edits of a study's plan, kept on disk.

A study's plan (:class:`pbo_core.plan.AnalysisPlan`) comes from its loader (the bundled
studies name their roles and alternatives) or from the import. An analyst who edits it
(``python -m data_loaders plan --study KEY --set time=ivt``) saves it as
``$DTPBO_DATA_HOME/plans/<key>.json``; every load of the study
(:func:`data_loaders.registry.load_study`) then carries it, so the pages, the commands and
the report read the same plan. :func:`plan_stamp` is part of the per-process caches'
keys, so a saved edit is read on the next load.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from data_loaders.access import data_home
from data_loaders.fields import MAX_TEXT_CHARS
from pbo_core.data import DataValidationError, Study
from pbo_core.evaluation import plan_split
from pbo_core.plan import AnalysisPlan, Role, check_plan, penalty_alpha, plan_of
from pbo_core.registry import MODELS, estimates_models, get, reports_estimates
from pbo_core.splits import SPLIT_KINDS

__all__ = [
    "MAX_COUNT",
    "MAX_SEED",
    "PLAN_KEYS",
    "apply_saved_plan",
    "edit_plan",
    "plan_changes",
    "plan_path",
    "plan_stamp",
    "plan_text",
    "remove_plan",
    "save_plan",
    "saved_plan",
]

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
#: Largest seed of a plan (numpy's legacy generators take seeds below 2**32).
MAX_SEED = 2**32 - 1
#: Largest count of a plan (held-out tasks, sample sizes): far above any study's.
MAX_COUNT = 10**9

#: What ``--set NAME=VALUE`` may change, with what a value means.
PLAN_KEYS = {
    "split": "auto, tasks, respondents, pooled, study, latest (each respondent's last tasks) "
    "or column:NAME (the split column given at import)",
    "seed": "an integer",
    "test_tasks": "held-out tasks per respondent (an integer)",
    "respondents": "the evaluation sample's first N respondents, or 'all'",
    "sensitivity_respondents": "the sensitivity sample's first N, or 'all' (the evaluation's)",
    "baseline": "the accuracy reference: every paired difference of held-out accuracy is "
    "against it; any fitted registry model (default mnl)",
    "estimates": "the model whose estimates (coefficients, fit statistics, trade-offs) every "
    "page, command and the report show; a registry model with fit statistics: "
    + ", ".join(estimates_models())
    + " (default mnl)",
    "penalty": "the conditional logit's ridge: none (maximum likelihood, the default; a "
    "penalty only when the MLE is not identified, and then said), cv (strength by inner "
    "cross-validation) or a strength (e.g. 0.1)",
    "sensitivity_models": "the sensitivity's models, comma-separated, or 'default' (the "
    "registry's sensitivity role)",
    "money": "the money attribute, or 'none'",
    "money_unit": "the money attribute's unit (e.g. CHF; default: the attribute's)",
    "time": "the travel-time attribute, or 'none'",
    "time_unit": "the travel-time attribute's unit (e.g. min; default: the attribute's)",
    "alternative": "the attribute naming the alternative, or 'none'",
    "reference": "its reference level, or 'none' (the first level)",
    "case_specific": "respondent features in the conditional logit, comma-separated, or 'none'",
}


def plan_path(key: str) -> Path:
    """``$DTPBO_DATA_HOME/plans/<key>.json`` (the key checked: never a path)."""
    if not _KEY.match(str(key)):
        raise ValueError(f"{key!r} is not a study key")
    return data_home() / "plans" / f"{key}.json"


def plan_stamp(key: str) -> tuple[int, int]:
    """``(mtime_ns, size)`` of the study's saved plan (``(0, 0)``: none), a cache key."""
    try:
        st = plan_path(key).stat()
    except (OSError, ValueError):
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


def saved_plan(key: str) -> AnalysisPlan | None:
    """The plan saved for ``key``, or ``None``."""
    try:
        text = plan_path(key).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    try:
        return AnalysisPlan.from_dict(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise DataValidationError(
            f"{plan_path(key).name}: the saved analysis plan cannot be read ({exc}); remove "
            f"it with: python -m data_loaders plan --study {key} --reset"
        ) from None


def apply_saved_plan(study: Study) -> Study:
    """``study`` with its saved plan, if one is saved (checked against the study)."""
    if not isinstance(study, Study):  # a loader stand-in (tests)
        return study
    plan = saved_plan(study.key)
    if plan is None:
        return study
    problems = check_plan(study, plan) + _split_problem(study, plan)
    if problems:
        raise DataValidationError(
            f"{plan_path(study.key).name}: " + "; ".join(problems) + " (edit it with "
            f"python -m data_loaders plan --study {study.key} --set ...)"
        )
    return replace(study, plan=plan)


def _split_problem(study: Study, plan: AnalysisPlan) -> list[str]:
    """Why the plan's split cannot be made on ``study`` (pooled comparisons of a study
    with respondents, the study's own split of a study without one), or nothing."""
    if plan.split == "auto":
        return []
    try:
        plan_split(study, plan)
    except ValueError as exc:
        text = str(exc)
        prefix = f"{study.key}: "
        text = text[len(prefix) :] if text.startswith(prefix) else text
        return [f"split {plan.split!r} cannot be made on this study ({text})"]
    return []


def save_plan(key: str, plan: AnalysisPlan) -> Path:
    """Save ``plan`` for ``key`` (atomically) and return the file."""
    path = plan_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(plan.to_dict(), indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return path


def remove_plan(key: str) -> bool:
    """Remove the saved plan of ``key``; ``True`` when there was one."""
    try:
        plan_path(key).unlink()
    except FileNotFoundError:
        return False
    return True


def _none(v: str) -> bool:
    return v.strip().lower() in ("", "none", "all")


def plan_text(plan: AnalysisPlan) -> dict[str, str]:
    """Every :data:`PLAN_KEYS` value of ``plan`` as ``--set NAME=VALUE`` would write it
    (the inverse of :func:`edit_plan`'s reading: ``edit_plan(study, plan_text(p))`` is
    ``p``, the roles' "how" aside)."""

    def many(v: tuple[str, ...], empty: str) -> str:
        return ",".join(v) if v else empty

    def count(n: int | None) -> str:
        return "all" if n is None else str(n)

    return {
        "split": plan.split,
        "seed": str(plan.seed),
        "test_tasks": str(plan.test_tasks),
        "respondents": count(plan.respondents),
        "sensitivity_respondents": count(plan.sensitivity_respondents),
        "baseline": plan.baseline,
        "estimates": plan.estimates,
        "penalty": plan.penalty,
        "sensitivity_models": many(plan.sensitivity_models, "default"),
        "money": plan.money.attribute if plan.money else "none",
        "money_unit": plan.money.unit if plan.money else "",
        "time": plan.time.attribute if plan.time else "none",
        "time_unit": plan.time.unit if plan.time else "",
        "alternative": plan.alternative or "none",
        "reference": plan.reference or "none",
        "case_specific": many(plan.case_specific, "none"),
    }


def plan_changes(plan: AnalysisPlan, wanted: dict[str, str]) -> dict[str, str]:
    """The entries of ``wanted`` (``{name: text}``) that differ from ``plan``'s
    (:func:`plan_text`): what ``--set`` needs to turn ``plan`` into ``wanted``. A unit is
    kept only beside a changed role or when it differs from the role's."""
    now = plan_text(plan)
    out = {k: v.strip() for k, v in wanted.items() if v.strip() != now.get(k)}
    for role in ("money", "time"):
        unit = f"{role}_unit"
        if role in out and unit not in out and wanted.get(unit, "").strip():
            out[unit] = wanted[unit].strip()  # the unit shown beside the new attribute
    return out


def edit_plan(study: Study, changes: dict[str, str]) -> AnalysisPlan:
    """``study``'s plan with ``changes`` (``{name: text}`` of :data:`PLAN_KEYS`) applied;
    the result is checked against the study (a clear error names what does not fit).

    The one reading of an edit, for ``python -m data_loaders plan --set`` and the
    dashboard's plan editor alike."""
    plan = plan_of(study)
    over: dict[str, Any] = {}
    units: dict[str, str] = {}
    for name, value in changes.items():
        if name not in PLAN_KEYS:
            raise DataValidationError(
                f"the analysis plan has no {name!r}; it has: {', '.join(PLAN_KEYS)}"
            )
        v = str(value).strip()
        if len(v) > MAX_TEXT_CHARS:
            raise DataValidationError(
                f"{name}: a text of {len(v):,} characters is longer than {MAX_TEXT_CHARS:,}, "
                "the limit (data_loaders.fields.MAX_TEXT_CHARS)"
            )
        if name in ("money", "time"):
            unit = study.schema[v].unit if not _none(v) and v in study.schema.names else ""
            over[name] = None if _none(v) else Role(v, unit, "chosen by the analyst")
        elif name in ("money_unit", "time_unit"):
            units[name[: -len("_unit")]] = v
        elif name in ("alternative", "reference"):
            over[name] = None if _none(v) else v
        elif name == "case_specific":
            over[name] = () if _none(v) else tuple(p.strip() for p in v.split(",") if p.strip())
        elif name == "sensitivity_models":
            over[name] = (
                ()
                if _none(v) or v.lower() == "default"
                else tuple(p.strip() for p in v.split(",") if p.strip())
            )
        elif name in ("respondents", "sensitivity_respondents"):
            over[name] = None if _none(v) else _int(name, v)
        elif name in ("seed", "test_tasks"):
            over[name] = _int(name, v)
        elif name == "split" and v.startswith("column:"):
            col = v.partition(":")[2].strip()
            if study.extras.get("split_column") != col:
                raise DataValidationError(
                    f"split {v!r}: {study.key} records no split column {col!r} (import it with "
                    "--split-col NAME)"
                )
            over[name] = "study"
        elif name == "split" and v not in ("auto", *SPLIT_KINDS):
            raise DataValidationError(
                f"split {v!r} is not a split; choose one of: {', '.join(('auto', *SPLIT_KINDS))}"
            )
        elif name == "penalty":
            try:
                alpha = penalty_alpha(v)
            except ValueError as exc:
                raise DataValidationError(str(exc)) from None
            over[name] = "none" if alpha == 0 else str(alpha if alpha == "cv" else f"{alpha:g}")
        else:
            over[name] = v
    for role, unit in units.items():
        current = over.get(role, getattr(plan, role))
        if current is None:
            if unit:
                raise DataValidationError(
                    f"{role}_unit needs a {role} attribute (the {role} role is none)"
                )
            continue
        over[role] = replace(current, unit=unit)
    new = replace(plan, **over, notes=())
    _check_models(new)
    problems = check_plan(study, new) + _split_problem(study, new)
    if problems:
        raise DataValidationError(f"{study.key}: " + "; ".join(problems))
    return new


def _check_models(plan: AnalysisPlan) -> None:
    """The plan's baseline and sensitivity models are fitted models of the registry; its
    estimates model reports estimates (:func:`pbo_core.registry.reports_estimates`)."""
    for label, name in [
        ("baseline", plan.baseline),
        ("estimates model", plan.estimates),
        *(("sensitivity model", m) for m in plan.sensitivity_models),
    ]:
        if name not in MODELS or not MODELS[name].fits:
            raise DataValidationError(f"{label} {name!r} is not a model of the registry")
    if not reports_estimates(plan.estimates):
        raise DataValidationError(
            f"the estimates model {plan.estimates!r} ({get(plan.estimates).label}) has no "
            "coefficient table with fit statistics; choose one of: " + ", ".join(estimates_models())
        )


def _int(name: str, v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        raise DataValidationError(f"{name} must be a whole number, got {v!r}") from None
    if n < 0 or (name in ("respondents", "sensitivity_respondents", "test_tasks") and n < 1):
        raise DataValidationError(f"{name} must be at least 1, got {n}")
    top = MAX_SEED if name == "seed" else MAX_COUNT
    if n > top:
        raise DataValidationError(f"{name} must be at most {top:,}, got {v[:24]}")
    return n
