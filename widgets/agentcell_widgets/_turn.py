"""The turn widget: traits and messages only; the kernel's renderer drives it and the ESM draws it."""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from ._paths import STATIC

__all__ = ["TurnWidget"]


class TurnWidget(anywidget.AnyWidget):
    """One agent turn. Live items arrive as custom messages (batches); ``items`` is set twice: the
    context at creation and the compact final log at the end, which is what a saved notebook re-renders.
    The browser answers with custom messages too (``hello``, ``approval``, ``stop``)."""

    # The built files' text, not their paths: for a path anywidget connects every instance, through a
    # closure, to the class's file watcher, which then keeps every turn's widget, renderer and items for
    # the life of the kernel (issue 21, 9).
    _esm = (STATIC / "turn.js").read_text(encoding="utf-8")
    _css = (STATIC / "turn.css").read_text(encoding="utf-8")

    items = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The turn's items: ``[context]`` while it runs, then its compact durable log."""

    def __init__(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - {"items"}
        if unknown:  # a typo would otherwise become a silent, unsynced attribute
            raise TypeError(f"TurnWidget got unexpected arguments: {', '.join(sorted(unknown))}")
        super().__init__(**kwargs)

    def __repr__(self) -> str:
        # The widget output's text/plain: what a viewer without the widget's front end prints in its place,
        # right before the turn's static transcript. An object address there would only be noise.
        return "agent turn (a live view; its static transcript follows)"
