"""Sessions: a pinned agent version, a budget, resources, and the event log of its conversation.

``session.send(message)`` runs one turn and yields its previews and buffered events in order;
``session.ask(message)`` runs it to the end and returns a :class:`TurnResult`. A message may also be an
:class:`~agentcell.engine.outcomes.OutcomeSpec` (``session.define_outcome``): the turn then works, is graded
and revises until the outcome is reached. ``session.steer(text)`` adds guidance to the running turn, given
to the model at its next request; ``session.interrupt()`` stops it. Everything a session knows can be
rebuilt from the store: ``engine.sessions.get(id)`` reopens it with its history, usage, stats, outcome,
threads and pinned agent version.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, get_args

from pydantic import BaseModel

from ._validation import check_metadata
from .agents import UNSET, Agent, _Unset
from .engine.advisor import advisor_tools
from .engine.history import HISTORY_EVENT_TYPES, History
from .engine.outcomes import OutcomeLoop, OutcomeSpec, define_event
from .engine.runner import SessionTool, TurnRunner
from .engine.stats import Transition, active_seconds
from .engine.threads import ThreadInfo, ThreadManager, thread_infos
from .errors import InvalidInputError, SessionBusyError, SessionTerminatedError
from .events import (
    AgentMessage,
    BudgetReached,
    ContentBlock,
    EndTurn,
    ErrorInfo,
    ErrorStop,
    Event,
    FileRubric,
    ImageBlock,
    Interrupted,
    Outcome,
    RequiresAction,
    SessionError,
    SessionOutcomeUpdated,
    SessionStatusIdle,
    SessionStatusRunning,
    SessionStatusTerminated,
    SessionThreadStatusIdle,
    SessionThreadStatusRunning,
    SessionUpdated,
    SessionUsageEvent,
    SpanModelRequestEnd,
    StopReason,
    StreamItem,
    TextBlock,
    TextRubric,
    UserCustomToolResult,
    UserDefineOutcome,
    UserInterrupt,
    UserMessage,
    UserToolConfirmation,
    is_preview,
    utc_now,
)
from .ids import new_id
from .resources_mount import Mounted, ResourceMountError, mount_resources, workspace_of
from .store.base import PermissionPreset, SessionRecord
from .tools.approvals import ApprovalAnswer, ApprovalBroker
from .usage import Budget, Usage

if TYPE_CHECKING:
    from .engine.core import Engine
    from .providers.base import ModelConfig
    from .providers.registry import ResolvedModel
    from .tools.base import Approver, ToolHost

__all__ = ["CustomToolResult", "Session", "SessionStats", "ToolChoice", "TurnResult", "parse_budget"]

E = TypeVar("E", bound=BaseModel)
_END = object()


@dataclass(frozen=True, slots=True)
class CustomToolResult:
    """The client's answer to an ``agent.custom_tool_use``; send it to resume the turn."""

    custom_tool_use_id: str
    content: str | Sequence[ContentBlock] = ""
    is_error: bool = False


Input = str | Sequence[ContentBlock] | CustomToolResult | OutcomeSpec
"""What a turn can start from: a message, the answer to a custom tool, or an outcome to reach."""
ToolChoice = str | Sequence[str] | None
"""For a turn's first request ("any", "none" or a tool's name), or for its first requests in order."""


@dataclass(frozen=True, slots=True)
class SessionStats:
    duration_seconds: float
    """Since creation; frozen at termination."""
    active_seconds: float
    """While at least one thread was running; overlapping threads count once."""


