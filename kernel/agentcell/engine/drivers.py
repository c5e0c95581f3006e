"""What runs inside a turn: one driver, chosen once from the turn's opening.

:class:`~agentcell.engine.turn.TurnSupervisor` owns a turn's lifecycle (the lease, running and idle, the
interrupt, the result); the driver owns its work. The engine's own drivers are the model conversation
(:class:`ConversationDriver`), an outcome worked toward through revision cycles (:class:`OutcomeDriver`), a
workflow run the user started (:class:`WorkflowDriver`) and a custom tool's answer that resumes a paused
thread or outcome (:class:`ResumedToolDriver`). A host may bring its own (an external agent answering the
notebook's turns) through :attr:`TurnDeps.driver <agentcell.engine.deps.TurnDeps.driver>`: the engine runs it
without knowing what it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from ..errors import ResourceMountError
from ..events import (
    AgentToolResult,
    AgentToolUse,
    ErrorInfo,
    ErrorStop,
    Event,
    RequiresAction,
    SessionError,
    StopReason,
    UserCustomToolResult,
    UserDefineOutcome,
)
from ..records.workflow_events import UserStartWorkflowRun
from ..tools.base import ToolResult
from .advisor import advisor_tools
from .cell_proposals import cell_tools
from .deps import TurnDeps
from .log import SessionLog
from .mount import mount_resources
from .outcomes import OutcomeLoop
from .request import SessionTool
from .runner import TurnRunner
from .skills import activate_requested, pin_repository_skills, requested_skills, skill_tools
from .threads import WAIT_TOOL, ThreadManager, thread_result
from .workflows import run_started_by_user, workflow_tools

__all__ = [
    "ConversationDriver",
    "OutcomeDriver",
    "ResumedToolDriver",
    "TurnDriver",
    "TurnScope",
    "WorkflowDriver",
    "choose_driver",
    "engine_tools",
]


@dataclass(frozen=True, slots=True)
class TurnScope:
    """What a driver works with: the session's log, the turn's services, its threads, and the opening."""

    log: SessionLog
    deps: TurnDeps
    threads: ThreadManager
    first: Event
    """The opening's last event (the message, outcome, workflow start or custom tool answer)."""
    tool_choices: tuple[str, ...]
    mount: Callable[[], Awaitable[None]]
    """Mounts the session's resources, once per session (raises ResourceMountError)."""


class TurnDriver(Protocol):
    """The work of one turn. The supervisor calls :meth:`before_opening`, logs the opening, calls
    :meth:`opened`, and unless that gave a stop, marks the session running and awaits :meth:`drive`.
    Cancellation of :meth:`drive` is the user's interrupt."""

    def before_opening(self) -> None:
        """What the turn ends of the log's earlier state, before its opening is logged."""

    def opened(self) -> StopReason | None:
        """The opening is in the log: a stop when the turn has nothing to run, else None."""

    async def drive(self, scope: TurnScope) -> StopReason:
        """Do the turn's work; its stop reason."""


def engine_tools(log: SessionLog, deps: TurnDeps, threads: ThreadManager) -> list[SessionTool]:
    """The engine's own tools for the primary thread: spawning threads, the advisor, the skills, starting
    workflow runs, proposing notebook cells."""
    return [
        *threads.tools(log.agent),
        *advisor_tools(log, deps, log.agent),
        *skill_tools(log, deps, log.agent),
        *workflow_tools(log, deps, log.agent),
        *cell_tools(log, deps, log.agent),
    ]


class _InHouse:
    """The engine's own drivers: they start the agent's MCP servers, mount the resources and pin a mounted
    repository's skills before their work."""

    def __init__(self, log: SessionLog, deps: TurnDeps) -> None:
        self.log = log
        self.deps = deps

    def before_opening(self) -> None:
        # An outcome paused for a custom tool resumes only with that tool's answer; anything else ends it.
        if (unfinished := OutcomeLoop.active(self.log, self.deps)) is not None:
            defined = isinstance(self, OutcomeDriver)
            unfinished.supersede("a new outcome was defined" if defined else "a message came instead of an answer")

    def opened(self) -> StopReason | None:
        return None

    async def drive(self, scope: TurnScope) -> StopReason:
        log = self.log
        for status in await self.deps.start_mcp(log.agent, log.tool_scope):
            if status.state == "failed":  # the turn goes on without that server's tools
                message = f"MCP server {status.name} did not start: {status.error or 'no reason given'}"
                log.emit(log.make(SessionError, error=ErrorInfo(type="mcp_connection_failed_error", message=message)))
        try:
            await scope.mount()
            await pin_repository_skills(log, self.deps)  # a mounted repository's skills join the session's
        except ResourceMountError as exc:
            log.emit(log.make(SessionError, error=ErrorInfo(type="resource_mount_error", message=str(exc))))
            return ErrorStop(message=str(exc))
        return await self.work(scope)

    async def work(self, scope: TurnScope) -> StopReason:
        raise NotImplementedError

    @staticmethod
    async def conversation(scope: TurnScope) -> Callable[[], TurnRunner]:
        """A maker of the turn's runners (only the first is forced to the turn's tool choices), once the
        skills the user named are loaded."""
        log, deps, threads = scope.log, scope.deps, scope.threads
        tools = engine_tools(log, deps, threads)
        choices = [scope.tool_choices]

        def runner() -> TurnRunner:
            forced, choices[0] = choices[0], ()  # only the turn's first requests are forced
            return TurnRunner(log, deps, tool_choices=forced, tools=tools, awaiting_client=threads.awaiting_client)

        if names := requested_skills(scope.first):  # the user's /name: loaded before the model's first request
            await activate_requested(log, deps, tools, names)
        return runner


