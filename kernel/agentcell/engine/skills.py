"""Skills in a turn: the catalog, the ``activate_skill`` tool, activation by the user, skills of repositories.

A thread whose agent has skills (pinned in the session's record, see ``SessionRecord.skills``) is offered
one engine tool, ``activate_skill``: its description is the catalog (each skill's name and description
only) and its ``name`` parameter an enum of those names. A call mounts the skill's folder read-only in the
workspace (``.agentcell/skills/<name>/v<version>/``, which the permission policy keeps read-only) and
returns its instructions wrapped in ``<skill_content name="...">``, the folder, and the list of its files,
unread. The result stays in the thread's history, so the instructions are sent with every later request
of the session as part of the conversation, once: activating a skill already active on the thread's path
returns a short reminder instead of the instructions again. ``session.skill_activated`` records each
activation (the widget's card). An agent without skills gets neither tool nor catalog.

The user activates a skill by naming it with the message (``/name`` at the start of a prose cell):
the turn then makes the call itself, through the same pipeline, before the model's first request. A
git repository mounted on the session brings the skills of its ``skills/`` and ``.agents/skills/``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from ..errors import NotFoundError, ResourceMountError
from ..events import (
    AgentToolResult,
    AgentToolUse,
    ErrorInfo,
    SessionError,
    SessionSkillActivated,
    SessionUpdated,
    UserMessage,
)
from ..providers.base import ToolSchema
from ..records.agent import Agent
from ..records.resources import GitRepository
from ..records.skill import PinnedSkill, Skill, check_session_cap
from ..tools.base import ToolCall, ToolResult
from ..tools.permissions import SKILLS_MOUNT
from .deps import TurnDeps
from .log import SessionLog
from .mount import mount_path, public_url
from .path import on_path
from .request import SessionTool

__all__ = [
    "ACTIVATE_TOOL",
    "USER_CALL_PREFIX",
    "activate_requested",
    "pin_repository_skills",
    "session_skills",
    "skill_tools",
]

ACTIVATE_TOOL = "activate_skill"
USER_CALL_PREFIX = "user_activation_"
"""How the call ids of activations the user asked for start (the model did not make those calls)."""
MAX_LISTED_FILES = 100

_CATALOG_INTRO = (
    "Load a skill: instructions for one kind of task, with files (scripts, references, assets) mounted "
    "read-only in the workspace. When a task matches a skill's description, call this with the skill's name "
    "before you start, then follow the instructions it returns. Loaded instructions stay in the conversation; "
    "do not load a skill twice.\n\nAvailable skills:"
)


def session_skills(log: SessionLog, agent_id: str) -> list[PinnedSkill]:
    """The skills the session pinned for ``agent_id``, one per name (the agent's own before a
    repository's)."""
    seen: dict[str, PinnedSkill] = {}
    for pinned in log.record.skills:
        if pinned.agent_id == agent_id and pinned.name not in seen:
            seen[pinned.name] = pinned
    return list(seen.values())


def skill_tools(log: SessionLog, deps: TurnDeps, agent: Agent) -> list[SessionTool]:
    """``activate_skill`` for a thread running ``agent``, when the session pinned skills for it."""
    pinned = session_skills(log, agent.id)
    if not pinned:
        return []

    async def run(call: ToolCall) -> ToolResult:
        return await _activate(log, deps, pinned, call)

    return [SessionTool(_catalog(pinned), run, parallel=False)]


def _catalog(pinned: Sequence[PinnedSkill]) -> ToolSchema:
    lines = [_CATALOG_INTRO, *(f"- {p.name}: {p.description}" for p in pinned)]
    name: dict[str, Any] = {"type": "string", "enum": [p.name for p in pinned], "description": "The skill to load."}
    return ToolSchema(
        name=ACTIVATE_TOOL,
        description="\n".join(lines),
        input_schema={"type": "object", "properties": {"name": name}, "required": ["name"]},
    )


def _mount_dir(skill: PinnedSkill) -> str:
    return f"{SKILLS_MOUNT}/{skill.name}/v{skill.version}"


async def _activate(log: SessionLog, deps: TurnDeps, pinned: Sequence[PinnedSkill], call: ToolCall) -> ToolResult:
    wanted = call.input.get("name")
    chosen = next((p for p in pinned if p.name == wanted), None)
    if chosen is None:
        names = ", ".join(p.name for p in pinned)
        return ToolResult.error(f"no skill named {wanted!r}; the skills here are: {names}", "INVALID_INPUT")
    where = _mount_dir(chosen)
    if _active(log, call.thread_id, chosen):
        return ToolResult.text(
            f"The skill {chosen.name} is already active: its instructions are earlier in this conversation. "
            f"Its folder is {where}/ (read-only)."
        )
    try:
        skill = deps.skills.get(chosen.skill_id, chosen.version)
    except NotFoundError:
        return ToolResult.error(
            f"the skill {chosen.name} v{chosen.version} was deleted from the store; it cannot be loaded",
            "SKILL_NOT_FOUND",
        )
    await asyncio.to_thread(deps.skills.mount, skill, deps.workspace / where)
    requested_by: Literal["model", "user"] = "user" if call.call_id.startswith(USER_CALL_PREFIX) else "model"
    files = skill.resources
    log.emit(
        log.make(
            SessionSkillActivated,
            thread_id=call.thread_id,
            tool_use_id=call.tool_use_id,
            name=skill.name,
            skill_id=skill.id,
            version=skill.version,
            path=where,
            files=files,
            requested_by=requested_by,
        )
    )
    return ToolResult.text(skill_content(skill, where))


def skill_content(skill: Skill, where: str) -> str:
    """What activation hands the model: the instructions, the folder, and its files (unread)."""
    parts = [f'<skill_content name="{skill.name}">', skill.body or "(this skill has no instructions)", ""]
    parts.append(f"Skill directory: {where}/ (read-only; relative paths in this skill are relative to it)")
    files = skill.resources
    if files:
        parts += ["", "<skill_resources>"]
        parts += [f"  <file>{path}</file>" for path in files[:MAX_LISTED_FILES]]
        if len(files) > MAX_LISTED_FILES:
            parts.append(f"  <!-- and {len(files) - MAX_LISTED_FILES} more files -->")
        parts.append("</skill_resources>")
    parts.append("</skill_content>")
    return "\n".join(parts)


def _active(log: SessionLog, thread_id: str | None, skill: PinnedSkill) -> bool:
    """Whether the skill's instructions are in the thread's conversation (on the active path) already."""
    superseded = log.path().superseded
    types = ("session.skill_activated", "user.message", "user.define_outcome", "session.status_idle")
    events = log.events(types=(*types, "session.turns_superseded", "user.custom_tool_result"))
    return any(
        isinstance(e, SessionSkillActivated)
        and e.thread_id == thread_id
        and (e.name, e.version) == (skill.name, skill.version)
        for e in on_path(events, superseded)
    )


# ---------------------------------------------------------------------------------------------- the user's


def requested_skills(first: object) -> list[str]:
    """The skills the user named with the turn's opening message."""
    return list(first.skills) if isinstance(first, UserMessage) else []


async def activate_requested(
    log: SessionLog, deps: TurnDeps, tools: Sequence[SessionTool], names: Sequence[str]
) -> None:
    """Activate the skills the user named, before the model's first request: each a call of
    ``activate_skill`` the turn makes itself, through the pipeline like any other."""
    tool = next((t for t in tools if t.schema.name == ACTIVATE_TOOL), None)
    if tool is None:
        return
    for name in names:
        use = log.make(AgentToolUse, name=ACTIVATE_TOOL, input={"name": name}, call_id="", evaluated_permission="allow")
        use = use.model_copy(update={"call_id": f"{USER_CALL_PREFIX}{use.id}"})
        log.emit(use)
        call = ToolCall(
            tool_use_id=use.id,
            call_id=use.call_id,
            name=ACTIVATE_TOOL,
            input={"name": name},
            scope=log.tool_scope,
            session_id=log.id,
            preset=log.record.permissions,
        )
        result = await deps.tools.execute(call, approver=deps.approver, definition=tool.definition())
        log.emit(
            log.make(
                AgentToolResult,
                tool_use_id=use.id,
                content=list(result.content),
                is_error=result.is_error,
                error_code=result.error_code if result.is_error else None,
                denied_by=result.denied_by,
            )
        )


# ---------------------------------------------------------------------------------------------- repositories


async def pin_repository_skills(log: SessionLog, deps: TurnDeps) -> None:
    """Store and pin the skills of the session's mounted git repositories (once per repository: a session
    keeps the versions it pinned first). Raises ResourceMountError when they would take the session over
    the cap; emits ``session.error`` for each folder that could not be loaded."""
    known = {p.source for p in log.record.skills if p.source is not None}
    added: list[PinnedSkill] = []
    for repo in log.record.resources:
        if not isinstance(repo, GitRepository) or not repo.skills:
            continue
        source = f"git_repository {public_url(repo.url)}"
        path = mount_path(repo, deps.workspace)
        if source in known or not path.is_dir():
            continue
        stored, problems = await asyncio.to_thread(deps.skills.store_project, path, source)
        for problem in problems:
            message = f"a skill of {public_url(repo.url)} was skipped: {problem}"
            log.emit(log.make(SessionError, error=ErrorInfo(type="skill_load_error", message=message)))
        added += [
            PinnedSkill(
                agent_id=log.agent.id,
                skill_id=s.id,
                version=s.version,
                name=s.name,
                description=s.description,
                source=source,
            )
            for s in stored
        ]
    if not added:
        return
    pins = [*log.record.skills, *added]
    try:
        check_session_cap(pins)
    except ValueError as exc:
        raise ResourceMountError(f"{exc} (or mount the repository with skills=False)") from None
    record = log.record.model_copy(update={"skills": pins})
    event = log.make(SessionUpdated, skills=pins)
    log.store.put_session(record, event)
    log.replace(record, log.agent)
    log.notify(event)
