"""An external agent's ``session/update``s as our events, for one turn.

Message and thought chunks stream as previews (``event_start``/``event_delta``) and become one
``agent.message`` or ``agent.thinking`` when something else begins; a ``tool_call`` is an ``agent.tool_use``
(its title as the name, its raw input as the input) and the ``tool_call_update`` that completes or fails it
the ``agent.tool_result`` (its text, terminal output and diffs, drawn as a unified diff); a ``plan`` is a
checklist message; a ``usage_update``'s cumulative cost becomes the session's usage. Every consumer of the
event stream (the widget, the saved turn, recordings, the cost meter) then shows the external agent's turn
as it shows ours.
"""

from __future__ import annotations

import asyncio
import difflib
import json
from decimal import Decimal
from typing import Any, Literal

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)

from ..engine.log import SessionLog
from ..events import (
    AgentMessage,
    AgentThinking,
    AgentToolResult,
    AgentToolUse,
    ContentDelta,
    EventDelta,
    EventStart,
    PreviewRef,
    TextBlock,
)
from ..ids import new_id
from ..usage import Usage

__all__ = ["TurnUpdates"]

_PLAN_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class TurnUpdates:
    """Folds one turn's updates into the session's log."""

    def __init__(self, log: SessionLog, reported_cost: Decimal | None) -> None:
        self.log = log
        self._open: tuple[Literal["agent.message", "agent.thinking"], str, list[str]] | None = None
        self._uses: dict[str, AgentToolUse] = {}
        self._pending: dict[str, ToolCallStart] = {}
        """Calls announced and not shown yet (see :meth:`_start_tool`)."""
        """The agent's tool call id -> our agent.tool_use, for the calls not answered yet."""
        self._calls: dict[str, ToolCallStart] = {}
        """What each of this turn's tool calls said of itself (title, kind, raw input), for approvals."""
        self.reported_cost = reported_cost
        """The agent's cumulative cost as last reported (its usage updates carry the session's total)."""
        self.seen: list[Any] | None = None
        """Every update of the turn, in order, when the exchange is being recorded."""
        self.spent = Usage()
        """What this turn cost, as the agent reported it."""
        self.over_budget = asyncio.Event()
        """Set when the agent's reported cost reached the session's budget: the turn is cancelled."""

    # ------------------------------------------------------------------------------------------ updates

    def apply(self, update: Any) -> None:
        if self.seen is not None:
            self.seen.append(update)
        match update:
            case AgentMessageChunk(content=TextContentBlock(text=text)):
                self._stream("agent.message", text)
            case AgentThoughtChunk(content=TextContentBlock(text=text)):
                self._stream("agent.thinking", text)
            case ToolCallStart():
                self._start_tool(update)
            case ToolCallProgress():
                self._progress(update)
            case AgentPlanUpdate(entries=entries):
                self.close_text()
                self.flush_tools()
                lines = [f"- {_PLAN_MARKS.get(e.status, '[ ]')} {e.content}" for e in entries]
                self.log.emit(self.log.make(AgentMessage, content=[TextBlock(text="**Plan**\n\n" + "\n".join(lines))]))
            case UsageUpdate(cost=cost) if cost is not None and cost.currency.upper() == "USD":
                total = Decimal(str(cost.amount))
                spent = total - (self.reported_cost or Decimal(0))
                self.reported_cost = total
                if spent > 0:
                    usage = Usage(list_cost=spent, uncached_cost=spent)
                    self.spent = self.spent + usage
                    self.log.add_usage(usage)
                    room = self.log.budget_room()
                    if room is not None and room <= 0:
                        self.over_budget.set()
            case _:
                pass  # commands, modes, session info: nothing of the turn's own

    def _stream(self, kind: Literal["agent.message", "agent.thinking"], text: str) -> None:
        if not text:
            return
        self.flush_tools()
        if self._open is None or self._open[0] != kind:
            self.close_text()
            event_id = new_id("sevt")
            self._open = (kind, event_id, [])
            self.log.emit(EventStart(event=PreviewRef(type=kind, id=event_id)))
        _, event_id, parts = self._open
        parts.append(text)
        if kind == "agent.message":  # thinking previews are start-only
            self.log.emit(EventDelta(event_id=event_id, delta=ContentDelta(index=0, content=TextBlock(text=text))))

    def close_text(self, *, interrupted: bool = False) -> None:
        """Turn the text streaming now into its buffered event."""
        if self._open is None:
            return
        kind, event_id, parts = self._open
        self._open = None
        log, text = self.log, "".join(parts)
        if kind == "agent.message":
            log.emit(log.make(AgentMessage, id=event_id, content=[TextBlock(text=text)], interrupted=interrupted))
        else:
            log.emit(log.make(AgentThinking, id=event_id, thinking=text))

    def _start_tool(self, call: ToolCallStart) -> None:
        # Held until it runs, is asked about, or something else comes: agents often announce a call before its
        # input has streamed (Claude Code's "Write", then "Write /path" with the input), and a card is one event.
        self.close_text()
        self._calls[call.tool_call_id] = call
        self._pending[call.tool_call_id] = call
        if call.status in ("in_progress", "completed", "failed"):
            self._emit_use(call.tool_call_id)
        if call.status in ("completed", "failed"):
            self._finish(call.tool_call_id, call.status == "failed", call.content or [], call.raw_output)

    def _progress(self, update: ToolCallProgress) -> None:
        call_id = update.tool_call_id
        if call_id in self._pending:
            self.merge(update)
            if update.status in ("in_progress", "completed", "failed"):
                self._emit_use(call_id)
        if update.status in ("completed", "failed") and call_id in self._uses:
            self._finish(call_id, update.status == "failed", update.content or [], update.raw_output)

    def merge(self, update: Any) -> None:
        """What an update (or a permission request) says of a call not shown yet: its title, kind, input."""
        call_id = update.tool_call_id
        known = self._pending.get(call_id)
        fields = update.model_dump(exclude_none=True, include={"title", "kind", "raw_input", "locations"})
        if known is None:
            if call_id in self._uses:
                return
            known = ToolCallStart.model_validate(
                {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": call_id}
            )
        merged = known.model_copy(update={k: getattr(update, k) for k in fields})
        self._pending[call_id] = self._calls[call_id] = merged

    def flush_tools(self) -> None:
        """Show every call announced and not shown yet."""
        for call_id in list(self._pending):
            self._emit_use(call_id)

    def _emit_use(self, call_id: str) -> AgentToolUse | None:
        call = self._pending.pop(call_id, None)
        if call is None:
            return self._uses.get(call_id)
        raw = call.raw_input
        raw = raw if isinstance(raw, dict) else {} if raw is None else {"input": raw}
        extra: dict[str, Any] = {"kind": call.kind} if call.kind else {}
        if call.locations:
            extra["locations"] = [loc.path for loc in call.locations]
        use = self.log.make(AgentToolUse, call_id=call.tool_call_id, name=call.title, input={**raw, **extra})
        self.log.emit(use)
        self._uses[call.tool_call_id] = use
        return use

    def _finish(self, call_id: str, failed: bool, content: list[Any], raw_output: Any) -> None:
        use = self._uses.pop(call_id)
        text = "\n".join(filter(None, (_content_text(c) for c in content)))
        if not text and raw_output is not None:
            text = raw_output if isinstance(raw_output, str) else json.dumps(raw_output, default=str)
        blocks = [TextBlock(text=text)] if text else []
        log = self.log
        code = "TOOL_FAILED" if failed else None
        log.emit(log.make(AgentToolResult, tool_use_id=use.id, content=blocks, is_error=failed, error_code=code))

    # ------------------------------------------------------------------------------------------ reading

    def tool_use(self, call_id: str) -> AgentToolUse | None:
        """Our ``agent.tool_use`` for the agent's call (shown now if it was held), while it is unanswered."""
        return self._emit_use(call_id)

    def call(self, call_id: str) -> ToolCallStart | None:
        return self._calls.get(call_id)

    def end(self, *, interrupted: bool = False, reason: str = "") -> None:
        """The turn ended: close its text, and answer the calls the agent left without a result (a card
        must not spin forever)."""
        self.close_text(interrupted=interrupted)
        self.flush_tools()
        log = self.log
        for use in list(self._uses.values()):
            why = reason or ("interrupted" if interrupted else "the agent reported no result for this call")
            code = "INTERRUPTED" if interrupted else "TOOL_FAILED"
            result = log.make(
                AgentToolResult, tool_use_id=use.id, content=[TextBlock(text=why)], is_error=True, error_code=code
            )
            log.emit(result)
        self._uses.clear()


def _content_text(content: Any) -> str:
    match content:
        case ContentToolCallContent(content=TextContentBlock(text=text)):
            return text
        case FileEditToolCallContent(path=path, old_text=old, new_text=new):
            before = (old or "").splitlines(keepends=True)
            after = new.splitlines(keepends=True)
            diff = difflib.unified_diff(before, after, f"a/{path}", f"b/{path}")
            return "".join(line if line.endswith("\n") else line + "\n" for line in diff).rstrip("\n")
        case _:
            return ""
