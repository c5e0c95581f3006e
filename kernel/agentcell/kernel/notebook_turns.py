"""A notebook's saved turns, and its conversation rebuilt from them when the store has lost it or lags.

Each finished turn leaves an output carrying its durable events (``render.renderer``'s turn bundle), so a
saved notebook holds its whole conversation. When the store no longer has it (the database was deleted or
moved, the notebook's session is missing) or lags behind it (a database restored from an older copy), the
notebook is the truth: a new session's log is rebuilt from the turns the notebook shows, so the model sees
the conversation the reader sees, and re-running a cell still replaces its turn (the events keep their
cells). ``kernel/notebook_id.py`` decides when; this module reads the turns and writes the log.

The rebuilt log keeps what shapes the conversation and its turns (messages, tool calls and results, turn
status, supersessions), not the spans and usage of the old requests: their spend was the store's that ran
them, and a new session's budget starts from nothing spent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store.base import Store

__all__ = ["SavedTurn", "read_turns", "rebuild", "saved_turns"]

_TURN_MIMETYPE = "application/vnd.agentcell.turn+json"  # render.renderer's; not imported: it loads the fold
_CUT = re.compile(r"\n\n\[… ([0-9,]+) more characters not shown here: the cell holds the whole prompt\]$")
"""The note ``render.previews`` ends a long prompt's preview with; the cell's source has the rest."""


@dataclass(frozen=True)
class SavedTurn:
    """One turn a saved notebook shows: the source of its cell, and the events its output carries."""

    source: str
    events: tuple[dict[str, Any], ...]

    @property
    def started(self) -> str:
        """When the turn started (ISO time of its first event): the rebuilt log keeps the order they ran in."""
        first = self.events[0].get("created_at") if self.events else None
        return first if isinstance(first, str) else ""


def saved_turns(cells: Any) -> tuple[SavedTurn, ...]:
    """The turns the outputs of ``cells`` (a saved notebook's) show, in the notebook's order."""
    found: list[SavedTurn] = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        for output in cell.get("outputs", []) if isinstance(cell.get("outputs"), list) else []:
            data = output.get("data") if isinstance(output, dict) else None
            turn = data.get(_TURN_MIMETYPE) if isinstance(data, dict) else None
            events = turn.get("events") if isinstance(turn, dict) else None
            if isinstance(events, list) and events:
                kept = tuple(e for e in events if isinstance(e, dict) and isinstance(e.get("id"), str))
                found.append(SavedTurn(source if isinstance(source, str) else "", kept))
    return tuple(found)


def read_turns(path: Path) -> tuple[SavedTurn, ...]:
    """The turns the saved notebook at ``path`` shows; none when it cannot be read."""
    try:
        with path.open(encoding="utf-8") as file:
            content = json.load(file)
    except (OSError, ValueError):
        return ()
    return saved_turns(content.get("cells") if isinstance(content, dict) else None)


def _left_out(event_type: str) -> bool:
    return event_type.startswith("span.") or event_type in ("session.usage", "session.status_terminated")


def _whole_prompt(event: dict[str, Any], source: str) -> dict[str, Any]:
    """A ``user.message`` whose text the output shows cut (a long prompt): the whole text, from its cell."""
    content = event.get("content")
    if event.get("type") != "user.message" or not isinstance(content, list):
        return event
    return {**event, "content": [_whole_block(block, source) for block in content]}


def _whole_block(block: Any, source: str) -> Any:
    text = block.get("text") if isinstance(block, dict) else None
    cut = _CUT.search(text) if isinstance(text, str) else None
    if cut is None or not isinstance(text, str):
        return block
    shown = text[: cut.start()]
    at = source.find(shown)
    if at < 0:  # the cell was edited since: the preview is all there is
        return block
    return {**block, "text": source[at : at + len(shown) + int(cut.group(1).replace(",", ""))]}


def rebuild(store: Store, session_id: str, turns: tuple[SavedTurn, ...]) -> int:
    """Append the events of ``turns`` to the log of ``session_id`` (a session just created, its log empty),
    in the order the turns ran, as that session's own; returns how many turns it got. A turn shown twice (a
    cell pasted with its output) counts once; an event no version of agentcell wrote is left out."""
    from pydantic import ValidationError  # here, not at the top: the kernel starts without the engine

    from ..events import event_adapter
    from ..session_fork import rewritten
    from ..store.base import EventRow

    rows: list[EventRow] = []
    seen: set[str] = set()
    sessions: set[str] = set()
    count = 0
    for turn in sorted(turns, key=lambda t: t.started):
        kept = 0
        for raw in turn.events:
            if raw["id"] in seen or _left_out(str(raw.get("type"))):
                continue
            try:
                event = event_adapter.validate_python(_whole_prompt(raw, turn.source))
            except ValidationError:
                continue
            seen.add(event.id)
            sessions.add(event.session_id)
            rows.append(EventRow(event.id, event.type, event.model_dump_json()))
            kept += 1
        if kept:
            count += 1
    if rows:
        store.put_event_rows(session_id, rewritten(rows, sessions, session_id))
    return count
