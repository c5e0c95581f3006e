"""A model name plus its request settings: what an agent stores and what a request carries."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ModelConfig", "ModelSettings"]


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


class ModelConfig(_Model):
    """A model name plus its request settings, as an agent stores it.

    ``id`` names the provider and model: ``scripted``, ``claude-...``, ``anthropic:...``, ``openai:...``,
    ``ollama:...``, ``vllm:...``, ``local:smollm2``. ``base_url`` overrides the provider's endpoint.
    """

    id: str = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    thinking_budget: int | None = Field(default=None, ge=1)
    base_url: str | None = None
    extra: dict[str, Any] = {}

    def settings(self) -> ModelSettings:
        values: dict[str, Any] = {"extra": self.extra}
        for key in ("max_tokens", "temperature", "thinking_budget"):
            if getattr(self, key) is not None:
                values[key] = getattr(self, key)
        return ModelSettings(**values)