class ConversationDriver(_InHouse):
    """The model conversation: the turn loop of requests and tool calls."""

    async def work(self, scope: TurnScope) -> StopReason:
        return await (await self.conversation(scope))().run()


class OutcomeDriver(_InHouse):
    """An outcome the user defined: worked, graded and revised until reached."""

    def __init__(self, log: SessionLog, deps: TurnDeps, first: UserDefineOutcome) -> None:
        super().__init__(log, deps)
        self.first = first
        self.loop: OutcomeLoop | None = None

    def opened(self) -> StopReason | None:
        self.loop = OutcomeLoop(self.log, self.deps, self.first)
        self.loop.announce()
        return None

    async def work(self, scope: TurnScope) -> StopReason:
        assert self.loop is not None  # made when the opening was logged
        return await self.loop.run(await self.conversation(scope))


class WorkflowDriver(_InHouse):
    """A workflow run the user started (``%%workflow``)."""

    def __init__(self, log: SessionLog, deps: TurnDeps, first: UserStartWorkflowRun) -> None:
        super().__init__(log, deps)
        self.first = first

    async def work(self, scope: TurnScope) -> StopReason:
        return await run_started_by_user(self.log, self.deps, self.first)


class ResumedToolDriver(_InHouse):
    """The client's answer to a custom tool: it resumes the thread that asked, then the outcome paused for
    it, or the conversation."""

    def __init__(self, log: SessionLog, deps: TurnDeps, first: UserCustomToolResult) -> None:
        super().__init__(log, deps)
        self.first = first

    def before_opening(self) -> None:
        pass  # the answer an outcome paused for: it resumes

    def opened(self) -> StopReason | None:
        if waiting := self.log.pending_custom_tool_uses():
            return RequiresAction(event_ids=sorted(waiting))  # more answers to come before anything runs
        return None

    async def work(self, scope: TurnScope) -> StopReason:
        runner = await self.conversation(scope)
        thread_id = self.first.thread_id
        if thread_id is not None:
            stop, final = await scope.threads.resume(thread_id)
            if isinstance(stop, RequiresAction):
                return stop
            self._answer_waits(thread_id, thread_result(thread_id, stop, final))
        if (paused := OutcomeLoop.active(self.log, self.deps)) is not None:
            return await paused.run(runner, resumed=True)
        return await runner().run()

    def _answer_waits(self, thread_id: str, result: ToolResult) -> None:
        """Answer the coordinator's wait_thread calls left open when the thread paused for the client."""
        log = self.log
        answered = {e.tool_use_id for e in log.events(types=("agent.tool_result",)) if isinstance(e, AgentToolResult)}
        for use in log.events(types=("agent.tool_use",)):
            if not isinstance(use, AgentToolUse) or use.name != WAIT_TOOL or use.id in answered:
                continue
            if use.thread_id is None and use.input.get("thread_id") in (None, "", thread_id):
                log.emit(
                    log.make(
                        AgentToolResult,
                        tool_use_id=use.id,
                        content=list(result.content),
                        is_error=result.is_error,
                        error_code=result.error_code,
                    )
                )


def choose_driver(log: SessionLog, deps: TurnDeps, first: Event) -> TurnDriver:
    """The driver of a turn opened by ``first``: the host's when it takes the turn, else the engine's own."""
    if deps.driver is not None and (external := deps.driver(first)) is not None:
        return external
    if isinstance(first, UserDefineOutcome):
        return OutcomeDriver(log, deps, first)
    if isinstance(first, UserStartWorkflowRun):
        return WorkflowDriver(log, deps, first)
    if isinstance(first, UserCustomToolResult):
        return ResumedToolDriver(log, deps, first)
    return ConversationDriver(log, deps)


async def mount_once(log: SessionLog, deps: TurnDeps) -> None:
    """Mount the session's resources into its workspace (blocking work on a worker thread)."""
    if log.record.resources:  # nothing to mount: no hop to a worker thread and back
        await asyncio.to_thread(mount_resources, log.record.resources, deps.workspace, deps.files)
