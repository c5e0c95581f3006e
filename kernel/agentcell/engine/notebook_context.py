"""How the notebook's context reads to the model: each code cell as text (with its images), then the variables.

A turn's ``user.message`` carries its :class:`NotebookContext`; the history folds it in before the message's
own content (``engine/history.py``), each cell's parts kept together so that a later run of the same cell
can take them out again. ``%context`` prints the same text, so the user reads what the model is sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..events import Event, UserMessage
from ..providers.base import Part, TextPart
from ..records.content import ImageBlock
from ..records.notebook_context import CellOutput, CodeCell, NotebookContext

__all__ = ["IMAGE_PLACEHOLDER", "ContextPiece", "carry_context", "context_pieces", "context_text"]

IMAGE_PLACEHOLDER = "[an image the notebook showed ({media_type}); this model takes no image input]"
"""What a model without image input is sent instead of an image (``ModelConfig.images`` False)."""

_HEADINGS = {"stdout": "stdout:", "stderr": "stderr:", "display": "display:", "error": "error:"}


@dataclass(frozen=True, slots=True)
class ContextPiece:
    """The parts one code cell (``cell_id``) or the variables and notes (``cell_id`` None) read as."""

    cell_id: str | None
    parts: list[Part]


CONTEXT_INTRO = "[For reference: what the user's notebook showed since the previous message. It is no request.]"
MESSAGE_INTRO = "[The user's message:]"


def context_pieces(context: NotebookContext) -> list[ContextPiece]:
    """The intro, each cell, then the variables and notes and the line that says the message follows."""
    if context.empty:
        return []
    pieces = [ContextPiece(None, [TextPart(text=CONTEXT_INTRO)])]
    pieces += [ContextPiece(cell.cell_id, _cell_parts(cell, show_id=context.editable)) for cell in context.cells]
    tail = _tail_text(context)
    pieces.append(ContextPiece(None, [TextPart(text=f"{tail}\n{MESSAGE_INTRO}" if tail else MESSAGE_INTRO)]))
    return pieces


def context_text(context: NotebookContext) -> str:
    """The whole context as text, an image as its placeholder (what ``%context`` prints)."""
    lines: list[str] = []
    for piece in context_pieces(context):
        for part in piece.parts:
            if isinstance(part, TextPart):
                lines.append(part.text)
            elif isinstance(part, ImageBlock):
                lines.append(f"[image: {part.source.media_type}]")
    return "\n\n".join(lines)


def _cell_parts(cell: CodeCell, *, show_id: bool = False) -> list[Part]:
    label = f"[{cell.execution_count}]" if cell.execution_count is not None else ""
    heading = f"The user ran code cell {label}" if label else "The user ran a code cell"
    if show_id and cell.cell_id is not None:  # what notebook_edit addresses it by
        heading += f" (cell id: {cell.cell_id})"
    sections = [f"[{heading}]"]
    sections.append(f"```python\n{cell.source}\n```")
    images: list[Part] = []
    for output in cell.outputs:
        if output.image is not None:
            images.append(ImageBlock(source=output.image))
        if text := _output_text(output, label):
            sections.append(text)
    if not cell.outputs:
        sections.append("(no output)")
    return [TextPart(text="\n".join(sections)), *images]


def _output_text(output: CellOutput, label: str) -> str:
    if not output.text:
        return ""
    heading = f"Out{label}:" if output.kind == "result" else _HEADINGS[output.kind]
    return f"{heading}\n{output.text.rstrip()}"


def _tail_text(context: NotebookContext) -> str:
    sections: list[str] = []
    if context.variables:
        rows = [f"- {v.name}: {v.type}" + (f", {v.summary}" if v.summary else "") for v in context.variables]
        if context.variables_left_out:
            rows.append(f"- ({context.variables_left_out} more not listed)")
        sections.append("[The user's variables now]\n" + "\n".join(rows))
    sections.extend(f"[{note}]" for note in context.notes)
    return "\n".join(sections)


def carry_context(message: UserMessage, leaving: list[str], openings: Iterable[Event]) -> UserMessage:
    """``message`` (whose cell runs again, so the turns ``leaving`` leave the path) with the code cells its
    cell's earlier turn was sent and that did not run again since: the notebook still shows them, and the
    turns that carried them leave (each cell as its latest run among those turns). Cells that ran after the
    earlier turn belong to the conversation that is replaced, and are not carried."""
    if message.context is None or not leaving:
        return message
    contexts = {e.id: e.context for e in openings if isinstance(e, UserMessage) and e.id in leaving}
    earlier = contexts.get(leaving[0])
    if earlier is None or not earlier.cells:
        return message
    latest: dict[str, CodeCell] = {}
    for turn_id in leaving:
        for cell in context.cells if (context := contexts.get(turn_id)) is not None else []:
            if cell.cell_id is not None:
                latest[cell.cell_id] = cell
    fresh = {cell.cell_id for cell in message.context.cells if cell.cell_id is not None}
    carried = [
        latest.get(cell.cell_id, cell) if cell.cell_id is not None else cell
        for cell in earlier.cells
        if cell.cell_id is None or cell.cell_id not in fresh
    ]
    if not carried:
        return message
    context = message.context.model_copy(update={"cells": [*carried, *message.context.cells]})
    return message.model_copy(update={"context": context})
