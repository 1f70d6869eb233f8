"""LLMConfig (environment, masking) and LLMClient (backoff, fallback, concurrency)."""

from __future__ import annotations

import asyncio

import pytest

from feature_extraction.client import LLMClient, LLMConfig, LLMRequestError

SECRET = "sk-test-SECRET-0123456789abcdef"


def test_config_repr_str_and_dict_mask_the_key() -> None:
    cfg = LLMConfig(base_url="http://x/v1", model="m", api_key=SECRET)
    for text in (repr(cfg), str(cfg), str(cfg.to_dict()), repr(LLMClient(cfg))):
        assert SECRET not in text
        assert "***" in text
    assert cfg.api_key == SECRET
    assert "api_key=None" in repr(LLMConfig(model="m"))
    assert cfg.redact(f"error mentioning {SECRET}") == "error mentioning ***"


def test_config_from_env_prefers_dtpbo_variables() -> None:
    env = {
        "OPENAI_API_KEY": "sk-openai",
        "OPENAI_BASE_URL": "http://openai/v1",
        "DTPBO_LLM_BASE_URL": "http://local:8000/v1",
        "DTPBO_LLM_MODEL": "qwen",
        "DTPBO_LLM_TEMPERATURE": "0.3",
        "DTPBO_LLM_MAX_CONCURRENCY": "7",
        "DTPBO_LLM_TIMEOUT": "12.5",
        "DTPBO_LLM_RESPONSE_FORMAT": "json_object",
    }
    cfg = LLMConfig.from_env(env)
    assert cfg.base_url == "http://local:8000/v1"
    assert cfg.model == "qwen"
    assert cfg.api_key == "sk-openai"  # OPENAI_API_KEY is the fallback of DTPBO_LLM_API_KEY
    assert (cfg.temperature, cfg.max_concurrency, cfg.timeout) == (0.3, 7, 12.5)
    assert cfg.response_format == "json_object"
    cfg2 = LLMConfig.from_env({**env, "DTPBO_LLM_API_KEY": "sk-dtpbo"}, model="other", timeout=None)
    assert cfg2.api_key == "sk-dtpbo" and cfg2.model == "other" and cfg2.timeout == 12.5
    with pytest.raises(ValueError, match="DTPBO_LLM_TIMEOUT"):
        LLMConfig.from_env({"DTPBO_LLM_TIMEOUT": "soon"})


@pytest.mark.parametrize(
    "kwargs",
    [{"response_format": "xml"}, {"max_concurrency": 0}, {"timeout": 0}, {"max_retries": -1}],
)
def test_config_rejects_bad_values(kwargs) -> None:
    with pytest.raises(ValueError):
        LLMConfig(model="m", **kwargs)


def test_backoff_is_exponential_with_seeded_jitter() -> None:
    cfg = LLMConfig(model="m", backoff_base=1.0, backoff_max=5.0, seed=3)
    a = [LLMClient(cfg).backoff_delay(k) for k in range(5)]
    c1 = LLMClient(cfg)
    b = [c1.backoff_delay(k) for k in range(5)]
    c2 = LLMClient(cfg)
    c = [c2.backoff_delay(k) for k in range(5)]
    assert b == c  # same seed, same delays
    for k, d in enumerate(b):
        nominal = min(5.0, 2.0**k)
        assert 0.5 * nominal <= d < 1.5 * nominal
    assert a[0] != b[1]


def _client(server, **kw) -> LLMClient:
    cfg = LLMConfig(base_url=server.base_url, model="m", backoff_base=0.01, timeout=5, **kw)
    return LLMClient(cfg)


async def _chat(client: LLMClient, key: str, schema=None):
    try:
        return await client.chat(
            [{"role": "system", "content": "s"}, {"role": "user", "content": f"ITEM-{key}"}],
            json_schema=schema,
        )
    finally:
        await client.aclose()


SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def test_json_schema_supported_is_remembered(llm_server) -> None:
    st = llm_server.state
    st.default_answer = {"a": "x"}

    async def run():
        client = _client(llm_server)
        r1 = await client.chat([{"role": "user", "content": "ITEM-k1"}], json_schema=SCHEMA)
        r2 = await client.chat([{"role": "user", "content": "ITEM-k2"}], json_schema=SCHEMA)
        await client.aclose()
        return client, r1, r2

    client, r1, r2 = asyncio.run(run())
    assert client.response_mode == "json_schema"
    assert r1.response_format == r2.response_format == "json_schema"
    sent = st.requests[0]["body"]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == SCHEMA


