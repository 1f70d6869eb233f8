"""Case-study experiments: ``python -m pbo_core.experiments <command> ...``.

The command line of the case-study modules (:mod:`~pbo_core.experiments.sushi`,
:mod:`~pbo_core.experiments.accuracy`, :mod:`~pbo_core.experiments.sensitivity`,
:mod:`~pbo_core.experiments.cohorts`, :mod:`~pbo_core.experiments.rho_regret`,
:mod:`~pbo_core.experiments.report`). This module is an app: it alone in
:mod:`pbo_core` imports :mod:`data_loaders` (an exception of the layers contract in
``.importlinter``) and binds its loaders -- :func:`data_loaders.cached.load_study_cached`,
:func:`data_loaders.cached.load_study_file`, :func:`data_loaders.pmr.inbox_urgency` -- to
the case-study functions, which take them as arguments.

Commands
--------
``sushi-pbo``
    Per user of Sushi set A, find the favourite from pairwise queries: DT with qEUBO and
    the top-leaf rule cascading to the best unresolved leaf (``dt``), the top-leaf rule
    alone (``dt-toponly``), DT with random pairs (``dt-random``), DT without the top-leaf
    rule (``dt-notop``), GP with EUBO (``gp``). Rho-regret and top-1 rank error per question
    (DT-PBO Fig. 3 and 7), and the share of users whose favourite is ranked first (no item
    strictly above it) after 9 questions. The first question is a random pair.
``sushi-generalization``
    Per user a random 80/20 split of the 45 comparisons of set A (36 train, 9 test): the
    test comparisons are pairs the model has not seen (their sushi appear in other training
    pairs), the default (``--split pairs``). Train/test accuracy of the trees, the GP and
    the baselines (paper Table 1). ``--split items`` is the harder item hold-out: 2 of the
    10 sushi are held out and the test pairs are the 17 comparisons that involve them.
``conjoint-accuracy``
    Per respondent a random task hold-out (BELA 2 of 18 tasks, Presidential 3, train 2,
    electricity 2): trees, GP and the textbook baselines (paper Table 12). Also on an
    analyst's own file (``--data PATH --format long|wide --attributes TABLE.json``) and
    with whole respondents held out (``--split respondents``: 20 %, pooled methods only).
``straddler-ablation``
    Discard straddlers (depth unrestricted, ``dt``) vs keep them (max depth 4,
    ``dt-keep``): accuracy and tree size (paper Table 2), beside the baselines.
``sensitivity``
    Leave-one-out feature sensitivity (Table 10 layout) for any study: one block per
    ``--methods`` model (any accuracy method; default the paper DT, ``dt-linear`` and the
    baseline most accurate on the split), each change paired per respondent with a 95 %
    CI, and every ablated model's accuracy with all features on the same split.
``report``
    One self-contained HTML file for a study (``--study KEY`` or ``--data``): summary, the
    tree of ``--respondent`` (default the first) as SVG with every leaf's items, held-out
    evidence with baselines and CIs, leave-one-out sensitivity, versions
    (:mod:`~pbo_core.explain.report`; the dashboard's "Download report").
``estimates``
    The econometrician's table of the analysis plan's estimates model (the conditional
    logit ``mnl``; ``--model`` another with fit statistics) fitted on every choice of
    ``--study`` (or ``--data``): per parameter the estimate, classical, robust (Biogeme's
    sandwich per choice) and cluster-robust (by respondent) errors with t and p; LL(0),
    LL(beta), rho², rho-bar², AIC, BIC, choices, respondents, parameters, the penalty and
    why (maximum likelihood unless ``--penalty`` or the plan asks, or the MLE is not
    identified); the trade-offs. ``--json FILE`` writes it with the plan; ``--csv``,
    ``--latex``, ``--html`` the same numbers (:mod:`~pbo_core.experiments.estimates`).
``pmr-llm-vs-tree``
    Alias of ``python -m feature_extraction pmr-llm-vs-tree`` (same flags and output):
    PMR test pairs (inbox B): ask an OpenAI-compatible endpoint which message is more
    urgent, and compare with a tree trained on inbox A's LLM-extracted features (Table
    1's PMR row; :mod:`feature_extraction.pmr_llm`).
``hierarchy``
    Users of Sushi set A or B in cohorts of ``--refit-every`` (default 50): each user is
    elicited with a plain DT and with the user/item hierarchy refitted on all earlier
    users (:mod:`pbo_core.hierarchy`); regret per question per cohort (App. G.1, Fig. 17).
    ``--study swissmetro`` (bundled): respondents arrive in a seeded order in cohorts of
    ``--refit-every`` (200); each new respondent's 2 held-out tasks are predicted after
    0, 1, ... of their own tasks by a plain DT, the warm start from all earlier
    respondents pooled, the warm start from their user-tree group (user tree on the
    three modes, item trees on the group's pooled profile comparisons), and the linear
    item models of :mod:`pbo_core.segments`: the pooled logit and the covariate-interaction
    logit (baselines), the Eq. 15 user tree and the parameter-instability user tree with
    segment logits; mean held-out accuracy per number of tasks with a 95 % CI, paired
    differences, the cold-start verdict and the last cohort's segments (value of time).
``published-swissmetro``
    The segmentation-trees paper's SwissMetro protocol (all purposes, ``CHOICE > 0``; 10
    random 75/12.5/12.5 splits of the choice rows, validation for pruning and tuning only)
    and the same with whole respondents held out: held-out negative log-likelihood per
    choice and top-1 accuracy of ``mnl`` and ``mnl-tree`` (the published MNL's utility, and
    with the plan's respondent features) and of any pooled ``--methods`` model, with their
    95 % intervals over the splits and the published figures beside them
    (:mod:`~pbo_core.experiments.published`).
``rho-regret``
    rho-regret (top 3, App. G.1) per question, DT variants vs GP vs random pairs:
    ``--study pmr-demo`` triages an inbox of the demo against its true urgency model;
    ``train``, ``electricity``, ``swissmetro`` simulate respondents whose true utility is
    the per-respondent logit fitted on the real study (items: ``--items`` of its
    alternatives); ``sushi-a`` is the ``sushi-pbo`` case. Mean, s.e. and 95 % CI.

The accuracy commands take ``--methods`` (names of
:data:`pbo_core.registry.MODELS` with an estimator; default every tree variant, the GP
and every baseline that applies to the study) and report per method the train/test
accuracy over respondents (mean, sd, median, 95 % bootstrap CI), the mean leaves of its
trees and the paired difference to the best baseline with its CI.

Every command computes independent cells (users, respondents, methods) through
:func:`pbo_core.experiments.runner.run_grid`: ``--jobs`` parallelises, ``--out DIR`` stores one
Parquet file per cell so an interrupted run resumes, ``--json PATH|-`` prints a summary.
Accuracies count a predicted tie as one half.
"""

