"""The simple renderer: a turn as one Markdown display, updated as it streams.

It folds items into a :class:`~agentcell.render.fold.TurnFold` and updates one display (same
``display_id``) through the shared :class:`~agentcell.render.throttle.Throttle` — never through ``print`` —
and at the end replaces it with the final transcript plus the turn's durable events as
``application/vnd.agentcell.turn+json``, so a saved notebook shows the whole turn anywhere. The widget
renderer (:mod:`.widget_renderer`) is the full turn view behind the same interface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._ipython import display
from .displays import displays_of, opening_event_id
from .fold import TurnFold
from .markdown import not_math
from .renderer import fallback_bundle
from .throttle import Throttle

if TYPE_CHECKING:
    from .. import Session, StreamItem, TurnResult

__all__ = ["MarkdownRenderer"]


class MarkdownRenderer:
    """Streams a turn into one Markdown display, coalescing updates to at most ``max_rate`` per second."""

    def __init__(self, session: Session, *, max_rate: float = 30.0) -> None:
        self._displays = displays_of(session)
        self._opening_id: str | None = None
        self._fold = TurnFold()
        self._dirty = False
        self._throttle = Throttle(self._update, max_rate=max_rate)
        self._handle = display({"text/markdown": "_…_", "text/plain": "…"}, raw=True, display_id=True)

    @property
    def fold(self) -> TurnFold:
        return self._fold

    def on_item(self, item: StreamItem) -> None:
        if self._opening_id is None:
            self._opening_id = opening_event_id(item)
        self._fold.apply(item)
        self._dirty = True
        self._throttle.changed()

    def _update(self) -> bool:
        if not self._dirty or self._handle is None:
            return False
        self._dirty = False
        markdown = not_math(self._fold.to_markdown())
        self._handle.update({"text/markdown": markdown, "text/plain": self._fold.text}, raw=True)
        return True

    def close(self, result: TurnResult | None) -> None:
        self._throttle.close(flush=False)
        if self._handle is not None:
            bundle = fallback_bundle(self._fold, result)
            self._handle.update(bundle, raw=True)
            if self._opening_id is not None:
                self._displays.shown(self._opening_id, bundle, display_id=self._handle.display_id)
