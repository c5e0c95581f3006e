"""The ``cache`` request option every provider reads from ``settings.extra``: ``"5m"``, ``"1h"`` or ``"off"``.

Absent means on: Anthropic writes 5-minute entries, a llama.cpp server keeps its prompt cache, the embedded
model reuses its KV cache. ``"off"`` turns each of those off (OpenAI caches prompts on its own, whatever is
asked). The option never reaches a server as is.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import ConfigurationError
from ..records.common import CACHE_CHOICES, CACHE_OFF_ALIASES

__all__ = ["ABSENT", "CACHE_CHOICES", "Ttl", "cache_ttl", "option_of"]

Ttl = Literal["5m", "1h"]

ABSENT: Any = object()
"""The ``cache`` option was not given: caching on, with the default TTL."""


def option_of(extra: dict[str, Any]) -> object:
    """The ``cache`` option of a request's ``extra``, or :data:`ABSENT`."""
    return extra.get("cache", ABSENT)


def cache_ttl(option: object, default: Ttl = "5m") -> Ttl | None:
    """The TTL the option asks for, ``default`` when it is absent; None when caching is off."""
    if option is ABSENT:
        return default
    if option in CACHE_OFF_ALIASES:
        return None
    if option == "5m":
        return "5m"
    if option == "1h":
        return "1h"
    raise ConfigurationError(f"the cache option must be '5m', '1h' or 'off', not {option!r}")