from __future__ import annotations

import argparse
import dataclasses
import runpy
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from data_loaders.cached import load_study_cached, load_study_file
from data_loaders.pmr import inbox_urgency
from data_loaders.swissmetro import load_swissmetro
from data_loaders.user_studies import add_column_args, column_map
from pbo_core import __version__
from pbo_core.data import DataValidationError, Study
from pbo_core.evaluation import (
    BASELINE_ROW,
    BEST_BASELINE_RULE,
    best_baseline,
    best_baseline_of,
    format_table,
    plan_models,
    plan_sensitivity_models,
    summarize,
    summarize_ablation,
    summary_caution,
    unit_word,
)
from pbo_core.experiments import estimates as estimates_cmd
from pbo_core.experiments.accuracy import (
    accuracy_cell,
    accuracy_cells,
    cell_split,
    load_cell_study,
    note,
    parse_methods,
)
from pbo_core.experiments.cohorts import (
    SUSHI_VARIANTS,
    cohort_cell,
    cohort_cell_grid,
    cohort_size,
    cohort_study,
    estimate_text,
    hierarchy_cell,
    segment_report,
    summarize_cohorts,
    summarize_hierarchy,
    sushi_cold_start,
)
from pbo_core.experiments.published import (
    PROTOCOLS,
    UTILITIES,
    format_published,
    method_rows,
    published_cell,
    published_cells,
    summarize_published,
    why_not,
)
from pbo_core.experiments.report import write_report
from pbo_core.experiments.rho_regret import (
    PRIORS,
    RHO_STUDIES,
    rho_cells,
    rho_regret_cell,
    summarize_rho_regret,
)
from pbo_core.experiments.runner import Cell, progress_printer, run_grid, write_json
from pbo_core.experiments.sensitivity import ablation_cells
from pbo_core.experiments.sushi import summarize_sushi_pbo, sushi_pbo_cell
from pbo_core.explain.baseline import baseline_fit
from pbo_core.plan import AnalysisPlan, plan_of
from pbo_core.registry import get, names, not_applicable
from pbo_core.splits import SPLIT_KINDS, Split


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=1, help="parallel workers (-1 = all cores)")
    p.add_argument("--out", default=None, help="folder for per-cell Parquet results (resumable)")
    p.add_argument("--fresh", action="store_true", help="recompute cells already in --out")
    p.add_argument("--seed", type=int, default=0, help="seed of splits and runs")
    p.add_argument("--json", default=None, metavar="PATH|-", help="write the JSON summary")
    p.add_argument("--data-dir", default=None, help="where the study's data are (if not bundled)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _methods_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--methods",
        default=None,
        help="comma-separated accuracy methods (default: every tree variant, the GP and "
        "the baselines that apply to the study and split): " + ", ".join(names(fits=True)),
    )


