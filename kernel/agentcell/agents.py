"""Agents and their immutable versions.

Creating an agent makes version 1; every update that changes something makes the next version and leaves
the earlier ones untouched. List fields (``tools``, ``mcp_servers``, ``skills``) are replaced whole: omit
one to keep it, pass ``[]`` to clear it. ``system`` takes up to 100,000 characters; ``None`` clears it.
"""

from __future__ import annotations

import builtins
import enum
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
    "MAX_SYSTEM_CHARS",
    "UNSET",
    "Agent",
    "AgentsAPI",
    "CustomTool",
    "McpServer",
    "ToolFilter",
    "ToolSpec",
]

MAX_SYSTEM_CHARS = 100_000


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
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}

    @model_validator(mode="after")
    def _endpoint(self) -> McpServer:
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs a command")
        if self.type == "http" and not self.url:
            raise ValueError("an http MCP server needs a url")
        return self


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
        return self.model_dump(mode="json")


def _check_system(system: object) -> None:
    if isinstance(system, str) and len(system) > MAX_SYSTEM_CHARS:
        raise InvalidInputError(f"the system prompt has {len(system):,} characters; the limit is {MAX_SYSTEM_CHARS:,}")


class AgentsAPI:
    """``engine.agents``: create, update, get and list agents and their versions."""

    def __init__(self, store: Store) -> None:
        self._store = store

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
                "created_at": now,
                "updated_at": now,
            },
            "agent",
        )
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
            }.items()
            if value is not UNSET
        }
        data = current.model_dump() | changes
        candidate = validated(Agent, data, "agent update")
        if candidate.model_dump(exclude={"updated_at"}) == current.model_dump(exclude={"updated_at"}):
            return current
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