async def _three_requests(server):
    client = _client(server)
    out = await asyncio.gather(
        *(
            client.chat(
                [{"role": "system", "content": "base"}, {"role": "user", "content": f"ITEM-{k}"}],
                json_schema=SCHEMA,
            )
            for k in ("a1", "a2", "a3")
        )
    )
    await client.aclose()
    return client, out


def test_fallback_to_json_object_on_http_500_with_schema_hint(llm_server) -> None:
    st = llm_server.state
    st.reject_json_schema = True  # like the llama.cpp server
    st.default_answer = {"a": "x"}
    client, out = asyncio.run(_three_requests(llm_server))
    assert client.negotiated == "json_object+schema"
    formats = [r["response_format"] for r in st.requests]
    assert formats == ["json_schema", "json_object", "json_object", "json_object"]
    assert all(r.response_format == "json_object+schema" for r in out)
    assert out[0].calls[0].outcome == "InternalServerError" and out[0].calls[1].outcome == "ok"
    for r in st.requests[1:]:
        # the schema goes both into response_format (grammar) and the prompt (hint)
        assert r["body"]["response_format"] == {"type": "json_object", "schema": SCHEMA}
        sys_msg = r["body"]["messages"][0]["content"]
        assert sys_msg.startswith("base") and '"required": ["a"]' in sys_msg


def test_fallback_to_plain_json_object_when_schema_key_is_rejected(llm_server) -> None:
    st = llm_server.state
    st.reject_json_schema = True
    st.reject_object_schema = True
    st.default_answer = {"a": "x"}
    client, out = asyncio.run(_three_requests(llm_server))
    assert client.negotiated == "json_object"
    bodies = [r["body"]["response_format"] for r in st.requests]
    assert bodies[0]["type"] == "json_schema"
    assert bodies[1] == {"type": "json_object", "schema": SCHEMA}
    assert bodies[2:] == [{"type": "json_object"}] * 3
    assert [r.response_format for r in out] == ["json_object"] * 3
    # A client told the negotiated format skips the negotiation.
    st.requests.clear()
    asyncio.run(_chat(LLMClient(client.config, response_mode="json_object"), "k", SCHEMA))
    assert [r["body"]["response_format"] for r in st.requests] == [{"type": "json_object"}]


def test_explicit_json_schema_mode_retries_500_without_fallback(llm_server) -> None:
    st = llm_server.state
    st.default_answer = {"a": "x"}
    st.script("k", "500", "503")
    res = asyncio.run(_chat(_client(llm_server, response_format="json_schema"), "k", SCHEMA))
    assert [r["response_format"] for r in st.requests] == ["json_schema"] * 3
    assert [c.outcome for c in res.calls] == ["InternalServerError", "InternalServerError", "ok"]


def test_json_object_mode_never_sends_json_schema(llm_server) -> None:
    st = llm_server.state
    st.default_answer = {"a": "x"}
    res = asyncio.run(_chat(_client(llm_server, response_format="json_object"), "k", SCHEMA))
    assert [r["response_format"] for r in st.requests] == ["json_object"]
    assert res.response_format == "json_object+schema"


def test_backoff_on_429_5xx_and_timeouts(llm_server) -> None:
    st = llm_server.state
    st.default_answer = {"a": "x"}
    st.slow_seconds = 1.5
    st.script("k", "429", "500", "slow", "503")
    client = LLMClient(
        LLMConfig(
            base_url=llm_server.base_url,
            model="m",
            backoff_base=0.01,
            timeout=0.5,
            response_format="json_schema",
        )
    )
    res = asyncio.run(_chat(client, "k", SCHEMA))
    outcomes = [c.outcome for c in res.calls]
    assert outcomes == [
        "RateLimitError",
        "InternalServerError",
        "APITimeoutError",
        "InternalServerError",
        "ok",
    ]
    assert res.content == '{"a": "x"}'
    assert res.prompt_tokens == 11 and res.completion_tokens == 7


def test_retries_are_exhausted_with_a_reason(llm_server) -> None:
    st = llm_server.state
    st.script("k", *["503"] * 10)
    with pytest.raises(LLMRequestError, match=r"after 3 attempt\(s\).*503") as ei:
        asyncio.run(_chat(_client(llm_server, max_retries=2, response_format="json_object"), "k"))
    assert len(ei.value.calls) == 3
    assert len(st.requests) == 3


def test_non_retryable_error_is_not_retried(llm_server) -> None:
    st = llm_server.state
    st.script("k", "400")
    with pytest.raises(LLMRequestError, match="400"):
        asyncio.run(_chat(_client(llm_server, response_format="json_object"), "k"))
    assert len(st.requests) == 1


