"""``session/fork``: a new session whose conversation is the old one's up to now.

The new session has the old one's agent (version and per-session overrides), preset, budget, resources
and turn limit, and a copy of every event on its active path (turns a re-run cell superseded stay
behind), each under a new id: ids are unique across the store, and an event that names another (a tool
result its call, a thread its parent) names the copy. Ids are opaque tokens, so the copy rewrites them
in each event's JSON and validates the result as an event again. The old session is not touched.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..engine.updates import MAX_TITLE_CHARS
from ..events import event_adapter
from ..ids import new_id

if TYPE_CHECKING:
    from .. import Engine, Session

__all__ = ["fork_session"]


def fork_session(engine: Engine, source: Session, metadata: dict[str, str]) -> Session:
    record = source.record
    title = f"{source.title[: MAX_TITLE_CHARS - 7]} (fork)" if source.title else None
    target = engine.sessions.create(
        agent={"id": record.agent_id, "version": record.agent_version, **record.agent_overrides},
        title=title,
        metadata=metadata,
        budget=record.budget,
        resources=record.resources,
        max_turns=record.max_turns,
        permissions=record.permissions,
        principal=record.principal,
    )
    events = source.events(active_path=True)
    if not events:
        return target
    renamed = {source.id: target.id} | {event.id: new_id(event.id.split("_", 1)[0]) for event in events}
    token = re.compile("|".join(re.escape(old) for old in renamed))
    for event in events:
        copy = token.sub(lambda match: renamed[match.group(0)], event.model_dump_json())
        target.emit(event_adapter.validate_json(copy))
    return target
