"""``%compact [instructions]``: have the model summarise the conversation so far, now.

The summary replaces the conversation for later requests (``engine/compaction.py``); the cell shows the
compaction card, with the summary the model will see and what it cost. A cell holding only ``%compact``
is awaited like a turn (``kernel/routing.py`` sends it to :func:`run_compact`), since the summary is a
model request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from ...errors import AgentCellError
from ._base import MagicGroup

if TYPE_CHECKING:
    from ..host import NotebookAgent

__all__ = ["COMPACT_HELP", "CompactMagics", "run_compact"]

COMPACT_HELP = (
    "%compact [INSTRUCTIONS]  summarise the conversation so far into one entry the model sees instead "
    "(in a cell of its own; INSTRUCTIONS: what the summary must keep)"
)


@magics_class
class CompactMagics(MagicGroup):
    TITLE: ClassVar[str] = "The session"
    HELP: ClassVar[dict[str, str]] = {"compact": COMPACT_HELP}

    @line_magic
    def compact(self, line: str) -> None:
        """Reached only when the cell holds more than ``%compact`` (a lone one is awaited by the router)."""
        if self._guard("compact", line) is None:
            return
        raise UsageError("%compact: put it in a cell of its own (it waits for a model request)")


async def run_compact(host: NotebookAgent, line: str) -> None:
    """A cell of ``%compact [instructions]``: compact the notebook's session and show the card."""
    from IPython.display import display

    from ...render.compaction_card import compaction_markdown, compaction_text
    from ...render.markdown import not_math

    instructions = line.strip()
    if instructions in ("-h", "--help"):
        print(COMPACT_HELP)
        return
    try:
        event = await host.session.compact(instructions or None)
    except AgentCellError as exc:
        raise UsageError(f"%compact: {exc}") from None
    if event is None:
        print("%compact: there is no conversation to compact yet")
        return
    display({"text/markdown": not_math(compaction_markdown(event)), "text/plain": compaction_text(event)}, raw=True)
