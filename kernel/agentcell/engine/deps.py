"""What a turn depends on, apart from the session's log: the services it calls, frozen for the turn.

The split is the state/deps split of pydantic-ai's agent graph: :class:`~agentcell.engine.log.SessionLog`
is the state a turn changes, :class:`TurnDeps` the services it uses. The protocols below say exactly what
the engine needs of the services above it (the agents API, the memory stores, the upload store, the
skills, the MCP supervisor), so nothing under ``engine/`` imports them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..records.agent import Agent
from ..records.files import UploadedFile
from ..records.model import ModelConfig
from ..records.skill import PinnedSkill, Skill

if TYPE_CHECKING:
    from ..events import Event
    from ..providers.base import ToolSchema
    from ..providers.registry import ProviderRegistry, ResolvedModel
    from ..tools.base import Approver, ToolHost
    from ..tools.mcp import McpServerStatus
    from .drivers import TurnDriver

__all__ = ["AgentSource", "FileSource", "MemoryView", "SkillSource", "TurnDeps"]


class AgentSource(Protocol):
    def get(self, agent_id: str, version: int | None = None) -> Agent:
        """The saved agent (its latest version, or the one given); raises NotFoundError."""


class FileSource(Protocol):
    def get(self, file_id: str) -> UploadedFile:
        """The uploaded file; raises NotFoundError."""


class MemoryView(Protocol):
    def section(self, session_id: str) -> str | None:
        """The system prompt's memory section for the session; None when it attached no store."""

    def visible(
        self, session_id: str, owner_scope: str, scope: str, schemas: list[ToolSchema], host: object
    ) -> list[ToolSchema]:
        """``schemas`` without the memory tools a thread of the session may not use."""


class SkillSource(Protocol):
    def get(self, skill_id: str, version: int | None = None) -> Skill:
        """The stored skill version; raises NotFoundError."""

    def mount(self, skill: Skill, target: Path) -> None:
        """Write the version's folder at ``target``, read-only (blocking)."""

    def pin(self, agents: Sequence[Agent]) -> list[PinnedSkill]:
        """The agents' skills pinned to versions; raises InvalidInputError (unknown skill, over the cap)."""

    def store_project(self, root: Path, source: str) -> tuple[list[Skill], list[str]]:
        """Store the skill folders of a project (a clone) as skills of ``source``; the problems of those that
        could not be loaded (blocking)."""


@dataclass(frozen=True, slots=True)
class TurnDeps:
    providers: ProviderRegistry
    tools: ToolHost
    approver: Approver | None
    """Asked when a tool needs the user's approval; None: the preset decides and asking means no."""
    agents: AgentSource
    memory: MemoryView
    files: FileSource
    skills: SkillSource
    workspace: Path
    """Where the session's tools work and its resources are mounted."""
    start_mcp: Callable[[Agent, str], Awaitable[Sequence[McpServerStatus]]]
    """Starts the agent's MCP servers in a tool scope (once) and returns the status of those that just
    started."""
    driver: Callable[[Event], TurnDriver | None] | None = None
    """The host's own driver for a turn opened by the event (an external agent answering the notebook's
    messages), or None for the engine's own; see ``drivers.py``."""

    def resolve_model(self, model: ModelConfig) -> ResolvedModel:
        return self.providers.resolve(model)
