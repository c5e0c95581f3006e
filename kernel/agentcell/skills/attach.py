"""Attaching skills to a session's agent, listing them, and the ``/name`` that activates one: what the
notebook's ``%skills`` and the ACP agent's ``/skills`` share.

Attaching stores the folder (``engine.skills.create``) and names that exact version in the agent's
skills: a new agent version, which the session moves to (pinning the skill). A project's own skill
folders (``skills/``, ``.agents/skills/``) are only *offered* by the listing: they are attached when the
user adds them, so a shared notebook or a cloned project never runs someone's skill unasked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from ..core import Engine
    from ..records.skill import PinnedSkill, Skill, SkillDiagnostic
    from ..sessions import Session

__all__ = ["attach", "detach", "leading_skills", "listing", "session_pins"]

_COMMAND = re.compile(r"[/$]([A-Za-z0-9][A-Za-z0-9_-]*)(?=\s|$)")


def leading_skills(text: str, names: list[str]) -> list[str]:
    """The skills a prompt names at its start (``/a /b do this``, or ``$a``): only names in ``names``."""
    found: list[str] = []
    rest = text.lstrip()
    while (match := _COMMAND.match(rest)) is not None and match[1] in names:
        if match[1] not in found:
            found.append(match[1])
        rest = rest[match.end() :].lstrip()
    return found


def session_pins(session: Session) -> list[PinnedSkill]:
    """The skills the session pinned for its own agent."""
    return [p for p in session.record.skills if p.agent_id == session.agent.id]


def _move_to(engine: Engine, session: Session, refs: list[object]) -> int:
    agent = engine.agents.update(session.agent.id, skills=refs)  # type: ignore[arg-type]
    if agent.version != session.agent.version:
        session.update(agent_version=agent.version)
    return agent.version


def attach(engine: Engine, session: Session, path: Path) -> tuple[Skill, int]:
    """Store the folder and attach that version (replacing a skill of the same name); the skill and the
    agent's new version. Raises SkillFormatError for a folder that cannot be loaded."""
    skill = engine.skills.create(path)
    names = {p.skill_id: p.name for p in session_pins(session)}
    kept = [r for r in session.agent.skills if r.skill_id != skill.id and names.get(r.skill_id) != skill.name]
    return skill, _move_to(engine, session, [*kept, {"skill_id": skill.id, "version": skill.version}])


def detach(engine: Engine, session: Session, name: str) -> int:
    """Take the skill called ``name`` off the agent; the agent's new version."""
    pinned = {p.name: p for p in session_pins(session)}
    pin = pinned.get(name.lstrip("/$"))
    if pin is None:
        raise InvalidInputError(f"no skill named {name!r}; this session's skills: {', '.join(pinned) or 'none'}")
    if pin.source is not None:
        raise InvalidInputError(f"{pin.name} came with {pin.source}; mount the repository with skills=False instead")
    return _move_to(engine, session, [r for r in session.agent.skills if r.skill_id != pin.skill_id])


def listing(engine: Engine, session: Session, folder: Path | None, *, add: str, place: str) -> list[str]:
    """The session's skills with their diagnostics, then the skill folders ``folder`` (``place``) offers;
    ``add`` is the command that attaches one."""
    pinned = session_pins(session)
    lines = [f"skills of this session ({len(pinned)}):" if pinned else f"no skills (`{add}` attaches one)"]
    for pin in pinned:
        where = f"  (from {pin.source})" if pin.source else ""
        lines.append(f"  {pin.name} v{pin.version}  {pin.description}{where}")
        try:
            lines += _diagnostics(engine.skills.get(pin.skill_id, pin.version).diagnostics)
        except NotFoundError:
            lines.append("    (deleted from the store: it can no longer be activated)")
    if folder is None:
        return lines
    attached = {p.name for p in pinned}
    offered = [f for f in engine.skills.discover(folder) if f.frontmatter.name not in attached]
    if offered:
        lines.append(f"offered by {place}, not attached (`{add}` attaches one):")
        for found in offered:
            relative = found.path.relative_to(folder.resolve()).as_posix()
            about = found.frontmatter.description or "(cannot be loaded)"
            lines.append(f"  {relative}  {found.frontmatter.name or found.path.name}: {about}")
            lines += _diagnostics(found.diagnostics)
    return lines


def _diagnostics(diagnostics: list[SkillDiagnostic]) -> list[str]:
    return [f"    {d}" for d in diagnostics]
