"""Sessions: creation, pinning, updates, termination, reopening from the store."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from pathlib import Path

import pytest

from agentcell import (
    AgentVersionNotFoundError,
    Budget,
    CustomTool,
    Engine,
    GitRepository,
    InvalidInputError,
    ScriptedDelay,
    ScriptedResponse,
    ScriptedText,
    SessionBusyError,
    SessionNotFoundError,
    SessionTerminatedError,
)
from agentcell import events as ev

from ..conftest import event_seen, scripted_engine


def test_a_session_pins_the_latest_version_or_the_one_asked(engine: Engine) -> None:
    a1 = engine.agents.create(name="a", model="scripted", system="one")
    engine.agents.update(a1.id, system="two")
    assert engine.sessions.create(agent=a1.id).agent.version == 2
    assert engine.sessions.create(agent=a1.id, version=1).agent.system == "one"
    assert engine.sessions.create(agent={"id": a1.id, "version": 1}).agent.version == 1
    with pytest.raises(AgentVersionNotFoundError):
        engine.sessions.create(agent=a1.id, version=3)
    with pytest.raises(InvalidInputError, match="at least 1"):
        engine.sessions.create(agent=a1.id, version=0)
    pinned = engine.sessions.create(agent=a1.id, version=1)
    engine.agents.update(a1.id, system="three")
    assert engine.sessions.get(pinned.id).agent.system == "one"  # a pin survives later versions


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        ("0.50", Decimal("0.50")),
        (2, Decimal(2)),
        (Decimal("0.001"), Decimal("0.001")),
        (0.25, Decimal("0.25")),
    ],
)
def test_budgets_are_decimal_usd(engine: Engine, budget: object, expected: Decimal) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    session = engine.sessions.create(agent=agent.id, budget=budget)  # type: ignore[arg-type]
    assert session.budget == Budget(max_list_cost=expected)


@pytest.mark.parametrize("budget", ["0", "-1", "lots", "NaN", True, [1]])
def test_bad_budgets_are_refused(engine: Engine, budget: object) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    with pytest.raises(InvalidInputError, match="budget"):
        engine.sessions.create(agent=agent.id, budget=budget)  # type: ignore[arg-type]
    assert engine.sessions.list() == []


def test_metadata_and_title_are_bounded(engine: Engine) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    with pytest.raises(InvalidInputError, match="512"):
        engine.sessions.create(agent=agent.id, metadata={"k": "v" * 513})
    with pytest.raises(InvalidInputError, match="512"):
        engine.sessions.create(agent=agent.id, title="t" * 513)
    session = engine.sessions.create(agent=agent.id, metadata={"owner": "ana"})
    assert session.metadata == {"owner": "ana"}


def test_resources_are_typed_and_tokens_never_stored(engine: Engine, db_path: Path) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    repo = GitRepository(url="file:///tmp/repo.git", branch="main", authorization_token="ghp_secret_token")
    session = engine.sessions.create(agent=agent.id, resources=[repo, {"type": "file", "file_id": "file_1"}])
    reopened = Engine(db_path).sessions.get(session.id)
    assert [r.type for r in reopened.record.resources] == ["git_repository", "file"]
    assert b"ghp_secret_token" not in db_path.read_bytes()
    with pytest.raises(InvalidInputError, match="commit"):
        engine.sessions.create(agent=agent.id, resources=[{"type": "git_repository", "url": "u", "commit": "abc"}])


def test_update_emits_only_what_changed(engine: Engine) -> None:
    a1 = engine.agents.create(name="a", model="scripted")
    a2 = engine.agents.update(a1.id, system="new prompt only")
    a3 = engine.agents.update(a1.id, tools=[CustomTool(name="lookup")])
    session = engine.sessions.create(agent=a1.id, version=1, budget="1")
    session.update(title="renamed")
    session.update(budget=None)
    session.update(metadata={"k": "v"})
    session.update(agent_version=a2.version)  # system changed, tools did not: no snapshot
    session.update(agent_version=a3.version)  # tools changed: full snapshot
    session.update(title="renamed")  # no change, no event
    updates = [json.loads(e.model_dump_json()) for e in session.events(types=["session.updated"])]
    keys = [sorted(set(u) - {"id", "type", "created_at", "session_id", "thread_id"}) for u in updates]
    assert keys == [["title"], ["budget"], ["metadata"], ["agent"]]
    assert updates[1]["budget"] is None
    assert updates[3]["agent"]["version"] == 3 and updates[3]["agent"]["tools"][0]["name"] == "lookup"
    assert session.agent.version == 3 and session.budget is None


def test_terminate_freezes_duration_and_refuses_input(engine: Engine) -> None:
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("hi")
    session.terminate()
    frozen = session.stats.duration_seconds
    assert session.status == "terminated"
    assert session.stats.duration_seconds == frozen
    with pytest.raises(SessionTerminatedError):
        session.send_sync("more")
    with pytest.raises(SessionTerminatedError):
        session.update(title="x")
    assert session.events()[-1].type == "session.status_terminated"


def test_empty_or_malformed_messages_are_refused_and_nothing_is_stored(engine: Engine) -> None:
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    for bad in ("", "   ", []):
        with pytest.raises(InvalidInputError):
            session.send_sync(bad)  # type: ignore[arg-type]
    assert session.events() == []


async def test_a_second_message_while_running_is_refused(db_path: Path) -> None:
    engine, _ = scripted_engine(
        db_path, [ScriptedResponse(steps=[ScriptedDelay(seconds=0.3), ScriptedText(text="done")])]
    )
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    running = event_seen(session, "session.status_running")
    first = asyncio.create_task(session.ask("one"))
    await running.wait()
    with pytest.raises(SessionBusyError, match="already running"):
        await session.ask("two")
    assert (await first).text == "done"
    assert [e.content[0].text for e in session.events(types=["user.message"])] == ["one"]  # type: ignore[union-attr]
    await engine.aclose()


async def test_the_turn_result_survives_a_cancelled_caller(db_path: Path) -> None:
    """A kernel interrupt cancels the coroutine awaiting ask(); the turn's result is still there, whole."""
    engine, _ = scripted_engine(
        db_path,
        [ScriptedResponse(steps=[ScriptedText(text="partial "), ScriptedDelay(seconds=5), ScriptedText(text="x")])],
    )
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    assert session.last_turn is None
    streaming = event_seen(session, "event_delta")
    caller = asyncio.create_task(session.ask("go"))
    await streaming.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    result = session.last_turn
    assert result is not None and result.stop_reason.type == "interrupted"
    assert [e.id for e in result.events] == [e.id for e in session.events()]
    assert result.text == "partial "
    assert (await session.ask("again")).stop_reason.type == "end_turn"
    assert session.last_turn is not result
    await engine.aclose()


