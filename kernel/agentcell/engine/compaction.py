"""Keeping a conversation within the model's context window: the gauge, and compaction.

Before each request of the primary thread, the engine estimates its input tokens. Past ``compact_at`` of
the window (0.8 unless the model config says otherwise; the rest leaves the answer room), it compacts, in
a ``session.context_compacted`` event the notebook shows: first the old tool results (those before the
latest turn) are cleared to a stub; if the request is still past the threshold, the model summarises the
conversation before the latest turn (which stays verbatim) into one entry that replaces it for every later
request (``engine/history.py``). The summary request is billed and spanned like any request
(:meth:`TurnRunner.request_once`) and goes through the provider, so a recording replays it. A request that
cannot be brought under the window (the latest turn alone is larger) is refused before anything is sent,
saying what to do; nothing is ever dropped without an event that says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import TurnFailedError
from ..events import (
    AgentToolResult,
    AgentToolUse,
    ErrorInfo,
    Event,
    ImageBlock,
    SessionContextCompacted,
    SessionError,
    SpanModelRequestEnd,
    SpanModelRequestStart,
    TextBlock,
)
from ..providers.base import Message, ModelRequest, TextPart, ToolResultPart
from ..usage import Usage, price_usage
from .budget import MIN_USEFUL_OUTPUT, model_pricing
from .history import CLEARED_TOOL_RESULT, HISTORY_EVENT_TYPES, summary_text
from .log import SessionLog
from .request import system_prompt

if TYPE_CHECKING:
    from ..providers.registry import ResolvedModel
    from .deps import TurnDeps
    from .runner import TurnRunner

__all__ = [
    "GAUGE_EVENT_TYPES",
    "SUMMARY_SYSTEM",
    "Gauge",
    "compact",
    "compact_now",
    "context_window",
    "fit_window",
    "window_gauge",
]

SUMMARY_SYSTEM = (
    "You write the summary that replaces the earlier part of a conversation between a user and an AI "
    "agent working in a notebook, because the conversation outgrew the model's context window. The agent "
    "will see only your summary in place of that part, so keep what it needs to go on: the user's goals "
    "and instructions, decisions made, facts and results found (names, numbers, file paths, code that "
    "matters), what was tried and failed, and what remains to do. Write plain prose and short lists; do "
    "not address the user."
)
_SUMMARY_REQUEST = "Summarise the conversation above, as your instructions say."
_STUB_MIN_CHARS = 200
"""A tool result shorter than this is left as it is: its stub would save nothing."""


@dataclass(frozen=True, slots=True)
class Gauge:
    """How much of the model's window a request uses."""

    tokens: int
    window: int

    @property
    def share(self) -> float:
        return self.tokens / self.window

    def describe(self) -> str:
        return f"{self.share:.0%} of the {_short(self.window)}-token context window"


def context_window(resolved: ResolvedModel) -> int | None:
    """The model's window: the model config's ``context_window``, else what the provider knows."""
    return resolved.config.context_window or resolved.provider.context_window(resolved.model)


GAUGE_EVENT_TYPES = ("span.model_request_start", "span.model_request_end", "session.context_compacted")
"""The events :func:`window_gauge` reads (a caller asks the store for these only)."""


def window_gauge(events: Iterable[Event]) -> Gauge | None:
    """The primary thread's latest answered request as a share of its model's window (input as the provider
    reported it, and output, which the next request carries), or a compaction since, which left the
    conversation at its ``tokens_after``; None when no request with a known window was answered."""
    window: int | None = None
    latest: Gauge | None = None
    for event in events:
        if event.thread_id is not None:
            continue
        if isinstance(event, SpanModelRequestStart):
            window = event.context_window
        elif isinstance(event, SpanModelRequestEnd) and not event.is_error and window:
            usage = event.model_usage
            latest = Gauge(usage.total_input_tokens + usage.output_tokens, window)
        elif isinstance(event, SessionContextCompacted) and event.window > 1:
            latest = Gauge(event.tokens_after, event.window)
    return latest


