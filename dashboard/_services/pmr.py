"""PMR inboxes: the LLM endpoint, feature extraction and proposals, the urgency tree.

The PMR page draws; everything it runs goes through here: the endpoint settings and
probe, extraction (cache-aware), reading uploaded tables and proposal records, scoring
against the ground truth, a proposal round, the analyst's accepted spec, and the ranked
messages of the urgency tree.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import streamlit as st

from dashboard._services.studies import get_study, study_status, study_statuses, study_token
from dashboard._services.trees import items_table
from dashboard._text import safe_csv
from data_loaders import limits, pmr
from feature_extraction import (
    ExtractionCache,
    ExtractionResult,
    LLMConfig,
    Spec,
    default_cache_path,
    extract_features,
    load_table,
    score_against_truth,
)
from feature_extraction.extract import Extractor, ProgressCallback, as_items
from feature_extraction.propose import FeatureProposer, ProposalRecord, apply_decisions
from pbo_core.data import Study
from pbo_core.models.dt import DTSurrogate


def endpoint_reachable(base_url: str | None, timeout: float = 2.0) -> tuple[bool, str]:
    """Quick TCP check of an OpenAI-compatible endpoint (no request is sent)."""
    url = base_url or "https://api.openai.com/v1"
    p = urlparse(url)
    host = p.hostname
    if not host or p.scheme not in ("http", "https"):
        return False, f"{url!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
    port = p.port or (443 if p.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True, f"{host}:{port} accepts connections"
    except OSError as exc:
        return False, f"no endpoint reachable at {url} ({type(exc).__name__}: {exc})"


def table_token(table: pd.DataFrame) -> str:
    """A content hash of a feature table (cache key)."""
    import hashlib

    text = table.astype(str).to_csv(index=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@st.cache_resource(show_spinner="Loading the extracted features...", max_entries=8)
def _pmr_with_features(
    key: str, options: tuple[tuple[str, str], ...], token: str, _table: pd.DataFrame
) -> Study:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if key == "pmr-demo":
            return pmr.load_pmr_demo(features=_table)
        return pmr.load_pmr_synth(features=_table, **dict(options))


def pmr_study(key: str, table: pd.DataFrame | None) -> Study:
    """A PMR study with ground-truth features (``table=None``) or an extracted table."""
    if table is None:
        study, error = get_study(key)
        if study is None:
            raise LookupError(error)
        return study
    ok = table[table["status"].astype(str) == "ok"] if "status" in table.columns else table
    return _pmr_with_features(key, study_status(key).options, table_token(ok), ok)


@st.cache_resource(show_spinner="Fitting the urgency tree...", max_entries=16)
def _urgency_tree(
    study_token: Any, token: str, min_samples_split: int, _study: Study
) -> DTSurrogate:
    return DTSurrogate(min_samples_split=min_samples_split).fit(_study.extras["train"])


def urgency_tree(study: Study, features_token: str, min_samples_split: int = 1) -> DTSurrogate:
    """The DT on the training inbox (inbox A) of a PMR study (cached)."""
    return _urgency_tree(study_token(study), features_token, int(min_samples_split), study)


def cached_extractions(
    texts: pd.DataFrame, spec: Any, config: Any, cache_path: str
) -> tuple[int, int]:
    """``(cached ok, total)``: how many messages the cache answers for this model/spec."""
    path = Path(cache_path).expanduser()
    items = as_items(texts)
    if not path.is_file():
        return 0, len(items)
    with ExtractionCache(path) as cache:
        ex = Extractor(spec, config, cache=cache)
        got = cache.get_many([ex.key(m, t) for m, t in items])
    return sum(1 for c in got.values() if c.status == "ok"), len(items)


def study_titles() -> dict[str, str]:
    """Display title of every registry key."""
    return {s.key: s.title for s in study_statuses()}


# --------------------------------------------------------------------------- LLM settings
def llm_config(base_url: str, model: str, api_key: str, **kw: Any) -> LLMConfig:
    """Endpoint settings from the page's fields; empty fields fall back to the environment.

    Raises
    ------
    ValueError
        If a ``DTPBO_LLM_*`` / ``OPENAI_*`` environment variable is malformed.
    """
    return LLMConfig.from_env(
        base_url=base_url.strip() or None,
        model=model.strip() or None,
        api_key=api_key or None,
        **kw,
    )


def default_extraction_cache() -> str:
    """The default extraction cache file (``$DTPBO_LLM_CACHE``, else in the data folder)."""
    return str(default_cache_path())


# --------------------------------------------------------------------------- messages
def message_texts(study: Study) -> pd.DataFrame:
    """``message_id`` and ``text`` (what the LLM reads) of every message of a PMR study."""
    return pmr.pmr_texts(study)


def message_features(
    study: Study, extracted: pd.DataFrame | None, message_id: str
) -> pd.DataFrame | None:
    """The ground-truth and extracted features of one message side by side (``None``: none)."""
    spec = study.extras["spec"]
    truth = study.extras.get("truth")
    rows = {}
    if truth is not None:
        rows["ground truth"] = truth.set_index("message_id").loc[message_id, spec.names]
    if extracted is not None and message_id in set(extracted["message_id"].astype(str)):
        rows["extracted"] = extracted.set_index("message_id").loc[message_id, spec.names]
    return pd.DataFrame(rows) if rows else None


# --------------------------------------------------------------------------- extraction
def run_extraction(
    texts: pd.DataFrame,
    spec: Spec,
    config: LLMConfig,
    cache_path: str,
    progress: ProgressCallback | None = None,
) -> ExtractionResult:
    """Extract the features of ``texts`` through the cache at ``cache_path``."""
    with ExtractionCache(Path(cache_path).expanduser()) as cache:
        return extract_features(texts, spec, config, cache=cache, progress=progress)


def read_extracted_table(blob: bytes, spec: Spec, name: str) -> pd.DataFrame:
    """An uploaded extracted table (CSV / JSON / Parquet bytes), checked against ``spec``."""
    return load_table(blob, spec, name=name)


def extracted_csv(table: pd.DataFrame) -> str:
    """An extracted table as CSV, multi-valued cells joined by ``;`` and formula cells
    neutralised (:func:`dashboard._text.safe_csv`)."""
    return safe_csv(table.map(lambda v: ";".join(v) if isinstance(v, list) else v))


def score_extraction(study: Study, extracted: pd.DataFrame) -> pd.DataFrame:
    """Per-feature agreement of an extracted table with the study's ground truth."""
    spec = study.extras["spec"]
    truth = study.extras["truth"]
    return score_against_truth(extracted, truth[["message_id", *spec.names]], spec)


