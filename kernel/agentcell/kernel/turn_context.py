"""What a notebook's turn takes from the notebook: the code cells run since the previous turn and the user's
variables, as the ``AgentCell.context*`` settings and ``%context`` say.

The kernel and the ``%load_ext`` extension each record their code cells (``code_cells.py``); the prose or
``%%agent`` cell that opens the next turn takes them, with a summary of the namespace (``namespace.py``),
into its ``user.message``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from .code_cells import Caps, CellRecorder, capped_cells
from .namespace import summarize_namespace
from .routing import code_cell_source

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..records.notebook_context import NotebookContext
    from .host import AgentCell

__all__ = ["CONTEXT_MODES", "ContextMode", "NotebookContextSource"]

ContextMode = Literal["on", "off", "cells", "variables"]
CONTEXT_MODES: tuple[ContextMode, ...] = ("on", "off", "cells", "variables")


class NotebookContextSource:
    """The notebook's side of each turn's context: records code cells, builds what a turn sends."""

    def __init__(self, shell: InteractiveShell, config: AgentCell, *, prose_is_agent: bool) -> None:
        self.shell = shell
        self.config = config
        self.prose_is_agent = prose_is_agent

        def is_code(cell: str) -> str | None:
            from .magics import HELP

            return code_cell_source(cell, prose_is_agent=self.prose_is_agent, own_magics=HELP)

        self.recorder = CellRecorder(shell, is_code, self.caps)
        self.recorder.install()

    def caps(self, *, window_chars: int | None = None) -> Caps:
        """The settings' caps; ``window_chars``: a model whose whole context window is about that many
        characters (the embedded local model's 4,096 tokens) gets at most a quarter of it for a turn's cells."""
        config = self.config
        cell, turn = max(200, config.context_cell_chars), max(200, config.context_turn_chars)
        if window_chars is not None:
            turn = min(turn, window_chars // 4)
            cell = min(cell, turn)
        return Caps(cell_chars=cell, turn_chars=turn, images=max(0, config.context_images))

    @property
    def mode(self) -> ContextMode:
        mode = str(self.config.context)
        return next((m for m in CONTEXT_MODES if m == mode), "on")

    def build(self, *, take: bool, window_chars: int | None = None, editable: bool = False) -> NotebookContext | None:
        """The context the next turn sends (None: nothing to send); ``take`` hands the cells over to it;
        ``window_chars`` as for :meth:`caps`; ``editable``: the agent may propose cells (each cell's id is
        shown to the model)."""
        from ..records.notebook_context import NotebookContext, Variable

        cells = self.recorder.take() if take else self.recorder.pending
        mode = self.mode
        if mode == "off":
            return NotebookContext(editable=True) if editable else None
        notes: list[str] = []
        if mode in ("on", "cells"):
            cells, notes = capped_cells(cells, self.caps(window_chars=window_chars))
        else:
            cells = []
        variables: list[Variable] | None = None
        left_out = 0
        if mode in ("on", "variables"):
            named, left_out = summarize_namespace(self.shell.user_ns, self.shell.user_ns_hidden)
            variables = [Variable(name=name, type=kind, summary=summary) for name, kind, summary in named]
        # Empty rather than None: the turn carries the cells its cell's earlier run was sent (not stored).
        return NotebookContext(
            cells=cells, variables=variables, variables_left_out=left_out, notes=notes, editable=editable
        )
