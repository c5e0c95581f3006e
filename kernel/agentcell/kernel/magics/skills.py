"""``%skills``, and ``/name`` at the start of a prose cell.

``%skills`` lists the session's skills (name, version, description, the diagnostics each loaded with) and
the skill folders the notebook's folder holds (``skills/``, ``.agents/skills/``) that are not attached:
those are only offered, so a shared notebook never runs someone's skill unasked. ``%skills add PATH``
stores a folder and attaches that version (a new agent version, which the session moves to);
``%skills remove NAME`` detaches it. A prose cell that starts with ``/name`` (or ``$name``) of one of
the session's skills activates it for that turn, before the model's first request.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ...errors import AgentCellError, SkillFormatError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ...records.skill import PinnedSkill, Skill, SkillDiagnostic
    from ..host import NotebookAgent

__all__ = ["SKILLS_HELP", "SkillMagics", "leading_skills", "skills_line"]

SKILLS_HELP = (
    "%skills [list | add PATH | remove NAME]  the agent's skills (Agent Skills folders with a SKILL.md); "
    "a prose cell starting with /NAME activates that skill for the turn"
)


@magics_class
class SkillMagics(MagicGroup):
    HELP: ClassVar[dict[str, str]] = {"skills": SKILLS_HELP}

    @line_magic  # type: ignore[untyped-decorator]
    def skills(self, line: str) -> None:
        """List the session's skills and those the notebook's folder offers; add or remove one."""
        args = self._guard("skills", line)
        if args is None:
            return
        print(skills_line(self.host, args))


_COMMAND = re.compile(r"[/$]([A-Za-z0-9][A-Za-z0-9_-]*)(?=\s|$)")


def leading_skills(text: str, names: list[str]) -> list[str]:
    """The skills a prose cell names at its start (``/a /b do this``): only names the session has."""
    found: list[str] = []
    rest = text.lstrip()
    while (match := _COMMAND.match(rest)) is not None and match[1] in names:
        if match[1] not in found:
            found.append(match[1])
        rest = rest[match.end() :].lstrip()
    return found


def skills_line(host: NotebookAgent, args: list[str]) -> str:
    """Carry out ``%skills ARGS``; returns what to print."""
    action, rest = (args[0], args[1:]) if args else ("list", [])
    try:
        if action == "list" and not rest:
            return _listing(host)
        if action == "add" and len(rest) == 1:
            return _add(host, rest[0])
        if action == "remove" and len(rest) == 1:
            return _remove(host, rest[0])
    except SkillFormatError as exc:
        lines = "\n".join(f"  {d}" for d in exc.diagnostics)
        raise UsageError(f"%skills: the folder cannot be loaded as a skill:\n{lines}") from None
    except AgentCellError as exc:
        raise UsageError(f"%skills: {exc}") from None
    raise UsageError(SKILLS_HELP)


def _folder(host: NotebookAgent) -> Path:
    return Path(host.notebook_path).parent if host.notebook_path else Path.cwd()


def _pinned(host: NotebookAgent) -> list[PinnedSkill]:
    session = host.session
    return [p for p in session.record.skills if p.agent_id == session.agent.id]


def _listing(host: NotebookAgent) -> str:
    pinned = _pinned(host)
    lines = [f"skills of this session ({len(pinned)}):" if pinned else "no skills (`%skills add PATH` attaches one)"]
    attached: set[str] = set()
    for pin in pinned:
        skill = _stored(host, pin)
        where = f"  (from {pin.source})" if pin.source else ""
        lines.append(f"  {pin.name} v{pin.version}  {pin.description}{where}")
        lines += _diagnostics(skill.diagnostics if skill is not None else [], "    ")
        if skill is None:
            lines.append("    (deleted from the store: it can no longer be activated)")
        attached.add(pin.name)
    folder = _folder(host)
    offered = [f for f in host.engine.skills.discover(folder) if f.frontmatter.name not in attached]
    if offered:
        lines.append("offered by the notebook's folder, not attached (`%skills add PATH` attaches one):")
        for found in offered:
            relative = found.path.relative_to(folder.resolve()).as_posix()
            about = found.frontmatter.description or "(cannot be loaded)"
            lines.append(f"  {relative}  {found.frontmatter.name or found.path.name}: {about}")
            lines += _diagnostics(found.diagnostics, "    ")
    return "\n".join(lines)


def _stored(host: NotebookAgent, pin: PinnedSkill) -> Skill | None:
    from ...errors import NotFoundError

    try:
        return host.engine.skills.get(pin.skill_id, pin.version)
    except NotFoundError:
        return None


def _diagnostics(diagnostics: list[SkillDiagnostic], indent: str) -> list[str]:
    return [f"{indent}{d}" for d in diagnostics]


def _add(host: NotebookAgent, path: str) -> str:
    target = Path(path).expanduser()
    if not target.is_absolute():
        target = _folder(host) / target
    skill = host.engine.skills.create(target)
    refs = [r for r in host.session.agent.skills if r.skill_id != skill.id]
    names = {p.skill_id: p.name for p in _pinned(host)}
    refs = [r for r in refs if names.get(r.skill_id) != skill.name]  # a skill of that name is replaced
    agent = host.update_agent(skills=[*refs, {"skill_id": skill.id, "version": skill.version}])
    said = f"skill {skill.name} v{skill.version} attached (agent v{agent.version}): /{skill.name} activates it"
    return "\n".join([said, *_diagnostics(skill.diagnostics, "  ")])


def _remove(host: NotebookAgent, name: str) -> str:
    pinned = {p.name: p for p in _pinned(host)}
    pin = pinned.get(name.lstrip("/$"))
    if pin is None:
        raise UsageError(f"%skills: no skill named {name!r}; this session's skills: {', '.join(pinned) or 'none'}")
    if pin.source is not None:
        raise UsageError(f"%skills: {pin.name} came with {pin.source}; mount the repository with skills=False instead")
    refs = [r for r in host.session.agent.skills if r.skill_id != pin.skill_id]
    agent = host.update_agent(skills=refs)
    return f"skill {pin.name} removed (agent v{agent.version})"
