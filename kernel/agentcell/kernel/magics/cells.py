"""Cell magics: ``%%python`` and ``%%agent`` (the router handles both before execution) and ``%help``."""

from __future__ import annotations

from typing import ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, line_magic, magics_class

from ._base import MagicGroup

__all__ = ["CellMagics"]


@magics_class
class CellMagics(MagicGroup):
    TITLE: ClassVar[str] = "Cells"
    HELP: ClassVar[dict[str, str]] = {
        "python": "%%python  run the cell as Python in the notebook's namespace",
        "agent_cell": "%%agent  send the cell to the agent (in any IPython kernel)",
        "help": "%help  this list",
    }

    @cell_magic("python")  # type: ignore[arg-type]
    def python_cell(self, line: str, cell: str) -> None:
        """Run the cell as Python in the notebook's namespace (the kernel routes it before this is reached)."""
        del line
        assert self.shell is not None
        self.shell.run_cell(cell, store_history=False)

    @cell_magic("agent")  # type: ignore[arg-type]
    def agent_cell(self, line: str, cell: str) -> None:
        """Send the cell to the agent. The input transformer turns %%agent cells into an awaited turn; this
        body runs only when something calls the magic directly."""
        del line, cell
        raise UsageError("%%agent must start a cell of its own (it is routed before execution)")

    @line_magic("help")  # type: ignore[arg-type]
    def help_(self, line: str) -> None:
        """List agentcell's magics."""
        del line
        from IPython.display import display

        from . import help_table

        markdown, text = help_table()
        display({"text/markdown": markdown, "text/plain": text}, raw=True)
