"""Renderers turn a session's stream into notebook output.

A renderer consumes stream items and owns one display. :class:`MarkdownRenderer` is the simple one: it
folds items into a :class:`~agentcell.transcript.TurnView` and updates one display (same ``display_id``)
at most ``max_rate`` times a second — never through ``print`` — and at the end replaces it with the
final transcript plus the turn's durable events as ``application/vnd.agentcell.turn+json``, so a saved
notebook shows the whole turn anywhere. The widgets package provides the full turn view behind the same
interface.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..events import StreamItem
    from ..sessions import Session, TurnResult
    from ..transcript import TurnView

__all__ = ["TURN_MIMETYPE", "MarkdownRenderer", "RendererFactory", "TurnRenderer", "fallback_bundle"]

TURN_MIMETYPE = "application/vnd.agentcell.turn+json"


class TurnRenderer(Protocol):
    def on_item(self, item: StreamItem) -> None:
        """Called on the kernel's event loop for every item, in order; must return quickly."""

    def close(self, result: TurnResult | None) -> None:
        """The turn ended (``result`` is None when it was abandoned); show the final state."""


RendererFactory = Callable[["Session"], TurnRenderer]


def fallback_bundle(view: TurnView, result: TurnResult | None) -> dict[str, Any]:
    """The static output of a finished turn: Markdown and plain text for every viewer, plus its events."""
    bundle: dict[str, Any] = {"text/markdown": view.to_markdown(final=True), "text/plain": view.to_text()}
    if result is not None:
        bundle[TURN_MIMETYPE] = {"events": [json.loads(e.model_dump_json()) for e in result.events]}
    return bundle


class MarkdownRenderer:
    """Streams a turn into one Markdown display, coalescing updates to at most ``max_rate`` per second."""

    def __init__(self, session: Session, *, max_rate: float = 30.0) -> None:
        from IPython.display import display

        from ..transcript import TurnView

        self._view = TurnView()
        self._interval = 1.0 / max_rate
        self._last_flush = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._dirty = False
        self._handle = display({"text/markdown": "_…_", "text/plain": "…"}, raw=True, display_id=True)
        del session

    @property
    def view(self) -> TurnView:
        return self._view

    def on_item(self, item: StreamItem) -> None:
        self._view.apply(item)
        self._dirty = True
        if self._timer is not None:
            return
        wait = self._last_flush + self._interval - time.monotonic()
        if wait <= 0:
            self._flush()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self._flush)

    def _flush(self) -> None:
        self._timer = None
        if not self._dirty or self._handle is None:
            return
        self._dirty = False
        self._last_flush = time.monotonic()
        self._handle.update({"text/markdown": self._view.to_markdown(), "text/plain": self._view.text}, raw=True)

    def close(self, result: TurnResult | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._handle is not None:
            self._handle.update(fallback_bundle(self._view, result), raw=True)