@dataclass(slots=True)
class TurnResult:
    """What one turn produced."""

    stop_reason: StopReason
    events: list[Event] = field(default_factory=list)
    """The buffered events of the turn, in order."""

    @property
    def text(self) -> str:
        """The agent's messages of the turn in the primary thread, joined by blank lines."""
        return "\n\n".join(
            "".join(b.text for b in e.content if isinstance(b, TextBlock))
            for e in self.events
            if isinstance(e, AgentMessage) and e.thread_id is None
        )

    @property
    def outcome(self) -> Outcome | None:
        """The state of the outcome the turn worked on, at its end; None when it worked on none."""
        updates = [e.outcome for e in self.events if isinstance(e, SessionOutcomeUpdated)]
        return updates[-1] if updates else None

    @property
    def usage(self) -> Usage:
        """The turn's own usage (sum of its model requests)."""
        total = Usage()
        for event in self.events:
            if isinstance(event, SpanModelRequestEnd):
                total = total + event.model_usage
        return total

    @property
    def errors(self) -> list[ErrorInfo]:
        return [e.error for e in self.events if isinstance(e, SessionError)]


class _Turn:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.threads: ThreadManager | None = None
        self.events: list[Event] = []
        """The turn's buffered events so far, in order."""

    def see(self, item: StreamItem) -> None:
        if not is_preview(item):
            self.events.append(cast(Event, item))
        self.queue.put_nowait(item)


def parse_budget(budget: object) -> Budget | None:
    if budget is None:
        return None
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, bool) or not isinstance(budget, str | int | float | Decimal):
        raise InvalidInputError(f"a budget is an amount in USD such as '0.50', not {budget!r}")
    try:
        amount = Decimal(str(budget))
    except InvalidOperation:
        raise InvalidInputError(f"a budget is an amount in USD such as '0.50', not {budget!r}") from None
    if not amount.is_finite() or amount <= 0:
        raise InvalidInputError(f"a budget must be more than 0 USD, not {budget!r}; use None for no budget")
    return Budget(max_list_cost=amount)


