"""What a session is, apart from its events."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..usage import Budget
from .agent import Agent
from .common import PermissionPreset
from .resources import Resource
from .skill import PinnedSkill

__all__ = ["Principal", "ResolvedMultiAgent", "SessionRecord"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Principal(_Model):
    """Who a session's runs act for, snapshotted at creation."""

    type: Literal["service_account", "user"] = "service_account"
    name: str | None = None
    """The user's name for ``user`` (a notebook names its Jupyter user); None for a service account."""


class ResolvedMultiAgent(_Model):
    """The coordinator's multi-agent settings as the session snapshotted them at creation: full agent
    definitions, so a later edit of a helper agent does not change a running session."""

    spawn_threads: bool
    """Whether the agent can spawn session threads."""
    inline_agents: bool
    """Whether it can define inline agents, which are not saved, when it spawns threads."""
    agents: list[Agent]
    """Full definitions of the predefined (saved) agents it may spawn as session threads."""
    advisor: bool
    """Whether the primary thread can consult an advisor model."""
    workflow_runs: bool
    """Whether the agent can start workflow runs."""
    workflow_inline_agents: bool = False
    """Whether a run's plan can define inline agents, which are not saved."""
    workflow_agents: list[Agent] = []
    """Full agent definitions of the predefined agents, which are saved agents that a run's plan can use."""


class SessionRecord(BaseModel):
    """A session's identity and settings: the agent version it pins, its budget, resources and preset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    agent_id: str
    agent_version: int = Field(ge=1)
    title: str | None = None
    metadata: dict[str, str] = {}
    budget: Budget | None = None
    resources: list[Resource] = []
    permissions: PermissionPreset = "workspace-write"
    """The permission preset tools are checked against."""
    max_turns: int = Field(default=25, ge=1)
    """The most model requests one turn may make before it stops with ``max_turns``."""
    agent_overrides: dict[str, Any] = {}
    """What the session replaces of its pinned agent (``model``, ``system``, ``tools``, ``mcp_servers``,
    ``skills``; each a full replacement). The session works on the agent with these applied."""
    principal: Principal = Principal()
    """The execution principal: always present; a service account unless someone is named."""
    multiagent: ResolvedMultiAgent | None = None
    """None for a single-threaded agent."""
    skills: list[PinnedSkill] = []
    """The skills of the session's agents, each pinned to the version it had when the session was created
    (or when it moved to another agent version, or mounted a repository that brings skills)."""
    created_at: datetime
    terminated_at: datetime | None = None