def _own_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=None, help="an analyst's own choice data (CSV)")
    add_column_args(p)


def _split_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--split",
        choices=("auto", *SPLIT_KINDS[:5]),
        default="auto",
        help="auto (default): what the data's shape calls for -- tasks: hold out "
        "--test-tasks tasks of every respondent; respondents: hold out 20 %% of whole "
        "respondents (when the median respondent has fewer than 3 tasks; pooled models "
        "only); pooled: 20 %% of the tasks of data without respondents; study: the study's "
        "own train/test split. The JSON and the table say which split ran and why.",
    )


def _source(args: argparse.Namespace, cell: dict[str, Any]) -> str:
    """Put the study of ``--study`` / ``--data`` into ``cell``; its label."""
    if getattr(args, "data", None):
        cell.update(
            data=str(args.data),
            attributes=str(args.attributes) if args.attributes else None,
            columns=column_map(args).to_json(),
        )
        return str(args.data)
    if args.study:
        cell["study"] = args.study
        return str(args.study)
    raise SystemExit(f"{args.command} needs --study KEY or --data PATH")


def _task_cell(args: argparse.Namespace, base: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The split keys of ``conjoint-accuracy`` / ``straddler-ablation`` / ``sensitivity``:
    the study's analysis plan (:func:`pbo_core.plan.plan_of`: split, seed, held-out tasks,
    evaluation sample), each overridden by its flag when given."""
    cell: dict[str, Any] = dict(base, experiment=args.command)
    label = _source(args, cell)
    plan = _plan(args, cell)
    n = args.respondents if args.respondents is not None else plan.respondents
    cap = plan.sensitivity_respondents
    if args.command == "sensitivity" and args.respondents is None and cap is not None:
        n = cap if n is None else min(n, cap)
    cell.update(split=plan.split, test_tasks=plan.test_tasks, respondents=n)
    return {k: v for k, v in cell.items() if v is not None}, label


def _cell_study(cell: dict[str, Any]) -> Study:
    return load_cell_study(cell, load_study_cached, load_study_file)


def _plan(args: argparse.Namespace, cell: dict[str, Any]) -> AnalysisPlan:
    """The study's analysis plan with the command's flags applied (what the JSON carries)."""
    plan = plan_of(_cell_study(cell))
    over: dict[str, Any] = {"seed": args.seed}
    if getattr(args, "split", "auto") != "auto":
        over["split"] = args.split
    if getattr(args, "test_tasks", None) is not None:
        over["test_tasks"] = args.test_tasks
    if getattr(args, "respondents", None) is not None:
        over["respondents"] = args.respondents
    return dataclasses.replace(plan, **over)


def _say_split(split: Split, quiet: bool) -> dict[str, Any]:
    note(f"split: {split.kind} -- {split.reason}", quiet)
    return {"split": split.kind, "split_reason": split.reason, "units": len(split.units)}


def _accuracy(args: argparse.Namespace, base: dict[str, Any], progress: Any) -> dict[str, Any]:
    """Run one accuracy experiment; the JSON document."""
    cmd = args.command
    if cmd == "sushi-generalization":
        cell: dict[str, Any] = dict(base, experiment=cmd, study="sushi-a")
        cell.update(split=args.split, users=args.users, holdout=args.holdout)
        label = "sushi-a"
    else:
        cell, label = _task_cell(args, base)
    split = cell_split(cell, load_study=load_study_cached, load_study_file=load_study_file)
    about = _say_split(split, args.quiet)
    methods, skipped = parse_methods(args.methods, split, cmd)
    if skipped:
        note(f"skipped models: {'; '.join(f'{m}: {w}' for m, w in skipped.items())}", args.quiet)
    if not methods:
        raise SystemExit(f"no model can be scored on this split ({split.reason})")
    rows = run_grid(
        accuracy_cells(cell, methods, split),
        partial(accuracy_cell, load_study=load_study_cached, load_study_file=load_study_file),
        out_dir=args.out,
        jobs=args.jobs,
        fresh=args.fresh,
        progress=progress,
    )
    plan = _plan(args, cell) if cmd != "sushi-generalization" else None
    summary = summarize(rows, seed=args.seed, reference=plan.baseline if plan else None)
    if not summary:
        raise SystemExit(f"no held-out comparisons on this split ({split.reason})")
    caution = summary_caution(summary, unit_word(split))
    if not args.quiet:
        print(format_table(summary), file=sys.stderr)
        if caution:
            print(caution, file=sys.stderr)
    return {
        "command": cmd,
        "study": label,
        **about,
        "seed": args.seed,
        "plan": plan.to_dict() if plan else None,
        "methods": methods,
        "skipped": skipped,
        "summary": summary,
        "best_baseline": best_baseline_of(summary),
        "best_baseline_rule": BEST_BASELINE_RULE,
        "caution": caution,
        "baseline_fit": _baseline_fit(split.study) if cmd == "conjoint-accuracy" else None,
    }


def _published(args: argparse.Namespace, base: dict[str, Any], progress: Any) -> dict[str, Any]:
    """``published-swissmetro``: the cells, the table (stdout; stderr with ``--json -``)
    and the JSON document."""
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    bad = [p for p in protocols if p not in PROTOCOLS]
    if bad or not protocols:
        raise SystemExit(f"unknown protocols {bad}; choose from {list(PROTOCOLS)}")
    if args.splits < 1:
        raise SystemExit("--splits must be at least 1")
    study = load_swissmetro()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    rows = method_rows(methods, [u.strip() for u in args.utilities.split(",") if u.strip()])
    skipped = {
        m: w for m in dict.fromkeys(m for m, _ in rows) if (w := why_not(m, study, protocols))
    }
    rows = [r for r in rows if r[0] not in skipped]
    for m, why in skipped.items():
        note(f"skipped {m}: {why}", args.quiet)
    if not rows:
        raise SystemExit("no model to score: " + "; ".join(f"{m}: {w}" for m, w in skipped.items()))
    cell = dict(
        base,
        experiment=args.command,
        max_depth=args.max_depth,
        min_segment=args.min_segment,
        prune_rule=args.prune_rule,
        **({"respondents": args.respondents} if args.respondents is not None else {}),
    )
    t0 = time.perf_counter()
    results = run_grid(
        published_cells(cell, rows, protocols, args.splits),
        partial(published_cell, load_swissmetro=load_swissmetro),
        out_dir=args.out,
        jobs=args.jobs,
        fresh=args.fresh,
        progress=progress,
    )
    seconds = time.perf_counter() - t0
    summary = summarize_published(results)
    table = format_published(summary, skipped)
    if not args.quiet or args.json != "-":
        out = sys.stderr if args.json == "-" else sys.stdout
        print(f"{table}\n({seconds:.0f} s)", file=out)
    return {
        "command": args.command,
        "study": "swissmetro (bundled; all trip purposes, CHOICE > 0)",
        "protocols": protocols,
        "splits": args.splits,
        "seed": args.seed,
        "respondents": args.respondents,
        "max_depth": args.max_depth,
        "min_segment": args.min_segment,
        "prune_rule": args.prune_rule,
        "utilities": {u: UTILITIES[u] for u in dict.fromkeys(u for _, u in rows) if u in UTILITIES},
        "skipped": skipped,
        "summary": summary,
        "cells": results.to_dict(orient="records"),
        "seconds": seconds,
    }


def _baseline_fit(study: Study) -> dict[str, Any] | None:
    """The plan's estimates model (never its accuracy reference, ``baseline``) on every
    choice: parameters, fit statistics with the penalty and why, trade-offs, value of time
    (the JSON key keeps its name; ``model`` names the estimates model)."""
    try:
        table, stats = baseline_fit(study)
    except (ValueError, KeyError) as exc:
        return {"error": str(exc)}
    return {**stats, "coefficients": table.to_dict(orient="records")}


def _sensitivity(args: argparse.Namespace, base: dict[str, Any], progress: Any) -> dict[str, Any]:
    """Leave-one-out blocks of every ``--methods`` model on one split; the JSON summary.

    Without ``--methods``: the registry's ``sensitivity`` models that apply here, the
    baseline with the best test accuracy on this split by ``conjoint-accuracy``'s rule
    (:func:`pbo_core.evaluation.best_baseline_of`; every baseline that command scores is
    scored first, with every attribute) and the plan's baseline.
    """
    cell, label = _task_cell(args, base)
    loaders = {"load_study": load_study_cached, "load_study_file": load_study_file}
    split = cell_split(cell, **loaders)
    about = _say_split(split, args.quiet)
    plan = _plan(args, cell)

    def run(cells: list[dict[str, Any]]) -> pd.DataFrame:
        if not cells:
            return pd.DataFrame()
        return run_grid(
            cells,
            partial(accuracy_cell, **loaders),
            out_dir=args.out,
            jobs=args.jobs,
            fresh=args.fresh,
            progress=progress,
        )

    # without --methods: every baseline conjoint-accuracy scores by default, with all
    # attributes, so the best is named by its rule on the same candidates
    candidates = (
        [m for m in plan_models(split, "accuracy", plan) if "reference" in get(m).roles]
        if args.methods is None
        else []
    )
    scored = run(ablation_cells(cell, candidates, split, []))
    best = best_baseline(scored, seed=args.seed) if not scored.empty else None
    chosen_by = "--methods"
    if args.methods is None:
        methods = plan_sensitivity_models(split, plan, best)
        chosen_by = "the analysis plan: " + ", ".join(methods)
        if not methods and plan.sensitivity_models:
            why = "; ".join(
                f"{m}: {not_applicable(get(m), split.study, new_respondents=split.new_respondents)}"
                for m in plan.sensitivity_models
            )
            raise SystemExit(
                f"the plan's sensitivity models cannot be scored on this split ({split.reason}): "
                f"{why}; change sensitivity_models in the plan"
            )
    else:
        methods, _ = parse_methods(args.methods, split, "sensitivity")
    if not methods:
        raise SystemExit(f"no model can be scored on this split ({split.reason})")
    features = split.study.schema.names
    done = set(candidates)
    cells = [
        c
        for c in ablation_cells(cell, methods, split, features)
        if not (c.get("drop_feature") is None and c["method"] in done)
    ]
    rows = pd.concat(
        [scored[scored["method"].isin(methods)] if not scored.empty else scored, run(cells)],
        ignore_index=True,
    )
    rows = rows.iloc[
        np.argsort(rows["method"].map({m: i for i, m in enumerate(methods)}), kind="stable")
    ].reset_index(drop=True)
    blocks = summarize_ablation(rows, seed=args.seed)
    every = rows[rows["feature removed"] == BASELINE_ROW]
    others = scored[~scored["method"].isin(methods)] if not scored.empty else scored
    accuracy = summarize(
        pd.concat([every, others], ignore_index=True), seed=args.seed, reference=plan.baseline
    )
    caution = summary_caution(
        accuracy, "respondents" if split.study.data.respondent is not None else "comparisons"
    )
    if not args.quiet:
        for name, table in blocks.items():
            print(f"\n{name}", file=sys.stderr)
            body = table.drop(columns=["method"])
            print(body.to_string(index=False, float_format=lambda v: f"{v:.1f}"), file=sys.stderr)
        print(format_table(accuracy), file=sys.stderr)
        if caution:
            print(caution, file=sys.stderr)
    records = {m: t.to_dict(orient="records") for m, t in blocks.items()}
    return {
        "study": label,
        **about,
        "plan": plan.to_dict(),
        "test_tasks": cell.get("test_tasks"),
        "methods": methods,
        "methods_chosen_by": chosen_by,
        "best_baseline": best_baseline_of(accuracy),
        "best_baseline_rule": BEST_BASELINE_RULE,
        "features": features,
        "tables": records,
        "table": records[methods[0]] if methods and methods[0] in records else [],
        "baseline_accuracy": accuracy,
        "caution": caution,
    }


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(
        prog="python -m pbo_core.experiments",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sushi-pbo", help="find each user's favourite sushi (Fig. 3/7)")
    s.add_argument("--users", type=int, default=500, help="first N users (max 5000)")
    s.add_argument("--iters", type=int, default=20, help="queries after the first question")
    s.add_argument("--methods", default=",".join(names(role="sushi_pbo")))
    _common(s)
    s = sub.add_parser(
        "sushi-generalization",
        help="held-out pair accuracy per user (Table 1; --split items: item hold-out)",
    )
    s.add_argument("--users", type=int, default=500)
    _methods_arg(s)
    s.add_argument(
        "--split",
        choices=("pairs", "items"),
        default="pairs",
        help="pairs: random 80/20 split of each user's 45 comparisons (default); "
        "items: hold out --holdout sushi and test on the pairs involving them",
    )
    s.add_argument("--holdout", type=int, default=2, help="unseen sushi per user (of 10)")
    _common(s)
    s = sub.add_parser("hierarchy", help="user/item tree hierarchy cohorts (Fig. 17)")
    s.add_argument(
        "--study",
        default="sushi",
        help="sushi (set --dataset; regret per question), or any study with respondent "
        "features: swissmetro (bundled) or an imported study's my-... key (held-out "
        "accuracy of new respondents after 0, 1, ... of their own tasks; respondents with "
        "too few tasks to keep some count at 0 own tasks, the cold start)",
    )
    s.add_argument("--dataset", choices=("A", "B", "a", "b"), default="A", help="Sushi set")
    s.add_argument(
        "--users", type=int, default=None, help="first N users (sushi 900, swissmetro all)"
    )
    s.add_argument(
        "--refit-every",
        type=int,
        default=None,
        help="users per cohort (sushi 50, swissmetro 200)",
    )
    s.add_argument("--iters", type=int, default=20, help="sushi: queries after the first")
    s.add_argument(
        "--dask-scheduler",
        default=None,
        help="run the cells on this Dask scheduler (tcp://host:8786; pip install -e '.[dask]')",
    )
    s.add_argument("--max-depth", type=int, default=5, help="depth of user and item trees")
    s.add_argument(
        "--min-users", type=int, default=20, help="swissmetro: min. respondents per group"
    )
    s.add_argument(
        "--test-tasks", type=int, default=2, help="swissmetro: held-out tasks per respondent"
    )
    s.add_argument(
        "--money-attribute",
        default=None,
        help="the attribute the segments' value of time divides by (default: the analysis "
        "plan's money attribute: swissmetro cost)",
    )
    _common(s)
    s = sub.add_parser(
        "published-swissmetro",
        help="the segmentation-trees paper's SwissMetro protocol: held-out NLL per choice "
        "and top-1 accuracy beside the published figures",
    )
    s.add_argument("--splits", type=int, default=10, help="random splits per protocol (10)")
    s.add_argument(
        "--protocols",
        default=",".join(PROTOCOLS),
        help="rows (the paper's: choice rows held out), respondents (whole respondents "
        "held out); default both",
    )
    s.add_argument(
        "--methods",
        default="mnl,mnl-tree",
        help="registry models (default mnl,mnl-tree); a model without its own choice "
        "probabilities is scored by the logit of its utilities with a scale fitted on the "
        "validation part; a per-respondent model is skipped with the reason",
    )
    s.add_argument(
        "--utilities",
        default=",".join(UTILITIES),
        help="utilities of mnl and mnl-tree: published (constants, time, cost, headway), "
        "features (plus the plan's respondent features); default both",
    )
    s.add_argument("--max-depth", type=int, default=7, help="mnl-tree's depth cap (7)")
    s.add_argument(
        "--min-segment", type=int, default=5, help="mnl-tree's fewest respondents per segment"
    )
    s.add_argument(
        "--prune-rule",
        choices=("max", "1.5se", "1se", "2se"),
        default="max",
        help="mnl-tree's pruning on the validation part: max (default: the best validation "
        "log-likelihood), 1.5se / 1se / 2se (the smallest tree within that many standard "
        "errors)",
    )
    s.add_argument("--respondents", type=int, default=None, help="a seeded sample of N respondents")
    _common(s)
    s = sub.add_parser("rho-regret", help="rho-regret per question on bundled data (App. G.1)")
    s.add_argument("--study", choices=RHO_STUDIES, required=True)
    s.add_argument(
        "--methods", default=",".join(names(role="rho_regret")), help="registry method names"
    )
    s.add_argument(
        "--units",
        type=int,
        default=None,
        help="pmr-demo: inboxes (1-2, default 2); others: first N respondents (default 50)",
    )
    s.add_argument("--seeds", type=int, default=None, help="runs per unit (pmr-demo 20, others 1)")
    s.add_argument("--iters", type=int, default=20, help="queries after the first question")
    s.add_argument(
        "--items", type=int, default=30, help="simulated studies: alternatives per respondent"
    )
    s.add_argument("--noise", type=float, default=0.0, help="probit noise r (App. F.6)")
    s.add_argument(
        "--prior",
        choices=PRIORS,
        default="pooled",
        help="simulated studies, dt-linear / linear-eubo: start from the pooled fit of the "
        "respondents not simulated (pooled, default) or from the base prior (none)",
    )
    _common(s)
    for name, helptext in (
        ("conjoint-accuracy", "trees, GP and baselines on held-out tasks (Table 12)"),
        ("straddler-ablation", "discard vs keep straddlers (Table 2)"),
        ("sensitivity", "leave-one-out feature sensitivity (Table 10)"),
    ):
        s = sub.add_parser(name, help=helptext)
        s.add_argument(
            "--study",
            default=None,
            help="registry key: train, electricity, bela, presidential, pmr-demo, an "
            "imported study's my-... key (or --data)",
        )
        _methods_arg(s)
        _own_data_args(s)
        _split_arg(s)
        s.add_argument(
            "--test-tasks",
            type=int,
            default=None,
            help="held-out tasks per respondent (default: the study's analysis plan, 2; "
            "presidential 3)",
        )
        s.add_argument("--respondents", type=int, default=None, help="first N respondents")
        _common(s)
    s = sub.add_parser(
        "report", help="one self-contained HTML report of a study (tree, evidence, sensitivity)"
    )
    s.add_argument("--study", default=None, help="registry key (or --data)")
    s.add_argument("--respondent", default=None, help="whose tree (default: the first)")
    s.add_argument(
        "--model",
        default=None,
        help="the tree to draw, a registry name (default: the most accurate tree held out, "
        "as the Tree explorer opens on): " + ", ".join(names(role="explorer")),
    )
    s.add_argument("--out", required=True, help="HTML file to write")
    s.add_argument("--data-dir", default=None, help="where the study's data are (if not bundled)")
    _own_data_args(s)
    _split_arg(s)
    s = sub.add_parser(
        "estimates",
        help="the Biogeme-style table of the plan's estimates model (conditional logit) "
        "on every choice",
    )
    estimates_cmd.add_arguments(s)
    _own_data_args(s)
    # The alias takes every word after it unparsed (prefix_chars="+": "--model" is a
    # word, not an option here) and hands them to the new command, which parses them.
    s = sub.add_parser(
        "pmr-llm-vs-tree",
        help="pure-LLM pairwise urgency vs LLM features + DT (Table 1, PMR row); alias of "
        "python -m feature_extraction pmr-llm-vs-tree (same flags)",
        add_help=False,
        prefix_chars="+",
    )
    s.add_argument("words", nargs="*", help="the flags of the new command")
    return p


#: Where ``pmr-llm-vs-tree`` lives now (it needs :mod:`feature_extraction`, a higher layer).
PMR_LLM_MODULE = "feature_extraction"


def pmr_llm_alias(words: Sequence[str]) -> int:
    """``pmr-llm-vs-tree WORDS``: run ``python -m feature_extraction pmr-llm-vs-tree WORDS``.

    A hand-off at process level, not an import: :mod:`pbo_core` must not import
    :mod:`feature_extraction` (the layers contract of ``.importlinter``), so the
    command's module is run as ``__main__`` with :func:`runpy.run_module` and
    ``sys.argv`` set, as the shell would run it; flags, output and exit status are the
    new command's. An integer exit status is returned; an error message
    (``SystemExit("error: ...")``) propagates as it did before the move.
    """
    saved = sys.argv
    sys.argv = [f"python -m {PMR_LLM_MODULE}", "pmr-llm-vs-tree", *words]
    try:
        runpy.run_module(PMR_LLM_MODULE, run_name="__main__", alter_sys=False)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return int(stop.code or 0)
        raise
    finally:
        sys.argv = saved
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: a result, or one line saying why not (exit status 2), never a traceback
    for bad input or a study that cannot be loaded."""
    args = build_parser().parse_args(argv)
    try:
        return _run(args, argv)
    except (DataValidationError, OSError, ValueError, KeyError, LookupError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {msg}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """Run the parsed command."""
    if args.command == "pmr-llm-vs-tree":
        return pmr_llm_alias(args.words)
    if args.command == "report":
        args.columns = column_map(args).to_json()
        return write_report(
            args, argv, load_study=load_study_cached, load_study_file=load_study_file
        )
    if args.command == "estimates":
        args.columns = column_map(args).to_json()
        return estimates_cmd.write_estimates(
            args, load_study=load_study_cached, load_study_file=load_study_file
        )
    progress = progress_printer(args.quiet, "cells")

    base = {"version": __version__, "seed": args.seed}
    if args.data_dir:
        base["data_dir"] = args.data_dir
    cmd = args.command
    fn: Callable[[Cell], pd.DataFrame]
    if cmd == "sushi-pbo":
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        bad = [m for m in methods if m not in names(pbo=True)]
        if bad:
            raise SystemExit(f"unknown methods {bad}; choose from {names(pbo=True)}")
        cells = [
            dict(base, user=u, method=m, iters=args.iters, n_init=1)
            for u in range(args.users)
            for m in methods
        ]
        fn = partial(sushi_pbo_cell, load_study=load_study_cached)
    elif cmd == "rho-regret":
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        bad = [m for m in methods if m not in names(pbo=True)]
        if bad:
            raise SystemExit(f"unknown methods {bad}; choose from {names(pbo=True)}")
        pmr = args.study == "pmr-demo"
        cells = rho_cells(
            args.study,
            methods,
            units=args.units if args.units is not None else (2 if pmr else 50),
            seeds=args.seeds if args.seeds is not None else (20 if pmr else 1),
            iters=args.iters,
            n_items=args.items,
            noise_r=args.noise,
            prior=args.prior,
            base=base,
        )
        fn = partial(rho_regret_cell, load_study=load_study_cached, inbox_urgency=inbox_urgency)
    elif cmd == "hierarchy" and args.study != "sushi":
        cstudy = cohort_study(args.study, args.data_dir, load_study=load_study_cached)
        n = len(cstudy.respondents())
        n = min(n, args.users) if args.users is not None else n
        k = cohort_size(n, args.refit_every)
        cells = cohort_cell_grid(
            n,
            k,
            study=args.study,
            base=base,
            max_depth=args.max_depth,
            min_users=args.min_users,
            test_tasks=args.test_tasks,
        )
        if not args.quiet:  # before a long run: how long it will take
            print(estimate_text(cells, cstudy), file=sys.stderr, flush=True)
        fn = partial(cohort_cell, load_study=load_study_cached)
    elif cmd == "hierarchy":
        k = args.refit_every or 50
        args.users = args.users if args.users is not None else 900
        cells = [
            dict(
                base,
                dataset=args.dataset.upper(),
                user=u,
                cohort=u // k,
                refit_every=k,
                iters=args.iters,
                max_depth=args.max_depth,
                variant=v,
            )
            for u in range(args.users)
            for v in SUSHI_VARIANTS
        ]
        fn = partial(hierarchy_cell, load_study=load_study_cached)
    elif cmd == "published-swissmetro":
        write_json(_published(args, base, progress), args.json)
        return 0
    elif cmd in ("sushi-generalization", "conjoint-accuracy", "straddler-ablation"):
        write_json(_accuracy(args, base, progress), args.json)
        return 0
    else:  # sensitivity
        write_json({"command": cmd, "summary": _sensitivity(args, base, progress)}, args.json)
        return 0
    rows = run_grid(
        cells,
        fn,
        out_dir=args.out,
        jobs=args.jobs,
        dask_scheduler=getattr(args, "dask_scheduler", None),
        fresh=args.fresh,
        progress=progress,
    )
    if cmd == "sushi-pbo":
        summary: Any = summarize_sushi_pbo(rows)
    elif cmd == "rho-regret":
        summary = {"study": args.study, **summarize_rho_regret(rows)}
    elif cmd == "hierarchy" and args.study != "sushi":
        summary = {"study": args.study, **summarize_cohorts(rows)}
        # the study-level answer beside the segments': the plan's conditional logit on
        # every choice (the same value of time as conjoint-accuracy's and the report's)
        fit = _baseline_fit(load_study_cached(args.study))
        summary["study_value_of_time"] = (fit or {}).get("value_of_time")
        last = int(rows["cohort"].max()) * k
        if last > 0:  # the segments and strengths of the last cohort's linear models
            summary["last_cohort"] = segment_report(
                args.study,
                last,
                args.seed,
                args.max_depth,
                args.min_users,
                args.data_dir,
                load_study=load_study_cached,
                money=args.money_attribute,
            )
    else:
        summary = summarize_hierarchy(rows)
        # the user-covariate Bradley-Terry models beside the hierarchy (cold start)
        summary["cold_start_baselines"] = sushi_cold_start(
            args.dataset,
            args.users,
            args.seed,
            args.data_dir,
            args.max_depth,
            load_study=load_study_cached,
        )
    write_json({"command": cmd, "summary": summary}, args.json)
    return 0
