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
from pbo_core.data import DataValidationError, Study
from pbo_core.plan import AnalysisPlan, Role, check_plan, plan_of

__all__ = [
    "PLAN_KEYS",
    "apply_saved_plan",
    "edit_plan",
    "plan_path",
    "plan_stamp",
    "remove_plan",
    "save_plan",
    "saved_plan",
]

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

#: What ``--set NAME=VALUE`` may change, with what a value means.
PLAN_KEYS = {
    "split": "auto, tasks, respondents, pooled or study",
    "seed": "an integer",
    "test_tasks": "held-out tasks per respondent (an integer)",
    "respondents": "the evaluation sample's first N respondents, or 'all'",
    "sensitivity_respondents": "the sensitivity sample's first N, or 'all' (the evaluation's)",
    "baseline": "a registry model name (default mnl)",
    "money": "the money attribute, or 'none'",
    "time": "the travel-time attribute, or 'none'",
    "alternative": "the attribute naming the alternative, or 'none'",
    "reference": "its reference level, or 'none' (the first level)",
    "case_specific": "respondent features in the baseline, comma-separated, or 'none'",
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
    problems = check_plan(study, plan)
    if problems:
        raise DataValidationError(
            f"{plan_path(study.key).name}: " + "; ".join(problems) + " (edit it with "
            f"python -m data_loaders plan --study {study.key} --set ...)"
        )
    return replace(study, plan=plan)


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


def edit_plan(study: Study, changes: dict[str, str]) -> AnalysisPlan:
    """``study``'s plan with ``changes`` (``{name: text}`` of :data:`PLAN_KEYS`) applied;
    the result is checked against the study (a clear error names what does not fit)."""
    plan = plan_of(study)
    over: dict[str, Any] = {}
    for name, value in changes.items():
        if name not in PLAN_KEYS:
            raise DataValidationError(
                f"the analysis plan has no {name!r}; it has: {', '.join(PLAN_KEYS)}"
            )
        v = value.strip()
        if name in ("money", "time"):
            unit = study.schema[v].unit if not _none(v) and v in study.schema.names else ""
            over[name] = None if _none(v) else Role(v, unit, "chosen by the analyst")
        elif name in ("alternative", "reference"):
            over[name] = None if _none(v) else v
        elif name == "case_specific":
            over[name] = () if _none(v) else tuple(p.strip() for p in v.split(",") if p.strip())
        elif name in ("respondents", "sensitivity_respondents"):
            over[name] = None if _none(v) else _int(name, v)
        elif name in ("seed", "test_tasks"):
            over[name] = _int(name, v)
        else:
            over[name] = v
    new = replace(plan, **over, notes=())
    problems = check_plan(study, new)
    if problems:
        raise DataValidationError(f"{study.key}: " + "; ".join(problems))
    return new


def _int(name: str, v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        raise DataValidationError(f"{name} must be a whole number, got {v!r}") from None
    if n < 0 or (name in ("respondents", "sensitivity_respondents", "test_tasks") and n < 1):
        raise DataValidationError(f"{name} must be at least 1, got {n}")
    return n
