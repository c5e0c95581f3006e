"""Which session a notebook drives: the notebook index's row, kept by the store for each notebook id."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["NotebookRecord"]


class NotebookRecord(BaseModel):
    """A notebook id's session, the file it was last seen as, and whose notebook it is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    path: str | None = None
    """The notebook's absolute path when its kernel last looked it up; None for a row written before paths were
    kept. A second file carrying the same id while this one still does is a copy."""
    user: str | None = None
    """The user whose notebook it is (``$JUPYTERHUB_USER``, else the login name); None for an old row. On a
    shared store another user's kernel never continues the session: it forks it."""
