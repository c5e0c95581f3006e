"""A turn as a reader sees it: a pure fold over stream items.

The kernel's Markdown renderer streams it, the static fallbacks of a saved notebook (Markdown, HTML) print
it, and ``agentcell run`` reports it; the same fold serves all of them, live and from stored events. The
widget's fold (``widgets/js/src/fold.ts``) reads the same fields; see :mod:`.statuses` for the rules both
follow. Rendering lives in :mod:`.markdown` and :mod:`.fallback_html`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..engine.workflows import WorkflowRun, workflow_runs
from ..events import (
    AgentCustomToolUse,
    AgentMessage,
    AgentServerToolResult,
    AgentServerToolUse,
    AgentThinking,
    AgentToolResult,
    AgentToolUse,
    ContentBlock,
    EventDelta,
    EventStart,
    FileRubric,
    SessionContextCompacted,
    SessionError,
    SessionOutcomeUpdated,
    SessionSkillActivated,
    SessionStatusIdle,
    SessionSteerUndelivered,
    SessionThreadCreated,
    SessionThreadStatusIdle,
    SessionUsageEvent,
    SpanModelRequestEnd,
    SpanModelRequestStart,
    SpanOutcomeEvaluationEnd,
    SpanOutcomeEvaluationStart,
    StreamItem,
    TextBlock,
    UserDefineOutcome,
    UserMessage,
    UserToolConfirmation,
    is_preview,
)
from ..records.cell_events import AgentCellProposed
from ..records.notebook_context import NotebookContext
from ..records.workflow_events import (
    WorkflowRunCompleted,
    WorkflowRunFailed,
    WorkflowRunStarted,
    WorkflowRunStepCompleted,
    WorkflowRunStepFailed,
    WorkflowRunStepStarted,
)
from ..usage import Budget, Usage
from .statuses import ToolState, origin, thread_status, tool_status, turn_status

__all__ = ["OutcomeState", "ToolState", "TurnFold", "Verdict"]


_RunEvent = (
    WorkflowRunStarted
    | WorkflowRunStepStarted
    | WorkflowRunStepCompleted
    | WorkflowRunStepFailed
    | WorkflowRunCompleted
    | WorkflowRunFailed
)

_ToolEvent = (
    AgentToolUse
    | AgentCustomToolUse
    | AgentServerToolUse
    | UserToolConfirmation
    | AgentToolResult
    | AgentServerToolResult
)


@dataclass
class Verdict:
    """The grader's verdict on one revision cycle; ``result`` is None while it grades."""

    iteration: int
    result: str | None = None
    explanation: str = ""


@dataclass
class OutcomeState:
    outcome_id: str
    description: str
    max_iterations: int
    rubric: str = ""
    status: str = "pending"
    """The latest ``session.outcome_updated``'s ``outcome.status`` (see ``events.OutcomeStatus``)."""
    iteration: int = 0
    explanation: str | None = None
    verdicts: list[Verdict] = field(default_factory=list)

    def verdict(self, iteration: int) -> Verdict:
        found = next((v for v in self.verdicts if v.iteration == iteration), None)
        if found is None:
            found = Verdict(iteration)
            self.verdicts.append(found)
        return found


