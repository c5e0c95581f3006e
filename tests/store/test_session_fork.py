"""Forking a session (``engine.sessions.fork``), on both stores: the fork's log is a copy of the original's up to
an event, under new ids, and from then on the two conversations diverge."""

from __future__ import annotations

from typing import Any

import pytest

from agentcell import Engine, InvalidInputError, ScriptedProvider, SessionNotFoundError

from ..conftest import SONNET_LIKE
from .conftest import Backend


def _said(provider: ScriptedProvider) -> list[str]:
    """The user texts of the latest request: the history the model got, and the question."""
    request = provider.requests[-1]
    return ["".join(getattr(p, "text", "") for p in m.content) for m in request.messages if m.role == "user"]


def test_a_fork_continues_the_history_up_to_the_event_and_then_diverges(backend: Backend) -> None:
    provider = ScriptedProvider(pricing=SONNET_LIKE)
    with Engine(backend.db, providers={"scripted": provider}) as engine:
        agent = engine.agents.create(name="a", model="scripted")
        original = engine.sessions.create(agent=agent.id, title="daily.ipynb", budget="1.00")
        original.send_sync("one")
        original.send_sync("two")
        fork_point, spent = original.events()[-1].id, original.usage.list_cost
        original.send_sync("three")
        whom: dict[str, Any] = {"type": "user", "name": "bob"}
        fork = engine.sessions.fork(original.id, up_to=fork_point, title="copy.ipynb", principal=whom)
        assert fork.id != original.id and fork.record.title == "copy.ipynb"
        assert fork.record.principal.name == "bob" and fork.record.agent_version == original.record.agent_version
        copied, source = fork.events(), original.events()
        assert [e.type for e in copied] == [e.type for e in source[: len(copied)]]
        assert copied[-1].type == "session.status_idle" and len(copied) < len(source)
        assert not {e.id for e in copied} & {e.id for e in source}  # every event under an id of its own
        assert {e.session_id for e in copied} == {fork.id}
        assert fork.usage.list_cost == spent is not None  # the spend up to the fork came along

        fork.send_sync("copy question")
        assert _said(provider) == ["one", "two", "copy question"]
        original.send_sync("four")
        assert _said(provider) == ["one", "two", "three", "four"]
        fork_ids = [e.id for e in fork.events()]

    with Engine(backend.db, providers={"scripted": provider}) as reopened:  # both, from the store alone
        assert [e.id for e in reopened.sessions.get(fork.id).events()] == fork_ids
        whole = reopened.sessions.fork(original.id)
        whole.send_sync("five")
        assert _said(provider) == ["one", "two", "three", "four", "five"]


def test_a_fork_of_nothing_known_is_refused_with_what_to_do(engine: Engine) -> None:
    with pytest.raises(SessionNotFoundError):
        engine.sessions.fork("sesn_nope")
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    with pytest.raises(InvalidInputError, match="fork at one of its events"):
        engine.sessions.fork(session.id, up_to="sevt_01ARZ3NDEKTSV4RRFFQ69G5FAV")


def test_a_fork_of_a_terminated_session_is_alive(engine: Engine) -> None:
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("hello")
    session.terminate()
    fork = engine.sessions.fork(session.id)
    assert session.status == "terminated" and fork.status != "terminated"
    fork.send_sync("still here")
    assert [e.type for e in fork.events()].count("user.message") == 2
