"""What a request carries besides the history: the system prompt with its sections, and the offered tools.

The system prompt is the agent's own, followed by what the session mounted and (in the primary thread,
whose agent has the memory tools) the memory section with each store's guidance. The tools are the tool
host's for the agent (filtered by its ``ToolFilter``), its custom tools (in spawned threads too), and the
engine's own tools (:class:`SessionTool`: spawning threads, consulting the advisor).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..providers.base import ToolSchema
from ..records.agent import Agent, ToolFilter
from ..records.resources import MemoryStoreResource
from ..tools.base import ToolCall, ToolResult
from ..tools.definition import ToolContext, ToolDefinition
from .deps import TurnDeps
from .log import SessionLog
from .mount import describe_mounts

__all__ = ["AWAITING_CLIENT", "SessionTool", "offered_tools", "system_prompt"]

AWAITING_CLIENT = "AWAITING_CLIENT"
"""The error code of an engine tool whose call waits for the client (a wait on a thread paused for a custom
tool): the caller's thread pauses too, the call left open."""


@dataclass(frozen=True, slots=True)
class SessionTool:
    """A tool the engine itself offers a thread (spawning threads, consulting the advisor).

    It is answered by the engine rather than the tool host, because it acts on the session (starts a
    thread, makes a model request) rather than on the world: no permission preset applies to it.
    """

    schema: ToolSchema
    run: Callable[[ToolCall], Awaitable[ToolResult]]
    parallel: bool = True
    describe: Callable[[], ToolSchema] | None = None
    """The schema as it stands at each request, for a tool whose schema changes during a turn."""

    def offered(self) -> ToolSchema:
        return self.describe() if self.describe is not None else self.schema

    def definition(self) -> ToolDefinition:
        """The tool as the registry's pipeline runs it: no access declared (no preset applies), so only
        hooks and guards stand between the model and the engine."""
        schema = self.offered()

        async def run(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            del arguments  # the engine's tools read the call itself (its id names what they start)
            return await self.run(context.call)

        return ToolDefinition(
            name=schema.name,
            run=run,
            description=schema.description,
            input_schema=schema.input_schema,
            parallel_safe=self.parallel,
            origin="engine",
        )


def system_prompt(log: SessionLog, deps: TurnDeps, agent: Agent, *, primary: bool) -> str | None:
    sections = [agent.system] if agent.system else []
    resources = log.record.resources
    if mounts := describe_mounts(resources, deps.workspace, deps.files):
        sections.append(mounts)
    if primary and any(isinstance(r, MemoryStoreResource) for r in resources):
        memory = deps.memory.section(log.id)
        if memory:
            sections.append(memory)
    return "\n\n".join(sections) if sections else None


def offered_tools(
    log: SessionLog, deps: TurnDeps, agent: Agent, *, scope: str, thread_id: str | None, own: Sequence[SessionTool]
) -> list[ToolSchema]:
    """The tools the model sees. Custom tools in every thread (the client's answer is routed to the thread
    that asked); the engine's own tools take precedence over a host tool of the same name."""
    own_names = {t.schema.name for t in own}
    # A registry shares the schemas it built for earlier requests; any other host copies as it likes.
    offered = getattr(deps.tools, "offered", None)
    host_schemas: list[ToolSchema] = offered(scope) if offered is not None else deps.tools.schemas(scope)
    schemas = deps.memory.visible(log.id, log.tool_scope, scope, host_schemas, deps.tools)
    for spec in agent.tools:
        if isinstance(spec, ToolFilter):
            allow = set(spec.allow) if spec.allow is not None else None
            deny = set(spec.deny)
            schemas = [s for s in schemas if (allow is None or s.name in allow) and s.name not in deny]
    schemas = [s for s in schemas if s.name not in own_names]
    names = {s.name for s in schemas} | own_names
    custom = [
        ToolSchema(name=t.name, description=t.description, input_schema=t.input_schema)
        for t in agent.custom_tools
        if t.name not in names
    ]
    return schemas + custom + [t.offered() for t in own]
