"""Command line: ``python -m feature_extraction {extract,stats,score,propose,pmr-llm-vs-tree}``.

This module is an app: it alone in :mod:`feature_extraction` imports :mod:`data_loaders`
(an exception of the layers contract in ``.importlinter``); it loads the studies and
hands them to the other modules (``pmr-llm-vs-tree``: :mod:`feature_extraction.pmr_llm`).

Examples
--------
Extract the Table 9 features of the demo inbox with a local llama.cpp server::

    python -m feature_extraction extract --study pmr-demo \\
        --base-url http://127.0.0.1:8080/v1 --model smollm2 --out results/demo_features.csv

Running-time statistics (DT-PBO Table 4 style) of everything in the cache::

    python -m feature_extraction stats

Pure-LLM pairwise urgency vs a tree on LLM-extracted features (Table 1's PMR row)::

    python -m feature_extraction pmr-llm-vs-tree --study pmr-demo \\
        --base-url http://127.0.0.1:8080/v1 --model smollm2 --json -

The API key is read from ``DTPBO_LLM_API_KEY`` or ``OPENAI_API_KEY`` (never from the
command line, so it does not end up in shell history or process lists).

Exit status of ``extract``: 0 when every message has a spec-valid row; 2 when a request
failed for some message (status ``error``; a rerun re-asks them); 3 when no request
failed but some answers stayed invalid (status ``invalid``; rerun with
``--retry-failed``). A ``summary:`` line on stderr gives the counts and the exit status.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from data_loaders import pmr
from feature_extraction import pmr_llm
from feature_extraction.cache import ExtractionCache, default_cache_path, format_stats
from feature_extraction.client import (
    ENV_VARS,
    LLMConfig,
    RedactingFilter,
    add_endpoint_arguments,
    config_from_args,
)
from feature_extraction.evaluate import score_against_truth
from feature_extraction.extract import extract_features, load_table, records_to_jsonl, save_table
from feature_extraction.propose import FeatureProposer, save_records
from feature_extraction.spec import PROMPT_VERSION, default_spec_path, load_spec, table9_spec
from pbo_core.data import Study

STUDIES = ("pmr-demo", "pmr")

#: Exit status of ``extract``: all ok / some request failed / some answer invalid.
EXIT_OK, EXIT_ERROR, EXIT_INVALID = 0, 2, 3


def _study_items(study: str, pmr_dir: str | None) -> tuple[pd.DataFrame, object]:
    s = pmr.load_pmr_demo() if study == "pmr-demo" else pmr.load_pmr_synth(pmr_dir)
    return pmr.pmr_texts(s), s


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    ap = argparse.ArgumentParser(
        prog="python -m feature_extraction",
        description="LLM feature extraction for patient message ranking (OpenAI-compatible "
        "servers: vLLM, llama.cpp server, OpenAI).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples\n--------\n", 1)[1],
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="log progress and retries")
    sub = ap.add_subparsers(dest="command", required=True)

    cache_help = f"SQLite cache file (default {default_cache_path()}; env DTPBO_LLM_CACHE)"

    ex = sub.add_parser(
        "extract",
        help="extract spec features from the messages of a study",
        description="Extract the spec's features from every message of a study. Results are "
        "cached as they arrive; a rerun only asks for what is missing.",
        epilog=f"exit status: {EXIT_OK} every message ok; {EXIT_ERROR} a request failed for "
        f"some message (rerun to re-ask); {EXIT_INVALID} no request failed but some answers "
        "stayed invalid (rerun with --retry-failed)",
    )
    ex.add_argument("--study", choices=STUDIES, required=True, help="pmr-demo or pmr")
    ex.add_argument("--pmr-dir", help="PMR-Synth-Inboxes folder (default $DTPBO_PMR_DIR)")
    ex.add_argument(
        "--spec", default=None, help=f"feature spec YAML/JSON (default {default_spec_path()})"
    )
    ex.add_argument("--out", required=True, help="extracted table (.csv, .json or .parquet)")
    ex.add_argument("--records", help="also write per-message records (JSON lines)")
    ex.add_argument("--cache", default=None, help=cache_help)
    ex.add_argument("--limit", type=int, help="only the first N messages")
    ex.add_argument("--retry-failed", action="store_true", help="re-ask invalid cached rows")
    ex.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_endpoint_arguments(ex)

    st = sub.add_parser(
        "stats",
        help="running-time statistics of the cached calls (Table 4 style)",
        description="Mean ± sd latency and tokens per call kind and per extracted item.",
    )
    st.add_argument("--cache", default=None, help=cache_help)
    st.add_argument("--model", help="only this model")
    st.add_argument("--json", action="store_true", help="print JSON instead of text")

    sc = sub.add_parser(
        "score",
        help="score an extracted demo table against the ground truth",
        description="Per-feature agreement of an extracted table with the demo inbox's "
        "ground-truth features.",
    )
    sc.add_argument("extracted", help="table written by 'extract --study pmr-demo'")
    sc.add_argument("--spec", default=None, help="feature spec (default Table 9)")

    pr = sub.add_parser(
        "propose",
        help="propose new features from badly explained comparisons (App. G.2)",
        description="Fit the DT on the training pairs, ask the LLM why the preferred message "
        "won in comparisons the tree explains worst, let it propose one feature, extract it "
        "and keep it if validation accuracy improves. Records are written for review.",
    )
    pr.add_argument("--study", choices=STUDIES, required=True)
    pr.add_argument("--pmr-dir", help="PMR-Synth-Inboxes folder (default $DTPBO_PMR_DIR)")
    pr.add_argument("--spec", default=None, help="feature spec (default Table 9)")
    pr.add_argument(
        "--features",
        default="truth",
        help="current feature table: 'truth' (demo only) or an extracted table",
    )
    pr.add_argument("--rounds", type=int, default=1, help="proposal rounds (default 1)")
    pr.add_argument("--pairs", type=int, default=8, help="comparisons explained per round")
    pr.add_argument("--seed", type=int, default=0)
    pr.add_argument("--out", required=True, help="proposal records (JSON)")
    pr.add_argument("--cache", default=None, help=cache_help)
    add_endpoint_arguments(pr)

    pl = sub.add_parser(
        "pmr-llm-vs-tree",
        help="pure-LLM pairwise urgency vs LLM features + DT (Table 1, PMR row)",
        description=pmr_llm.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pmr_llm.add_arguments(pl)
    return ap


def _cmd_extract(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    cfg = config_from_args(args)
    items, _ = _study_items(args.study, args.pmr_dir)
    if args.limit is not None:
        items = items.head(args.limit)
    cache_path = Path(args.cache) if args.cache else default_cache_path()
    print(
        f"extracting {len(spec)} feature(s) of spec {spec.name!r} from {len(items)} message(s) "
        f"with {cfg.model} at {cfg.base_url or 'the OpenAI API'} (prompt {PROMPT_VERSION}); "
        f"cache {cache_path}",
        file=sys.stderr,
    )
    bar = None
    progress = None
    if not args.no_progress:
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is optional
            tqdm = None
        if tqdm is not None:

            def progress(done: int, total: int, rec: object) -> None:
                nonlocal bar
                if bar is None:
                    bar = tqdm(total=total, unit="msg", desc="extract", file=sys.stderr)
                bar.update(1)

    with ExtractionCache(cache_path) as cache:
        result = extract_features(
            items, spec, cfg, cache=cache, progress=progress, retry_failed=args.retry_failed
        )
    if bar is not None:
        bar.close()
    out = save_table(result.table(), args.out)
    if args.records:
        records_to_jsonl(result.records, args.records)
    c = result.counts()
    print(
        f"{c['ok']} ok, {c['invalid']} invalid, {c['error']} error "
        f"({c['requested']} requested, {c['cached']} from cache) -> {out}",
        file=sys.stderr,
    )
    for r in result.records:
        if not r.ok:
            print(f"  {r.message_id}: {r.status}: {r.error}", file=sys.stderr)
    if args.study == "pmr-demo" and c["ok"]:
        score = score_against_truth(result.table(), pmr.DEMO_DIR / "truth.csv", spec)
        cols = ["type", "n", "accuracy", "hamming_accuracy", "f1", "within_one"]
        print("agreement with the demo ground truth:", file=sys.stderr)
        print(score[cols].round(3).to_string(), file=sys.stderr)
    rc = EXIT_ERROR if c["error"] else EXIT_INVALID if c["invalid"] else EXIT_OK
    calls = [call for r in result.records if not r.cached for call in r.calls]
    n_failed = sum(call.outcome != "ok" for call in calls)
    print(
        f"summary: {len(result.records)} message(s): {c['ok']} ok, {c['invalid']} invalid, "
        f"{c['error']} error; {len(calls)} request(s) this run ({n_failed} failed); "
        f"exit {rc}",
        file=sys.stderr,
    )
    return rc


def _cmd_stats(args: argparse.Namespace) -> int:
    path = Path(args.cache) if args.cache else default_cache_path()
    if not path.is_file():
        print(f"no cache at {path}", file=sys.stderr)
        return 1
    with ExtractionCache(path) as cache:
        stats = cache.stats(model=args.model)
        n = cache.extractions(model=args.model)
    if args.json:
        print(stats.to_json(orient="records", indent=1))
        return 0
    print(f"cache {path}: {len(n)} extraction row(s)")
    if len(n):
        print("  " + ", ".join(f"{k}: {v}" for k, v in n["status"].value_counts().items()))
    print(format_stats(stats))
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    score = score_against_truth(args.extracted, pmr.DEMO_DIR / "truth.csv", spec)
    print(score.round(3).to_string())
    return 0


def _cmd_propose(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    cfg = config_from_args(args)
    items, study = _study_items(args.study, args.pmr_dir)
    if args.features == "truth":
        if args.study != "pmr-demo":
            raise SystemExit("error: --features truth exists only for the demo inbox")
        table = study.extras["truth"][["message_id", *spec.names]]
    else:
        table = load_table(args.features, spec)
    pair_ids = study.extras["pair_ids"]
    train = pair_ids[pair_ids["split"] == "train"]
    cache_path = Path(args.cache) if args.cache else default_cache_path()
    with ExtractionCache(cache_path) as cache:
        proposer = FeatureProposer(spec, cfg, cache=cache, n_pairs=args.pairs, seed=args.seed)

        def show(rec: object) -> None:
            r = rec  # ProposalRecord
            name = (r.proposal or {}).get("name")
            print(
                f"round {r.round}: {r.status} {name or ''} "
                f"(val {r.baseline_val_accuracy} -> {r.new_val_accuracy}) {r.error or ''}",
                file=sys.stderr,
            )

        records, final, _ = proposer.run(items, table, train, rounds=args.rounds, on_record=show)
    save_records(records, args.out)
    print(f"{len(records)} record(s) -> {args.out}; final spec has {len(final)} features")
    return 0


def pmr_llm_study(
    study_key: str,
    features: str,
    data_dir: str | None,
    config: LLMConfig | None,
    cache: str | None,
) -> tuple[Study, str]:
    """The PMR study of ``pmr-llm-vs-tree`` with the tree's features, and their source.

    Parameters
    ----------
    study_key
        ``"pmr-demo"`` (the bundled demo inbox) or ``"pmr"`` (PMR-Synth in ``data_dir``).
    features
        ``"extract"`` (ask ``config``'s endpoint, cached in ``cache``), ``"truth"`` (the
        demo inbox's known features) or the path of a table written by ``extract``.
    data_dir
        PMR-Synth folder (default ``$DTPBO_PMR_DIR``).
    config
        Endpoint settings (needed for ``"extract"``).
    cache
        Extraction cache file (default :func:`default_cache_path`).

    Returns
    -------
    study, source
        The study (:func:`pmr_llm.run_pmr_llm_vs_tree` reads its ``extras``) and a
        description of where the features came from.
    """
    if features not in ("truth", "extract"):
        table = load_table(features, table9_spec())
        source = f"table {features}"
    elif features == "truth":
        if study_key != "pmr-demo":
            raise SystemExit("--features truth exists only for pmr-demo")
        return pmr.load_pmr_demo(), "ground truth (demo inbox)"
    else:
        assert config is not None
        base = pmr.load_pmr_demo() if study_key == "pmr-demo" else pmr.load_pmr_synth(data_dir)
        with ExtractionCache(Path(cache) if cache else default_cache_path()) as c:
            result = extract_features(pmr.pmr_texts(base), table9_spec(), config, cache=c)
        table = result.table()
        n_ok = int((table["status"] == "ok").sum())
        if n_ok == 0:
            counts = ", ".join(f"{k} {v}" for k, v in result.counts().items() if v)
            raise SystemExit(
                f"error: {config.model} at {config.base_url} gave no usable features for any "
                f"of the {len(table)} messages ({counts}); the tree cannot be trained (the "
                "log above says why; --features truth or a table from `python -m "
                "feature_extraction extract` train it without the endpoint)"
            )
        source = f"extracted by {config.model} ({n_ok}/{len(table)} messages ok)"
    if study_key == "pmr-demo":
        return pmr.load_pmr_demo(features=table), source
    return pmr.load_pmr_synth(data_dir, features=table), source


def _cmd_pmr_llm(args: argparse.Namespace) -> int:
    return pmr_llm.run(args, pmr_llm_study)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m feature_extraction``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # A last line of defence: the key (and Bearer tokens) never reach a log handler.
    secret = next((os.environ[n] for n in ENV_VARS["api_key"] if os.environ.get(n)), None)
    for handler in logging.getLogger().handlers:
        old = [f for f in handler.filters if isinstance(f, RedactingFilter)]
        for f in old:
            f.secret = secret
        if not old:
            handler.addFilter(RedactingFilter(secret))
    cmd = {
        "extract": _cmd_extract,
        "stats": _cmd_stats,
        "score": _cmd_score,
        "propose": _cmd_propose,
        "pmr-llm-vs-tree": _cmd_pmr_llm,
    }[args.command]
    return cmd(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
