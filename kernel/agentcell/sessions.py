"""Sessions: a pinned agent version, a budget, resources, and the event log of its conversation.

``session.send(message)`` runs one turn and yields its previews and buffered events in order;
``session.ask(message)`` runs it to the end and returns a :class:`TurnResult`. A message may also be an
:class:`~agentcell.engine.outcomes.OutcomeSpec` (``session.define_outcome``): the turn then works, is graded
and revises until the outcome is reached. ``session.steer(text)`` adds guidance to the running turn, given
to the model at its next request; ``session.interrupt()`` stops it. Everything a session knows can be
rebuilt from the store: ``engine.sessions.get(id)`` reopens it with its history, usage, stats, outcome,
threads and pinned agent version.

This module is the public handle only: the turn itself is ``engine/`` (:class:`SessionLog` for its state,
:class:`TurnSupervisor` for its supervision, :class:`TurnDeps` for the services it uses).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel

from .engine.budget import check_priced
from .engine.compaction import compact_now
from .engine.deps import TurnDeps
from .engine.history import History
from .engine.inputs import CustomToolResult, Input, ToolChoice, message_blocks, opening_events, tool_choices
from .engine.log import SessionLog
from .engine.mount import Mounted, mount_resources, workspace_for
from .engine.outcomes import OutcomeSpec
from .engine.path import PATH_EVENT_TYPES, on_path
from .engine.result import TurnResult
from .engine.stats import SessionStats, session_stats
from .engine.threads import ThreadInfo, thread_infos
from .engine.turn import TurnSupervisor
from .engine.updates import apply_update, terminate
from .errors import SessionBusyError, SessionTerminatedError
from .events import (
    ContentBlock,
    Event,
    FileRubric,
    Outcome,
    SessionContextCompacted,
    StreamItem,
    TextRubric,
)
from .records.agent import Agent, materialize
from .records.common import UNSET, PermissionPreset, Unset
from .records.notebook_context import NotebookContext
from .records.session import SessionRecord
from .session_approvals import ApprovalMethods
from .session_workflows import WorkflowMethods
from .tools.approvals import ApprovalBroker, rules_from_events
from .tools.authority import refuse_from_tool_code
from .usage import Budget, Usage

RULE_EVENT_TYPES = ("user.tool_confirmation", "user.permission_revoked")
"""The events that make and revoke a session's "always" approval rules."""

if TYPE_CHECKING:
    from .core import Engine
    from .engine.drivers import TurnDriver
    from .tools.base import Approver

__all__ = ["CustomToolResult", "Session", "SessionStats", "ToolChoice", "TurnResult"]

E = TypeVar("E", bound=BaseModel)

_THREAD_EVENT_TYPES = (
    "session.thread_created",
    "session.thread_status_running",
    "session.thread_status_idle",
    "span.model_request_end",
)