async def fit_window(runner: TurnRunner, resolved: ResolvedModel, request: ModelRequest) -> ModelRequest:
    """``request``, compacted first when its footprint passes the threshold of the window. Raises
    TurnFailedError (its ``session.error`` emitted) when it cannot be brought under the window."""
    window = context_window(resolved)
    if window is None:
        return request
    provider = resolved.provider
    limit = resolved.config.compact_at * window
    if provider.estimate_input_tokens(request) <= limit:
        return request
    log = runner.log
    for step in ("clear", "summarise"):
        event = await compact(runner, resolved, request, trigger="threshold", steps=(step,))
        if event is not None:
            history = log.history(runner.thread_id)
            request = request.model_copy(update={"messages": history.messages(images=resolved.config.images)})
            if event.tokens_after <= limit:
                return request
    tokens = provider.estimate_input_tokens(request)
    if tokens + min(request.settings.max_tokens, MIN_USEFUL_OUTPUT) <= window:
        return request  # past the threshold but it fits: the next turn can compact what this one adds
    message = (
        f"this turn cannot be sent: it needs about {tokens:,} tokens and the model's context window holds "
        f"{window:,}, even with the conversation before it compacted. Split the cell into smaller ones, "
        "shorten what it includes (a large file or output), or use a model with a larger window "
        "(model={'id': ..., 'context_window': ...} when the provider does not know it)"
    )
    info = ErrorInfo(type="context_window_exceeded", message=message, retry_status="terminal")
    log.emit(log.make(SessionError, thread_id=runner.thread_id, error=info))
    raise TurnFailedError(message)


