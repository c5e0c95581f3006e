"""What every group of magics shares: the host, ``--help`` from the group's help text, one-line errors."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics

from ...errors import AgentCellError

if TYPE_CHECKING:
    from ..host import NotebookAgent

__all__ = ["MagicGroup"]


class MagicGroup(Magics):
    """A group of magics over the notebook's agent host. ``HELP`` holds each magic's one-line usage, keyed
    by the magic's name, printed by ``%name --help`` and listed by ``%help``."""

    HELP: ClassVar[dict[str, str]] = {}
    TITLE: ClassVar[str] = "Other"
    """The heading ``%help`` lists the group's magics under."""

    def __init__(self, shell: Any, host: NotebookAgent) -> None:
        super().__init__(shell)
        self.host = host

    def _guard(self, name: str, line: str) -> list[str] | None:
        """The line's arguments; None when it asked for help (printed here)."""
        try:
            args = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%{name}: {exc}") from None
        if any(a in ("-h", "--help") for a in args):
            print(self.HELP[name])
            return None
        return args

    @staticmethod
    def _fail(exc: AgentCellError) -> UsageError:
        return UsageError(str(exc))
