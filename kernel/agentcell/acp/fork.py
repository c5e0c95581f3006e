"""``session/fork``: a new session whose conversation is the old one's up to now.

The engine's own fork (``engine.sessions.fork``, shared with a copied notebook) makes the copy: the old
session's agent version, preset, budget and spend, "always" rules and log under new ids, the old session
untouched. Here it gets the editor's title mark and the workspace's metadata.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.updates import MAX_TITLE_CHARS

if TYPE_CHECKING:
    from .. import Engine, Session

__all__ = ["fork_session"]


def fork_session(engine: Engine, source: Session, metadata: dict[str, str]) -> Session:
    title = f"{source.title[: MAX_TITLE_CHARS - 7]} (fork)" if source.title else None
    forked = engine.sessions.fork(source.id, title=title)
    return forked.update(metadata={**forked.record.metadata, **metadata})
