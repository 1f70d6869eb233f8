"""PMR inboxes: extracted features, the urgency tree, the LLM endpoint."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import streamlit as st

from dashboard._services.studies import get_study, study_status, study_statuses, study_token
from data_loaders import pmr
from feature_extraction import ExtractionCache
from feature_extraction.extract import Extractor, as_items
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
