"""Multi-agent threads: a coordinator spawns other agents on tasks that run beside it, then reads their results.

An agent whose ``multiagent`` settings allow it gets two engine tools in the session's primary thread:

- ``spawn_thread {task, agent? | inline_agent?}`` starts a thread on one of its predefined (saved) agents,
  or on an agent it defines inline when it may, and returns the thread's id at once;
- ``wait_thread {thread_id?}`` waits for the thread (the latest one when no id is given) to stop and
  returns its final message as the result.

A thread is a :class:`~agentcell.engine.runner.TurnRunner` with its own ``thread_id``: every event it makes
carries that id, its history is its own (it opens with ``agent.thread_message_received`` holding the task),
and its tool calls are answered in it. Threads run concurrently as tasks of the coordinator's turn; they
share the session's usage and budget (every request reserves through the session) and report their own
usage on ``session.thread_status_idle``. Their status uses ``session.thread_status_running``/``_idle``,
which the session's active time counts with overlaps once; ``session.status_*`` stay the primary thread's.
A thread works on its own, as the spawn tool tells the model: when the coordinator ends its turn without
waiting, the turn stays open until its threads finish (its cell shows them working); an interrupt, an
error or the budget ends them with the turn. Spawned threads are not
offered custom tools (no client answers them there) nor these tools (one level of coordination).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from typing import Any

from .._validation import validated
from ..errors import AgentCellError, InvalidInputError
from ..events import (
    AgentMessage,
    AgentThreadMessageReceived,
    AgentThreadMessageSent,
    EndTurn,
    ErrorInfo,
    ErrorStop,
    Event,
    Interrupted,
    RequiresAction,
    SessionError,
    SessionThreadCreated,
    SessionThreadStatusIdle,
    SessionThreadStatusRunning,
    SpanModelRequestEnd,
    StopReason,
    TextBlock,
)
from ..ids import new_id
from ..providers.base import ToolSchema
from ..records.agent import Agent
from ..records.common import utc_now
from ..records.session import ResolvedMultiAgent
from ..tools.base import ToolCall, ToolResult
from ..usage import Usage
from .deps import TurnDeps
from .log import SessionLog
from .request import AWAITING_CLIENT, SessionTool
from .runner import TurnRunner
from .skills import skill_tools
from .updates import resolve_multiagent

__all__ = ["AWAITING_CLIENT", "WAIT_TOOL", "ThreadInfo", "ThreadManager", "thread_infos", "thread_result"]

SPAWN_TOOL = "spawn_thread"
WAIT_TOOL = "wait_thread"


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """A spawned thread as the event log tells it."""

    id: str
    parent_id: str | None
    agent_id: str
    agent_name: str
    status: str
    """running, idle (stopped for ``stop_reason``), or created."""
    stop_reason: StopReason | None
    usage: Usage


@dataclass
class _Thread:
    id: str
    agent: Agent
    inline: bool
    task: asyncio.Task[tuple[StopReason, str]] | None = None

    @property
    def awaiting_client(self) -> list[str]:
        """The custom tool uses the thread stopped for (the client answers them), if it did."""
        if self.task is None or not self.task.done() or self.task.cancelled():
            return []
        stop, _ = self.task.result()
        return list(stop.event_ids) if isinstance(stop, RequiresAction) else []


class ThreadManager:
    """The threads of one coordinator turn."""

    def __init__(self, log: SessionLog, deps: TurnDeps, parent_id: str | None = None) -> None:
        self.log = log
        self.deps = deps
        self.parent_id = parent_id
        self._threads: dict[str, _Thread] = {}

    # ------------------------------------------------------------------------------------------ tools

    def tools(self, agent: Agent) -> list[SessionTool]:
        """The spawn and wait tools, when the agent may spawn threads: from the multi-agent settings the
        session snapshotted at creation (full definitions of its helpers), or, for a session recorded
        before sessions kept them, resolved now."""
        settings = self.log.record.multiagent
        if settings is None and agent.multiagent is not None:
            settings = resolve_multiagent(agent, self.deps.agents)
        if settings is None or not settings.spawn_threads:
            return []
        spawn = SessionTool(_spawn_schema(settings), lambda call: self._spawn(call, agent, settings))
        wait = SessionTool(self._wait_schema(), self._wait, describe=self._wait_schema)
        return [spawn, wait]

    def _wait_schema(self) -> ToolSchema:
        thread_id: dict[str, Any] = {"type": "string", "description": "The id spawn_thread returned."}
        if self._threads:  # the ids that can be waited for: a model that copies badly can pick only these
            thread_id["enum"] = list(self._threads)
        return ToolSchema(
            name=WAIT_TOOL,
            description=(
                "Wait until a thread you spawned stops, and get its final message "
                "(the thread spawned last, unless thread_id names another)."
            ),
            input_schema={"type": "object", "properties": {"thread_id": thread_id}},
        )

    async def _spawn(self, call: ToolCall, coordinator: Agent, settings: ResolvedMultiAgent) -> ToolResult:
        task = call.input.get("task")
        if not isinstance(task, str) or not task.strip():
            return ToolResult.error("spawn_thread needs a task: what the thread is to do", "INVALID_INPUT")
        try:
            agent, inline = self._thread_agent(call.input, coordinator, settings)
        except AgentCellError as exc:
            return ToolResult.error(str(exc), "INVALID_INPUT")
        log = self.log
        thread = _Thread(new_id("sthr"), agent, inline)
        log.emit(
            log.make(
                SessionThreadCreated,
                thread_id=self.parent_id,
                session_thread_id=thread.id,
                agent_id=agent.id,
                agent_version=None if inline else agent.version,
                agent_name=agent.name,
                model=agent.model.id,
                tool_use_id=call.tool_use_id,
                inline_agent=agent.model_dump(mode="json") if inline else None,
            )
        )
        content = [TextBlock(text=task.strip())]
        log.emit(log.make(AgentThreadMessageSent, thread_id=self.parent_id, to_thread_id=thread.id, content=content))
        log.emit(
            log.make(AgentThreadMessageReceived, thread_id=thread.id, from_thread_id=self.parent_id, content=content)
        )
        thread.task = asyncio.get_running_loop().create_task(self._run(thread), name=f"agentcell-thread-{thread.id}")
        self._threads[thread.id] = thread
        return ToolResult.text(
            json.dumps({"thread_id": thread.id, "agent": agent.name, "status": "running"})
            + f"\nThe thread works on its own; call {WAIT_TOOL} with this thread_id to get its result."
        )

    def _thread_agent(
        self, data: dict[str, Any], coordinator: Agent, settings: ResolvedMultiAgent
    ) -> tuple[Agent, bool]:
        """The agent a spawn asks for, and whether it is defined inline."""
        named, inline = data.get("agent"), data.get("inline_agent")
        if named is not None and inline is not None:
            raise InvalidInputError("give either agent or inline_agent, not both")
        allowed = {helper.id: helper for helper in settings.agents}
        if inline is None and named is None:
            if len(allowed) == 1 and not settings.inline_agents:
                named = next(iter(allowed))
            elif not allowed and settings.inline_agents:
                # Nothing to choose from but inline agents: a plain helper on the coordinator's model.
                inline = {"name": "helper"}
            else:
                raise InvalidInputError(_choices(settings, "name the agent to spawn"))
        if named is not None:
            helper = allowed.get(str(named))
            if helper is None:
                raise InvalidInputError(_choices(settings, f"{named!r} is not an agent you may spawn"))
            return helper, False
        if not settings.inline_agents:
            raise InvalidInputError(_choices(settings, "you may not define agents inline"))
        if not isinstance(inline, dict):
            raise InvalidInputError("inline_agent is an object: {name, system?, model?}")
        now = utc_now()
        agent = validated(
            Agent,
            {
                "id": new_id("agent"),
                "version": 1,
                "name": inline.get("name"),
                "model": inline.get("model") or coordinator.model,
                "system": inline.get("system"),
                "created_at": now,
                "updated_at": now,
            },
            "inline agent",
        )
        self.deps.resolve_model(agent.model)  # an unknown model is the coordinator's mistake, told now
        return agent, True

    async def _wait(self, call: ToolCall) -> ToolResult:
        wanted = call.input.get("thread_id")
        # Without an id, the latest thread: a model that cannot copy an id (or a recorded script, which
        # cannot know the id of a new run) can still wait for the thread it just spawned.
        key = str(wanted) if wanted else next(reversed(self._threads), "")
        thread = self._threads.get(key)
        if thread is None or thread.task is None:
            known = ", ".join(self._threads) or "none"
            return ToolResult.error(
                f"no thread {call.input.get('thread_id')!r} was spawned in this turn; yours: {known}"
            )
        # Shielded: the coordinator being interrupted ends its threads through close(), not through here.
        stop, final = await asyncio.shield(thread.task)
        return thread_result(thread.id, stop, final)

    # ------------------------------------------------------------------------------------------ running

    async def _run(self, thread: _Thread) -> tuple[StopReason, str]:
        log = self.log
        log.emit(log.make(SessionThreadStatusRunning, thread_id=thread.id))
        stop: StopReason = EndTurn()
        try:
            tools = skill_tools(log, self.deps, thread.agent)
            stop = await TurnRunner(log, self.deps, thread.id, agent=thread.agent, tools=tools).run()
        except asyncio.CancelledError:
            # The thread's task ends normally so that waiters read "interrupted" rather than being cancelled.
            stop = Interrupted()
        except Exception as exc:  # a bug must not leave the thread running forever
            message = f"{type(exc).__name__}: {exc}"
            error = ErrorInfo(type="unknown_error", message=message)
            log.emit(log.make(SessionError, thread_id=thread.id, error=error))
            stop = ErrorStop(message=message)
        final = _last_message(list(log.events(types=("agent.message",))), thread.id)
        usage = thread_usage(list(log.events(types=("span.model_request_end",))), thread.id)
        log.emit(log.make(SessionThreadStatusIdle, thread_id=thread.id, stop_reason=stop, usage=usage))
        if final and not isinstance(stop, RequiresAction):  # a paused thread has not finished
            reply = [TextBlock(text=final)]
            log.emit(log.make(AgentThreadMessageSent, thread_id=thread.id, to_thread_id=self.parent_id, content=reply))
        return stop, final

    def awaiting_client(self) -> list[str]:
        """The custom tool uses the threads of this turn stopped for, waiting for the client's answers."""
        return [event_id for thread in self._threads.values() for event_id in thread.awaiting_client]

    async def resume(self, thread_id: str) -> tuple[StopReason, str]:
        """Run a thread that stopped for a custom tool again, now that the client answered (its answer is in
        the thread's history); returns how it stopped and its last message."""
        created = next(
            (
                e
                for e in self.log.events(types=("session.thread_created",))
                if isinstance(e, SessionThreadCreated) and e.session_thread_id == thread_id
            ),
            None,
        )
        if created is None:
            raise InvalidInputError(f"no thread {thread_id} was spawned in session {self.log.id}")
        if created.inline_agent is not None:
            agent, inline = Agent.model_validate(created.inline_agent), True
        else:
            agent, inline = self.deps.agents.get(created.agent_id, created.agent_version), False
        thread = _Thread(thread_id, agent, inline)
        thread.task = asyncio.get_running_loop().create_task(self._run(thread), name=f"agentcell-thread-{thread_id}")
        self._threads[thread_id] = thread
        return await asyncio.shield(thread.task)

    def cancel(self, thread_id: str) -> bool:
        """Interrupt one thread; False when no running thread has that id."""
        thread = self._threads.get(thread_id)
        if thread is None or thread.task is None or thread.task.done():
            return False
        thread.task.cancel()
        return True

    async def close(self, *, finish: bool = False) -> None:
        """Wait until every thread has recorded that it stopped: those still running are interrupted, or,
        with ``finish`` (the coordinator ended its turn as it meant to), left to end on their own. An
        interrupt while they finish interrupts them, and is raised once they have recorded it."""
        tasks = [t.task for t in self._threads.values() if t.task is not None]
        if not tasks:
            return
        if finish:
            try:
                await asyncio.gather(*tasks, return_exceptions=True)
                return
            except asyncio.CancelledError:  # the gather passed the interrupt on to the threads
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _spawn_schema(settings: ResolvedMultiAgent) -> ToolSchema:
    lines = [
        "Start a thread: another agent works on a task at the same time as you, in its own conversation, and "
        "sees only the task you give it. Returns the thread's id at once; call wait_thread to get its final "
        "message. Spawn several threads before waiting to have them work in parallel."
    ]
    properties: dict[str, Any] = {"task": {"type": "string", "description": "What the thread is to do, in full."}}
    if settings.agents:
        lines.append("Agents you may spawn (give the id as agent):")
        for agent in settings.agents:
            about = f": {agent.description}" if agent.description else ""
            lines.append(f"- {agent.id} ({agent.name}){about}")
        properties["agent"] = {"type": "string", "enum": [agent.id for agent in settings.agents]}
    if settings.inline_agents:
        lines.append("You may also define the thread's agent inline with inline_agent.")
        properties["inline_agent"] = {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "system": {"type": "string", "description": "Its system prompt."},
                "model": {"type": "string", "description": "A model id; yours when omitted."},
            },
            "required": ["name"],
        }
    return ToolSchema(
        name=SPAWN_TOOL,
        description="\n".join(lines),
        input_schema={"type": "object", "properties": properties, "required": ["task"]},
    )


