"""An agent's immutable version and the parts it is made of (tools, MCP servers, multi-agent settings).

Validation only: creating, updating and versioning agents is ``AgentsAPI``'s job (``agents.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._validation import validated
from ..errors import InvalidInputError
from .model import ModelConfig
from .skill import MAX_SESSION_SKILLS, SkillRef

__all__ = [
    "MAX_SYSTEM_CHARS",
    "OVERRIDABLE",
    "Agent",
    "AgentRef",
    "CustomTool",
    "McpServer",
    "MultiAgent",
    "ServerTool",
    "ToolFilter",
    "ToolSpec",
    "check_overrides",
    "materialize",
]

MAX_SYSTEM_CHARS = 100_000


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


class ServerTool(_Model):
    """A tool the model's provider runs on its side, beside the agent's own (Anthropic's web search and web
    fetch): its calls and results are kept in the log and the history, and counted in ``server_tool_use``."""

    type: Literal["server"] = "server"
    name: Literal["web_search", "web_fetch"]
    max_uses: int | None = Field(default=None, ge=1)
    """The most times one request may use it."""
    allowed_domains: list[str] | None = None
    blocked_domains: list[str] | None = None


ToolSpec: TypeAlias = Annotated[CustomTool | ToolFilter | ServerTool, Field(discriminator="type")]


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
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"an MCP server's url is http:// or https:// with a host, not {self.url!r}")
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
    workflow_runs: bool = False
    """Whether it may start workflow runs (plans of steps over agents, run in session threads)."""
    workflow_agents: list[AgentRef] = []
    """The predefined (saved) agents a run's plan may use."""
    workflow_inline_agents: bool = False
    """Whether a run's plan may define inline agents, which are not saved."""


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
    skills: list[SkillRef] = []
    """Stored skills the agent may activate (``{"type": "custom", "skill_id", "version"?}``); a bare
    string, as agents stored before skills were used hold, reads as a skill id."""
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

    @field_validator("skills", mode="before")
    @classmethod
    def _skill_ids(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"skill_id": item} if isinstance(item, str) else item for item in value]
        return value

    @model_validator(mode="after")
    def _unique_names(self) -> Agent:
        names = [t.name for t in self.tools if isinstance(t, CustomTool)]
        if len(names) != len(set(names)):
            raise ValueError("custom tool names must be unique")
        servers = [s.name for s in self.mcp_servers]
        if len(servers) != len(set(servers)):
            raise ValueError("MCP server names must be unique")
        skills = [s.skill_id for s in self.skills]
        if len(skills) != len(set(skills)):
            raise ValueError("an agent names each skill once")
        if len(skills) > MAX_SESSION_SKILLS:
            raise ValueError(f"an agent has at most {MAX_SESSION_SKILLS} skills, not {len(skills)}")
        return self

    @property
    def custom_tools(self) -> list[CustomTool]:
        return [t for t in self.tools if isinstance(t, CustomTool)]

    @property
    def server_tools(self) -> list[ServerTool]:
        return [t for t in self.tools if isinstance(t, ServerTool)]

    def snapshot(self) -> dict[str, Any]:
        """The agent for events (``session.updated``): everything but the MCP servers' env and headers,
        which may hold secrets (the stored agent version keeps them, to start the servers)."""
        return self.model_dump(mode="json", exclude={"mcp_servers": {"__all__": {"env", "headers"}}})


OVERRIDABLE = ("model", "system", "tools", "mcp_servers", "skills")
"""The agent fields a session may replace for itself (seed 002: each a full replacement)."""


def materialize(agent: Agent, overrides: dict[str, Any]) -> Agent:
    """``agent`` with a session's overrides applied (validated as a whole agent; id and version stay)."""
    if not overrides:
        return agent
    return Agent.model_validate({**agent.model_dump(), **overrides})


def check_overrides(agent: Agent, overrides: Mapping[str, Any], what: str = "session") -> dict[str, Any]:
    """The overrides a session gives its agent, checked: only the fields a session may replace, valid as a
    whole agent. Raises InvalidInputError naming the problem (nothing is stored)."""
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise InvalidInputError(
            f"a {what} cannot override the agent's {', '.join(unknown)}; it may replace: {', '.join(OVERRIDABLE)}"
        )
    given = dict(overrides)
    if isinstance(given.get("model"), str):
        given["model"] = {"id": given["model"]}
    checked = validated(Agent, {**agent.model_dump(), **given}, f"{what} agent overrides")
    return {key: _dumped(getattr(checked, key)) for key in given}


def _dumped(value: object) -> object:
    if isinstance(value, list):
        return [v.model_dump(mode="json") if hasattr(v, "model_dump") else v for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value
