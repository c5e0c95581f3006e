"""``engine.sessions``: creating, reopening, listing and following sessions (the handles live here, one per
id)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ._validation import check_metadata, validated
from .engine.budget import check_priced
from .engine.updates import check_title, parse_budget, resolve_multiagent
from .errors import SessionNotFoundError
from .events import Event
from .ids import new_id
from .records.agent import Agent, check_overrides, materialize
from .records.common import PermissionPreset, utc_now
from .records.resources import Resource
from .records.session import Principal, SessionRecord
from .sessions import Session
from .usage import Budget

if TYPE_CHECKING:
    from .core import Engine

__all__ = ["SessionsAPI"]


class SessionsAPI:
    """``engine.sessions``: create, reopen and list sessions."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._handles: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(
        self,
        *,
        agent: str | Agent | dict[str, Any],
        version: int | None = None,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
        budget: str | int | Decimal | Budget | None = None,
        resources: Sequence[Resource | dict[str, Any]] = (),
        max_turns: int = 25,
        permissions: PermissionPreset = "workspace-write",
        principal: Principal | dict[str, Any] | None = None,
    ) -> Session:
        """Start a session on ``agent``: an id (its latest version, unless ``version`` pins one), an agent,
        or ``{"id", "version"?, "model"?, "system"?, "tools"?, "mcp_servers"?, "skills"?}`` whose other
        keys replace the agent's fields for this session only. ``principal`` is whom its runs act for (a
        service account unless named)."""
        overrides: dict[str, Any] = {}
        if isinstance(agent, Agent):
            agent_id, version = agent.id, agent.version if version is None else version
        elif isinstance(agent, dict):
            fields = dict(agent)
            agent_id, version = str(fields.pop("id", "")), fields.pop("version", version)
            overrides = fields
        else:
            agent_id = agent
        pinned = self._engine.agents.get(agent_id, version)
        overrides = check_overrides(pinned, overrides)
        if budget is not None:  # a budget on a model with no list price could not fire before the charge
            check_priced(self._engine.providers.resolve(materialize(pinned, overrides).model))
        check_title(title)
        effective = materialize(pinned, overrides)
        multiagent = resolve_multiagent(effective, self._engine.agents)
        # Every skill of the agent and of the helpers its threads may run, pinned now: a later version of a
        # skill does not change this session (nor its replay).
        skills = self._engine.skills.pin([effective, *(multiagent.agents if multiagent else [])])
        record = validated(
            SessionRecord,
            {
                "id": new_id("sesn"),
                "agent_id": pinned.id,
                "agent_version": pinned.version,
                "title": title,
                "metadata": check_metadata(metadata or {}, "session"),
                "budget": parse_budget(budget),
                "resources": list(resources),
                "max_turns": max_turns,
                "permissions": permissions,
                "agent_overrides": overrides,
                "principal": principal or Principal(),
                "multiagent": multiagent,
                "skills": skills,
                "created_at": utc_now(),
            },
            "session",
        )
        self._engine.memory_stores.check(record.resources, self._engine.tools)
        self._engine.store.put_session(record)
        session = Session(self._engine, record, new=True)
        with self._lock:
            self._handles[record.id] = session
        return session

    def get(self, session_id: str) -> Session:
        """Reopen a session from the store (or return the live handle)."""
        with self._lock:
            live = self._handles.get(session_id)
        if live is not None:
            return live
        record = self._engine.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(session_id)
        session = Session(self._engine, record)
        with self._lock:
            return self._handles.setdefault(session_id, session)

    def fork(
        self,
        session_id: str,
        *,
        up_to: str | None = None,
        title: str | None = None,
        principal: Principal | dict[str, Any] | None = None,
    ) -> Session:
        """A new session that starts as a copy of ``session_id``'s log (up to and with the event ``up_to``,
        else all of it) and goes on by itself: same agent version, settings, budget and spend, "always"
        rules and history, a new id. ``title`` and ``principal`` replace the original's when given."""
        from .session_fork import fork_record

        check_title(title)
        whom = Principal.model_validate(principal) if isinstance(principal, dict) else principal
        record = fork_record(self._engine.store, session_id, up_to=up_to, title=title, principal=whom)
        return self.get(record.id)

    def list(self) -> list[Session]:
        """Every session, oldest first."""
        return [self.get(record.id) for record in self._engine.store.list_sessions()]

    def follow(self, session_id: str, after: str | None = None) -> AsyncIterator[Event]:
        """The session's durable events as they commit — whichever kernel or process drives it — from the
        start (or after the event with id ``after``), in order and exactly once; the iterator ends after
        ``session.status_terminated``, else runs until the caller stops. Woken by LISTEN/NOTIFY on
        PostgreSQL; on SQLite it polls the file. Raises SessionNotFoundError at once for an unknown id."""
        if self._engine.store.get_session(session_id) is None:
            raise SessionNotFoundError(session_id)
        return self._engine.store.follow(session_id, after_id=after)
