"""Forking a session: a new session whose log is a copy of another's, up to an event, that goes on by itself.

The copy is a session of its own in every respect the engine knows (its budget's spend, its "always" rules,
its threads and turns are folded from the copied events, as a reopened session's are), so the two diverge
from the fork on. Every event gets a new id (ids are unique in a store) and each reference to a copied
event inside a body follows it (``rewritten``, which a notebook rebuilt from its saved turns uses too); the
ids of threads, workflow runs and cells stay, since they are the session's own names, not the store's. Used
by a notebook that was copied (``kernel/notebook_id.py``) and by ACP's ``session/fork``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from .errors import InvalidInputError, SessionNotFoundError
from .ids import new_id
from .records.common import utc_now
from .store.base import EventRow

if TYPE_CHECKING:
    from .records.session import Principal, SessionRecord
    from .store.base import Store

__all__ = ["fork_record", "rewritten"]

_EVENT_ID = re.compile(r"\bsevt_[0-9A-Z]{26}\b")
_ENDS = ("session.status_terminated",)
"""Events a fork does not inherit: the copy is alive whatever became of the original."""


def rewritten(rows: list[EventRow], old_sessions: Collection[str], new_session: str) -> list[EventRow]:
    """``rows`` (events of ``old_sessions``) as events of ``new_session``: new ids, and every reference to one
    of the rows, or to one of the old sessions, inside a body follows it."""
    renamed = {row.id: new_id("sevt") for row in rows}

    def body(text: str) -> str:
        text = _EVENT_ID.sub(lambda m: renamed.get(m.group(0), m.group(0)), text)
        for old in old_sessions:
            text = text.replace(f'"{old}"', f'"{new_session}"')
        return text

    return [EventRow(renamed[row.id], row.type, body(row.body)) for row in rows]


def fork_record(
    store: Store,
    session_id: str,
    *,
    up_to: str | None = None,
    title: str | None = None,
    principal: Principal | None = None,
) -> SessionRecord:
    """Store a new session forked from ``session_id`` after the event ``up_to`` (the whole log when None)
    and return its record. ``title`` and ``principal`` replace the original's when given."""
    source = store.get_session(session_id)
    if source is None:
        raise SessionNotFoundError(session_id)
    rows = store.event_rows(session_id)
    if up_to is not None:
        ends = [i for i, row in enumerate(rows) if row.id == up_to]
        if not ends:
            raise InvalidInputError(f"{up_to} is not an event of session {session_id}; fork at one of its events")
        rows = rows[: ends[0] + 1]
    rows = [row for row in rows if row.type not in _ENDS]
    changes: dict[str, object] = {"id": new_id("sesn"), "created_at": utc_now(), "terminated_at": None}
    if title is not None:
        changes["title"] = title
    if principal is not None:
        changes["principal"] = principal
    record = source.model_copy(update=changes)
    store.put_session(record)
    store.put_event_rows(record.id, rewritten(rows, (session_id,), record.id))
    return record