@dataclass
class TurnFold:
    """Folds the items of one turn. ``apply`` is the only way in; rendering reads the state."""

    prompt: str = ""
    blocks: list[tuple[str, str]] = field(default_factory=list)
    """In order: ("message", event id) / ("thinking", event id) / ("tool", tool_use_id) / ("note", event id) /
    ("compaction", event id) / ("proposal", event id)."""
    compactions: dict[str, SessionContextCompacted] = field(default_factory=dict)
    proposals: dict[str, AgentCellProposed] = field(default_factory=dict)
    """Cells the agent proposed (``notebook_edit``), by event id: each a card with what to do with it."""
    texts: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    """What happened around the agent's work: guidance steered in, guidance no request took."""
    interrupted: set[str] = field(default_factory=set)
    thinking: dict[str, str] = field(default_factory=dict)
    tools: dict[str, ToolState] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    outcomes: dict[str, OutcomeState] = field(default_factory=dict)
    turn_usage: Usage = field(default_factory=Usage)
    session_usage: Usage | None = None
    budget: Budget | None = None
    stop_reason: str | None = None
    """The ``type`` of the turn's stop reason once ``session.status_idle`` arrived (a thread's fold: of its
    ``session.thread_status_idle``)."""
    turn_over: bool = False
    """The turn's ``session.status_idle`` arrived: calls still unanswered will not run in it."""
    previewed: set[str] = field(default_factory=set)
    """Ids opened by a preview and not yet confirmed by their buffered event."""
    threads: dict[str, TurnFold] = field(default_factory=dict)
    """Sub-agent threads of the turn, each its own fold, shown nested under the tool call that spawned it."""
    thread_titles: dict[str, str] = field(default_factory=dict)
    thread_of_tool: dict[str, str] = field(default_factory=dict)
    """tool_use_id of a spawn call -> the thread it created."""
    thread_id: str | None = None
    """The thread this fold covers (None: the primary thread); items of other threads nest."""
    context_turns: int | None = None
    """How many turns of the active path the turn's requests carried before its own."""
    context_tokens: int | None = None
    """The input tokens of the turn's first answered request: the context it started from."""
    notebook_context: NotebookContext | None = None
    """What the turn took from the notebook (code cells run since the previous turn, variables)."""
    context_window: int | None = None
    """The model's context window, when known: the footer says how much of it the turn's last request used."""
    window_tokens: int | None = None
    """The input and output tokens of the turn's last answered request (what the next one carries)."""
    ended_at: datetime | None = None
    """When the turn's ``session.status_idle`` arrived."""
    sources: set[str] = field(default_factory=set)
    """Where the turn's answers came from when the notebook's recording was consulted (see :attr:`origin`)."""
    workflow_events: list[_RunEvent] = field(default_factory=list)
    """The ``workflow_run.*`` events of the turn, whichever thread started the run (see :attr:`workflow_runs`)."""
    _runs: tuple[int, list[WorkflowRun]] = field(default=(0, []), init=False, repr=False, compare=False)

    def apply(self, item: StreamItem) -> None:
        if isinstance(item, _RunEvent):  # a run started by a thread's tool is still the turn's run
            self.workflow_events.append(item)
            return
        if not self._apply_thread(item):
            self._apply_own(item)
        if not is_preview(item):
            self._restatus()

    @property
    def workflow_runs(self) -> list[WorkflowRun]:
        """The turn's workflow runs, folded by the engine's own rules (refolded when an event arrived)."""
        if self._runs[0] != len(self.workflow_events):
            self._runs = (len(self.workflow_events), workflow_runs(self.workflow_events))
        return self._runs[1]

    @property
    def workflow_threads(self) -> set[str]:
        """The threads that ran workflow step items: the progress view shows them under their steps."""
        return {item.thread_id for run in self.workflow_runs for s in run.steps for item in s.items if item.thread_id}

    @property
    def status(self) -> str:
        """The turn's (or this thread's) status, in the vocabulary of :mod:`.statuses`."""
        return turn_status(self.stop_reason) if self.thread_id is None else thread_status(self.stop_reason)

    @property
    def thread_status(self) -> dict[str, str]:
        return {thread: fold.status for thread, fold in self.threads.items()}

    def _apply_thread(self, item: StreamItem) -> bool:
        """Fold a sub-agent thread's item into that thread's fold; False for this fold's own items."""
        thread_id = getattr(item, "thread_id", None)
        if isinstance(item, SessionThreadCreated):
            self.thread_titles[item.session_thread_id] = f"{item.agent_name} ({item.model})"
            if item.tool_use_id is not None:
                self.thread_of_tool[item.tool_use_id] = item.session_thread_id
            self._thread(item.session_thread_id)
            return True
        if thread_id == self.thread_id or not isinstance(thread_id, str):
            return False
        self._thread(thread_id).apply(item)
        if isinstance(item, SpanModelRequestEnd):  # the turn pays for its threads too
            self.turn_usage = self.turn_usage + item.model_usage
        return True

    def _thread(self, thread_id: str) -> TurnFold:
        fold = self.threads.get(thread_id)
        if fold is None:
            fold = self.threads[thread_id] = TurnFold(thread_id=thread_id, turn_over=self.turn_over)
        return fold

    def _apply_own(self, item: StreamItem) -> None:
        match item:
            case UserMessage() if item.steered:
                self._note(item.id, "Steer delivered: " + _text(item.content))
            case UserMessage():
                self.prompt = _text(item.content)
                self.notebook_context = item.context if item.context is not None and not item.context.empty else None
            case SessionSteerUndelivered():
                self._note(item.id, "Steer not delivered (the turn ended before the next step): " + _text(item.content))
            case EventStart():
                kind = "message" if item.event.type == "agent.message" else "thinking"
                self._open(kind, item.event.id, preview=True)
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
            case AgentToolUse() | AgentCustomToolUse() | AgentServerToolUse():
                self._apply_tool(item)
            case UserToolConfirmation() | AgentToolResult() | AgentServerToolResult():
                self._apply_tool(item)
            case SpanModelRequestStart() | SpanModelRequestEnd():
                self._apply_span(item)
            case _:
                self._apply_session(item)

    def _apply_session(self, item: StreamItem) -> None:
        match item:
            case SessionUsageEvent():
                self.session_usage = item.usage
                self.budget = item.budget
            case SessionError():
                self.errors.append(f"{item.error.type}: {item.error.message}")
            case SessionStatusIdle():
                self.stop_reason = item.stop_reason.type
                self.ended_at = item.created_at
                self._end_turn()
            case SessionThreadStatusIdle():
                self.stop_reason = item.stop_reason.type
            case SessionSkillActivated():
                if (tool := self.tools.get(item.tool_use_id)) is not None:
                    tool.skill = item
            case SessionContextCompacted():
                self._compacted(item)
            case AgentCellProposed():
                self._open("proposal", item.id)
                self.proposals[item.id] = item
            case _:
                self._apply_outcome(item)

    def _apply_tool(self, item: _ToolEvent) -> None:
        match item:
            case AgentServerToolUse():
                self._open("tool", item.id)
                self.tools[item.id] = ToolState(item.id, item.name, dict(item.input), server=True)
            case AgentServerToolResult():
                if (tool := self.tools.get(item.tool_use_id)) is not None:
                    shown = json.dumps(item.content, indent=2, ensure_ascii=False)
                    tool.answered, tool.output = True, [TextBlock(text=f"{item.kind}:\n{shown}")]
            case AgentToolUse():
                self._open("tool", item.id)
                permission = item.evaluated_permission
                self.tools[item.id] = ToolState(item.id, item.name, dict(item.input), permission=permission)
            case AgentCustomToolUse():
                self._open("tool", item.id)
                self.tools[item.id] = ToolState(item.id, item.name, dict(item.input), custom=True)
            case UserToolConfirmation():
                if (tool := self.tools.get(item.tool_use_id)) is not None:
                    tool.confirmation = item.result
            case AgentToolResult():
                if (tool := self.tools.get(item.tool_use_id)) is not None:
                    tool.answered, tool.output, tool.is_error = True, list(item.content), item.is_error
                    tool.error_code, tool.denied_by = item.error_code, item.denied_by

    def _apply_outcome(self, item: StreamItem) -> None:
        match item:
            case UserDefineOutcome():
                rubric = f"file: {item.rubric.path}" if isinstance(item.rubric, FileRubric) else item.rubric.content
                self.outcomes[item.outcome_id] = OutcomeState(
                    item.outcome_id, item.description, item.max_iterations, rubric=rubric
                )
            case SessionOutcomeUpdated():
                state = item.outcome
                outcome = self.outcomes.get(state.outcome_id)
                if outcome is None:  # a turn resuming an outcome defined in an earlier turn
                    outcome = self.outcomes[state.outcome_id] = OutcomeState(
                        state.outcome_id, state.description, state.max_iterations
                    )
                outcome.status, outcome.iteration = state.status, state.iteration
                outcome.explanation = state.explanation
            case SpanOutcomeEvaluationStart():
                if (outcome := self.outcomes.get(item.outcome_id)) is not None:
                    outcome.verdict(item.iteration)
            case SpanOutcomeEvaluationEnd():
                if (outcome := self.outcomes.get(item.outcome_id)) is not None:
                    verdict = outcome.verdict(item.iteration)
                    verdict.result, verdict.explanation = item.result, item.explanation
            case _:
                pass

    def _end_turn(self) -> None:
        self.turn_over = True
        for fold in self.threads.values():
            fold._end_turn()
            fold._restatus()

    def _restatus(self) -> None:
        waiting = (self.tools[key] for kind, key in self.blocks if kind == "tool")
        ran_here = (tool for tool in waiting if not tool.custom and not tool.server)
        current = next((tool.tool_use_id for tool in ran_here if not tool.answered), None)
        for key, tool in self.tools.items():
            tool.status = tool_status(tool, current=key == current, turn_over=self.turn_over)

    def _compacted(self, item: SessionContextCompacted) -> None:
        self._open("compaction", item.id)
        self.compactions[item.id] = item

    def _note(self, key: str, text: str) -> None:
        self._open("note", key)
        self.notes[key] = text

    def _open(self, kind: str, key: str, *, preview: bool = False) -> None:
        """Place a block: a preview at the end; a buffered event's block before the blocks that are still
        only previews, so that when a response commits (its server tools, then the text that streamed after
        them) the order is the log's, as a fold of the saved events has it."""
        entry = (kind, key)
        if preview:
            if entry not in self.blocks:
                self.blocks.append(entry)
            return
        if entry in self.blocks:
            self.blocks.remove(entry)
        at = next((i for i, (_, k) in enumerate(self.blocks) if k in self.previewed and k != key), len(self.blocks))
        self.blocks.insert(at, entry)

    @property
    def text(self) -> str:
        """The agent's messages, joined by blank lines."""
        return "\n\n".join(self.texts[key] for kind, key in self.blocks if kind == "message" and self.texts[key])

    def statuses(self) -> dict[str, Any]:
        """Every status this fold shows: the turn's, each tool call's and thread's (nested ones included),
        each outcome's with its verdicts. The parity test compares this with the widget's fold."""
        tools = {key: tool.status for key, tool in self.tools.items()}
        threads: dict[str, str] = {}
        for thread, fold in self.threads.items():
            threads[thread] = fold.status
            inner = fold.statuses()
            tools.update(inner["tools"])
            threads.update(inner["threads"])
        outcomes = {
            key: {"status": o.status, "verdicts": [v.result for v in sorted(o.verdicts, key=lambda v: v.iteration)]}
            for key, o in self.outcomes.items()
        }
        statuses: dict[str, Any] = {"turn": self.status, "tools": tools, "threads": threads, "outcomes": outcomes}
        if (where := self.origin) is not None:  # only then, so logs made without a recording keep their shape
            statuses["origin"] = where
        if self.workflow_runs:  # only then, so logs without a run keep their shape
            statuses["workflows"] = {
                run.id: {
                    "status": run.status,
                    "steps": {s.id: {"status": s.status, "items": [i.status for i in s.items]} for s in run.steps},
                }
                for run in self.workflow_runs
            }
        return statuses

    # ------------------------------------------------------------------------------------------ rendering

    def usage_line(self) -> str:
        from .markdown import usage_line

        return usage_line(self)

    def _apply_span(self, item: SpanModelRequestStart | SpanModelRequestEnd) -> None:
        if isinstance(item, SpanModelRequestStart):
            if self.context_turns is None:
                self.context_turns = item.context_turns
            self.context_window = item.context_window or self.context_window
            return
        if self.context_tokens is None and not item.is_error:
            self.context_tokens = item.model_usage.total_input_tokens
        if not item.is_error:
            self.window_tokens = item.model_usage.total_input_tokens + item.model_usage.output_tokens
        self.turn_usage = self.turn_usage + item.model_usage
        if item.source is not None:
            self.sources.add(item.source)
        if item.is_error:  # a failed attempt's previews are abandoned: a retry streams afresh
            self.blocks = [(kind, key) for kind, key in self.blocks if key not in self.previewed]
            self.previewed.clear()

    @property
    def origin(self) -> str | None:
        """``replayed``, ``live`` or ``partly replayed`` when the notebook's recording was consulted."""
        return origin(self.sources)

    @property
    def context_line(self) -> str | None:
        """ "context: 3 turns above · notebook: 2 cells, 5 variables · 4.2k tokens": what the model saw
        besides this turn's prompt."""
        if self.context_turns is None:
            return None
        turns = (
            "no turns above"
            if not self.context_turns
            else f"{self.context_turns} turn{'s' if self.context_turns != 1 else ''} above"
        )
        if self.notebook_context is not None:
            turns += f" · notebook: {self.notebook_context.describe()}"
        if self.context_tokens is None:
            return f"context: {turns}"
        tokens = f"{self.context_tokens / 1000:.1f}k" if self.context_tokens >= 1000 else str(self.context_tokens)
        return f"context: {turns} · {tokens} tokens"

    @property
    def window_line(self) -> str | None:
        """ "window 45% of 200k": how much of the model's context window the turn's last request used."""
        if not self.context_window or self.window_tokens is None:
            return None
        return f"window {self.window_tokens / self.context_window:.0%} of {_thousands(self.context_window)}"

    def footer(self) -> str:
        from .markdown import footer

        return footer(self)

    def to_markdown(self, *, final: bool = False, images: bool = True) -> str:
        from .markdown import turn_markdown

        return turn_markdown(self, final=final, images=images)

    def to_text(self) -> str:
        from .markdown import turn_text

        return turn_text(self)


def _thousands(tokens: int) -> str:
    return f"{tokens // 1000}k" if tokens >= 10_000 else f"{tokens:,}"


def _text(content: list[ContentBlock]) -> str:
    return "".join(b.text for b in content if isinstance(b, TextBlock))
