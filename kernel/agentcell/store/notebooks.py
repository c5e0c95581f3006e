"""The notebook index: which session each notebook id drives, over the store's key/value table (so every
store keeps it, SQLite and PostgreSQL alike).

``notebook-id:<id>`` holds a :class:`NotebookRecord` (older rows hold a bare session id). ``notebook-copy:<id>
<user> <path>`` holds the id a copy of a notebook was given when it forked: a copy whose file still carries the
original's id (its front end could not rewrite it, or it was not saved since) finds its own session again.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..records.notebook import NotebookRecord

if TYPE_CHECKING:
    from .base import Store

__all__ = ["copy_id", "get_notebook", "put_copy_id", "put_notebook"]


def _key(notebook_id: str) -> str:
    return f"notebook-id:{notebook_id}"


def get_notebook(store: Store, notebook_id: str) -> NotebookRecord | None:
    value = store.get_value(_key(notebook_id))
    if not value:
        return None
    if not value.startswith("{"):  # a bare session id, as kept before the index knew paths
        return NotebookRecord(session_id=value)
    try:
        return NotebookRecord.model_validate(json.loads(value))
    except ValueError:  # a row no version of agentcell wrote: as if there were none
        return None


def put_notebook(store: Store, notebook_id: str, record: NotebookRecord) -> None:
    store.set_value(_key(notebook_id), record.model_dump_json(exclude_none=True))


def _copy_key(notebook_id: str, user: str, path: str) -> str:
    # The user too: on a shared store two users' notebooks may sit at the same path on their own machines.
    return f"notebook-copy:{notebook_id}\n{user}\n{path}"


def copy_id(store: Store, notebook_id: str, user: str, path: str) -> str | None:
    """The id ``user``'s copy at ``path`` of notebook ``notebook_id`` was given, if it forked."""
    return store.get_value(_copy_key(notebook_id, user, path))


def put_copy_id(store: Store, notebook_id: str, user: str, path: str, new_id: str) -> None:
    store.set_value(_copy_key(notebook_id, user, path), new_id)


def record(session_id: str, path: str | None, user: str) -> NotebookRecord:
    return NotebookRecord(session_id=session_id, path=path, user=user)
