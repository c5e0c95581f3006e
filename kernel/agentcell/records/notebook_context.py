"""What the notebook showed since the previous turn: the code cells that ran and the user's variables.

A turn opened in a notebook carries it on its ``user.message`` (``context``), so it is stored with the turn,
replayed with it, and leaves the conversation's active path with it. The kernel builds it already capped
(``kernel/code_cells.py``); the engine folds it into the request (``engine/notebook_context.py``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .content import ImageSource

__all__ = ["CellOutput", "CodeCell", "NotebookContext", "Variable"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CellOutput(_Model):
    """One output of a code cell as a model can read it."""

    kind: Literal["stdout", "stderr", "result", "display", "error"]
    text: str = ""
    """The output as text: a stream's text, a result's or display's richest text form (Markdown, HTML as
    text, text/plain), or an error's traceback with its ANSI codes stripped. For an image, its text/plain."""
    image: ImageSource | None = None
    """An image the cell displayed (PNG, JPEG, GIF or WebP)."""


class CodeCell(_Model):
    """A code cell the user ran, with what it showed, in the order it ran."""

    cell_id: str | None = None
    """The notebook cell (the execute request's ``cellId``): a later run of it replaces this one."""
    execution_count: int | None = None
    source: str
    outputs: list[CellOutput] = []


class Variable(_Model):
    """One of the user's variables, named and described in one line (never its value in full)."""

    name: str
    type: str
    summary: str = ""
    """Shape or length, a DataFrame's columns and dtypes, or a short repr."""


class NotebookContext(_Model):
    """The notebook's part of a turn: what the model is shown before the user's message."""

    cells: list[CodeCell] = []
    variables: list[Variable] | None = None
    """The user's variables when the turn opened; None when they were not sent (``%context cells``)."""
    variables_left_out: int = 0
    """Variables beyond the summary's bound."""
    notes: list[str] = []
    """What the caps cut or left out, said to the model and to the user."""
    editable: Annotated[bool, Field(exclude_if=lambda v: not v)] = False
    """The notebook takes cells the agent proposes (``AgentCell.propose_cells``): the model is shown each
    cell's id and offered the ``notebook_edit`` tool (left off the wire when False, so turns without it are
    stored, and recorded, as before)."""

    @property
    def empty(self) -> bool:
        """Nothing to send; stored as no context at all (the notebook sends context, but had none new)."""
        return not self.cells and not self.variables and not self.notes

    @property
    def stored_empty(self) -> bool:
        """Nothing to store: nothing to send, and no offer of proposed cells."""
        return self.empty and not self.editable

    @property
    def images(self) -> int:
        return sum(1 for cell in self.cells for output in cell.outputs if output.image is not None)

    def describe(self) -> str:
        """The summary a turn view shows: "3 cells, 1 image, 12 variables"."""
        parts = [_count(len(self.cells), "cell")]
        if self.images:
            parts.append(_count(self.images, "image"))
        if self.variables:
            parts.append(_count(len(self.variables) + self.variables_left_out, "variable"))
        return ", ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