class Session:
    """A handle on one session. Get it from ``engine.sessions``; one handle per session per engine."""

    def __init__(self, engine: Engine, record: SessionRecord) -> None:
        self._engine = engine
        self._record = record
        self._agent = engine.agents.get(record.agent_id, record.agent_version)
        self._histories: dict[str | None, History] = {}
        self._usage: Usage | None = None
        self._reserved = Decimal(0)
        self._turn: _Turn | None = None
        self._last_turn: TurnResult | None = None
        self._listeners: list[Callable[[StreamItem], None]] = []
        self._lock = threading.Lock()
        self._steering: dict[str | None, list[list[ContentBlock]]] = {}
        """Per thread: guidance steered in and not yet given to the model."""
        self._mounted = False
        engine.memory_stores.attach(self)
        self.approver: Approver | None = None
        """Asked when a tool needs the user's approval. None (a script with no UI): the preset decides,
        and a call that needs asking is refused. A host that can show approvals sets
        ``session.approver = session.approvals`` and answers with :meth:`confirm_tool`."""
        self.approvals = ApprovalBroker(on_answer=self._record_confirmation)
        """Tool calls of this session waiting for approval: ``.pending()``; answer with ``confirm_tool``."""

    # ------------------------------------------------------------------------------------------ state

    @property
    def id(self) -> str:
        return self._record.id

    @property
    def record(self) -> SessionRecord:
        return self._record

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def workspace(self) -> Path:
        """Where the session's tools work and its resources are mounted."""
        return workspace_of(self)

    @property
    def title(self) -> str | None:
        return self._record.title

    @property
    def metadata(self) -> dict[str, str]:
        return dict(self._record.metadata)

    @property
    def budget(self) -> Budget | None:
        return self._record.budget

    @property
    def agent(self) -> Agent:
        """The pinned agent version."""
        return self._agent

    @property
    def status(self) -> Literal["idle", "running", "terminated"]:
        if self._record.terminated_at is not None:
            return "terminated"
        return "running" if self._turn is not None else "idle"

    @property
    def usage(self) -> Usage:
        """Cumulative usage and list cost of the whole session."""
        if self._usage is None:
            last = self._engine.store.last_event(self.id, "session.usage")
            self._usage = last.usage if isinstance(last, SessionUsageEvent) else Usage()
        return self._usage

    @property
    def stats(self) -> SessionStats:
        now = utc_now()
        end = self._record.terminated_at or now
        transitions: list[Transition] = []
        last_seen: datetime = self._record.created_at
        statuses = (
            "session.status_running",
            "session.status_idle",
            "session.status_terminated",
            "session.thread_status_running",
            "session.thread_status_idle",
        )
        for event in self._engine.store.events(self.id, types=statuses):
            last_seen = event.created_at
            if isinstance(event, SessionStatusRunning | SessionThreadStatusRunning):
                transitions.append((event.created_at, event.thread_id, "running"))
            elif isinstance(event, SessionStatusIdle | SessionThreadStatusIdle):
                transitions.append((event.created_at, event.thread_id, "idle"))
        # A thread left running by a process that died stopped when its last status was written.
        active_end = now if self._turn is not None else min(end, max(last_seen, self._last_event_time()))
        return SessionStats(
            duration_seconds=max(0.0, (end - self._record.created_at).total_seconds()),
            active_seconds=active_seconds(transitions, active_end),
        )

    def _last_event_time(self) -> datetime:
        last = self._engine.store.last_event(self.id, None)
        return last.created_at if last is not None else self._record.created_at

    def events(self, *, types: Sequence[str] | None = None) -> list[Event]:
        """The durable events, in order."""
        return list(self._engine.store.events(self.id, types=types))

    def history(self, thread_id: str | None = None) -> History:
        history = self._histories.get(thread_id)
        if history is None:
            history = History()
            for event in self._engine.store.events(self.id, types=HISTORY_EVENT_TYPES):
                if event.thread_id == thread_id:
                    history.apply(event)
            self._histories[thread_id] = history
        return history

    @property
    def last_turn(self) -> TurnResult | None:
        """The latest turn this handle ran, once it has ended: set however it ended (an interrupt that
        cancelled the caller included), before ``send``/``ask`` return or raise. None before any turn."""
        return self._last_turn

    @property
    def outcome(self) -> Outcome | None:
        """The latest outcome's state (see ``define_outcome``); None when none was defined."""
        last = self._engine.store.last_event(self.id, "session.outcome_updated")
        return last.outcome if isinstance(last, SessionOutcomeUpdated) else None

    @property
    def threads(self) -> list[ThreadInfo]:
        """The threads spawned in this session, with their status and their own usage."""
        return thread_infos(self.events(types=_THREAD_EVENT_TYPES))

    @property
    def tool_host(self) -> ToolHost:
        return self._engine.tools

    def resolve_model(self, model: ModelConfig | None = None) -> ResolvedModel:
        """The provider for ``model`` (the pinned agent's by default)."""
        return self._engine.providers.resolve(model if model is not None else self._agent.model)

    def mount(self) -> list[Mounted]:
        """Clone the git repositories and copy the uploaded files of the session into its workspace now
        (the first turn does it otherwise). Raises ResourceMountError saying what failed."""
        mounted = mount_resources(self)
        self._mounted = True
        return mounted

    # ------------------------------------------------------------------------------------------ emitting

    def make(self, cls: type[E], **fields: Any) -> E:
        fields.setdefault("id", new_id("sevt"))
        return cls(created_at=utc_now(), session_id=self.id, **fields)

    def emit(self, item: StreamItem) -> None:
        """Append a buffered event durably (previews are not stored), then show it to every listener."""
        if not is_preview(item):
            event = cast(Event, item)
            self._engine.store.append(event)
            history = self._histories.get(event.thread_id)
            if history is not None:
                history.apply(event)
        for listener in list(self._listeners):
            listener(item)

    def subscribe(self, listener: Callable[[StreamItem], None]) -> Callable[[], None]:
        """Call ``listener`` with every item this session emits from now on; returns the unsubscriber."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def add_usage(self, usage: Usage, *, thread_id: str | None = None) -> None:
        self._usage = self.usage + usage
        self.emit(self.make(SessionUsageEvent, thread_id=thread_id, usage=self._usage, budget=self.budget))

    def reserve_budget(self, worst_case: Decimal) -> bool:
        """Hold ``worst_case`` of the budget for a request; False when it does not fit what remains."""
        budget = self.budget
        with self._lock:
            if budget is not None and self.usage.list_cost + self._reserved + worst_case > budget.max_list_cost:
                return False
            self._reserved += worst_case
            return True

    def release_budget(self, worst_case: Decimal) -> None:
        with self._lock:
            self._reserved -= worst_case

    # ------------------------------------------------------------------------------------------ turns

    def _opening(self, message: Input) -> list[Event]:
        if isinstance(message, OutcomeSpec):
            return [define_event(self, message)]
        if isinstance(message, CustomToolResult):
            pending = self._pending_custom_tool_uses()
            if message.custom_tool_use_id not in pending:
                raise InvalidInputError(
                    f"no custom tool use {message.custom_tool_use_id!r} is waiting for a result; "
                    f"waiting: {sorted(pending) or 'none'}"
                )
            content = message.content
            blocks = [TextBlock(text=content)] if isinstance(content, str) else list(content)
            return [
                self.make(
                    UserCustomToolResult,
                    custom_tool_use_id=message.custom_tool_use_id,
                    content=blocks,
                    is_error=message.is_error,
                )
            ]
        return [self.make(UserMessage, content=_blocks(message))]

    def _pending_custom_tool_uses(self) -> set[str]:
        last_idle = self._engine.store.last_event(self.id, "session.status_idle")
        if not isinstance(last_idle, SessionStatusIdle) or not isinstance(last_idle.stop_reason, RequiresAction):
            return set()
        answered = {
            e.custom_tool_use_id
            for e in self._engine.store.events(self.id, types=("user.custom_tool_result",), after_id=last_idle.id)
            if isinstance(e, UserCustomToolResult)
        }
        return set(last_idle.stop_reason.event_ids) - answered

    async def send(self, message: Input, *, tool_choice: ToolChoice = None) -> AsyncIterator[StreamItem]:
        """Run one turn, yielding its previews and buffered events in order until ``session.status_idle``.

        ``tool_choice`` ("any", "none", or a tool's name) applies to the turn's first model request only,
        so a forced call is followed by an answer rather than a loop of calls; a sequence of them applies
        to the first requests in order (spawn_thread, then wait_thread). Closing the iterator early (or
        cancelling the task that iterates) interrupts the turn.
        """
        if self.status == "terminated":
            raise SessionTerminatedError(f"session {self.id} was terminated; create a new session")
        choices = (tool_choice,) if isinstance(tool_choice, str) else tuple(tool_choice or ())
        if named := [c for c in choices if c not in ("auto", "any", "none")]:
            offered = self.offered_tool_names()
            if unknown := [c for c in named if c not in offered]:
                raise InvalidInputError(
                    f"tool_choice {unknown[0]!r} is not a tool this agent has; it has: {', '.join(offered) or 'none'}"
                )
        opening = self._opening(message)
        turn = self._start(opening, choices)
        try:
            while True:
                item = await turn.queue.get()
                if item is _END:
                    return
                yield item  # type: ignore[misc]
        finally:
            task = turn.task
            if task is not None and not task.done():
                # The reader went away mid-turn (closed the iterator, or its task was cancelled, e.g. by
                # a kernel interrupt): that is the user interrupting.
                self.emit(self.make(UserInterrupt))
                task.cancel()
                await asyncio.wait({task}, timeout=5)

    def _start(self, opening: list[Event], tool_choices: tuple[str, ...]) -> _Turn:
        with self._lock:
            if self._turn is not None:
                raise SessionBusyError(
                    f"a turn is already running in session {self.id}; interrupt it or wait for it to finish"
                )
            turn = _Turn(asyncio.get_running_loop())
            self._turn = turn
        unsubscribe = self.subscribe(turn.see)
        turn.task = turn.loop.create_task(self._run_turn(turn, opening, unsubscribe, tool_choices))
        return turn

    async def _run_turn(
        self, turn: _Turn, opening: list[Event], unsubscribe: Callable[[], None], tool_choices: tuple[str, ...]
    ) -> None:
        stop: StopReason = EndTurn()
        threads = turn.threads = ThreadManager(self)
        first = opening[-1]
        try:
            # An outcome paused for a custom tool resumes only with that tool's answer; anything else ends it.
            if not isinstance(first, UserCustomToolResult) and (unfinished := OutcomeLoop.active(self)) is not None:
                defined = isinstance(first, UserDefineOutcome)
                unfinished.supersede("a new outcome was defined" if defined else "a message came instead of an answer")
            for event in opening:
                self.emit(event)
            outcome = OutcomeLoop(self, first) if isinstance(first, UserDefineOutcome) else None
            if outcome is not None:
                outcome.announce()
            if isinstance(first, UserCustomToolResult) and (waiting := self._pending_custom_tool_uses()):
                stop = RequiresAction(event_ids=sorted(waiting))
            else:
                self.emit(self.make(SessionStatusRunning))
                for status in await self._engine.ensure_mcp(self.agent):
                    if status.state == "failed":  # the turn goes on without that server's tools
                        message = f"MCP server {status.name} did not start: {status.error or 'no reason given'}"
                        info = ErrorInfo(type="mcp_connection_failed_error", message=message)
                        self.emit(self.make(SessionError, error=info))
                stop = await self._work(first, outcome, threads, tool_choices)
        except asyncio.CancelledError:
            stop = Interrupted()
        except Exception as exc:  # a bug must not leave the session stuck in "running"
            message = f"{type(exc).__name__}: {exc}"
            self.emit(self.make(SessionError, error=ErrorInfo(type="unknown_error", message=message)))
            stop = ErrorStop(message=message)
        finally:
            try:
                await threads.close()
            except asyncio.CancelledError:  # interrupted again while the threads were stopping
                stop = Interrupted()
            # Guidance that came after the last request is kept for the next turn rather than lost.
            for blocks in self._steering.pop(None, []):
                self.emit(self.make(UserMessage, content=blocks))
            self._steering.clear()
            if isinstance(stop, BudgetReached):
                self.emit(self.make(SessionUsageEvent, usage=self.usage, budget=self.budget))
            self.emit(self.make(SessionStatusIdle, stop_reason=stop))
            self._last_turn = TurnResult(stop_reason=stop, events=turn.events)
            with self._lock:
                self._turn = None
            unsubscribe()
            turn.queue.put_nowait(_END)

    async def _work(
        self, first: Event, outcome: OutcomeLoop | None, threads: ThreadManager, tool_choices: tuple[str, ...]
    ) -> StopReason:
        """Mount the resources (once), then run the turn loop, or drive the outcome with it."""
        if not self._mounted:
            try:
                await asyncio.to_thread(mount_resources, self)
            except ResourceMountError as exc:
                self.emit(self.make(SessionError, error=ErrorInfo(type="resource_mount_error", message=str(exc))))
                return ErrorStop(message=str(exc))
            self._mounted = True
        tools = self._engine_tools(threads)
        choices = [tool_choices]

        def runner() -> TurnRunner:
            forced, choices[0] = choices[0], ()  # only the turn's first requests are forced
            return TurnRunner(self, tool_choices=forced, tools=tools)

        if outcome is not None:
            return await outcome.run(runner)
        if isinstance(first, UserCustomToolResult) and (paused := OutcomeLoop.active(self)) is not None:
            return await paused.run(runner, resumed=True)
        return await runner().run()

    def offered_tool_names(self) -> list[str]:
        """The tools the model is offered at the next turn: the host's, the agent's custom tools, and the
        engine's own (spawning threads, the advisor, memory)."""
        runner = TurnRunner(self, tools=self._engine_tools(ThreadManager(self)))
        return [t.name for t in runner.offered_tools(self.agent)]

    def _engine_tools(self, threads: ThreadManager) -> list[SessionTool]:
        """The engine's own tools for the primary thread: spawning threads and consulting the advisor."""
        return [*threads.tools(self.agent), *advisor_tools(self, self.agent)]

    async def ask(
        self,
        message: Input,
        *,
        on_item: Callable[[StreamItem], None] | None = None,
        tool_choice: ToolChoice = None,
    ) -> TurnResult:
        """Run one turn to its end and return what it produced; ``on_item`` sees every item as it streams."""
        async for item in self.send(message, tool_choice=tool_choice):
            if on_item is not None:
                on_item(item)
        assert self._last_turn is not None  # send() returns only once the turn ended
        return self._last_turn

    def send_sync(self, message: Input, *, tool_choice: ToolChoice = None) -> TurnResult:
        """:meth:`ask` for scripts without an event loop."""
        return self._engine.run_sync(self.ask(message, tool_choice=tool_choice))

    async def define_outcome(
        self,
        description: str,
        *,
        rubric: str | TextRubric | FileRubric,
        max_iterations: int = 3,
        grader_model: str | None = None,
        on_item: Callable[[StreamItem], None] | None = None,
    ) -> TurnResult:
        """Have the agent produce ``description`` until a grader finds it meets ``rubric`` (text, or
        ``FileRubric(path=...)`` in the workspace), revising up to ``max_iterations`` cycles in all.
        ``result.outcome`` is the outcome's final state."""
        spec = OutcomeSpec(description, rubric, max_iterations=max_iterations, grader_model=grader_model)
        return await self.ask(spec, on_item=on_item)

    def interrupt(self, *, thread_id: str | None = None) -> None:
        """Stop the running turn (from any thread); it ends within a second with ``interrupted``. With
        ``thread_id``, stop only that spawned thread (its coordinator goes on)."""
        turn = self._turn
        if turn is None or turn.task is None:
            return

        def cancel() -> None:
            if turn.task is None or turn.task.done():
                return
            if thread_id is None:
                self.emit(self.make(UserInterrupt))
                turn.task.cancel()
            elif turn.threads is not None and turn.threads.cancel(thread_id):
                self.emit(self.make(UserInterrupt, thread_id=thread_id))

        self._on_turn_loop(turn, cancel)

    def steer(self, content: str | Sequence[ContentBlock], *, thread_id: str | None = None) -> None:
        """Add guidance to the running turn (from any thread, e.g. a widget callback): the model gets it
        as a user message with its next request. The request already streaming is not cancelled; if the
        model was giving its final answer, the turn goes on for one more request to take the guidance in.
        Raises InvalidInputError when no turn is running (send the guidance as a message then)."""
        blocks = _blocks(content)
        turn = self._turn
        if turn is None:
            raise InvalidInputError(f"no turn is running in session {self.id}; send the guidance as a message")
        self._on_turn_loop(turn, lambda: self._steering.setdefault(thread_id, []).append(blocks))

    def take_steering(self, thread_id: str | None) -> list[list[ContentBlock]]:
        """The guidance waiting for ``thread_id``'s next request (the runner delivers it)."""
        return self._steering.pop(thread_id, [])

    def steering_pending(self, thread_id: str | None) -> bool:
        return bool(self._steering.get(thread_id))

    @staticmethod
    def _on_turn_loop(turn: _Turn, action: Callable[[], None]) -> None:
        """Run ``action`` on the turn's event loop: at once from it, else scheduled thread-safely."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is turn.loop:
            action()
        else:
            turn.loop.call_soon_threadsafe(action)

    # ------------------------------------------------------------------------------------------ approvals

    def _record_confirmation(self, answer: ApprovalAnswer) -> None:
        # Runs on the turn's loop before the waiting tool goes on, so the log reads
        # agent.tool_use -> user.tool_confirmation -> agent.tool_result.
        self.emit(
            self.make(
                UserToolConfirmation,
                tool_use_id=answer.tool_use_id,
                result=answer.result,
                remember=answer.remember,
                deny_message=answer.deny_message,
            )
        )

    def confirm_tool(
        self,
        tool_use_id: str,
        result: Literal["allow", "deny"],
        *,
        remember: Literal["once", "always"] = "once",
        message: str | None = None,
    ) -> None:
        """Answer a tool call waiting for approval (from any thread); "always" holds for the rest of the
        session. Raises InvalidInputError when nothing with that id is waiting."""
        self.approvals.answer(tool_use_id, result, remember=remember, message=message)

    # ------------------------------------------------------------------------------------------ updates

    def update(
        self,
        *,
        title: str | _Unset | None = UNSET,
        metadata: dict[str, str] | _Unset = UNSET,
        budget: str | int | Decimal | Budget | _Unset | None = UNSET,
        agent_version: int | _Unset = UNSET,
        permissions: PermissionPreset | _Unset = UNSET,
    ) -> Session:
        """Change the title, metadata, budget, permission preset or pinned agent version; emits
        ``session.updated`` with what changed."""
        if self.status == "terminated":
            raise SessionTerminatedError(f"session {self.id} was terminated; it cannot be updated")
        changes: dict[str, Any] = {}
        event_fields: dict[str, Any] = {}
        agent = self._agent
        if title is not UNSET and title != self._record.title:
            if title is not None and len(title) > 512:
                raise InvalidInputError("a session title is at most 512 characters")
            changes["title"] = event_fields["title"] = title
        if metadata is not UNSET:
            checked = check_metadata(metadata, "session")
            if checked != self._record.metadata:
                changes["metadata"] = checked
                event_fields["metadata"] = checked
        if budget is not UNSET:
            parsed = parse_budget(budget)
            if parsed != self._record.budget:
                changes["budget"] = event_fields["budget"] = parsed
        if permissions is not UNSET and permissions != self._record.permissions:
            if permissions not in get_args(PermissionPreset):
                raise InvalidInputError(
                    f"unknown permission preset {permissions!r}; use one of {', '.join(get_args(PermissionPreset))}"
                )
            changes["permissions"] = event_fields["permissions"] = permissions
        if agent_version is not UNSET:
            agent = self._engine.agents.get(self._record.agent_id, agent_version)
            if agent.version != self._record.agent_version:
                changes["agent_version"] = agent.version
                if (agent.tools, agent.mcp_servers) != (self._agent.tools, self._agent.mcp_servers):
                    event_fields["agent"] = agent.snapshot()
        if not changes:
            return self
        record = self._record.model_copy(update=changes)
        event = self.make(SessionUpdated, **event_fields) if event_fields else None
        self._engine.store.put_session(record, event)
        self._record = record
        self._agent = agent
        if event is not None:
            for listener in list(self._listeners):
                listener(event)
        return self

    def terminate(self) -> None:
        """End the session for good; its duration is frozen."""
        if self._turn is not None:
            raise SessionBusyError(f"a turn is running in session {self.id}; interrupt it first")
        if self._record.terminated_at is not None:
            return
        now = utc_now()
        record = self._record.model_copy(update={"terminated_at": now})
        self._engine.store.put_session(record, self.make(SessionStatusTerminated))
        self._record = record

    def __repr__(self) -> str:
        return f"<Session {self.id} {self.status} agent={self._agent.id} v{self._agent.version}>"


_THREAD_EVENT_TYPES = (
    "session.thread_created",
    "session.thread_status_running",
    "session.thread_status_idle",
    "span.model_request_end",
)


def _blocks(content: str | Sequence[ContentBlock]) -> list[ContentBlock]:
    if isinstance(content, str):
        if not content.strip():
            raise InvalidInputError("the message is empty; write what you want the agent to do")
        return [TextBlock(text=content)]
    blocks = list(content)
    if not blocks or not all(isinstance(b, TextBlock | ImageBlock) for b in blocks):
        raise InvalidInputError("a message is a string or a non-empty list of TextBlock/ImageBlock")
    return blocks