def test_a_session_reopens_from_the_store_alone(db_path: Path) -> None:
    engine, _ = scripted_engine(db_path, [ScriptedResponse(steps=[ScriptedText(text="first answer")])])
    agent = engine.agents.create(name="a", model="scripted")
    engine.agents.update(agent.id, system="v2")
    session = engine.sessions.create(agent=agent.id, version=1, title="t", budget="0.5")
    session.send_sync("question")
    usage, events = session.usage, session.events()
    engine.close()

    with Engine(db_path) as again:
        reopened = again.sessions.get(session.id)
        assert reopened.agent.version == 1 and reopened.title == "t"
        assert reopened.usage == usage and usage.list_cost > 0
        assert reopened.events() == events
        assert reopened.stats.active_seconds > 0
        assert [m.role for m in reopened.history().messages()] == ["user", "assistant"]
        # It continues: the history is sent on the next request.
        result = reopened.send_sync("and then?")
        assert result.text == "You said: and then?"
        assert reopened.usage.input_tokens > usage.input_tokens
        with pytest.raises(SessionNotFoundError):
            again.sessions.get("sesn_missing")


def test_list_returns_every_session(engine: Engine) -> None:
    agent = engine.agents.create(name="a", model="scripted")
    ids = [engine.sessions.create(agent=agent.id).id for _ in range(3)]
    assert [s.id for s in engine.sessions.list()] == ids


def test_system_prompt_is_sent(db_path: Path) -> None:
    engine, provider = scripted_engine(db_path)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted", system="be brief").id)
    session.send_sync("hi")
    assert provider.requests[0].system == "be brief"
    assert provider.requests[0].model == "scripted"
    engine.close()


def test_stop_reason_is_end_turn_and_the_session_idles(engine: Engine) -> None:
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = session.send_sync("hi")
    assert result.stop_reason == ev.EndTurn()
    assert session.status == "idle"


def test_session_updated_carries_metadata_only_when_set_non_empty(engine: Engine) -> None:
    """Seed 002: 'Present when the update set non-empty metadata; absent when metadata was unchanged or
    cleared to empty'."""
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.update(metadata={"owner": "ana"})
    session.update(metadata={"owner": "ana"}, title="same metadata")
    session.update(metadata={})
    updates = [json.loads(e.model_dump_json()) for e in session.events(types=["session.updated"])]
    assert [u.get("metadata") for u in updates] == [{"owner": "ana"}, None, None]
    assert "metadata" not in updates[1] and "metadata" not in updates[2]
    assert updates[1]["title"] == "same metadata"
    assert session.metadata == {}
