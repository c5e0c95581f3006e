"""Configuration is told early: a provider says what is missing before any request, without the network."""

from __future__ import annotations

import pytest

from agentcell.errors import ConfigurationError
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.openai import OpenAIProvider

from .conftest import API_KEY


def test_a_missing_anthropic_key_is_named_before_any_request() -> None:
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider().check_ready()
    AnthropicProvider(api_key=API_KEY).check_ready()


def test_openai_needs_a_key_only_at_openai() -> None:
    with pytest.raises(ConfigurationError, match=r"OPENAI_API_KEY.*OPENAI_BASE_URL"):
        OpenAIProvider().check_ready()
    OpenAIProvider(base_url="http://127.0.0.1:8080/v1").check_ready()  # a llama.cpp server needs none
    OpenAIProvider(api_key=API_KEY).check_ready()


def test_the_local_model_says_it_is_loading_until_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentcell.providers import local

    assert AnthropicProvider(api_key=API_KEY).preparing() is None
    monkeypatch.setattr(local, "_models", {})  # no instance of the model loaded in this process yet
    provider = local.LocalProvider("smollm2")
    assert provider.preparing() == "loading the local model"
    monkeypatch.setattr(local, "_models", {provider._key: object()})  # another session loaded it
    assert provider.preparing() is None
