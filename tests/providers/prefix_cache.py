"""The loopback Anthropic server's prompt cache: usage computed from the breakpoints each request carries.

It follows the Messages API's documented rules, so the tests and ``bench/cost.py`` see the bill a real
session would run up:

* the prefix is the request's blocks in order: each tool definition, each system block (a string system
  prompt is one block), each content block of each message; a block's tokens are its JSON characters
  (without ``cache_control``) over four, rounded up;
* an entry is written at each breakpoint (a block with ``cache_control``) whose prefix has at least the
  model's minimum of tokens, keyed by the model and the whole prefix up to that block, for its TTL (5
  minutes, or an hour with ``"ttl": "1h"``); a read refreshes it;
* a breakpoint hits an entry at its own block or at any of the 20 block boundaries before it; the request
  reads the longest hit, writes everything after it up to its last breakpoint (at that breakpoint's TTL
  premium) and pays plain input for the rest;
* more than four breakpoints is an HTTP 400, as with the API.

A request *missed* when a longer cached prefix of it existed than the one its breakpoints reached (its
breakpoints were placed where the lookback could not find the entry).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentcell.providers._anthropic_cache import minimum_cacheable_tokens

from .conftest import Recorded, Reply, json_reply

LOOKBACK = 20
MAX_BREAKPOINTS = 4
_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


def block_tokens(block: dict[str, Any]) -> int:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return max(1, math.ceil(len(json.dumps(plain, sort_keys=True, ensure_ascii=False)) / 4))


def prefix_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks += system
    for message in body.get("messages", []):
        content = message["content"]
        blocks += [{"type": "text", "text": content}] if isinstance(content, str) else content
    return blocks


@dataclass
class CacheUsage:
    input_tokens: int
    cache_read: int
    write_5m: int
    write_1h: int
    breakpoints: int
    missed: bool
    """A longer cached prefix of this request existed than its breakpoints reached."""

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read + self.write_5m + self.write_1h


class PrefixCache:
    """The server's cache entries. ``clock`` lets a test make entries expire without waiting."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._entries: dict[str, float] = {}
        """prefix hash -> when it expires."""
        self._lock = threading.Lock()
        self.served: list[CacheUsage] = []

    def serve(self, body: dict[str, Any]) -> CacheUsage:
        blocks = prefix_blocks(body)
        model = str(body.get("model", ""))
        hashes: list[str] = []
        cumulative: list[int] = []
        running = hashlib.sha256(model.encode())
        total = 0
        for block in blocks:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            running.update(json.dumps(plain, sort_keys=True).encode())
            hashes.append(running.copy().hexdigest())
            total += block_tokens(block)
            cumulative.append(total)
        marks = [(i, b["cache_control"].get("ttl", "5m")) for i, b in enumerate(blocks) if "cache_control" in b]
        if len(marks) > MAX_BREAKPOINTS:
            raise TooManyBreakpointsError(len(marks))
        now = self.clock()
        with self._lock:
            live = {h for h, expires in self._entries.items() if expires > now}
            hit = -1
            for index, _ in marks:
                for j in range(index, max(-1, index - LOOKBACK - 1), -1):
                    if hashes[j] in live:
                        hit = max(hit, j)
                        break
            possible = max((j for j, h in enumerate(hashes) if h in live), default=-1)
            read = cumulative[hit] if hit >= 0 else 0
            if hit >= 0:
                ttl = "1h" if self._entries[hashes[hit]] - now > _TTL_SECONDS["5m"] else "5m"
                self._entries[hashes[hit]] = now + _TTL_SECONDS[ttl]
            minimum = minimum_cacheable_tokens(model)
            writes = {"5m": 0, "1h": 0}
            written_to = read
            for index, ttl in marks:
                if index <= hit or cumulative[index] < minimum:
                    continue
                writes[ttl] += cumulative[index] - written_to
                written_to = cumulative[index]
                self._entries[hashes[index]] = now + _TTL_SECONDS[ttl]
        usage = CacheUsage(
            input_tokens=total - written_to,
            cache_read=read,
            write_5m=writes["5m"],
            write_1h=writes["1h"],
            breakpoints=len(marks),
            missed=possible > hit,
        )
        self.served.append(usage)
        return usage

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


class TooManyBreakpointsError(Exception):
    pass


# ---------------------------------------------------------------------------------------------- replies


@dataclass
class Turn:
    """What the emulated model answers: text, then tool calls (``(name, input)``), with its output tokens."""

    text: str = ""
    calls: Sequence[tuple[str, dict[str, Any]]] = ()
    output_tokens: int = 50


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def answer(cache: PrefixCache, turn: Turn) -> Callable[[Recorded], Reply]:
    """A queued reply that prices the request it answers with ``cache`` (see SSEServer.queue)."""

    def reply(request: Recorded) -> Reply:
        try:
            usage = cache.serve(request.body)
        except TooManyBreakpointsError as too_many:
            message = f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {too_many}."
            return json_reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        body = _sse(request.body, usage, turn, serial=len(cache.served))
        return Reply(body=body, headers={"content-type": "text/event-stream"})

    return reply


def _sse(body: dict[str, Any], usage: CacheUsage, turn: Turn, *, serial: int) -> bytes:
    start_usage = {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.write_5m + usage.write_1h,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {"ephemeral_5m_input_tokens": usage.write_5m, "ephemeral_1h_input_tokens": usage.write_1h},
        "output_tokens": 1,
    }
    message = {
        "id": f"msg_{serial:04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    parts = [_event("message_start", {"type": "message_start", "message": message})]
    index = 0
    if turn.text:
        parts.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        delta = {"type": "text_delta", "text": turn.text}
        parts.append(_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for name, arguments in turn.calls:
        call_id = f"toolu_{serial:04d}_{index:02d}"  # the same in every run: token counts stay comparable
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        parts.append(
            _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
        )
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        parts.append(_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    stop = "tool_use" if turn.calls else "end_turn"
    end = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}}
    end["usage"] = {"output_tokens": turn.output_tokens}
    parts += [_event("message_delta", end), _event("message_stop", {"type": "message_stop"})]
    return b"".join(parts)
