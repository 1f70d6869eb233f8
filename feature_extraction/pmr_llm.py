"""DT-PBO Table 1's PMR row: pure-LLM pairwise ranking vs LLM features + a decision tree.

``python -m feature_extraction pmr-llm-vs-tree`` asks an OpenAI-compatible endpoint,
for every test pair of a PMR study (inbox B of the demo inbox ``pmr-demo`` or of
PMR-Synth ``pmr``), "which of these two messages is more urgent?" and compares its answers
with a DT-PBO tree trained on inbox A's comparisons of the extracted features
(:mod:`data_loaders.pmr`: inbox A trains, inbox B tests). Reported: pairwise accuracy of
both with a percentile bootstrap 95 % CI over the test pairs, their paired difference,
the number of LLM requests (retries included), failures, and latency / tokens per call.

The order in which a pair's two messages are shown is randomised per pair (seeded), so a
position bias of the model cannot masquerade as accuracy; answers that fail validation
are re-asked with the error fed back (``max_validation_retries``), and a pair without a
valid answer counts as a coin flip (0.5), like a predicted tie of the tree.

The experiment's logic; :mod:`feature_extraction.cli` loads the study (it alone here
imports :mod:`data_loaders`) and extracts the features. ``python -m pbo_core.experiments
pmr-llm-vs-tree`` is an alias that hands off to the same command (same flags and output).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from feature_extraction.cache import ExtractionCache, completion_key, default_cache_path
from feature_extraction.client import (
    LLMClient,
    LLMConfig,
    LLMRequestError,
    add_endpoint_arguments,
    config_from_args,
)
from pbo_core.data import Study
from pbo_core.experiments.runner import write_json
from pbo_core.metrics import bootstrap_ci, pair_scores, paired_difference
from pbo_core.models.dt import DTSurrogate

__all__ = [
    "ANSWER_SCHEMA",
    "add_arguments",
    "ask_pairs",
    "pair_messages",
    "run",
    "run_pmr_llm_vs_tree",
    "summarize_pmr",
    "tree_correct",
]

#: Loads the study of ``--study`` with the tree's features: ``(study_key, features,
#: data_dir, config, cache) -> (study, description of the features' source)``
#: (:func:`feature_extraction.cli.pmr_llm_study`).
StudyWithFeatures = Callable[
    [str, str, str | None, LLMConfig | None, str | None], tuple[Study, str]
]

#: JSON schema of the pairwise answer.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"more_urgent": {"type": "string", "enum": ["A", "B"]}},
    "required": ["more_urgent"],
    "additionalProperties": False,
}

_SYSTEM = (
    "You help a clinician triage patient portal messages. Each message comes with a short "
    "excerpt of the patient's record. Answer only with JSON."
)


def pair_messages(text_a: str, text_b: str) -> list[dict[str, str]]:
    """The chat messages asking which of two patient messages is more urgent."""
    user = (
        "Which of these two messages is more urgent?\n\n"
        f"Message A:\n{text_a}\n\nMessage B:\n{text_b}\n\n"
        'Answer {"more_urgent": "A"} or {"more_urgent": "B"}.'
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def _parse(content: str | None) -> str:
    """``"A"`` or ``"B"`` from an answer; raises ``ValueError`` saying what is wrong."""
    try:
        obj = json.loads(content or "")
    except json.JSONDecodeError as exc:
        raise ValueError(f"answer is not JSON: {exc}") from None
    val = obj.get("more_urgent") if isinstance(obj, dict) else None
    if val not in ("A", "B"):
        raise ValueError(f'"more_urgent" must be "A" or "B", got {val!r}')
    return str(val)


#: Version of the pairwise question; part of each cached answer's key.
PAIR_PROMPT_VERSION = "pair-v1"


async def _ask_one(
    client: LLMClient,
    text_a: str,
    text_b: str,
    max_validation_retries: int,
    cache: ExtractionCache | None = None,
) -> dict[str, Any]:
    messages = pair_messages(text_a, text_b)
    key = completion_key(client.config.model, "pair", PAIR_PROMPT_VERSION, messages)
    hit = cache.get_completion(key) if cache is not None else None
    if hit is not None:
        try:
            return {
                "answer": _parse(hit),
                "status": "ok",
                "error": None,
                "calls": [],
                "cached": True,
            }
        except ValueError:
            pass  # not a valid answer after all: ask again
    calls = []
    error = None
    for _ in range(max_validation_retries + 1):
        try:
            res = await client.chat(
                messages, json_schema=ANSWER_SCHEMA, name="urgency", kind="pair"
            )
        except LLMRequestError as exc:
            calls += exc.calls
            return {"answer": None, "status": "error", "error": exc.reason, "calls": calls}
        calls += res.calls
        try:
            answer = _parse(res.content)
        except ValueError as exc:
            error = str(exc)
            messages = [
                *messages,
                {"role": "assistant", "content": res.content or ""},
                {"role": "user", "content": f"That answer is invalid: {error}. Try again."},
            ]
            continue
        if cache is not None:  # valid answers only: an interrupted run resumes from here
            cache.put_completion(
                key, kind="pair", model=client.config.model, content=res.content or "", calls=calls
            )
        return {"answer": answer, "status": "ok", "error": None, "calls": calls}
    return {"answer": None, "status": "invalid", "error": error, "calls": calls}


async def ask_pairs(
    texts: Sequence[tuple[str, str]], config: LLMConfig, cache: ExtractionCache | None = None
) -> list[dict[str, Any]]:
    """Ask the endpoint about every ``(text_a, text_b)``; one result dict per pair.

    Each result has ``answer`` (``"A"``, ``"B"`` or ``None``), ``status`` (``ok``,
    ``invalid`` or ``error``), ``error`` and ``calls`` (the :class:`CallRecord` list).
    Requests run concurrently up to ``config.max_concurrency``. With a ``cache``, valid
    answers are stored as they arrive and reused (``cached: True``, no calls), so an
    interrupted comparison resumes where it stopped.
    """
    async with LLMClient(config) as client:
        return list(
            await asyncio.gather(
                *(_ask_one(client, a, b, config.max_validation_retries, cache) for a, b in texts)
            )
        )


def tree_correct(study: Study, ratio: float = 0.25) -> np.ndarray:
    """Per test pair: 1 if the tree trained on the train pairs orders it right, 0.5 tie."""
    train, test = study.extras["train"], study.extras["test"]
    u = DTSurrogate(ratio=ratio).fit(train).predict(test.X)
    return pair_scores(u, test.pairs)


def run_pmr_llm_vs_tree(
    study: Study,
    config: LLMConfig,
    *,
    max_pairs: int | None = None,
    seed: int = 0,
    cache: ExtractionCache | None = None,
) -> pd.DataFrame:
    """One row per test pair: tree and LLM correctness, presentation order, calls.

    Parameters
    ----------
    study
        A PMR study with ``extras["train"]``/``extras["test"]`` and ``extras["texts"]``.
    config
        Endpoint settings.
    max_pairs
        Ask about a seeded random subset of this many test pairs (``None``: all).
    seed
        Seeds the subset, the presentation order and the bootstrap.
    cache
        Stores each valid answer as it arrives and reuses stored ones (resumable runs).
    """
    rng = np.random.default_rng(seed)
    test = study.extras["test"]
    texts = study.extras["texts"]["text"].to_numpy()
    ids = study.extras["texts"]["message_id"].to_numpy()
    tree = tree_correct(study)
    idx = np.arange(len(test.pairs))
    if max_pairs is not None and max_pairs < len(idx):
        idx = np.sort(rng.choice(idx, size=max_pairs, replace=False))
    swap = rng.random(len(idx)) < 0.5  # winner shown second
    shown = []
    for k, s in zip(idx, swap, strict=True):
        w, lo = test.pairs[k]
        shown.append((texts[lo], texts[w]) if s else (texts[w], texts[lo]))
    answers = asyncio.run(ask_pairs(shown, config, cache))
    rows = []
    for k, s, ans in zip(idx, swap, answers, strict=True):
        w, lo = test.pairs[k]
        correct_label = "B" if s else "A"
        llm = 0.5 if ans["answer"] is None else float(ans["answer"] == correct_label)
        calls = ans["calls"]
        ok_calls = [c for c in calls if c.outcome == "ok"]
        rows.append(
            {
                "pair": int(k),
                "winner": str(ids[w]),
                "loser": str(ids[lo]),
                "winner_shown_second": bool(s),
                "llm_answer": ans["answer"],
                "llm_status": ans["status"],
                "llm_error": ans["error"],
                "llm_correct": llm,
                "tree_correct": float(tree[k]),
                "cached": bool(ans.get("cached", False)),
                "requests": len(calls),
                "failed_requests": len(calls) - len(ok_calls),
                "latency_s": float(sum(c.latency_s for c in calls)),
                "prompt_tokens": sum(c.prompt_tokens or 0 for c in ok_calls),
                "completion_tokens": sum(c.completion_tokens or 0 for c in ok_calls),
            }
        )
    return pd.DataFrame(rows)


def summarize_pmr(rows: pd.DataFrame, seed: int = 0, n_boot: int = 2000) -> dict[str, Any]:
    """Accuracies with percentile bootstrap 95 % CIs over pairs, paired difference, calls."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"pairs": len(rows), "ci95_method": "percentile bootstrap over pairs"}
    for name in ("llm", "tree"):
        x = rows[f"{name}_correct"].to_numpy(dtype=float)
        out[f"{name}_accuracy"] = float(x.mean()) if len(x) else float("nan")
        out[f"{name}_accuracy_ci95"] = list(bootstrap_ci(x, n_boot=n_boot, rng=rng))
    d = paired_difference(rows["llm_correct"], rows["tree_correct"], rng=rng, n_boot=n_boot)
    out["llm_minus_tree"] = d.mean_diff
    out["llm_minus_tree_ci95"] = list(d.ci)
    asked = rows[~rows["cached"]] if "cached" in rows else rows
    lat = asked["latency_s"].to_numpy(dtype=float)  # pairs answered from the cache took none
    n_req = int(rows["requests"].sum())
    out.update(
        {
            "llm_requests": n_req,
            "llm_failed_requests": int(rows["failed_requests"].sum()),
            "llm_answers_ok": int((rows["llm_status"] == "ok").sum()),
            "llm_answers_invalid": int((rows["llm_status"] == "invalid").sum()),
            "llm_answers_error": int((rows["llm_status"] == "error").sum()),
            "llm_latency_per_pair_mean_s": float(lat.mean()) if len(lat) else float("nan"),
            "llm_latency_per_pair_median_s": float(np.median(lat)) if len(lat) else float("nan"),
            "llm_latency_total_s": float(lat.sum()),
            "llm_answers_cached": int(len(rows) - len(asked)),
            "llm_prompt_tokens": int(rows["prompt_tokens"].sum()),
            "llm_completion_tokens": int(rows["completion_tokens"].sum()),
            "llm_position_a_share": float((rows["llm_answer"] == "A").mean()) if len(rows) else 0,
        }
    )
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of the ``pmr-llm-vs-tree`` command."""
    p.add_argument("--study", choices=("pmr-demo", "pmr"), default="pmr-demo")
    p.add_argument(
        "--features",
        default="extract",
        help="features of the tree: extract (ask the same endpoint, cached; default), truth "
        "(the demo inbox's known features) or a table written by python -m "
        "feature_extraction extract",
    )
    p.add_argument("--max-pairs", type=int, default=None, help="seeded subset of test pairs")
    p.add_argument(
        "--cache",
        default=None,
        help="cache of extractions and pair answers; a rerun resumes from it "
        "(default $DTPBO_LLM_CACHE)",
    )
    p.add_argument("--data-dir", default=None, help="PMR-Synth folder (default $DTPBO_PMR_DIR)")
    p.add_argument("--seed", type=int, default=0, help="subset, presentation order, bootstrap")
    p.add_argument("--json", default=None, metavar="PATH|-", help="write the JSON summary")
    p.add_argument("--rows", default=None, help="write the per-pair rows (CSV)")
    p.add_argument("--quiet", action="store_true", help="no table on stderr")
    add_endpoint_arguments(p)


def run(args: argparse.Namespace, load: StudyWithFeatures) -> int:
    """Run the command from parsed arguments (see :func:`add_arguments`).

    ``load`` gives the study with the tree's features (:data:`StudyWithFeatures`; the
    command line passes :func:`feature_extraction.cli.pmr_llm_study`).
    """
    cfg = config_from_args(args)
    study, source = load(args.study, args.features, args.data_dir, cfg, args.cache)
    with ExtractionCache(Path(args.cache) if args.cache else default_cache_path()) as cache:
        rows = run_pmr_llm_vs_tree(
            study, cfg, max_pairs=args.max_pairs, seed=args.seed, cache=cache
        )
    if args.rows:
        rows.to_csv(args.rows, index=False)
    summary = summarize_pmr(rows, seed=args.seed)
    summary.update({"study": args.study, "model": cfg.model, "features": source, "seed": args.seed})
    if not args.quiet:
        for k in ("llm_accuracy", "tree_accuracy", "llm_minus_tree"):
            ci = summary[f"{k}_ci95" if k != "llm_minus_tree" else "llm_minus_tree_ci95"]
            print(f"{k}: {summary[k]:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]", file=sys.stderr)
    write_json({"command": "pmr-llm-vs-tree", "summary": summary}, args.json)
    return 0
