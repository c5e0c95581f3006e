"""The body of ``%skills``: list the session's skills and those the notebook's folder offers, add or remove
one (see :mod:`agentcell.skills.attach`, which ACP's ``/skills`` shares). A prose cell that starts with
``/name`` (or ``$name``) of one of the session's skills activates it for that turn (``NotebookAgent.ask``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ...errors import AgentCellError, SkillFormatError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ..host import NotebookAgent

__all__ = ["SKILLS_HELP", "SkillMagics", "skills_line"]

SKILLS_HELP = (
    "%skills [list | add PATH | remove NAME]  the agent's skills (Agent Skills folders with a SKILL.md); "
    "a prose cell starting with /NAME activates that skill for the turn"
)


@magics_class
class SkillMagics(MagicGroup):
    TITLE: ClassVar[str] = "The agent"
    HELP: ClassVar[dict[str, str]] = {"skills": SKILLS_HELP}

    @line_magic
    def skills(self, line: str) -> None:
        """List the session's skills and those the notebook's folder offers; add or remove one."""
        args = self._guard("skills", line)
        if args is None:
            return
        print(skills_line(self.host, args))


def skills_line(host: NotebookAgent, args: list[str]) -> str:
    """Carry out ``%skills ARGS``; returns what to print."""
    from ...skills.attach import attach, detach, listing  # loaded when the magic is first used

    action, rest = (args[0], args[1:]) if args else ("list", [])
    folder = Path(host.notebook_path).parent if host.notebook_path else Path.cwd()
    try:
        if action == "list" and not rest:
            lines = listing(host.engine, host.session, folder, add="%skills add PATH", place="the notebook's folder")
            return "\n".join(lines)
        if action == "add" and len(rest) == 1:
            target = Path(rest[0]).expanduser()
            skill, version = attach(host.engine, host.session, target if target.is_absolute() else folder / target)
            said = f"skill {skill.name} v{skill.version} attached (agent v{version}): /{skill.name} activates it"
            return "\n".join([said, *(f"  {d}" for d in skill.diagnostics)])
        if action == "remove" and len(rest) == 1:
            return f"skill {rest[0].lstrip('/$')} removed (agent v{detach(host.engine, host.session, rest[0])})"
    except SkillFormatError as exc:
        problems = "\n".join(f"  {d}" for d in exc.diagnostics)
        raise UsageError(f"%skills: the folder cannot be loaded as a skill:\n{problems}") from None
    except AgentCellError as exc:
        raise UsageError(f"%skills: {exc}") from None
    raise UsageError(SKILLS_HELP)
