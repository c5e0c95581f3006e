"""Seed 002, routed results: custom tools are offered in spawned threads too; when one asks, the session
goes idle with requires_action naming that event, and the client's user.custom_tool_result is routed to the
thread that asked, carrying that thread's id."""

from __future__ import annotations

from pathlib import Path

from agentcell import CustomToolResult, Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.providers.base import ModelRequest, ToolResultPart


def _text_results(request: ModelRequest) -> list[str]:
    return [
        "".join(b.text for b in part.content if b.type == "text")
        for message in request.messages
        for part in message.content
        if isinstance(part, ToolResultPart)
    ]


def test_a_threads_custom_tool_pauses_the_session_and_its_answer_goes_back_to_that_thread(tmp_path: Path) -> None:
    coordinator = [
        ScriptedResponse(steps=[ScriptedToolCall(name="spawn_thread", input={"task": "look it up"})]),
        ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={})]),
        ScriptedResponse(steps=[ScriptedText(text="the helper found: 42")]),
    ]
    helper = [
        ScriptedResponse(steps=[ScriptedToolCall(name="lookup", input={"key": "answer"})]),
        ScriptedResponse(steps=[ScriptedText(text="it is 42")]),
    ]

    def respond(request: ModelRequest) -> ScriptedResponse:
        return helper.pop(0) if request.system == "you look things up" else coordinator.pop(0)

    provider = ScriptedProvider(respond)
    with Engine(tmp_path / "db", providers={"scripted": provider}) as engine:
        looker = engine.agents.create(
            name="looker",
            model="scripted",
            system="you look things up",
            tools=[{"type": "custom", "name": "lookup", "description": "the client's lookup"}],
        )
        lead = engine.agents.create(name="lead", model="scripted", multiagent={"agents": [{"id": looker.id}]})
        session = engine.sessions.create(agent=lead.id)

        paused = session.send_sync("find the answer")
        [use] = [e for e in paused.events if isinstance(e, ev.AgentCustomToolUse)]
        assert use.thread_id is not None and use.name == "lookup"  # offered to, and called in, the thread
        assert paused.stop_reason == ev.RequiresAction(event_ids=[use.id])
        assert session.status == "idle"

        done = session.send_sync(CustomToolResult(use.id, "42"))
        [answer] = [e for e in done.events if isinstance(e, ev.UserCustomToolResult)]
        assert answer.thread_id == use.thread_id  # routed to the thread that asked
        assert done.stop_reason == ev.EndTurn() and done.text == "the helper found: 42"
        helper_second, coordinator_last = provider.requests[-2], provider.requests[-1]
        assert helper_second.system == "you look things up" and _text_results(helper_second) == ["42"]
        assert "it is 42" in _text_results(coordinator_last)  # the coordinator's wait got the thread's answer
        primary = [e for e in session.events(types=["agent.tool_result"]) if e.thread_id is None]
        assert len(primary) == 2  # spawn and wait, each answered once
