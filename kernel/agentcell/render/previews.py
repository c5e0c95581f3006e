"""A turn's prompt as its outputs show it: the first characters, and a note saying the cell holds the rest.

The cell's source is the prompt, and the notebook already shows it in full; the widget and the saved turn
only echo it. A 5 MB cell used to travel over IOPub three times (execute_input, the widget's items, the
finished turn's bundle) and stay in the saved notebook twice. The event log keeps the whole prompt.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EXECUTE_INPUT_CHARS", "PROMPT_PREVIEW_CHARS", "preview_code", "preview_prompt"]

PROMPT_PREVIEW_CHARS = 2_000
"""The characters of a prompt the widget and the saved turn show."""
EXECUTE_INPUT_CHARS = 10_000
"""The characters of a cell the kernel's ``execute_input`` broadcast carries (front ends that show it, a
console's foreign cells, see the start of a huge cell and how long it is)."""


def _cut_note(omitted: int, where: str) -> str:
    return f"\n\n[… {omitted:,} more characters not shown here: {where}]"


def preview_prompt(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` (a ``user.message`` as JSON) with each text block longer than the preview cut; any other
    event as it is. A new dict when something was cut: the caller's is left alone."""
    if event.get("type") != "user.message":
        return event
    event = _without_context_images(event)
    content = event.get("content")
    if not isinstance(content, list) or not any(_long(block) for block in content):
        return event
    return {**event, "content": [_preview(block) if _long(block) else block for block in content]}


def _without_context_images(event: dict[str, Any]) -> dict[str, Any]:
    """The notebook's context without its images' data: the code cell above shows each of them already (the
    event log keeps them); the view names each one instead."""
    context = event.get("context")
    if not isinstance(context, dict):
        return event
    cells = context.get("cells")
    if not isinstance(cells, list) or not any(_has_image(cell) for cell in cells):
        return event
    shown = [
        {**cell, "outputs": [_image_named(o) for o in cell["outputs"]]} if _has_image(cell) else cell for cell in cells
    ]
    return {**event, "context": {**context, "cells": shown}}


def _has_image(cell: Any) -> bool:
    outputs = cell.get("outputs") if isinstance(cell, dict) else None
    return isinstance(outputs, list) and any(isinstance(o, dict) and o.get("image") for o in outputs)


def _image_named(output: dict[str, Any]) -> dict[str, Any]:
    image = output.get("image")
    if not isinstance(image, dict):
        return output
    return {**output, "image": None, "text": f"[image: {image.get('media_type', 'image')}] {output.get('text', '')}"}


def _preview(block: dict[str, Any]) -> dict[str, Any]:
    text: str = block["text"]
    shown = text[:PROMPT_PREVIEW_CHARS]
    return {**block, "text": shown + _cut_note(len(text) - len(shown), "the cell holds the whole prompt")}


def preview_code(code: str) -> str:
    """A cell's code as ``execute_input`` broadcasts it."""
    if len(code) <= EXECUTE_INPUT_CHARS:
        return code
    shown = code[:EXECUTE_INPUT_CHARS]
    return shown + _cut_note(len(code) - len(shown), "the request that ran the cell holds all of it")


def _long(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and len(block["text"]) > PROMPT_PREVIEW_CHARS
    )
