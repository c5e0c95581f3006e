"""``session/list``: the sessions of the shared store that belong to a directory, newest first.

A session opened over ACP records its ``cwd`` in its metadata. A notebook's session does not know its
directory, but the store's notebook index maps the notebook (its id, or its path when it has none) to it
(``kernel/notebook_id.py``), so the notebooks under the directory asked about are looked up (a few levels
deep): each mapped one is listed with its folder. Without a ``cwd`` only the sessions that recorded one are listed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from acp.schema import ListSessionsResponse, SessionInfo

from ..kernel.notebook_id import session_of_notebook
from .content import invalid_params

if TYPE_CHECKING:
    from .. import Engine, Session

__all__ = ["PAGE_SIZE", "list_page", "notebook_sessions"]

PAGE_SIZE = 50
_SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages"})
_MAX_DEPTH = 4
_MAX_NOTEBOOKS = 2000


def notebook_sessions(engine: Engine, root: Path) -> dict[str, Path]:
    """Session id -> the folder of the notebook mapped to it, for notebooks under ``root``."""
    found: dict[str, Path] = {}
    seen = 0
    for directory, dirnames, filenames in os.walk(root):
        depth = len(Path(directory).relative_to(root).parts)
        dirnames[:] = (
            [] if depth >= _MAX_DEPTH else [d for d in dirnames if not d.startswith(".") and d not in _SKIPPED]
        )
        for name in filenames:
            if not name.endswith(".ipynb"):
                continue
            seen += 1
            if seen > _MAX_NOTEBOOKS:
                return found
            session_id = session_of_notebook(engine.store, Path(directory) / name)
            if session_id:
                found[session_id] = Path(directory)
    return found


def _updated(session: Session) -> str:
    last = session.engine.store.last_event(session.id, None)
    return (last.created_at if last is not None else session.record.created_at).isoformat()


def list_page(engine: Engine, cwd: str | None, cursor: str | None) -> ListSessionsResponse:
    if cwd is not None and not Path(cwd).is_absolute():
        raise invalid_params(f"cwd must be an absolute path, not {cwd!r}")
    root = Path(cwd).resolve() if cwd else None
    try:
        start = int(cursor) if cursor else 0
    except ValueError:
        raise invalid_params(f"unknown cursor {cursor!r}; pass the nextCursor of the previous page") from None
    notebooks = notebook_sessions(engine, root) if root is not None and root.is_dir() else {}
    rows: list[tuple[str, SessionInfo]] = []
    for session in engine.sessions.list():
        if session.status == "terminated":
            continue
        recorded = session.metadata.get("cwd")
        where = Path(recorded) if recorded else notebooks.get(session.id)
        if where is None or (root is not None and where != root):
            continue
        updated = _updated(session)
        rows.append(
            (updated, SessionInfo(session_id=session.id, cwd=str(where), title=session.title, updated_at=updated))
        )
    rows.sort(key=lambda row: row[0], reverse=True)
    page = [info for _, info in rows[start : start + PAGE_SIZE]]
    more = start + PAGE_SIZE < len(rows)
    return ListSessionsResponse(sessions=page, next_cursor=str(start + PAGE_SIZE) if more else None)
