"""A turn as a reader sees it: a pure fold over stream items, rendered as Markdown or plain text.

The kernel's simple renderer streams it, the static fallback of a saved notebook prints it, and
``agentcell run`` reports it; the same fold serves all three, live and from stored events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal

from ._format import format_cost, format_usd
from .events import (
    AgentCustomToolUse,
    AgentMessage,
    AgentThinking,
    AgentToolResult,
    AgentToolUse,
    EventDelta,
    EventStart,
    ImageBlock,
    SessionError,
    SessionStatusIdle,
    SessionThreadCreated,
    SessionThreadStatusIdle,
    SessionUsageEvent,
    SpanModelRequestEnd,
    StreamItem,
    TextBlock,
    UserMessage,
)
from .usage import Budget, Usage

__all__ = ["ToolCard", "TurnView", "format_usd"]

MAX_TOOL_TEXT = 2_000
"""Characters of a tool's input or output shown in a transcript; the event log keeps all of it."""


@dataclass
class ToolCard:
    tool_use_id: str
    name: str
    input: dict[str, object]
    status: str = "running"
    """pending, awaiting approval, running, completed, failed, denied; custom tools wait for the client."""
    output: list[TextBlock | ImageBlock] = field(default_factory=list)


@dataclass
class TurnView:
    """Folds the items of one turn. ``apply`` is the only way in; rendering reads the state."""

    prompt: str = ""
    blocks: list[tuple[str, str]] = field(default_factory=list)
    """In order: ("message", event id) / ("thinking", event id) / ("tool", tool_use_id)."""
    texts: dict[str, str] = field(default_factory=dict)
    interrupted: set[str] = field(default_factory=set)
    thinking: dict[str, str] = field(default_factory=dict)
    tools: dict[str, ToolCard] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    turn_usage: Usage = field(default_factory=Usage)
    session_usage: Usage | None = None
    budget: Budget | None = None
    stop_reason: str | None = None
    previewed: set[str] = field(default_factory=set)
    """Ids opened by a preview and not yet confirmed by their buffered event."""
    threads: dict[str, TurnView] = field(default_factory=dict)
    """Sub-agent threads of the turn, each its own fold, shown nested under the tool call that spawned it."""
    thread_titles: dict[str, str] = field(default_factory=dict)
    thread_of_tool: dict[str, str] = field(default_factory=dict)
    """tool_use_id of a spawn call -> the thread it created."""
    thread_status: dict[str, str] = field(default_factory=dict)
    thread_id: str | None = None
    """The thread this view folds (None: the primary thread); items of other threads nest."""

    def apply(self, item: StreamItem) -> None:
        if not self._apply_thread(item):
            self._apply_own(item)

    def _apply_thread(self, item: StreamItem) -> bool:
        """Fold a sub-agent thread's item into that thread's view; False for the coordinator's own items."""
        thread_id = getattr(item, "thread_id", None)
        if isinstance(item, SessionThreadCreated):
            self.thread_titles[item.session_thread_id] = f"{item.agent_name} ({item.model})"
            if item.tool_use_id is not None:
                self.thread_of_tool[item.tool_use_id] = item.session_thread_id
            self.threads.setdefault(item.session_thread_id, TurnView(thread_id=item.session_thread_id))
            return True
        if thread_id == self.thread_id or not isinstance(thread_id, str):
            return False
        if isinstance(item, SessionThreadStatusIdle):
            self.thread_status[thread_id] = item.stop_reason.type
        self.threads.setdefault(thread_id, TurnView(thread_id=thread_id)).apply(item)
        if isinstance(item, SpanModelRequestEnd):  # the turn pays for its threads too
            self.turn_usage = self.turn_usage + item.model_usage
        return True

    def _apply_own(self, item: StreamItem) -> None:
        match item:
            case UserMessage():
                self.prompt = "".join(b.text for b in item.content if isinstance(b, TextBlock))
            case EventStart():
                kind = "message" if item.event.type == "agent.message" else "thinking"
                self._open(kind, item.event.id)
                self.previewed.add(item.event.id)
                if kind == "message":
                    self.texts.setdefault(item.event.id, "")
            case EventDelta():
                if isinstance(item.delta.content, TextBlock) and item.event_id in self.texts:
                    self.texts[item.event_id] += item.delta.content.text
            case AgentMessage():
                self._open("message", item.id)
                self.previewed.discard(item.id)
                self.texts[item.id] = "".join(b.text for b in item.content if isinstance(b, TextBlock))
                if item.interrupted:
                    self.interrupted.add(item.id)
            case AgentThinking():
                self._open("thinking", item.id)
                self.previewed.discard(item.id)
                self.thinking[item.id] = item.thinking or ("(redacted)" if item.redacted_data else "")
            case AgentToolUse() | AgentCustomToolUse():
                self._open("tool", item.id)
                status = "waiting for the client" if isinstance(item, AgentCustomToolUse) else "running"
                if isinstance(item, AgentToolUse) and item.evaluated_permission == "ask":
                    status = "awaiting approval"
                self.tools[item.id] = ToolCard(item.id, item.name, dict(item.input), status)
            case AgentToolResult():
                card = self.tools.get(item.tool_use_id)
                if card is not None:
                    card.output = list(item.content)
                    card.status = "failed" if item.is_error else "completed"
                    text = " ".join(b.text for b in item.content if isinstance(b, TextBlock)).lower()
                    if item.is_error and "declined" in text:
                        card.status = "denied"
            case SpanModelRequestEnd():
                self.turn_usage = self.turn_usage + item.model_usage
                if item.is_error:  # a failed attempt's previews are abandoned: a retry streams afresh
                    self.blocks = [(kind, key) for kind, key in self.blocks if key not in self.previewed]
                    self.previewed.clear()
            case SessionUsageEvent():
                self.session_usage = item.usage
                self.budget = item.budget
            case SessionError():
                self.errors.append(f"{item.error.type}: {item.error.message}")
            case SessionStatusIdle():
                self.stop_reason = item.stop_reason.type
            case _:
                pass

    def _open(self, kind: str, key: str) -> None:
        if (kind, key) not in self.blocks:
            self.blocks.append((kind, key))

    @property
    def text(self) -> str:
        """The agent's messages, joined by blank lines."""
        return "\n\n".join(self.texts[key] for kind, key in self.blocks if kind == "message" and self.texts[key])

    # ------------------------------------------------------------------------------------------ rendering

    def usage_line(self) -> str:
        u = self.turn_usage
        parts = [
            f"in {u.input_tokens:,}",
            f"out {u.output_tokens:,}",
            f"cache read {u.cache_read_input_tokens:,}",
            f"cache write {u.cache_creation_input_tokens:,}",
            f"turn {format_cost(u)}",
        ]
        if self.session_usage is not None:
            parts.append(f"session {format_cost(self.session_usage)}")
        if self.budget is not None:
            spent = self.session_usage.list_cost if self.session_usage else Decimal(0)
            parts.append(
                f"budget {format_usd(self.budget.max_list_cost)} ({format_usd(self.budget.remaining(spent))} left)"
            )
        return " · ".join(parts)

    def to_markdown(self, *, final: bool = False) -> str:
        out: list[str] = []
        for kind, key in self.blocks:
            if kind == "message":
                text = self.texts.get(key, "")
                if text:
                    out.append(text + (" _(interrupted)_" if key in self.interrupted else ""))
            elif kind == "thinking":
                thought = self.thinking.get(key)
                out.append("> 💭 _thinking…_" if thought is None else _quote(f"💭 {_clip(thought)}"))
            else:
                out.append(self._tool_markdown(self.tools[key]))
                thread = self.thread_of_tool.get(key)
                if thread is not None:
                    out.append(self._thread_markdown(thread))
        for thread in self.threads:
            if thread not in self.thread_of_tool.values():
                out.append(self._thread_markdown(thread))
        for error in self.errors:
            out.append(f"> ⚠️ {error}")
        if final:
            stop = f"stop: {self.stop_reason}" if self.stop_reason else ""
            out.append(f"<sub>{self.usage_line()}{' · ' + stop if stop else ''}</sub>")
        return "\n\n".join(out) if out else "_…_"

    def _thread_markdown(self, thread: str) -> str:
        """A collapsible section: GitHub, nbviewer and JupyterLab render <details> in Markdown."""
        title = self.thread_titles.get(thread, thread)
        status = self.thread_status.get(thread, "running")
        body = self.threads[thread].to_markdown()
        return f"<details><summary>🧵 thread {title} — {status}</summary>\n\n{body}\n\n</details>"

    @staticmethod
    def _tool_markdown(card: ToolCard) -> str:
        code = card.input.get("code") if card.name == "python" else None
        shown = str(code) if isinstance(code, str) else json.dumps(card.input, indent=2, ensure_ascii=False)
        lang = "python" if isinstance(code, str) else "json"
        lines = [f"🔧 **{card.name}** — {card.status}", f"```{lang}\n{_clip(shown)}\n```"]
        for block in card.output:
            if isinstance(block, TextBlock) and block.text:
                lines.append(f"```text\n{_clip(block.text)}\n```")
            elif isinstance(block, ImageBlock):
                lines.append(f"![output](data:{block.source.media_type};base64,{block.source.data})")
        return "\n".join(lines)

    def to_text(self) -> str:
        out = [self.text] if self.text else []
        out += [f"[{card.name}: {card.status}]" for card in self.tools.values()]
        out += [f"error: {error}" for error in self.errors]
        out.append(self.usage_line())
        return "\n".join(out)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TOOL_TEXT else text[:MAX_TOOL_TEXT] + f"\n… ({len(text):,} characters)"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])
