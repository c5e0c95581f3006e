"""A model name plus its request settings: what an agent stores and what a request carries."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from .common import CACHE_CHOICES, CACHE_OFF_ALIASES

__all__ = ["ListPrices", "ModelConfig", "ModelSettings"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSettings(_Model):
    max_tokens: int = Field(default=4096, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    thinking_budget: int | None = Field(default=None, ge=1)
    """Extended-thinking token budget; None turns thinking off."""
    tool_choice: Literal["auto", "any", "none"] | str | None = None
    """auto / any / none, or the name of one tool the model must call."""
    stop_sequences: list[str] = []
    extra: dict[str, Any] = {}
    """Provider-specific request fields, passed through."""


_DEFAULT_COMPACT_AT = 0.8


class ListPrices(_Model):
    """A model's list prices in USD per million tokens, for a model genai-prices does not know. Cache
    prices default to Anthropic's ratios of the input price (read 0.1x, 5-minute write 1.25x, 1-hour 2x)."""

    input_mtok: Decimal = Field(ge=0)
    output_mtok: Decimal = Field(ge=0)
    cache_read_mtok: Decimal | None = Field(default=None, ge=0)
    cache_write_5m_mtok: Decimal | None = Field(default=None, ge=0)
    cache_write_1h_mtok: Decimal | None = Field(default=None, ge=0)
    web_search_k: Decimal = Field(default=Decimal(0), ge=0)
    """Per thousand web searches."""


class ModelConfig(_Model):
    """A model name plus its request settings, as an agent stores it.

    ``id`` names the provider and model: ``scripted``, ``claude-...``, ``anthropic:...``, ``openai:...``,
    ``ollama:...``, ``vllm:...``, ``llamacpp:...``, ``local:smollm2``. ``base_url`` overrides the provider's
    endpoint. ``extra["cache"]`` (``"5m"``, ``"1h"`` or ``"off"``) sets prompt caching for this model.
    """

    id: str = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    thinking_budget: int | None = Field(default=None, ge=1)
    base_url: str | None = None
    prices: ListPrices | None = None
    """List prices to use instead of genai-prices' (a model it does not know has no known cost otherwise)."""
    context_window: int | None = Field(default=None, ge=256)
    """Tokens one request may hold, instead of what the provider knows of the model (genai-prices' figure,
    the local model's ``n_ctx``)."""
    compact_at: float = Field(default=_DEFAULT_COMPACT_AT, gt=0, le=1)
    """The share of the context window a request may fill before the conversation is compacted."""
    extra: dict[str, Any] = {}
    images: Annotated[bool, Field(exclude_if=lambda v: v)] = True
    """False for a model that takes no image input: an image in the conversation reaches it as a one-line
    placeholder (a notebook's plot, an image the user attached)."""

    @field_validator("extra")
    @classmethod
    def _known_cache_option(cls, extra: dict[str, Any]) -> dict[str, Any]:
        # Refused when the agent is made, not at its first request.
        if "cache" in extra and extra["cache"] not in CACHE_CHOICES and extra["cache"] not in CACHE_OFF_ALIASES:
            raise ValueError(f"the cache option must be '5m', '1h' or 'off', not {extra['cache']!r}")
        return extra

    @model_serializer(mode="wrap")
    def _window_settings_when_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out at their defaults, so that what was stored and hashed before they existed (agent versions,
        # workflow journal keys) reads the same.
        data: dict[str, Any] = handler(self)
        if data.get("context_window", 0) is None:
            del data["context_window"]
        if data.get("compact_at") == _DEFAULT_COMPACT_AT:
            del data["compact_at"]
        return data

    def settings(self) -> ModelSettings:
        values: dict[str, Any] = {"extra": self.extra}
        for key in ("max_tokens", "temperature", "thinking_budget"):
            if getattr(self, key) is not None:
                values[key] = getattr(self, key)
        return ModelSettings(**values)
