"""What the notebook host asks of a renderer, and the static output a finished turn leaves behind.

A renderer owns one turn's display. The host subscribes its ``on_item`` to the session for the turn (the
turn's one listener) and, however the turn ended, calls ``close`` with ``session.last_turn``. Jupyter-free:
the renderers that show things (:mod:`.markdown_renderer`, :mod:`.widget_renderer`) import IPython.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .fallback_html import fallback_html, image_key
from .fold import TurnFold
from .markdown import not_math
from .previews import preview_prompt

if TYPE_CHECKING:
    from .. import Session, StreamItem, TurnResult

__all__ = ["TURN_MIMETYPE", "RendererFactory", "TurnRenderer", "fallback_bundle", "fold_of"]

TURN_MIMETYPE = "application/vnd.agentcell.turn+json"
"""The output that carries a finished turn's durable events, so a saved notebook holds the whole turn."""


class TurnRenderer(Protocol):
    def on_item(self, item: StreamItem) -> None:
        """Called on the kernel's event loop for every item, in order; must return quickly."""

    def close(self, result: TurnResult | None) -> None:
        """The turn ended (``result`` is None when it never ran); show the final state."""


RendererFactory = Callable[["Session"], TurnRenderer]


def fold_of(result: TurnResult | None) -> TurnFold:
    """The fold of a finished turn's durable events (empty when the turn never ran)."""
    fold = TurnFold()
    for event in result.events if result is not None else ():
        fold.apply(event)
    return fold


def fallback_bundle(
    fold: TurnFold,
    result: TurnResult | None,
    *,
    html: bool = False,
    context: dict[str, Any] | None = None,
    approvals: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The output of a finished turn: Markdown and plain text for every viewer (and sanitised HTML when
    ``html``), plus :data:`TURN_MIMETYPE` with its events, which the JupyterLab / Notebook 7 extension
    renders with the widget's own view. ``context`` and ``approvals`` are the widget's items that are not
    events (its header and the approval requests it showed), so the saved turn folds as the live one did."""
    markdown = not_math(fold.to_markdown(final=True, images=not html))
    bundle: dict[str, Any] = {"text/markdown": markdown, "text/plain": fold.to_text()}
    if html:
        bundle["text/html"] = fallback_html(fold, footer=fold.footer())
    if result is not None:
        # A long prompt as its preview: the cell above the output holds it whole.
        events = [preview_prompt(json.loads(e.model_dump_json())) for e in result.events]
        turn: dict[str, Any] = {"events": _images_once(events, bundle.get("text/html", ""))}
        if context is not None:
            turn["context"] = context
        if approvals:
            turn["approvals"] = list(approvals)
        bundle[TURN_MIMETYPE] = turn
    return bundle


def _images_once(events: list[dict[str, Any]], html: str) -> list[dict[str, Any]]:
    """The events with each tool result's image that the HTML fallback shows left out of them: the bundle
    keeps one copy of a plot, not three (issue 38). Such an image's source keeps its media type and says
    where its data is (``"in": "text/html"``, found there by :func:`~.fallback_html.image_key`)."""
    for event in events:
        if event.get("type") != "agent.tool_result":
            continue
        for index, block in enumerate(event.get("content") or []):
            source = block.get("source") if block.get("type") == "image" else None
            if source and f'data-image="{image_key(event["tool_use_id"], index)}"' in html:
                block["source"] = {**source, "data": "", "in": "text/html"}
    return events
