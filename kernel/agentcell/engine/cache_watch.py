"""A prompt cache that keeps missing: noticed from each request's usage, said once, with the likely cause.

A request *missed* when it wrote to the cache but read nothing back although an earlier request of its
thread had written: the prefix it shares with that request should have been read. One miss can be the
entries' TTL running out during a pause; when a thread has missed twice, the session says so once (a
``session.error`` of type ``prompt_cache_miss``, which ends nothing), naming the likely cause by comparing
the request with the one before it: a system prompt or tool list that changed (they come first in the
cached prefix, so a change there makes everything after it miss), a pause longer than the TTL, or else a
server that does not read back what it wrote (a proxy in between, or a model or account without caching).
Providers that bill no cache writes (OpenAI-compatible ones, the local model) never trigger it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..providers.base import ModelRequest
from ..usage import Usage

__all__ = ["MISS_ERROR_TYPE", "CacheWatch"]

MISS_ERROR_TYPE = "prompt_cache_miss"
MISSES_BEFORE_WARNING = 2
_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class _Thread:
    system: str
    tools: str
    at: float
    wrote: bool = False
    misses: int = 0


class CacheWatch:
    """One session's watch; :meth:`observe` each completed request of a thread's own conversation."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._threads: dict[str | None, _Thread] = {}
        self.warned = False

    def observe(self, thread_id: str | None, request: ModelRequest, usage: Usage) -> str | None:
        """The warning to give now, once per session; None otherwise."""
        now = self._clock()
        system = _digest(request.system)
        tools = _digest([t.model_dump() for t in request.tools] + [s.model_dump() for s in request.server_tools])
        before = self._threads.get(thread_id)
        self._threads[thread_id] = current = _Thread(system, tools, now)
        if before is None:
            current.wrote = usage.cache_creation_input_tokens > 0
            return None
        current.wrote = before.wrote or usage.cache_creation_input_tokens > 0
        current.misses = before.misses
        if usage.cache_read_input_tokens or not usage.cache_creation_input_tokens or not before.wrote:
            return None
        current.misses += 1
        if current.misses < MISSES_BEFORE_WARNING or self.warned:
            return None
        self.warned = True
        ttl = str(request.settings.extra.get("cache", "5m"))
        return (
            f"the prompt cache keeps missing: {current.misses} requests wrote the conversation to the cache again "
            f"instead of reading it back (each write costs more than plain input). Likely cause: "
            f"{_cause(before, current, ttl)}"
        )


def _cause(before: _Thread, now: _Thread, ttl: str) -> str:
    if before.system != now.system:
        return (
            "the system prompt changed since the previous request. It comes before the conversation in the "
            "cached prefix, so whatever changes in it (a date, a listing) makes every later request miss: keep "
            "it the same from request to request."
        )
    if before.tools != now.tools:
        return (
            "the offered tools changed since the previous request; they come first in the cached prefix, so "
            "keep the tool list the same from request to request."
        )
    pause = now.at - before.at
    lifetime = _TTL_SECONDS.get(ttl, _TTL_SECONDS["5m"])
    if pause > lifetime:
        hint = ' (%config AgentCell.cache = "1h" keeps them an hour)' if lifetime < _TTL_SECONDS["1h"] else ""
        return f"{pause / 60:.0f} minutes passed since the previous request, and the cache entries expired{hint}."
    return (
        "the server did not read back what it wrote: a proxy between agentcell and the API, or a model or "
        "account without prompt caching."
    )
