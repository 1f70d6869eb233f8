"""``python -m pbo_core.experiments report``: a study's self-contained HTML report.

Loads the study as every other command does (a registry key through a
:class:`~pbo_core.experiments.studies.LoadStudy`, or an analyst's own file through a
:class:`~pbo_core.experiments.studies.LoadStudyFile`, the ``--data`` path of
``conjoint-accuracy``; :mod:`pbo_core.experiments.cli` passes
:mod:`data_loaders.cached`'s) and writes :func:`pbo_core.explain.report.build_report`.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pbo_core.data import Study
from pbo_core.experiments.studies import LoadStudy, LoadStudyFile
from pbo_core.experiments.tree_choice import compare_trees
from pbo_core.explain import labels
from pbo_core.explain.report import build_report, study_report
from pbo_core.plan import plan_of


def _study(
    args: argparse.Namespace, load_study: LoadStudy, load_study_file: LoadStudyFile
) -> Study:
    if getattr(args, "data", None):
        return load_study_file(str(args.data), args.attributes, args.columns)
    if not args.study:
        raise SystemExit("report needs --study KEY or --data PATH")
    return load_study(args.study, args.data_dir)


def pick_respondent(study: Study, wanted: str | None) -> Any:
    """The respondent whose id reads ``wanted`` (``None``: the report's default)."""
    if wanted is None or study.data.respondent is None:
        return None
    for r in study.respondents():
        if str(r) == str(wanted):
            return r
    first = ", ".join(map(str, study.respondents()[:5]))
    raise SystemExit(f"no respondent {wanted!r} in {study.key} (respondents: {first}, ...)")


def write_report(
    args: argparse.Namespace,
    argv: Sequence[str] | None = None,
    *,
    load_study: LoadStudy,
    load_study_file: LoadStudyFile,
) -> int:
    """Compute and write the report of ``args``; prints the file written.

    ``load_study`` loads ``--study``
    (:class:`~pbo_core.experiments.studies.LoadStudy`) and ``load_study_file`` an own
    ``--data`` file (:class:`~pbo_core.experiments.studies.LoadStudyFile`).
    """
    study = _study(args, load_study, load_study_file)
    money = getattr(args, "money_attribute", None)
    if money is not None and not getattr(args, "data", None):  # a registry study: name it
        if money and money not in labels.money_candidates(study.schema):
            raise SystemExit(
                f"--money-attribute {money!r} is not a numeric attribute of {study.key} "
                f"(numeric: {', '.join(labels.money_candidates(study.schema)) or 'none'})"
            )
        study = replace(study, plan=plan_of(study).with_roles(money=money or None))
    split = getattr(args, "split", "auto")
    if split != "auto":  # --split overrides the plan's
        study = replace(study, plan=replace(plan_of(study), split=split))
    words = list(sys.argv[1:] if argv is None else argv)
    command = "python -m pbo_core.experiments " + shlex.join(words)
    model = args.model
    if model is None:  # the Tree explorer's default: the most accurate tree held out
        model = compare_trees(study).best
        print(f"model: {model} (the most accurate tree held out)", file=sys.stderr)
    parts = study_report(
        study,
        pick_respondent(study, args.respondent),
        model=model,
        commands=[command],
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build_report(parts), encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB)", file=sys.stderr)
    return 0
