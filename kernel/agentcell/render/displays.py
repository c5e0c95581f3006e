"""Finished turns' outputs, by the event that opened each turn, so that a turn which leaves the
conversation's active path reads as stale where it stands.

Every finished turn's output has the display id :func:`turn_display_id` of its opening ``user.message``.
When the session logs ``session.turns_superseded`` (an earlier cell was run again), each of those outputs
is updated in place (``update_display_data``) to its bundle marked stale: the MIME bundle carries
``"stale": true`` for the turn renderer, and the text fallbacks say so in words. Jupyter-free but for the
one ``display`` call: the bundles are plain dicts.
"""

from __future__ import annotations

import copy
import json
import zlib
from collections import OrderedDict
from html import escape
from typing import TYPE_CHECKING, Any

from ..events import SessionTurnsSuperseded, UserDefineOutcome, UserMessage
from ..records.workflow_events import UserStartWorkflowRun
from ._ipython import display
from .renderer import TURN_MIMETYPE

if TYPE_CHECKING:
    from .. import Session, StreamItem

__all__ = [
    "STALE_NOTE",
    "TurnDisplays",
    "displays_of",
    "opening_event_id",
    "stale_bundle",
    "stale_reference",
    "turn_display_id",
]

STALE_NOTE = "an earlier cell was re-run: run this cell again to bring it back"
"""What a superseded turn's output says (the widget's lab renderer says the same, in lab/bundle.ts)."""

MAX_REMEMBERED = 500
"""Finished turns a kernel keeps the bundles of; older ones are no longer marked when superseded."""


def turn_display_id(opening_event_id: str) -> str:
    return f"agentcell-turn-{opening_event_id}"


def opening_event_id(item: StreamItem) -> str | None:
    """``item``'s id if it opens a turn: the ids ``session.turns_superseded`` lists (engine/path.py's
    ``is_opening``; lab/bundle.ts agrees)."""
    if isinstance(item, UserMessage) and not item.thread_id and not item.steered:
        return item.id
    if isinstance(item, UserDefineOutcome | UserStartWorkflowRun) and not item.thread_id:
        return item.id
    return None


def stale_bundle(bundle: dict[str, Any]) -> dict[str, Any]:
    """``bundle`` as a superseded turn shows it: flagged for the renderer, said in every fallback."""
    stale = copy.copy(bundle)
    if isinstance(bundle.get(TURN_MIMETYPE), dict):
        stale[TURN_MIMETYPE] = {**bundle[TURN_MIMETYPE], "stale": True}
    if "text/markdown" in bundle:
        stale["text/markdown"] = f"> ⚠️ **Stale:** {STALE_NOTE}\n\n{bundle['text/markdown']}"
    if "text/html" in bundle:
        note = f'<p class="agentcell-stale"><strong>⚠️ Stale:</strong> {escape(STALE_NOTE)}</p>'
        stale["text/html"] = note + bundle["text/html"]
    if "text/plain" in bundle:
        stale["text/plain"] = f"[stale: {STALE_NOTE}]\n{bundle['text/plain']}"
    return stale


def stale_reference(opening_event_id: str) -> dict[str, Any]:
    """The update that marks a turn this kernel did not show: no events, only which turn left the path."""
    return {
        TURN_MIMETYPE: {"events": [], "stale": True, "opening": opening_event_id},
        "text/plain": f"[stale: {STALE_NOTE}]",
    }


class TurnDisplays:
    """One session's finished turn outputs in this kernel, by opening event id. It listens to the session
    for as long as the kernel lives, so a turn superseded by any caller (a re-run cell, ``session.ask`` from
    Python with a ``cell_id``) is marked."""

    def __init__(self) -> None:
        self._shown: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        """Each bundle compressed: only a re-run reads one again, and a long session keeps hundreds."""

    def shown(self, opening_event_id: str, bundle: dict[str, Any], *, display_id: str | None = None) -> None:
        """The turn's output (display id ``display_id``, by default :func:`turn_display_id`) shows ``bundle``."""
        packed = zlib.compress(json.dumps(bundle, ensure_ascii=False).encode(), 6)
        self._shown[opening_event_id] = (display_id or turn_display_id(opening_event_id), packed)
        self._shown.move_to_end(opening_event_id)
        while len(self._shown) > MAX_REMEMBERED:
            self._shown.popitem(last=False)

    def on_item(self, item: StreamItem) -> None:
        if isinstance(item, SessionTurnsSuperseded):
            self.supersede(item)

    def supersede(self, event: SessionTurnsSuperseded) -> None:
        """Mark the outputs of the turns ``event`` took off the path. Only a re-run says "re-run": a turn
        refused or failed before the model answered already shows why."""
        if event.reason != "rerun":
            return
        for turn_id in event.turn_ids:
            shown = self._shown.pop(turn_id, None)
            if shown is not None:
                display_id, packed = shown
                bundle = json.loads(zlib.decompress(packed))
                display(stale_bundle(bundle), raw=True, display_id=display_id, update=True)
            else:
                # Shown by an earlier kernel (before a restart): this one has no bundle to resend, so it
                # names the turn and the notebook's extension marks the saved output (lab/stale.ts).
                # Under a display id of its own: a front end that still maps the turn's id to its output (the
                # same page, before the restart) would otherwise draw the mark in place of the turn.
                display(stale_reference(turn_id), raw=True, display_id=f"agentcell-stale-{turn_id}", update=True)


_by_session: dict[str, TurnDisplays] = {}


def displays_of(session: Session) -> TurnDisplays:
    """The kernel's record of ``session``'s turn outputs (a kernel drives one notebook's sessions), listening
    to it from the first time it is asked for."""
    displays = _by_session.get(session.id)
    if displays is None:
        displays = _by_session[session.id] = TurnDisplays()
        session.subscribe(displays.on_item)
    return displays
