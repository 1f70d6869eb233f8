"""LLM-based feature extraction (OpenAI-compatible endpoints) for patient message ranking.

The LLM is a feature extractor, never the decision maker: it reads one message (with its
EHR excerpt) and reports the features of a spec; the interpretable tree ranks.

Modules
-------
spec      Feature specs (YAML/JSON), the bundled Table 9 spec, prompts, answer validation,
          conversion to the core :class:`pbo_core.data.Schema`.
client    :class:`LLMConfig` (arguments or ``DTPBO_LLM_*`` / ``OPENAI_*`` variables) and
          :class:`LLMClient` (bounded concurrency, backoff, json_schema -> json_object).
extract   :func:`extract_features`: validated, retried, cached extraction.
cache     :class:`ExtractionCache`: SQLite (WAL) cache and Table 4-style statistics.
evaluate  :func:`score_against_truth`: per-feature agreement with known features.
propose   App. G.2 feature proposal from the comparisons the tree explains worst (import
          it from ``feature_extraction.propose``; it brings in the DT surrogate).
pmr_llm   DT-PBO Table 1's PMR row: pure-LLM pairwise urgency vs LLM features + a DT
          (import it from ``feature_extraction.pmr_llm``; it brings in the DT surrogate).
cli       ``python -m feature_extraction {extract,stats,score,propose,pmr-llm-vs-tree}``
          (an app: it also reads studies through :mod:`data_loaders`, which nothing else
          here imports).
"""

from feature_extraction.cache import ExtractionCache, default_cache_path
from feature_extraction.client import LLMClient, LLMConfig, LLMRequestError
from feature_extraction.evaluate import score_against_truth
from feature_extraction.extract import (
    ExtractionRecord,
    ExtractionResult,
    extract_features,
    extract_features_async,
    load_table,
    save_table,
)
from feature_extraction.spec import (
    PROMPT_VERSION,
    AnswerValidationError,
    FeatureSpec,
    Spec,
    SpecError,
    load_spec,
    table9_spec,
)

__all__ = [
    "PROMPT_VERSION",
    "AnswerValidationError",
    "ExtractionCache",
    "ExtractionRecord",
    "ExtractionResult",
    "FeatureSpec",
    "LLMClient",
    "LLMConfig",
    "LLMRequestError",
    "Spec",
    "SpecError",
    "default_cache_path",
    "extract_features",
    "extract_features_async",
    "load_spec",
    "load_table",
    "save_table",
    "score_against_truth",
    "table9_spec",
]