def test_concurrency_is_bounded(llm_server) -> None:
    st = llm_server.state
    st.delay = 0.15
    st.default_answer = "free text"

    async def run():
        client = _client(llm_server, max_concurrency=2)
        await asyncio.gather(
            *(client.chat([{"role": "user", "content": f"ITEM-c{i}"}]) for i in range(6))
        )
        await client.aclose()
        return client

    client = asyncio.run(run())
    assert client.max_in_flight == 2
    assert st.max_in_flight == 2
    assert len(st.requests) == 6
    assert all(r["response_format"] == "text" for r in st.requests)


def test_transient_500_on_the_probe_does_not_downgrade_json_schema(llm_server) -> None:
    st = llm_server.state
    st.default_answer = {"a": "x"}
    st.script("a1", "500")  # a bare 500: transient, not "unsupported"
    client, out = asyncio.run(_three_requests(llm_server))
    assert client.negotiated == "json_schema"
    assert {r["response_format"] for r in st.requests} == {"json_schema"}
    assert [c.outcome for c in out[0].calls] == ["InternalServerError", "ok"]


def test_transient_500_after_a_rejection_keeps_json_object_with_schema(llm_server) -> None:
    st = llm_server.state
    st.reject_json_schema = True  # HTTP 500 whose body says "not supported": a rejection
    st.default_answer = {"a": "x"}
    st.script("a1", "500")  # then a bare 500 on the json_object+schema request
    client, out = asyncio.run(_three_requests(llm_server))
    assert client.negotiated == "json_object+schema"
    bodies = [r["body"]["response_format"] for r in st.requests]
    # json_schema is asked once; the transient 500 is retried with the same format
    assert bodies[0]["type"] == "json_schema"
    assert bodies[1:] == [{"type": "json_object", "schema": SCHEMA}] * 4
    assert [r.response_format for r in out] == ["json_object+schema"] * 3


#: What llama-cpp-python 0.3.36's server answers to ``response_format: json_schema``
#: (HTTP 500), as seen from a real run of ``pmr-llm-vs-tree`` against SmolLM2.
LLAMA_CPP_PYTHON_REJECTION = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}"
)


def test_llama_cpp_python_validation_error_is_a_rejection(llm_server) -> None:
    st = llm_server.state
    st.reject_json_schema = LLAMA_CPP_PYTHON_REJECTION
    st.default_answer = {"a": "x"}
    client, out = asyncio.run(_three_requests(llm_server))
    assert client.negotiated == "json_object+schema"
    formats = [r["response_format"] for r in st.requests]
    assert formats.count("json_schema") == 1  # asked once, then never again
    assert [r.response_format for r in out] == ["json_object+schema"] * 3


def test_clear_rejection_by_status_falls_back(llm_server) -> None:
    st = llm_server.state
    st.default_answer = {"a": "x"}
    st.script("k", "400")
    res = asyncio.run(_chat(_client(llm_server), "k", SCHEMA))
    assert [r["response_format"] for r in st.requests] == ["json_schema", "json_object"]
    assert res.response_format == "json_object+schema"


def test_answer_content_is_redacted(llm_server) -> None:
    st = llm_server.state
    st.script("k", f'text:my key is {SECRET}, header "Bearer abc.DEF-123"')
    res = asyncio.run(_chat(_client(llm_server, api_key=SECRET), "k"))
    assert SECRET not in res.content and "abc.DEF-123" not in res.content
    assert res.content == 'my key is ***, header "Bearer ***"'


def test_endpoint_arguments_override_the_environment_and_need_a_model(monkeypatch) -> None:
    import argparse

    from feature_extraction.client import add_endpoint_arguments, config_from_args

    ap = argparse.ArgumentParser()
    add_endpoint_arguments(ap)
    for k in ("DTPBO_LLM_MODEL", "DTPBO_LLM_BASE_URL", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("DTPBO_LLM_TIMEOUT", "12.5")
    with pytest.raises(SystemExit, match="no model given"):
        config_from_args(ap.parse_args([]))
    cfg = config_from_args(
        ap.parse_args(["--model", "qwen", "--concurrency", "2", "--response-format", "json_object"])
    )
    assert (cfg.model, cfg.max_concurrency, cfg.response_format) == ("qwen", 2, "json_object")
    assert cfg.timeout == 12.5  # not given: from the environment
    assert not any("key" in a.dest for a in ap._actions)  # secrets never come as options
