"""Which ACP agent answers a notebook, kept in its session's metadata so a restarted kernel goes on with it.

``%agent acp`` writes ``acp_agent`` (the agent's name and command) and, once the agent has a session of its
own, ``acp_session``; ``%agent local`` removes both. A restarted kernel reads them at its first turn and
starts the same agent, which loads its session when it can (``loadSession``), else starts a new one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..acp_client import ExternalAgent
    from ..sessions import Session

__all__ = ["forget_choice", "remember_choice", "remember_session", "restored_choice"]

AGENT_KEY = "acp_agent"
SESSION_KEY = "acp_session"


def remember_choice(session: Session, agent: ExternalAgent) -> None:
    choice = json.dumps({"name": agent.name, "command": agent.command})
    _update(session, {AGENT_KEY: choice}, drop=(SESSION_KEY,))


def forget_choice(session: Session) -> None:
    _update(session, {}, drop=(AGENT_KEY, SESSION_KEY))


def remember_session(session: Session, agent: ExternalAgent) -> None:
    """The agent's own session id, once it has one (what a restarted kernel loads)."""
    if agent.session_id is not None and session.metadata.get(SESSION_KEY) != agent.session_id:
        _update(session, {SESSION_KEY: agent.session_id}, drop=())


def restored_choice(session: Session) -> ExternalAgent | None:
    """The agent the notebook chose before this kernel started, or None (agentcell's own engine)."""
    from ..acp_client import ExternalAgent

    saved = session.metadata.get(AGENT_KEY)
    if not saved:
        return None
    try:
        choice = json.loads(saved)
        name, command = str(choice["name"]), [str(part) for part in choice["command"]]
    except (ValueError, KeyError, TypeError):
        return None  # written by something else: the notebook's own engine answers
    return ExternalAgent(name, command, resume=session.metadata.get(SESSION_KEY))


def _update(session: Session, changes: dict[str, str], *, drop: tuple[str, ...]) -> None:
    metadata = {k: v for k, v in session.metadata.items() if k not in drop}
    metadata.update(changes)
    if metadata != session.metadata:
        session.update(metadata=metadata)