async def compact(
    runner: TurnRunner,
    resolved: ResolvedModel,
    request: ModelRequest,
    *,
    trigger: Literal["threshold", "manual"],
    instructions: str | None = None,
    steps: tuple[str, ...] = ("clear", "summarise"),
) -> SessionContextCompacted | None:
    """Compact the runner's thread's conversation and emit the event; None when there was nothing to do.
    ``request`` is the one about to be sent (its system prompt and tools are measured with it). On a
    threshold, the primary thread's latest turn stays verbatim; by hand (``%compact``) the summary covers
    everything. A multi-agent thread has one task, and what grows is its own work on it: its summary covers
    everything, task included, and only the results its model has not seen yet are never cleared."""
    log = runner.log
    thread = runner.thread_id
    window = context_window(resolved) or 0
    kept_from: str | None = None
    turn_id: str | None = None  # a thread's events leave the path with the primary turn they ran in
    if thread is None:
        turns = log.path().turns
        if not turns:
            return None
        kept_from = turns[-1].id if trigger == "threshold" else None
        covered = turns[:-1] if kept_from is not None else turns
        if not covered:
            return None
        turn_id = covered[-1].id
    provider = resolved.provider
    before = provider.estimate_input_tokens(request)
    last = request.messages[-1] if request.messages else None
    unseen = (
        {p.call_id for p in last.content if isinstance(p, ToolResultPart)} if last and last.role == "user" else set()
    )
    last_event_id, old_results = _covered_events(log, thread, kept_from, unseen)
    if last_event_id is None:
        return None
    fields = {
        "thread_id": thread,
        "trigger": trigger,
        "last_event_id": last_event_id,
        "turn_id": turn_id,
        "instructions": instructions,
        "window": max(window, 1),
        "tokens_before": before,
    }
    if "clear" in steps and trigger == "threshold":
        if not old_results:
            return None
        cleared = _with_stubs(request, set(old_results.values()))
        event = log.make(
            SessionContextCompacted,
            cleared_tool_results=list(old_results),
            tokens_after=provider.estimate_input_tokens(cleared),
            **fields,
        )
        log.emit(event)
        return event
    prefix = log.history(thread).before(kept_from)
    if not prefix:
        return None
    ask = _SUMMARY_REQUEST + (f" Keep in particular: {instructions}" if instructions else "")
    max_tokens = min(request.settings.max_tokens, max(256, window // 8)) if window else request.settings.max_tokens
    response = await runner.request_once(
        resolved.config,
        system=SUMMARY_SYSTEM,
        messages=_asking(prefix, ask),
        tools=request.tools,
        settings={"max_tokens": max_tokens, "tool_choice": "none" if request.tools else None},
    )
    summary = response.text.strip() or "(the model wrote no summary)"
    opening = Message(role="user", content=[TextPart(text=summary_text(summary))])
    kept = request.messages[len(prefix) :] if kept_from is not None else []
    after = provider.estimate_input_tokens(request.model_copy(update={"messages": [opening, *kept]}))
    pricing = model_pricing(resolved)
    usage: Usage = price_usage(pricing, response.usage) if pricing is not None else response.usage
    event = log.make(
        SessionContextCompacted,
        kept_from=kept_from,
        summary=summary,
        tokens_after=after,
        usage=usage,
        **fields,
    )
    log.emit(event)
    return event


async def compact_now(
    log: SessionLog, deps: TurnDeps, instructions: str | None = None
) -> SessionContextCompacted | None:
    """Compact by hand, between turns (``%compact``): the model summarises the whole conversation on the
    active path, keeping what ``instructions`` asks. None when there is nothing to compact yet."""
    from .runner import TurnRunner

    runner = TurnRunner(log, deps)
    agent = log.agent
    resolved = deps.resolve_model(agent.model)
    request = ModelRequest(
        model=resolved.model,
        system=system_prompt(log, deps, agent, primary=True),
        messages=log.history(None).messages(),
        tools=runner.offered_tools(agent),
        server_tools=agent.server_tools,
        settings=resolved.config.settings(),
    )
    return await compact(runner, resolved, request, trigger="manual", instructions=instructions)


def _covered_events(
    log: SessionLog, thread: str | None, kept_from: str | None, unseen: set[str]
) -> tuple[str | None, dict[str, str]]:
    """The last history event of ``thread`` before ``kept_from`` (or the last one), and the tool results
    before it worth clearing, not cleared yet and not ``unseen`` (call ids whose results the model has not
    read yet) (event id: the provider's call id)."""
    last: str | None = None
    call_ids: dict[str, str] = {}
    results: dict[str, str] = {}
    for event in log.events(types=HISTORY_EVENT_TYPES):
        if event.thread_id != thread:
            continue
        if event.id == kept_from:
            break
        last = event.id
        if isinstance(event, AgentToolUse):
            call_ids[event.id] = event.call_id
        elif isinstance(event, AgentToolResult) and _chars(event.content) >= _STUB_MIN_CHARS:
            call_id = call_ids.get(event.tool_use_id, event.tool_use_id)
            if call_id not in unseen:
                results[event.id] = call_id
        elif isinstance(event, SessionContextCompacted):
            for cleared in event.cleared_tool_results:
                results.pop(cleared, None)
    return last, results


def _with_stubs(request: ModelRequest, call_ids: set[str]) -> ModelRequest:
    """``request`` as it reads with those calls' results cleared (measured before the event is made)."""
    stub = [TextBlock(text=CLEARED_TOOL_RESULT)]
    messages = [
        Message(
            role=message.role,
            content=[
                part.model_copy(update={"content": stub})
                if isinstance(part, ToolResultPart) and part.call_id in call_ids
                else part
                for part in message.content
            ],
        )
        for message in request.messages
    ]
    return request.model_copy(update={"messages": messages})


def _chars(content: list[TextBlock | ImageBlock]) -> int:
    return sum(len(block.text) for block in content if isinstance(block, TextBlock))


def _asking(prefix: list[Message], ask: str) -> list[Message]:
    """``prefix`` followed by the request for its summary (joined to a last user message: roles alternate)."""
    if prefix[-1].role == "user":
        last = prefix[-1]
        return [*prefix[:-1], Message(role="user", content=[*last.content, TextPart(text=ask)])]
    return [*prefix, Message(role="user", content=[TextPart(text=ask)])]


def _short(tokens: int) -> str:
    return f"{tokens // 1000:,}k" if tokens >= 10_000 else f"{tokens:,}"
