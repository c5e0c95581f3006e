"""Turning what a tool returned into a result, and keeping large outputs within the model's reach."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from ..events import ImageBlock, TextBlock
from .base import ToolResult

__all__ = ["MAX_LOG_CHARS", "MAX_MODEL_CHARS", "as_result", "truncate"]

MAX_MODEL_CHARS = 30_000
"""Text beyond this is cut from the middle before the model sees it (roughly 8k tokens)."""
MAX_LOG_CHARS = 1_000_000
"""The full output kept in ``ToolResult.full_text`` for the event log is cut here."""


def as_result(value: object) -> ToolResult:
    """A ToolResult from a tool's return value: a result as is, text, content blocks, or data as JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult.text(value)
    if isinstance(value, TextBlock | ImageBlock):
        return ToolResult(content=(value,))
    if isinstance(value, Sequence) and value and all(isinstance(item, TextBlock | ImageBlock) for item in value):
        return ToolResult(content=tuple(value))
    if value is None:
        # Never an empty text block: Anthropic refuses a request that carries one.
        return ToolResult.text("(no output)")
    if isinstance(value, BaseModel):
        return ToolResult.text(value.model_dump_json())
    try:
        return ToolResult.text(json.dumps(to_jsonable_python(value), ensure_ascii=False))
    except (TypeError, ValueError):
        # Not data: show it the way Python would.
        return ToolResult.text(str(value))


def truncate(result: ToolResult, max_model_chars: int, max_log_chars: int) -> ToolResult:
    """Cut the middle out of text longer than ``max_model_chars``; keep the full text (up to
    ``max_log_chars``) in ``full_text``. Command output matters at both ends (what ran, how it failed)."""
    text = result.text_content
    if len(text) <= max_model_chars:
        return result
    head = max_model_chars // 2
    tail = max_model_chars - head
    omitted = len(text) - head - tail
    note = (
        f"\n\n[... {omitted:,} characters cut here: the output has {len(text):,} characters and only the "
        f"first {head:,} and last {tail:,} are shown. The full output is in the event log.]\n\n"
    )
    shown = text[:head] + note + text[len(text) - tail :]
    full = result.full_text if result.full_text is not None else text
    if len(full) > max_log_chars:
        full = full[:max_log_chars] + f"\n[... cut at {max_log_chars:,} of {len(full):,} characters]"
    images = tuple(block for block in result.content if isinstance(block, ImageBlock))
    # The text blocks became one, so displays standing for text blocks have nothing left to stand for.
    update = {"content": (TextBlock(text=shown), *images), "full_text": full, "displays": ()}
    return result.model_copy(update=update)
