"""The ``%`` magics, in groups, each with its help text beside it. Each magic takes ``--help``; a mistake
prints one clear line (IPython's UsageError), never a traceback.

- :mod:`.agent` — ``%model``, ``%system``, ``%tools``, ``%permissions``, ``%agent``, ``%mcp``
- :mod:`.session` — ``%session``, ``%budget``, ``%usage``
- :mod:`.context` — ``%context``
- :mod:`.replay` — ``%record``, ``%replay``
- :mod:`.cells` — ``%%python``, ``%%agent``, ``%help``
- :mod:`.threads` — ``%threads``
- :mod:`.skills` — ``%skills``
- :mod:`.outcome` — ``%%outcome`` (its body, for the cell router)
- :mod:`.compact` — ``%compact``
- :mod:`.proposals` — ``%accept``, ``%reject``, ``%proposals``, ``%fix``
- :mod:`.steer` — ``%steer``
- :mod:`.workflow` — ``%%workflow`` (its body, for the cell router) and ``%workflows``
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import MagicGroup
from .agent import AgentMagics
from .cells import CellMagics
from .compact import CompactMagics
from .context import ContextMagics
from .outcome import OutcomeMagics
from .proposals import ProposalMagics
from .replay import ReplayMagics
from .session import SessionMagics
from .skills import SkillMagics
from .steer import SteerMagics
from .threads import ThreadMagics
from .workflow import WorkflowMagics

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..host import NotebookAgent

__all__ = ["GROUPS", "HELP", "MagicGroup", "help_table", "register_magics"]

GROUPS: tuple[type[MagicGroup], ...] = (
    AgentMagics,
    SessionMagics,
    ContextMagics,
    CompactMagics,
    ReplayMagics,
    CellMagics,
    ThreadMagics,
    SkillMagics,
    OutcomeMagics,
    SteerMagics,
    WorkflowMagics,
    ProposalMagics,
)

_ORDER = (
    "model",
    "system",
    "tools",
    "permissions",
    "budget",
    "session",
    "agent",
    "mcp",
    "config",
    "usage",
    "context",
    "compact",
    "record",
    "replay",
    "python",
    "agent_cell",
    "threads",
    "skills",
    "outcome",
    "workflow",
    "workflows",
    "steer",
    "accept",
    "reject",
    "proposals",
    "fix",
    "help",
)
"""The order ``%help`` lists them in: configuration first, then cells, then what runs within a turn."""

HELP: dict[str, str] = {name: text for group in GROUPS for name, text in group.HELP.items()}
HELP = {name: HELP[name] for name in _ORDER} | HELP


def help_table() -> tuple[str, str]:
    """``%help``: the magics grouped under their headings, as a Markdown table and as plain text."""
    titles: dict[str, str] = {name: group.TITLE for group in GROUPS for name in group.HELP}
    grouped: dict[str, list[tuple[str, str]]] = {}
    for name, text in HELP.items():
        usage, _, what = text.partition("  ")
        grouped.setdefault(titles[name], []).append((usage.strip(), what.strip()))
    intro = "agentcell — every cell is a turn of the agent; these magics configure it (`%NAME --help` for one):"
    markdown, plain = [intro, ""], [intro.replace("`", "")]
    for title, rows in grouped.items():
        markdown += [f"**{title}**", "", "| magic | what it does |", "| --- | --- |"]
        # A | inside a table cell ends the cell, even within backticks, unless escaped.
        markdown += [
            f"| `{usage.replace('|', chr(92) + '|')}` | {what.replace('|', chr(92) + '|')} |" for usage, what in rows
        ]
        markdown.append("")
        plain += ["", f"{title}:"] + [f"  {usage}  {what}" for usage, what in rows]
    return "\n".join(markdown).rstrip() + "\n", "\n".join(plain)


def register_magics(shell: InteractiveShell, host: NotebookAgent) -> None:
    """Register every group of magics in ``shell``, over the notebook's agent host."""
    for group in GROUPS:
        shell.register_magics(group(shell, host))
