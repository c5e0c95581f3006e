"""Watching someone else's session: where its latest turn starts, and a terminal line for each event.

``agentcell follow SESSION_ID`` and ``%session follow ID`` both read ``engine.sessions.follow``; this module
holds what they share and imports nothing from Jupyter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from ._format import format_cost
from ._terminal import for_terminal
from .events import (
    AgentCustomToolUse,
    AgentMessage,
    AgentThinking,
    AgentToolResult,
    AgentToolUse,
    Event,
    SessionError,
    SessionStatusIdle,
    SessionStatusTerminated,
    SessionThreadCreated,
    SessionUsageEvent,
    TextBlock,
    UserDefineOutcome,
    UserMessage,
)
from .store.base import EventRow, Store

if TYPE_CHECKING:
    from .core import Engine

__all__ = ["TURN_OPENINGS", "event_lines", "latest_turn_start", "print_follow"]

TURN_OPENINGS = ("user.message", "user.define_outcome", "user.custom_tool_result")
"""The events a turn opens with."""

_WIDTH = 500
"""Characters of a tool's input or output a terminal line shows."""


def latest_turn_start(store: Store, session_id: str) -> tuple[str | None, int]:
    """Where to follow from so that the latest turn shows from its opening event: the id to follow after
    (None: from the start) and how many events come before it."""
    rows: Sequence[EventRow] = store.event_rows(session_id)
    index = next((i for i in range(len(rows) - 1, -1, -1) if rows[i].type in TURN_OPENINGS), len(rows))
    return (rows[index - 1].id if index > 0 else None), index


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def _text(blocks: Sequence[object]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, TextBlock))


def event_lines(event: Event) -> list[str]:
    """How a terminal transcript shows ``event`` (nothing for bookkeeping such as spans)."""
    when = event.created_at.strftime("%H:%M:%S")
    who = f"[{event.thread_id}] " if event.thread_id else ""
    match event:
        case UserMessage():
            body = [f"{when} {who}you: {_text(event.content)}"]
        case UserDefineOutcome():
            body = [f"{when} {who}outcome: {event.description}"]
        case AgentMessage():
            text = _text(event.content) + (" (interrupted)" if event.interrupted else "")
            lines = text.splitlines() or [""]
            body = [f"{when} {who}agent: {lines[0]}", *(f"         {line}" for line in lines[1:])]
        case AgentThinking():
            body = [f"{when} {who}thinking: {_clip(event.thinking or '(redacted)')}"]
        case AgentToolUse() | AgentCustomToolUse():
            body = [f"{when} {who}tool {event.name} {_clip(json.dumps(event.input, ensure_ascii=False))}"]
        case AgentToolResult():
            outcome = "error" if event.is_error else "ok"
            body = [f"{when} {who}  → {outcome}: {_clip(_text(event.content))}"]
        case SessionThreadCreated():
            body = [f"{when} {who}thread {event.session_thread_id}: {event.agent_name} ({event.model})"]
        case SessionUsageEvent():
            u = event.usage
            body = [f"{when} {who}· session {u.input_tokens:,} in / {u.output_tokens:,} out · {format_cost(u)}"]
        case SessionError():
            body = [f"{when} {who}! {event.error.type}: {event.error.message}"]
        case SessionStatusIdle():
            body = [f"{when} {who}· idle ({event.stop_reason.type})"]
        case SessionStatusTerminated():
            body = [f"{when} · the session was terminated"]
        case _:
            body = []
    return body


async def print_follow(
    engine: Engine, session_id: str, *, everything: bool, until_idle: bool, jsonl: bool, out: TextIO
) -> None:
    """``agentcell follow``: print the session's latest turn (or ``everything``), then each event as it
    commits; ``until_idle`` stops at the next ``session.status_idle``."""
    after = None if everything else latest_turn_start(engine.store, session_id)[0]
    async for event in engine.sessions.follow(session_id, after=after):
        # JSON escapes control characters itself; a transcript line must not carry them to the terminal.
        lines = [event.model_dump_json()] if jsonl else [for_terminal(line) for line in event_lines(event)]
        for line in lines:
            print(line, file=out, flush=True)
        if until_idle and event.type == "session.status_idle":
            return