def _choices(settings: ResolvedMultiAgent, problem: str) -> str:
    ids = ", ".join(agent.id for agent in settings.agents) or "none"
    inline = "; or define one inline with inline_agent" if settings.inline_agents else ""
    return f"{problem}: spawn one of the agents {ids}{inline}"


def _last_message(events: list[Event], thread_id: str) -> str:
    for event in reversed(events):
        if isinstance(event, AgentMessage) and event.thread_id == thread_id:
            return "".join(b.text for b in event.content if isinstance(b, TextBlock))
    return ""


def thread_result(thread_id: str, stop: StopReason, final: str) -> ToolResult:
    """What a coordinator's wait_thread gets: the thread's final message, or why it stopped before."""
    if isinstance(stop, EndTurn):
        return ToolResult.text(final or "(the thread ended without a message)")
    if isinstance(stop, RequiresAction):
        return ToolResult.error(
            f"the thread {thread_id} is waiting for the client to answer its tool call", AWAITING_CLIENT
        )
    said = f" Its last message: {final}" if final else ""
    return ToolResult.error(f"the thread {thread_id} stopped ({stop.type}) before it finished.{said}")


def thread_usage(events: list[Event], thread_id: str | None) -> Usage:
    """The sum of one thread's model requests."""
    total = Usage()
    for event in events:
        if isinstance(event, SpanModelRequestEnd) and event.thread_id == thread_id:
            total = total + event.model_usage
    return total


def thread_infos(events: list[Event]) -> list[ThreadInfo]:
    """The session's spawned threads, in the order they were created, folded from its events."""
    infos: dict[str, ThreadInfo] = {}
    usage: dict[str, Usage] = {}
    for event in events:
        if isinstance(event, SessionThreadCreated):
            infos[event.session_thread_id] = ThreadInfo(
                event.session_thread_id, event.thread_id, event.agent_id, event.agent_name, "created", None, Usage()
            )
        elif event.thread_id in infos:
            tid = event.thread_id
            info = infos[tid]
            if isinstance(event, SessionThreadStatusRunning):
                infos[tid] = replace(info, status="running", stop_reason=None)
            elif isinstance(event, SessionThreadStatusIdle):
                infos[tid] = replace(info, status="idle", stop_reason=event.stop_reason)
            elif isinstance(event, SpanModelRequestEnd):
                usage[tid] = usage.get(tid, Usage()) + event.model_usage
    return [replace(info, usage=usage.get(tid, Usage())) for tid, info in infos.items()]
