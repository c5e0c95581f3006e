"""Agents and their immutable versions.

Creating an agent makes version 1; every update that changes something makes the next version and leaves
the earlier ones untouched. List fields (``tools``, ``mcp_servers``, ``skills``) are replaced whole: omit
one to keep it, pass ``[]`` to clear it. ``system`` takes up to 100,000 characters; ``None`` clears it.
``multiagent`` (may it spawn threads, of which agents) and ``advisor`` (a model it may consult) are
likewise replaced whole, and ``None`` clears them.
"""

from __future__ import annotations

import builtins
import enum
import fnmatch
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._validation import check_metadata, validated
from .errors import AgentNotFoundError, AgentVersionNotFoundError, InvalidInputError
from .events import utc_now
from .ids import new_id
from .providers.base import ModelConfig

if TYPE_CHECKING:
    from .store.base import Store

__all__ = [
    "DEFAULT_ADVISORS",
    "MAX_SYSTEM_CHARS",
    "UNSET",
    "Agent",
    "AgentRef",
    "AgentsAPI",
    "CustomTool",
    "McpServer",
    "MultiAgent",
    "ToolFilter",
    "ToolSpec",
    "advisor_permitted",
]

MAX_SYSTEM_CHARS = 100_000

DEFAULT_ADVISORS: Mapping[str, Sequence[str]] = {
    "scripted*": ("*",),
    "claude-*": ("claude-opus-*", "anthropic:claude-opus-*"),
    "anthropic:claude-*": ("claude-opus-*", "anthropic:claude-opus-*"),
    "local*": ("local*",),
}
"""Which advisor models an agent's model may consult: executor pattern -> advisor patterns (shell-style,
matched against model ids). The test double may consult anything; Claude models consult an Opus; the
embedded model consults a local one. ``Engine(advisors=...)`` replaces it."""


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset.UNSET
"""Marks an update argument as omitted (keep the current value), as opposed to ``None`` (clear it)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CustomTool(_Model):
    """A tool the client answers: the turn pauses with ``requires_action`` until it sends the result."""

    type: Literal["custom"] = "custom"
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolFilter(_Model):
    """Which registered tools this agent sees: ``allow`` keeps only those names, ``deny`` removes names."""

    type: Literal["filter"] = "filter"
    allow: list[str] | None = None
    deny: list[str] = []


ToolSpec: TypeAlias = Annotated[CustomTool | ToolFilter, Field(discriminator="type")]


class McpServer(_Model):
    """An MCP server whose tools the agent gets under the prefix ``<name>__``."""

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    type: Literal["stdio", "http"] = "stdio"
    command: list[str] = []
    env: dict[str, str] = Field(default={}, repr=False)
    """May hold secrets: stored with the agent version, left out of reprs and of ``Agent.snapshot()``."""
    url: str | None = None
    headers: dict[str, str] = Field(default={}, repr=False)
    """May hold secrets (an ``Authorization`` header): stored, never shown, like ``env``."""

    @model_validator(mode="after")
    def _endpoint(self) -> McpServer:
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs a command")
        if self.type == "http" and not self.url:
            raise ValueError("an http MCP server needs a url")
        return self


class AgentRef(_Model):
    """A saved agent a coordinator may spawn as a thread: its latest version, or the one pinned."""

    id: str = Field(min_length=1)
    version: int | None = Field(default=None, ge=1)


class MultiAgent(_Model):
    """What an agent may do with session threads."""

    spawn_threads: bool = True
    """Whether the agent gets the tools to spawn threads and wait for their results."""
    agents: list[AgentRef] = []
    """The predefined (saved) agents it may spawn."""
    inline_agents: bool = False
    """Whether it may define agents inline (a name, a system prompt, a model), which are not saved."""


class Agent(_Model):
    """One immutable version of an agent."""

    id: str
    version: int = Field(ge=1)
    name: str = Field(min_length=1, max_length=256)
    description: str | None = Field(default=None, max_length=2048)
    model: ModelConfig
    system: str | None = Field(default=None, max_length=MAX_SYSTEM_CHARS)
    tools: list[ToolSpec] = []
    mcp_servers: list[McpServer] = []
    skills: list[str] = []
    metadata: dict[str, str] = {}
    multiagent: MultiAgent | None = None
    """None: the agent works alone."""
    advisor: str | None = Field(default=None, min_length=1)
    """A model id the agent's primary thread may consult through the ``consult_advisor`` tool."""
    created_at: datetime
    updated_at: datetime

    @field_validator("model", mode="before")
    @classmethod
    def _model_from_name(cls, value: object) -> object:
        return {"id": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _unique_names(self) -> Agent:
        names = [t.name for t in self.tools if isinstance(t, CustomTool)]
        if len(names) != len(set(names)):
            raise ValueError("custom tool names must be unique")
        servers = [s.name for s in self.mcp_servers]
        if len(servers) != len(set(servers)):
            raise ValueError("MCP server names must be unique")
        return self

    @property
    def custom_tools(self) -> list[CustomTool]:
        return [t for t in self.tools if isinstance(t, CustomTool)]

    def snapshot(self) -> dict[str, Any]:
        """The agent for events (``session.updated``): everything but the MCP servers' env and headers,
        which may hold secrets (the stored agent version keeps them, to start the servers)."""
        return self.model_dump(mode="json", exclude={"mcp_servers": {"__all__": {"env", "headers"}}})


def _check_system(system: object) -> None:
    if isinstance(system, str) and len(system) > MAX_SYSTEM_CHARS:
        raise InvalidInputError(f"the system prompt has {len(system):,} characters; the limit is {MAX_SYSTEM_CHARS:,}")


class AgentsAPI:
    """``engine.agents``: create, update, get and list agents and their versions."""

    def __init__(self, store: Store, *, advisors: Mapping[str, Sequence[str]] = DEFAULT_ADVISORS) -> None:
        self._store = store
        self._advisors = advisors

    def _check(self, agent: Agent) -> None:
        """What a single agent's fields cannot say: its advisor is permitted, its thread agents exist."""
        if agent.advisor is not None and not advisor_permitted(agent.model.id, agent.advisor, self._advisors):
            allowed = [a for pattern, advisors in self._advisors.items() for a in advisors
                       if fnmatch.fnmatchcase(agent.model.id, pattern)]  # fmt: skip
            raise InvalidInputError(
                f"the advisor {agent.advisor!r} is not permitted for the model {agent.model.id!r}; "
                f"permitted advisors for it: {', '.join(allowed) or 'none'} "
                "(the allow-list is Engine(advisors={model pattern: [advisor patterns]}))"
            )
        for index, ref in enumerate(agent.multiagent.agents if agent.multiagent else []):
            try:
                self.get(ref.id, ref.version)
            except (AgentNotFoundError, AgentVersionNotFoundError) as exc:
                raise InvalidInputError(f"multiagent.agents[{index}]: {exc}") from None

    def create(
        self,
        *,
        name: str,
        model: str | ModelConfig | dict[str, Any],
        system: str | None = None,
        description: str | None = None,
        tools: list[ToolSpec] | list[dict[str, Any]] | None = None,
        mcp_servers: list[McpServer] | list[dict[str, Any]] | None = None,
        skills: list[str] | None = None,
        metadata: dict[str, str] | None = None,
        multiagent: MultiAgent | dict[str, Any] | None = None,
        advisor: str | None = None,
    ) -> Agent:
        _check_system(system)
        now = utc_now()
        agent = validated(
            Agent,
            {
                "id": new_id("agent"),
                "version": 1,
                "name": name,
                "description": description,
                "model": model,
                "system": system,
                "tools": tools or [],
                "mcp_servers": mcp_servers or [],
                "skills": skills or [],
                "metadata": check_metadata(metadata or {}, "agent"),
                "multiagent": multiagent,
                "advisor": advisor,
                "created_at": now,
                "updated_at": now,
            },
            "agent",
        )
        self._check(agent)
        self._store.put_agent_version(agent)
        return agent

    def update(
        self,
        agent_id: str,
        *,
        name: str | _Unset = UNSET,
        model: str | ModelConfig | dict[str, Any] | _Unset = UNSET,
        system: str | _Unset | None = UNSET,
        description: str | _Unset | None = UNSET,
        tools: list[ToolSpec] | list[dict[str, Any]] | _Unset = UNSET,
        mcp_servers: list[McpServer] | list[dict[str, Any]] | _Unset = UNSET,
        skills: list[str] | _Unset = UNSET,
        metadata: dict[str, str] | _Unset = UNSET,
        multiagent: MultiAgent | dict[str, Any] | _Unset | None = UNSET,
        advisor: str | _Unset | None = UNSET,
    ) -> Agent:
        """Make the next version from the latest. An update that changes nothing returns the latest."""
        current = self.get(agent_id)
        _check_system(system)
        changes: dict[str, Any] = {
            key: value
            for key, value in {
                "name": name,
                "model": model,
                "system": system,
                "description": description,
                "tools": tools,
                "mcp_servers": mcp_servers,
                "skills": skills,
                "metadata": check_metadata(metadata, "agent") if metadata is not UNSET else UNSET,
                "multiagent": multiagent,
                "advisor": advisor,
            }.items()
            if value is not UNSET
        }
        data = current.model_dump() | changes
        candidate = validated(Agent, data, "agent update")
        if candidate.model_dump(exclude={"updated_at"}) == current.model_dump(exclude={"updated_at"}):
            return current
        self._check(candidate)
        new = candidate.model_copy(update={"version": current.version + 1, "updated_at": utc_now()})
        self._store.put_agent_version(new)
        return new

    def get(self, agent_id: str, version: int | None = None) -> Agent:
        """The latest version, or the given one (versions start at 1)."""
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
            raise InvalidInputError(f"an agent version is an integer of at least 1, not {version!r}")
        agent = self._store.get_agent_version(agent_id, version)
        if agent is None:
            latest = self._store.get_agent_version(agent_id, None)
            if latest is None:
                raise AgentNotFoundError(agent_id)
            raise AgentVersionNotFoundError(agent_id, version or 0, latest.version)
        return agent

    def list(self) -> list[Agent]:
        """The latest version of every agent, oldest agent first."""
        return self._store.list_agents()

    def versions(self, agent_id: str) -> builtins.list[Agent]:
        versions = self._store.list_agent_versions(agent_id)
        if not versions:
            raise AgentNotFoundError(agent_id)
        return versions


def advisor_permitted(model: str, advisor: str, allow: Mapping[str, Sequence[str]]) -> bool:
    """Whether ``allow`` lets an agent on ``model`` consult ``advisor`` (shell-style patterns)."""
    return any(
        fnmatch.fnmatchcase(model, pattern) and any(fnmatch.fnmatchcase(advisor, a) for a in advisors)
        for pattern, advisors in allow.items()
    )
