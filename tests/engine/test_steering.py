"""Steering: guidance sent while a turn runs reaches the model at its next request, without cancelling the
request under way; from another thread as well as from the turn's own loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from agentcell import InvalidInputError, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.providers.base import TextPart, ToolResultPart
from agentcell.tools import tool

from ..conftest import event_seen
from .conftest import engine_over, text_of


async def test_steering_from_another_thread_reaches_the_next_request(db_path: Path, workspace: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedText(text="Measuring."), ScriptedToolCall(name="measure", id="toolu_1")]),
        ScriptedResponse(steps=[ScriptedText(text="It is 3 metres.")]),
    ]
    engine, provider, registry = engine_over(db_path, workspace, script)
    started, release = asyncio.Event(), asyncio.Event()

    @tool(registry=registry)
    async def measure() -> str:
        """Measure the room."""
        started.set()
        await release.wait()
        return "118 inches"

    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    turn = asyncio.create_task(session.ask("how long is the room?"))
    await started.wait()
    steered = event_seen(session, "user.message")
    # A widget callback or a subshell runs on another thread: steer from one.
    sender = threading.Thread(target=session.steer, args=("answer in metres",))
    sender.start()
    sender.join()
    release.set()
    result = await turn

    assert steered.is_set()
    assert result.text == "Measuring.\n\nIt is 3 metres."
    types = [e.type for e in result.events]
    assert "user.interrupt" not in types and not any(getattr(e, "interrupted", False) for e in result.events)
    steer = [e for e in result.events if isinstance(e, ev.UserMessage)][-1]
    assert text_of(steer) == "answer in metres"
    order = [e.id for e in result.events]
    tool_result = next(e for e in result.events if isinstance(e, ev.AgentToolResult))
    second_start = [e for e in result.events if isinstance(e, ev.SpanModelRequestStart)][1]
    assert order.index(tool_result.id) < order.index(steer.id) < order.index(second_start.id)
    # The second request carries the tool's result, then the guidance, in the same user turn.
    last = provider.requests[1].messages[-1]
    assert last.role == "user" and isinstance(last.content[0], ToolResultPart)
    assert last.content[1] == TextPart(text="answer in metres")
    assert len(provider.requests) == 2
    await engine.aclose()


async def test_steering_during_the_final_answer_gets_one_more_request(db_path: Path, workspace: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedText(text="A long answer in English. " * 20, chunk_size=4)]),
        ScriptedResponse(steps=[ScriptedText(text="Une réponse en français.")]),
    ]
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    streaming = event_seen(session, "event_delta")
    turn = asyncio.create_task(session.ask("explain"))
    await streaming.wait()
    session.steer("in French, please")
    result = await turn

    messages = [e for e in result.events if isinstance(e, ev.AgentMessage)]
    assert [m.interrupted for m in messages] == [False, False]  # the streaming answer was not cut
    assert text_of(messages[0]) == "A long answer in English. " * 20
    assert result.text.endswith("Une réponse en français.")
    assert provider.requests[1].messages[-1].content == [TextPart(text="in French, please")]
    await engine.aclose()


async def test_steering_needs_a_running_turn_and_some_text(db_path: Path, workspace: Path) -> None:
    engine, _, _ = engine_over(db_path, workspace)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    with pytest.raises(InvalidInputError, match="no turn is running"):
        session.steer("faster")
    with pytest.raises(InvalidInputError, match="empty"):
        session.steer("   ")
    assert session.events() == []
    await engine.aclose()
