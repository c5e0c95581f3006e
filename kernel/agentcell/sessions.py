"""Sessions: a pinned agent version, a budget, resources, and the event log of its conversation.

``session.send(message)`` runs one turn and yields its previews and buffered events in order;
``session.ask(message)`` runs it to the end and returns a :class:`TurnResult`. Everything a session
knows can be rebuilt from the store: ``engine.sessions.get(id)`` reopens it with its history, usage,
stats and pinned agent version.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

from pydantic import BaseModel

from ._validation import check_metadata, validated
from .agents import UNSET, Agent, _Unset
from .engine.history import HISTORY_EVENT_TYPES, History
from .engine.runner import TurnRunner
from .engine.stats import Transition, active_seconds
from .errors import InvalidInputError, SessionBusyError, SessionNotFoundError, SessionTerminatedError
from .events import (
    AgentMessage,
    BudgetReached,
    ContentBlock,
    EndTurn,
    ErrorInfo,
    ErrorStop,
    Event,
    ImageBlock,
    Interrupted,
    RequiresAction,
    SessionError,
    SessionStatusIdle,
    SessionStatusRunning,
    SessionStatusTerminated,
    SessionUpdated,
    SessionUsageEvent,
    SpanModelRequestEnd,
    StopReason,
    StreamItem,
    TextBlock,
    UserCustomToolResult,
    UserInterrupt,
    UserMessage,
    UserToolConfirmation,
    utc_now,
)
from .ids import new_id
from .resources import Resource
from .store.base import PermissionPreset, SessionRecord
from .tools.approvals import ApprovalAnswer, ApprovalBroker
from .usage import Budget, Usage

if TYPE_CHECKING:
    from .engine.core import Engine
    from .providers.registry import ResolvedModel
    from .tools.base import Approver, ToolHost

__all__ = ["CustomToolResult", "Session", "SessionStats", "SessionsAPI", "TurnResult"]

E = TypeVar("E", bound=BaseModel)
_END = object()


@dataclass(frozen=True, slots=True)
class CustomToolResult:
    """The client's answer to an ``agent.custom_tool_use``; send it to resume the turn."""

    custom_tool_use_id: str
    content: str | Sequence[ContentBlock] = ""
    is_error: bool = False


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
        """The agent's messages of the turn, joined by blank lines."""
        return "\n\n".join(
            "".join(b.text for b in e.content if isinstance(b, TextBlock))
            for e in self.events
            if isinstance(e, AgentMessage)
        )

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


