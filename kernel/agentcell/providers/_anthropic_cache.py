"""Prompt-cache breakpoints on an Anthropic request: on by default, where they go, and what that may bill.

The Messages API caches the prefix of a request (tools, then system, then messages) up to each block that
carries ``cache_control``: written once at a premium (5-minute entries at 1.25x the input price, 1-hour
ones at 2x) and read back by later requests at 0.1x. Every request resends the whole conversation, so
caching is on unless the ``cache`` option says ``"off"``; ``"5m"`` (the default) or ``"1h"`` pick the TTL.

At most three of the API's four breakpoints are placed:

1. **the stable prefix**: the end of the system prompt (the tools come before it, so this is tools +
   system), or the last tool when there is no system prompt;
2. **the previous turn**: the last block of the user message before the latest one, where the previous
   request put its rolling breakpoint. This request then reads that entry exactly, however many blocks
   the model's reply added: the API looks back only 20 blocks from a breakpoint for an entry, and a reply
   with ten parallel tool calls and their results adds more than that;
3. **the latest turn**: its last block, written now for the next request to read.

Thinking blocks cannot carry a breakpoint (nor can an empty text block): the last block of a message that
can stands for it. A breakpoint whose prefix is too short for the model to cache (the API's minimum, 1,024
to 4,096 tokens by model) is left out, since the API would write nothing there; a request left with none
is billed as plain input, and only a request with a breakpoint may be billed a write premium.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..usage import InputBilling
from ._cache_option import Ttl, cache_ttl

__all__ = ["CHARS_PER_TOKEN_ESTIMATE", "CachePlan", "minimum_cacheable_tokens", "plan_breakpoints"]


CHARS_PER_TOKEN_ESTIMATE = 3
"""A prefix's tokens are estimated as its JSON characters over this. It errs long (English is about four
characters a token): a borderline prefix keeps its breakpoint, which costs nothing if the API finds it
too short, whereas a breakpoint wrongly left out would lose the cache."""

_MINIMUMS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-7", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
_DEFAULT_MINIMUM = 1024
"""Sonnet 3.7 to 4.5, Opus 3 to 4.1, and models this table does not know yet."""

_CACHEABLE = frozenset(
    {
        "text",
        "image",
        "document",
        "search_result",
        "tool_use",
        "tool_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
    }
)


def minimum_cacheable_tokens(model: str) -> int:
    """The shortest prefix the API caches for ``model`` (dated and ``anthropic:`` names included)."""
    for prefix, tokens in _MINIMUMS:
        if model.startswith(prefix):
            return tokens
    return _DEFAULT_MINIMUM


@dataclass(frozen=True, slots=True)
class CachePlan:
    ttl: Ttl | None
    breakpoints: tuple[str, ...] = ()
    """Which breakpoints were placed, in prefix order: ``stable``, ``previous``, ``latest``."""

    @property
    def billing(self) -> InputBilling:
        """How the request's input may be billed: a write premium only when it carries a breakpoint."""
        if not self.breakpoints:
            return "plain"
        return "5m" if self.ttl == "5m" else "any"


def plan_breakpoints(body: dict[str, Any], option: object) -> CachePlan:
    """Put the breakpoints ``option`` allows into ``body`` (a Messages API body without any), in place."""
    ttl = cache_ttl(option)
    if ttl is None:
        return CachePlan(None)
    system = body.get("system")
    # A system prompt given as a string carries a breakpoint only as a block: measured as one, and turned
    # into one if the breakpoint is placed.
    system_blocks: list[dict[str, Any]] = []
    if isinstance(system, str) and system:
        system_blocks = [{"type": "text", "text": system}]
    elif isinstance(system, list):
        system_blocks = system
    marks = _candidates(body, system_blocks)
    minimum = minimum_cacheable_tokens(str(body.get("model", "")))
    control = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": "1h"}
    placed: list[str] = []
    for name, block in _long_enough(body, system_blocks, marks, minimum):
        block["cache_control"] = dict(control)
        placed.append(name)
    if system_blocks is not system and any("cache_control" in b for b in system_blocks):
        body["system"] = system_blocks
    return CachePlan(ttl, tuple(placed))


def _candidates(body: dict[str, Any], system: list[dict[str, Any]]) -> dict[int, tuple[str, dict[str, Any]]]:
    """The block that would carry each breakpoint, by the block's id."""
    marks: dict[int, tuple[str, dict[str, Any]]] = {}
    stable = system[-1] if system else (body["tools"][-1] if body.get("tools") else None)
    if stable is not None:
        marks[id(stable)] = ("stable", stable)
    messages: list[dict[str, Any]] = body.get("messages", [])
    if messages and (latest := _last_cacheable(messages[-1])) is not None:
        marks[id(latest)] = ("latest", latest)
    earlier_user = next((m for m in reversed(messages[:-1]) if m["role"] == "user"), None)
    if earlier_user is not None and (previous := _last_cacheable(earlier_user)) is not None:
        marks.setdefault(id(previous), ("previous", previous))
    return marks


def _last_cacheable(message: dict[str, Any]) -> dict[str, Any] | None:
    content: list[dict[str, Any]] = message["content"]
    for block in content[::-1]:
        kind = block.get("type")
        if kind in _CACHEABLE and (kind != "text" or block.get("text")):
            return block
    return None


def _prefix(body: dict[str, Any], system: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The request's blocks in the order the API caches them: tools, system, messages."""
    yield from body.get("tools", [])
    yield from system
    for message in body.get("messages", []):
        yield from message["content"]


def _long_enough(
    body: dict[str, Any],
    system: list[dict[str, Any]],
    marks: dict[int, tuple[str, dict[str, Any]]],
    minimum: int,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The marked blocks, in prefix order, whose prefix is estimated at ``minimum`` tokens or more."""
    chars = 0
    threshold = minimum * CHARS_PER_TOKEN_ESTIMATE
    left = len(marks)
    for block in _prefix(body, system):
        if not left:
            return
        if chars < threshold:  # past the threshold every later prefix is long enough: stop measuring
            chars += len(json.dumps(block, ensure_ascii=False))
        mark = marks.get(id(block))
        if mark is None:
            continue
        left -= 1
        if chars >= threshold:
            yield mark
