"""Which provider serves a model name.

A model id is ``prefix:name`` or a bare name that a provider claims (``scripted``, ``claude-…``). Providers
register a factory per prefix; the registry builds each (prefix, name, base_url) once and reuses it.

An :data:`Interceptor` (record/replay) may stand between the registry and the providers: it receives each
model's config and a function that builds the live provider, and returns the provider to use, so it can
decide whether the live one is ever built.

:attr:`ProviderRegistry.cache` is the prompt-cache setting of models whose config does not set one
(``%config AgentCell.cache``): it goes into their ``extra["cache"]``; None leaves each provider's default.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ConfigurationError
from .base import ModelConfig, Provider

__all__ = ["Interceptor", "ProviderFactory", "ProviderRegistry", "ResolvedModel"]

ProviderFactory = Callable[[ModelConfig], Provider]
"""Builds a provider for a model config (whose id has had its ``prefix:`` removed)."""
Interceptor = Callable[[ModelConfig, Callable[[], Provider]], Provider]
"""Given a model's full config and a builder of its live provider, returns the provider to serve it."""


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    provider: Provider
    model: str
    """The name to send to the provider."""
    config: ModelConfig


class ProviderRegistry:
    def __init__(self) -> None:
        self._factories: dict[str, ProviderFactory] = {}
        self._bare: list[tuple[Callable[[str], bool], str]] = []
        self._instances: dict[tuple[str, str, str | None], Provider] = {}
        self._interceptor: Interceptor | None = None
        self._lock = threading.Lock()
        self.cache: str | None = None
        """``"5m"``, ``"1h"`` or ``"off"`` for every model whose config has no ``cache`` option of its own."""

    def register(
        self,
        prefix: str,
        provider: Provider | ProviderFactory,
        *,
        claims: Callable[[str], bool] | None = None,
    ) -> None:
        """Serve ``prefix:<name>`` (and ``prefix`` alone) with ``provider``.

        ``claims`` lets the provider also take bare names, e.g. ``lambda n: n.startswith("claude-")``.
        Registering an instance shares it across every model of that prefix (how tests inject a script).
        """
        factory: ProviderFactory = (lambda _config: provider) if isinstance(provider, Provider) else provider
        with self._lock:
            self._factories[prefix] = factory
            self._instances = {k: v for k, v in self._instances.items() if k[0] != prefix}
            self._bare = [(c, p) for c, p in self._bare if p != prefix]
            if claims is not None:
                self._bare.append((claims, prefix))

    def intercept(self, interceptor: Interceptor | None) -> None:
        """Serve every model resolved from now on through ``interceptor`` (None removes it). Providers built
        before are dropped from the cache, as :meth:`register` drops those of its prefix."""
        with self._lock:
            self._interceptor = interceptor
            self._instances.clear()

    def prefixes(self) -> list[str]:
        return sorted(self._factories)

    def _split(self, model_id: str) -> tuple[str, str]:
        prefix, sep, name = model_id.partition(":")
        if sep and prefix in self._factories:
            return prefix, name
        if model_id in self._factories:
            return model_id, model_id
        for claims, owner in self._bare:
            if claims(model_id):
                return owner, model_id
        known = ", ".join(f"{p}:…" for p in self.prefixes()) or "none registered"
        raise ConfigurationError(f"no provider serves the model {model_id!r}; use one of: {known}")

    def resolve(self, config: ModelConfig) -> ResolvedModel:
        prefix, name = self._split(config.id)
        key = (prefix, name, config.base_url)
        with self._lock:
            provider = self._instances.get(key)
            if provider is None:
                factory, bare = self._factories[prefix], config.model_copy(update={"id": name})
                interceptor = self._interceptor
                if interceptor is None:
                    provider = factory(bare)
                else:
                    # One spelling per cached provider (``claude-x`` and ``anthropic:claude-x`` share one).
                    full = config.model_copy(update={"id": name if name == prefix else f"{prefix}:{name}"})
                    provider = interceptor(full, lambda: factory(bare))
                self._instances[key] = provider
        if self.cache is not None and "cache" not in config.extra:
            config = config.model_copy(update={"extra": {**config.extra, "cache": self.cache}})
        return ResolvedModel(provider=provider, model=name, config=config)

    async def aclose(self) -> None:
        with self._lock:
            providers = list({id(p): p for p in self._instances.values()}.values())
            self._instances.clear()
        for provider in providers:
            await provider.aclose()