class Session(WorkflowMethods, ApprovalMethods):
    """A handle on one session. Get it from ``engine.sessions``; one handle per session per engine."""

    def __init__(self, engine: Engine, record: SessionRecord, *, new: bool = False) -> None:
        self._engine = engine
        pinned = engine.agents.get(record.agent_id, record.agent_version)
        self._log = SessionLog(engine.store, record, materialize(pinned, record.agent_overrides), new=new)
        self._turns = TurnSupervisor(self._log)
        self.approver: Approver | None = None
        """Asked when a tool needs the user's approval. None (a script with no UI): the preset decides,
        and a call that needs asking is refused. A host that can show approvals sets
        ``session.approver = session.approvals`` and answers with :meth:`confirm_tool`."""
        self.driver: Callable[[Event], TurnDriver | None] | None = None
        """The host's own driver for a turn (an external agent answering the notebook's messages); None for
        the engine's own (see ``engine/drivers.py``)."""
        self.approvals = ApprovalBroker(on_answer=self._record_confirmation)
        """Tool calls of this session waiting for approval: ``.pending()``; answer with ``confirm_tool``."""
        # "Always" answers are in the log, so they hold again when the session is reopened.
        if not new:
            self.approvals.restore(rules_from_events(self._log.events(types=RULE_EVENT_TYPES)))

    def _deps(self) -> TurnDeps:
        engine = self._engine
        log = self._log
        engine.memory_stores.attach(self.id, log.tool_scope, log.record.resources, engine.tools)
        return TurnDeps(
            providers=engine.providers,
            tools=engine.tools,
            approver=self.approver,
            agents=engine.agents,
            memory=engine.memory_stores,
            files=engine.files,
            skills=engine.skills,
            workspace=self.workspace,
            start_mcp=engine.ensure_mcp,
            driver=self.driver,
        )

    # ------------------------------------------------------------------------------------------ state

    @property
    def id(self) -> str:
        return self._log.id

    @property
    def record(self) -> SessionRecord:
        return self._log.record

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def workspace(self) -> Path:
        """Where the session's tools work and its resources are mounted."""
        return workspace_for(self._engine.tools, self.id)

    @property
    def title(self) -> str | None:
        return self.record.title

    @property
    def metadata(self) -> dict[str, str]:
        return dict(self.record.metadata)

    @property
    def budget(self) -> Budget | None:
        return self.record.budget

    @property
    def agent(self) -> Agent:
        """The pinned agent version."""
        return self._log.agent

    @property
    def status(self) -> Literal["idle", "running", "terminated"]:
        if self.record.terminated_at is not None:
            return "terminated"
        return "running" if self._turns.running else "idle"

    @property
    def usage(self) -> Usage:
        """Cumulative usage and list cost of the whole session."""
        return self._log.usage

    @property
    def stats(self) -> SessionStats:
        return session_stats(self._log, running=self._turns.running)

    def events(self, *, types: Sequence[str] | None = None, active_path: bool = False) -> list[Event]:
        """The durable events, in order: the whole log, or with ``active_path`` only what the conversation
        still holds (no superseded turn)."""
        superseded = self._log.path().superseded if active_path else set()
        if not superseded:
            return list(self._log.events(types=types))
        # The path needs the events that tell turns apart, whatever types were asked for.
        wanted = (
            None if types is None else {*types, *PATH_EVENT_TYPES, "session.status_idle", "user.custom_tool_result"}
        )
        kept = on_path(self._log.events(types=wanted), superseded)
        return [e for e in kept if types is None or e.type in types]

    def history(self, thread_id: str | None = None) -> History:
        """A thread's conversation as the model is sent it (the primary thread's by default)."""
        return self._log.history(thread_id)

    @property
    def outcome(self) -> Outcome | None:
        """The latest outcome's state (see ``define_outcome``); None when none was defined."""
        return self._log.outcome

    @property
    def threads(self) -> list[ThreadInfo]:
        """The threads spawned in this session, with their status and their own usage."""
        return thread_infos(self.events(types=_THREAD_EVENT_TYPES))

    @property
    def last_turn(self) -> TurnResult | None:
        """The latest turn this handle ran, once it has ended: set however it ended (an interrupt that
        cancelled the caller included), before ``send``/``ask`` return or raise. None before any turn."""
        return self._turns.last

    def offered_tool_names(self) -> list[str]:
        """The tools the model is offered at the next turn: the host's, the agent's custom tools, and the
        engine's own (spawning threads, the advisor, memory)."""
        return self._turns.offered_tool_names(self._deps())

    def mount(self) -> list[Mounted]:
        """Clone the git repositories and copy the uploaded files of the session into its workspace now
        (the first turn does it otherwise). Raises ResourceMountError saying what failed."""
        mounted = mount_resources(self.record.resources, self.workspace, self._engine.files)
        self._turns.mounted()
        return mounted

    # ------------------------------------------------------------------------------------------ the log

    def make(self, cls: type[E], **fields: Any) -> E:
        """An event of this session with a new id and the current time (append it with :meth:`emit`)."""
        return self._log.make(cls, **fields)

    def emit(self, item: StreamItem) -> None:
        """Append a buffered event durably (previews are not stored), then show it to every listener."""
        self._log.emit(item)

    def subscribe(self, listener: Callable[[StreamItem], None]) -> Callable[[], None]:
        """Call ``listener`` with every item this session emits from now on; returns the unsubscriber."""
        return self._log.subscribe(listener)

    # ------------------------------------------------------------------------------------------ turns

    async def send(
        self,
        message: Input,
        *,
        tool_choice: ToolChoice = None,
        cell_id: str | None = None,
        skills: Sequence[str] = (),
        context: NotebookContext | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Run one turn, yielding its previews and buffered events in order until ``session.status_idle``.

        ``tool_choice`` ("any", "none", or a tool's name) applies to the turn's first model request only,
        so a forced call is followed by an answer rather than a loop of calls; a sequence of them applies
        to the first requests in order (spawn_thread, then wait_thread). Closing the iterator early (or
        cancelling the task that iterates) interrupts the turn.

        ``cell_id`` ties the turn to a notebook cell: running a cell again replaces its turn on the
        conversation's active path, with every turn after it (they stay in the log, marked by
        ``session.turns_superseded``). Without one, turns append.

        ``skills`` names skills of the session to activate before the model's first request, as a user's
        ``/name`` does (each an ``activate_skill`` call the turn makes itself).

        ``context`` is what a notebook showed since the previous turn (the code cells it ran, the user's
        variables): the model is shown it before the message.
        """
        if self.status == "terminated":
            raise SessionTerminatedError(f"session {self.id} was terminated; create a new session")
        deps = self._deps()
        choices = tool_choices(tool_choice, lambda: self._turns.offered_tool_names(deps))
        opening = opening_events(self._log, deps, message, cell_id=cell_id, skills=skills, context=context)
        async for item in self._turns.stream(opening, deps, choices):
            yield item

    async def ask(
        self,
        message: Input,
        *,
        on_item: Callable[[StreamItem], None] | None = None,
        tool_choice: ToolChoice = None,
        cell_id: str | None = None,
        skills: Sequence[str] = (),
        context: NotebookContext | None = None,
    ) -> TurnResult:
        """Run one turn to its end and return what it produced; ``on_item`` sees every item as it streams."""
        turn = self.send(message, tool_choice=tool_choice, cell_id=cell_id, skills=skills, context=context)
        async for item in turn:
            if on_item is not None:
                on_item(item)
        assert self._turns.last is not None  # send() returns only once the turn ended
        return self._turns.last

    def send_sync(
        self,
        message: Input,
        *,
        tool_choice: ToolChoice = None,
        cell_id: str | None = None,
        skills: Sequence[str] = (),
        context: NotebookContext | None = None,
    ) -> TurnResult:
        """:meth:`ask` for scripts without an event loop."""
        turn = self.ask(message, tool_choice=tool_choice, cell_id=cell_id, skills=skills, context=context)
        return self._engine.run_sync(turn)

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

    async def compact(self, instructions: str | None = None) -> SessionContextCompacted | None:
        """Have the model summarise the conversation so far into one entry that replaces it for later
        requests (``instructions``: what the summary must keep); billed like any request. None when there
        is no conversation yet. Raises SessionBusyError while a turn runs."""
        if self.status != "idle":
            raise SessionBusyError(f"session {self.id} is {self.status}: compact it when its turn has ended")
        return await compact_now(self._log, self._deps(), instructions)

    def interrupt(self, *, thread_id: str | None = None) -> None:
        """Stop the running turn (from any thread); it ends within a second with ``interrupted``. With
        ``thread_id``, stop only that spawned thread (its coordinator goes on)."""
        self._turns.interrupt(thread_id=thread_id)

    def steer(self, content: str | Sequence[ContentBlock], *, thread_id: str | None = None) -> None:
        """Add guidance to the running turn (from any thread, e.g. a widget callback): the model gets it
        as a user message with its next request. The request already streaming is not cancelled; if the
        model was giving its final answer, the turn goes on for one more request to take the guidance in.
        Raises InvalidInputError when no turn is running (send the guidance as a message then)."""
        self._turns.steer(message_blocks(content), thread_id=thread_id)

    # ------------------------------------------------------------------------------------------ updates

    def update(
        self,
        *,
        title: str | Unset | None = UNSET,
        metadata: dict[str, str] | Unset = UNSET,
        budget: str | int | Decimal | Budget | Unset | None = UNSET,
        agent_version: int | Unset = UNSET,
        permissions: PermissionPreset | Unset = UNSET,
        tools: list[Any] | Unset = UNSET,
        mcp_servers: list[Any] | Unset = UNSET,
    ) -> Session:
        """Change the title, metadata, budget, permission preset or pinned agent version, or replace the
        session's tools or MCP servers (omit keeps, ``[]`` clears); emits ``session.updated`` with what
        changed (for tools and MCP servers, the full materialised agent)."""
        if self.status == "terminated":
            raise SessionTerminatedError(f"session {self.id} was terminated; it cannot be updated")
        if permissions is not UNSET:
            refuse_from_tool_code(f"setting the permission preset to {permissions!r}")
        if budget is not UNSET:
            refuse_from_tool_code("changing the budget")
        if budget is not UNSET and budget is not None:
            check_priced(self._engine.providers.resolve(self.agent.model))  # a cap must be able to fire
        apply_update(
            self._log,
            self._engine.agents,
            title=title,
            metadata=metadata,
            budget=budget,
            agent_version=agent_version,
            permissions=permissions,
            tools=tools,
            mcp_servers=mcp_servers,
            skills=self._engine.skills,
        )
        return self

    def terminate(self) -> None:
        """End the session for good; its duration is frozen."""
        if self._turns.running:
            raise SessionBusyError(f"a turn is running in session {self.id}; interrupt it first")
        terminate(self._log)

    def __repr__(self) -> str:
        return f"<Session {self.id} {self.status} agent={self.agent.id} v{self.agent.version}>"
