"""The turn widget: traits and messages only; the kernel's renderer drives it and the ESM draws it."""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from ._paths import STATIC

__all__ = ["TurnWidget"]


class TurnWidget(anywidget.AnyWidget):
    """One agent turn. Live items arrive as custom messages (batches); ``items`` holds the context set at
    creation. The browser answers with custom messages too (``hello``, ``approval``, ``stop``, and ``code``
    for a part of the widget's code its page does not have yet: :func:`~._code.code_part`)."""

    # Only the loader, which gets the views and KaTeX once per page (from the lab extension or through a
    # ``code`` message), so each turn's comm_open and saved state stay small (issue 34). Its text, not its
    # path: for a path anywidget connects every instance, through a closure, to the class's file watcher,
    # which then keeps every turn's widget, renderer and items for the life of the kernel (issue 21, 9).
    _esm = (STATIC / "loader.js").read_text(encoding="utf-8")

    layout = traitlets.Any(None).tag(sync=True)
    """No layout widget (ipywidgets gives every DOM widget its own, a ~1.2 KB model of nulls that nbclient would
    save once a turn): the front end's view skips a null layout, and the view sizes itself."""

    items = traitlets.List(traitlets.Dict()).tag(sync=True)
    """The turn's context, ``[context]``: the rest of its items arrive as custom messages."""

    def __init__(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - {"items"}
        if unknown:  # a typo would otherwise become a silent, unsynced attribute
            raise TypeError(f"TurnWidget got unexpected arguments: {', '.join(sorted(unknown))}")
        super().__init__(**kwargs)

    def __repr__(self) -> str:
        # The widget output's text/plain: what a viewer without the widget's front end prints in its place,
        # right before the turn's static transcript. An object address there would only be noise.
        return "agent turn (a live view; its static transcript follows)"