# --------------------------------------------------------------------------- proposals
#: Most proposal records an uploaded file may hold (a run writes one per round).
MAX_PROPOSALS = 1_000


def read_proposals(blob: bytes | str, name: str = "proposal records") -> list[ProposalRecord]:
    """Proposal records from the JSON ``python -m feature_extraction propose --out`` writes,
    bounded before parsing (size and nesting, :func:`data_loaders.limits.load_json_bytes`)
    and in number (:data:`MAX_PROPOSALS`).

    Raises
    ------
    ValueError
        For a file over a limit, invalid JSON or records of the wrong shape.
    """
    doc = limits.load_json_bytes(blob.encode() if isinstance(blob, str) else blob, name)
    if not isinstance(doc, list) or not all(isinstance(d, dict) for d in doc):
        raise ValueError(f"{name}: not a list of proposal records")
    if len(doc) > MAX_PROPOSALS:
        raise ValueError(f"{name}: {len(doc):,} records, more than {MAX_PROPOSALS:,}")
    try:
        return [ProposalRecord.from_dict(d) for d in doc]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{name}: a record is incomplete ({type(exc).__name__})") from None


def proposal_features(study: Study, extracted: pd.DataFrame | None) -> pd.DataFrame | None:
    """The features a proposal round explains: extracted, else the ground truth, else none."""
    if extracted is not None:
        return extracted
    truth = study.extras.get("truth")
    if truth is None:
        return None
    return truth[["message_id", *study.extras["spec"].names]]


def propose_feature(
    study: Study, features: pd.DataFrame, config: LLMConfig, cache_path: str
) -> list[ProposalRecord]:
    """One feature-proposal round (App. G.2) on the study's training pairs."""
    pairs = study.extras["pair_ids"]
    with ExtractionCache(Path(cache_path).expanduser()) as cache:
        recs, _, _ = FeatureProposer(study.extras["spec"], config, cache=cache).run(
            pmr.pmr_texts(study), features, pairs[pairs["split"] == "train"], rounds=1
        )
    return recs


def proposals_json(records: Sequence[ProposalRecord]) -> str:
    """Reviewed proposal records as JSON (what the page offers for download)."""
    return json.dumps([r.to_dict() for r in records], indent=1, ensure_ascii=False)


def accepted_spec(spec: Spec, records: Sequence[ProposalRecord]) -> Spec:
    """The spec plus every proposed feature the analyst accepted.

    Raises
    ------
    ValueError
        If an accepted proposal is not a valid spec entry.
    """
    return apply_decisions(spec, records)


def spec_json(spec: Spec) -> str:
    """A spec as JSON."""
    return json.dumps(spec.to_dict(), indent=1, ensure_ascii=False)


# --------------------------------------------------------------------------- urgency tree
def ranked_messages(model: DTSurrogate, features_study: Study, study: Study) -> pd.DataFrame:
    """The messages ranked by the urgency tree, with inbox, text and the true urgency
    (when ``study`` has its ground truth)."""
    ranked = items_table(model, features_study.data)
    items_f = features_study.data.items.set_index("message_id")
    ranked.insert(1, "inbox", items_f.loc[ranked["item"], "inbox"].to_numpy())
    ranked.insert(2, "message", items_f.loc[ranked["item"], "message"].to_numpy())
    truth = study.extras.get("truth")
    if truth is not None:
        tu = truth.set_index("message_id")["true_urgency"]
        ranked.insert(3, "true urgency", tu.reindex(ranked["item"]).to_numpy())
    return ranked
