"""The turn widget: traits and messages only; the kernel's renderer drives it and the ESM draws it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import comm
import traitlets
from ipywidgets._version import __protocol_version__  # type: ignore[import-untyped]
from ipywidgets.widgets.widget import _remove_buffers  # type: ignore[import-untyped]

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

    def __init__(self, *, on_msg: Callable[[Any, Any, Any], None] | None = None, **kwargs: Any) -> None:
        """``on_msg`` gets the view's custom messages, from the first: it is in place before the comm opens."""
        unknown = set(kwargs) - {"items"}
        if unknown:  # a typo would otherwise become a silent, unsynced attribute
            raise TypeError(f"TurnWidget got unexpected arguments: {', '.join(sorted(unknown))}")
        if on_msg is not None:
            self.on_msg(on_msg)
        super().__init__(**kwargs)

    def open(self) -> None:
        """ipywidgets' ``open``, with the comm's handler attached before its ``comm_open`` goes out.

        ipywidgets attaches it once the comm exists, which is after the comm announced itself. On ipykernel
        7.3 a front end's comm messages run on a subshell's thread (JupyterLab's comms over subshells), and the
        view's first message (its ``hello``, the loader's ``code``) can be handled in between: it finds no
        handler and is dropped without a word. A turn that needs nothing from the view can then end unseen by
        it: never live, no Stop.
        """
        if self.comm is not None:  # type: ignore[has-type]
            return
        state, buffer_paths, buffers = _remove_buffers(self.get_state())
        given = {} if self._model_id is None else {"comm_id": self._model_id}
        created = comm.create_comm(target_name="jupyter.widget", primary=False, **given)
        self.comm = created  # ipywidgets' observer attaches the widget's handler (and registers the widget)
        created.primary = True
        created.open(
            data={"state": state, "buffer_paths": buffer_paths},
            metadata={"version": __protocol_version__},
            buffers=buffers,
        )

    def __repr__(self) -> str:
        # The widget output's text/plain: what a viewer without the widget's front end prints in its place,
        # right before the turn's static transcript. An object address there would only be noise.
        return "agent turn (a live view; its static transcript follows)"