def _parse_budget(budget: object) -> Budget | None:
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
        self._listeners: list[Callable[[StreamItem], None]] = []
        self._lock = threading.Lock()
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
        for event in self._engine.store.events(
            self.id, types=("session.status_running", "session.status_idle", "session.status_terminated")
        ):
            last_seen = event.created_at
            if isinstance(event, SessionStatusRunning):
                transitions.append((event.created_at, event.thread_id, "running"))
            elif isinstance(event, SessionStatusIdle):
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
    def tool_host(self) -> ToolHost:
        return self._engine.tools

    def resolve_model(self) -> ResolvedModel:
        return self._engine.providers.resolve(self._agent.model)

    # ------------------------------------------------------------------------------------------ emitting

    def make(self, cls: type[E], **fields: Any) -> E:
        fields.setdefault("id", new_id("sevt"))
        return cls(created_at=utc_now(), session_id=self.id, **fields)

    def emit(self, item: StreamItem) -> None:
        """Append a buffered event durably (previews are not stored), then show it to every listener."""
        if not item.type.startswith("event_"):
            event: Event = item  # type: ignore[assignment]
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

    def _opening(self, message: str | Sequence[ContentBlock] | CustomToolResult) -> list[Event]:
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
        if isinstance(message, str):
            if not message.strip():
                raise InvalidInputError("the message is empty; write what you want the agent to do")
            blocks = [TextBlock(text=message)]
        else:
            blocks = list(message)
            if not blocks or not all(isinstance(b, TextBlock | ImageBlock) for b in blocks):
                raise InvalidInputError("a message is a string or a non-empty list of TextBlock/ImageBlock")
        return [self.make(UserMessage, content=blocks)]

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

    async def send(
        self, message: str | Sequence[ContentBlock] | CustomToolResult, *, tool_choice: str | None = None
    ) -> AsyncIterator[StreamItem]:
        """Run one turn, yielding its previews and buffered events in order until ``session.status_idle``.

        ``tool_choice`` ("any", "none", or a tool's name) applies to the turn's first model request only,
        so a forced call is followed by an answer rather than a loop of calls. Closing the iterator early
        (or cancelling the task that iterates) interrupts the turn.
        """
        if self.status == "terminated":
            raise SessionTerminatedError(f"session {self.id} was terminated; create a new session")
        if tool_choice not in (None, "auto", "any", "none"):
            offered = [t.name for t in TurnRunner(self).offered_tools(self.agent)]
            if tool_choice not in offered:
                raise InvalidInputError(
                    f"tool_choice {tool_choice!r} is not a tool this agent has; it has: {', '.join(offered) or 'none'}"
                )
        opening = self._opening(message)
        turn = self._start(opening, tool_choice)
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

    def _start(self, opening: list[Event], tool_choice: str | None) -> _Turn:
        with self._lock:
            if self._turn is not None:
                raise SessionBusyError(
                    f"a turn is already running in session {self.id}; interrupt it or wait for it to finish"
                )
            turn = _Turn(asyncio.get_running_loop())
            self._turn = turn
        unsubscribe = self.subscribe(turn.queue.put_nowait)
        turn.task = turn.loop.create_task(self._run_turn(turn, opening, unsubscribe, tool_choice))
        return turn

    async def _run_turn(
        self, turn: _Turn, opening: list[Event], unsubscribe: Callable[[], None], tool_choice: str | None
    ) -> None:
        stop: StopReason = EndTurn()
        try:
            for event in opening:
                self.emit(event)
            if isinstance(opening[-1], UserCustomToolResult) and (waiting := self._pending_custom_tool_uses()):
                stop = RequiresAction(event_ids=sorted(waiting))
            else:
                self.emit(self.make(SessionStatusRunning))
                for status in await self._engine.ensure_mcp(self.agent):
                    if status.state == "failed":  # the turn goes on without that server's tools
                        message = f"MCP server {status.name} did not start: {status.error or 'no reason given'}"
                        info = ErrorInfo(type="mcp_connection_failed_error", message=message)
                        self.emit(self.make(SessionError, error=info))
                stop = await TurnRunner(self, first_tool_choice=tool_choice).run()
        except asyncio.CancelledError:
            stop = Interrupted()
        except Exception as exc:  # a bug must not leave the session stuck in "running"
            message = f"{type(exc).__name__}: {exc}"
            self.emit(self.make(SessionError, error=ErrorInfo(type="unknown_error", message=message)))
            stop = ErrorStop(message=message)
        finally:
            if isinstance(stop, BudgetReached):
                self.emit(self.make(SessionUsageEvent, usage=self.usage, budget=self.budget))
            self.emit(self.make(SessionStatusIdle, stop_reason=stop))
            with self._lock:
                self._turn = None
            unsubscribe()
            turn.queue.put_nowait(_END)

    async def ask(
        self,
        message: str | Sequence[ContentBlock] | CustomToolResult,
        *,
        on_item: Callable[[StreamItem], None] | None = None,
        tool_choice: str | None = None,
    ) -> TurnResult:
        """Run one turn to its end and return what it produced; ``on_item`` sees every item as it streams."""
        events: list[Event] = []
        stop: StopReason = EndTurn()
        async for item in self.send(message, tool_choice=tool_choice):
            if on_item is not None:
                on_item(item)
            if not item.type.startswith("event_"):
                events.append(item)  # type: ignore[arg-type]
                if isinstance(item, SessionStatusIdle):
                    stop = item.stop_reason
        return TurnResult(stop_reason=stop, events=events)

    def send_sync(
        self, message: str | Sequence[ContentBlock] | CustomToolResult, *, tool_choice: str | None = None
    ) -> TurnResult:
        """:meth:`ask` for scripts without an event loop."""
        return self._engine.run_sync(self.ask(message, tool_choice=tool_choice))

    def interrupt(self) -> None:
        """Stop the running turn (from any thread). It ends within a second with ``interrupted``."""
        turn = self._turn
        if turn is None or turn.task is None:
            return

        def cancel() -> None:
            if turn.task is not None and not turn.task.done():
                self.emit(self.make(UserInterrupt))
                turn.task.cancel()

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is turn.loop:
            cancel()
        else:
            turn.loop.call_soon_threadsafe(cancel)

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
            parsed = _parse_budget(budget)
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


class SessionsAPI:
    """``engine.sessions``: create, reopen and list sessions."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._handles: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(
        self,
        *,
        agent: str | Agent | dict[str, Any],
        version: int | None = None,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
        budget: str | int | Decimal | Budget | None = None,
        resources: Sequence[Resource | dict[str, Any]] = (),
        max_turns: int = 25,
        permissions: PermissionPreset = "workspace-write",
    ) -> Session:
        """Start a session on ``agent`` (an id: its latest version, unless ``version`` pins one)."""
        if isinstance(agent, Agent):
            agent_id, version = agent.id, version or agent.version
        elif isinstance(agent, dict):
            agent_id, version = str(agent.get("id", "")), agent.get("version", version)
        else:
            agent_id = agent
        pinned = self._engine.agents.get(agent_id, version)
        if title is not None and len(title) > 512:
            raise InvalidInputError("a session title is at most 512 characters")
        record = validated(
            SessionRecord,
            {
                "id": new_id("sesn"),
                "agent_id": pinned.id,
                "agent_version": pinned.version,
                "title": title,
                "metadata": check_metadata(metadata or {}, "session"),
                "budget": _parse_budget(budget),
                "resources": list(resources),
                "max_turns": max_turns,
                "permissions": permissions,
                "created_at": utc_now(),
            },
            "session",
        )
        self._engine.store.put_session(record)
        session = Session(self._engine, record)
        with self._lock:
            self._handles[record.id] = session
        return session

    def get(self, session_id: str) -> Session:
        """Reopen a session from the store (or return the live handle)."""
        with self._lock:
            live = self._handles.get(session_id)
        if live is not None:
            return live
        record = self._engine.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(session_id)
        session = Session(self._engine, record)
        with self._lock:
            return self._handles.setdefault(session_id, session)

    def list(self) -> list[Session]:
        """Every session, oldest first."""
        return [self.get(record.id) for record in self._engine.store.list_sessions()]
