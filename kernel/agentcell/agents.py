"""``engine.agents``: creating, updating and listing agents and their immutable versions.

Creating an agent makes version 1; every update that changes something makes the next version and leaves
the earlier ones untouched. List fields (``tools``, ``mcp_servers``, ``skills``: references to stored
skills, see ``engine.skills``) are replaced whole: omit
one to keep it, pass ``[]`` to clear it. ``system`` takes up to 100,000 characters; ``None`` clears it.
``multiagent`` (may it spawn threads, of which agents) and ``advisor`` (a model it may consult) are
likewise replaced whole, and ``None`` clears them. The records themselves are in ``records/agent.py``.
"""

from __future__ import annotations

import builtins
import fnmatch
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._validation import check_metadata, validated
from .errors import AgentNotFoundError, AgentVersionNotFoundError, InvalidInputError
from .ids import new_id
from .providers._names import is_claude_model
from .records.agent import MAX_SYSTEM_CHARS, Agent, McpServer, MultiAgent, ToolSpec
from .records.common import UNSET, Unset, utc_now
from .records.model import ModelConfig
from .records.skill import SkillRef

if TYPE_CHECKING:
    from .store.base import Store

__all__ = ["DEFAULT_ADVISORS", "AgentsAPI", "advisor_permitted"]

DEFAULT_ADVISORS: Mapping[str, Sequence[str]] = {
    "scripted*": ("*",),
    "claude-*": ("claude-opus-*", "anthropic:claude-opus-*"),
    "anthropic:claude-*": ("claude-opus-*", "anthropic:claude-opus-*"),
    "local*": ("local*",),
}
"""Which advisor models an agent's model may consult: executor pattern -> advisor patterns (shell-style,
matched against model ids). The test double may consult anything; Claude models consult an Opus; the
embedded model consults a local one. ``Engine(advisors=...)`` replaces it."""


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
        if agent.server_tools and not is_claude_model(agent.model.id.removeprefix("anthropic:")):
            names = ", ".join(t.name for t in agent.server_tools)
            raise InvalidInputError(
                f"the server tools ({names}) run on Anthropic's side; the model {agent.model.id!r} has none: "
                "use a Claude model or remove them"
            )
        for index, skill in enumerate(agent.skills):
            if self._store.get_skill_version(skill.skill_id, skill.version) is None:
                which = f" version {skill.version}" if skill.version is not None else ""
                raise InvalidInputError(
                    f"skills[{index}]: no skill {skill.skill_id!r}{which} is stored; store a skill folder with "
                    "engine.skills.create(path) and name the id it returns"
                )
        for field in ("agents", "workflow_agents"):
            for index, ref in enumerate(getattr(agent.multiagent, field) if agent.multiagent else []):
                try:
                    self.get(ref.id, ref.version)
                except (AgentNotFoundError, AgentVersionNotFoundError) as exc:
                    raise InvalidInputError(f"multiagent.{field}[{index}]: {exc}") from None

    def create(
        self,
        *,
        name: str,
        model: str | ModelConfig | dict[str, Any],
        system: str | None = None,
        description: str | None = None,
        tools: list[ToolSpec] | list[dict[str, Any]] | None = None,
        mcp_servers: list[McpServer] | list[dict[str, Any]] | None = None,
        skills: Sequence[SkillRef | dict[str, Any] | str] | None = None,
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
                "skills": list(skills or []),
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
        name: str | Unset = UNSET,
        model: str | ModelConfig | dict[str, Any] | Unset = UNSET,
        system: str | Unset | None = UNSET,
        description: str | Unset | None = UNSET,
        tools: list[ToolSpec] | list[dict[str, Any]] | Unset = UNSET,
        mcp_servers: list[McpServer] | list[dict[str, Any]] | Unset = UNSET,
        skills: Sequence[SkillRef | dict[str, Any] | str] | Unset = UNSET,
        metadata: dict[str, str] | Unset = UNSET,
        multiagent: MultiAgent | dict[str, Any] | Unset | None = UNSET,
        advisor: str | Unset | None = UNSET,
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
                "skills": list(skills) if not isinstance(skills, Unset) else UNSET,
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
