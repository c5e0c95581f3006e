"""Which bare model names a provider claims, apart from the provider itself: the agents API checks a name
without importing the HTTP stack behind it."""

from __future__ import annotations

__all__ = ["is_claude_model"]


def is_claude_model(name: str) -> bool:
    """Bare model names the Anthropic provider claims."""
    return name.startswith("claude-")
