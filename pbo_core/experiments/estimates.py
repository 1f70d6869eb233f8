"""``python -m pbo_core.experiments estimates``: the econometrician's table of a study.

Fits the analysis plan's estimates model (``--model`` overrides it; ``--penalty`` the
plan's penalty) on every choice of ``--study KEY`` (or an own ``--data`` file) and prints
the Biogeme-style table of :mod:`pbo_core.explain.estimates`: per parameter the estimate,
classical, robust (one score per choice) and cluster-robust (by respondent) standard
errors with their t and p; LL(0), LL(beta), rho², rho-bar², AIC, BIC, choices,
respondents, parameters, the penalty and why; the trade-offs. ``--json FILE`` writes the
same table with the plan, ``--csv``, ``--latex`` and ``--html`` the same numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from pbo_core.data import Study
from pbo_core.experiments.runner import write_json
from pbo_core.experiments.studies import LoadStudy, LoadStudyFile
from pbo_core.explain.estimates import (
    estimates_csv,
    estimates_html,
    estimates_json,
    estimates_latex,
    estimates_text,
    fit_estimates,
)
from pbo_core.plan import penalty_alpha, plan_of

__all__ = ["write_estimates"]


def _study(
    args: argparse.Namespace, load_study: LoadStudy, load_study_file: LoadStudyFile
) -> Study:
    if getattr(args, "data", None):
        return load_study_file(str(args.data), args.attributes, args.columns)
    if not args.study:
        raise SystemExit("estimates needs --study KEY or --data PATH")
    return load_study(args.study, args.data_dir)


def _write(path: str, text: str) -> None:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


def write_estimates(
    args: argparse.Namespace, *, load_study: LoadStudy, load_study_file: LoadStudyFile
) -> int:
    """Fit, print and write the estimates of ``args`` (see the module doc); ``load_study``
    and ``load_study_file`` load ``--study`` and ``--data``."""
    study = _study(args, load_study, load_study_file)
    plan = plan_of(study)
    if args.penalty is not None:
        penalty_alpha(args.penalty)  # a clear error for a bad value
        plan = dataclasses.replace(plan, penalty=args.penalty.strip().lower())
    if args.model is not None:
        plan = dataclasses.replace(plan, estimates=args.model)
    est = fit_estimates(study, plan=plan)
    to_stdout = args.json != "-"
    if not (args.quiet and not to_stdout):  # --json - --quiet: the JSON alone
        print(estimates_text(est), file=sys.stdout if to_stdout else sys.stderr, flush=True)
    doc: dict[str, Any] = {"command": "estimates", **estimates_json(est)}
    write_json(doc, args.json)
    if args.json not in (None, "-"):
        print(f"wrote {args.json}", file=sys.stderr)
    for flag, export in (
        ("csv", estimates_csv),
        ("latex", estimates_latex),
        ("html", lambda e: estimates_html(e, standalone=True)),
    ):
        target = getattr(args, flag)
        if target:
            _write(target, export(est))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's flags (beside ``--data`` and the column flags the CLI adds)."""
    p.add_argument("--study", default=None, help="registry key (or --data)")
    p.add_argument(
        "--model",
        default=None,
        help="the model to estimate (default: the analysis plan's estimates model, mnl); "
        "a registry model with fit statistics",
    )
    p.add_argument(
        "--penalty",
        default=None,
        help="the conditional logit's ridge: none (maximum likelihood), cv (by inner "
        "cross-validation) or a strength (default: the analysis plan's, none)",
    )
    p.add_argument("--json", default=None, metavar="FILE|-", help="write the table as JSON")
    p.add_argument("--csv", default=None, metavar="FILE", help="write the table as CSV")
    p.add_argument("--latex", default=None, metavar="FILE", help="write the table as LaTeX")
    p.add_argument("--html", default=None, metavar="FILE", help="write the table as HTML")
    p.add_argument("--data-dir", default=None, help="where the study's data are (if not bundled)")
    p.add_argument(
        "--quiet", action="store_true", help="with --json -: no table on stderr, the JSON alone"
    )
