"""The registry under the real turn loop: approvals asked and answered through the session, a denial reaching
the model, parallel-safe calls running together, and a new @tool offered at the next turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall, Session
from agentcell import events as ev
from agentcell.providers.base import ToolResultPart
from agentcell.tools import ApprovalAnswer, ApprovalBroker, ToolRegistry, tool
from agentcell.tools.builtin import file_tools


def _wire_approvals(session: Session) -> ApprovalBroker:
    """What sessions.py is to do (tools/SESSION_PATCH.md): a broker as the approver, and each answer
    recorded as user.tool_confirmation."""

    def record(answer: ApprovalAnswer) -> None:
        session.emit(
            session.make(
                ev.UserToolConfirmation,
                tool_use_id=answer.tool_use_id,
                result=answer.result,
                remember=answer.remember,
                deny_message=answer.deny_message,
            )
        )

    broker = ApprovalBroker(on_answer=record)
    session.approver = broker
    return broker


async def test_an_approval_is_asked_answered_and_a_denial_reaches_the_model(
    registry: ToolRegistry, workspace: Path, outside: Path, tmp_path: Path
) -> None:
    for definition in file_tools():
        registry.register(definition)
    provider = ScriptedProvider(
        [
            ScriptedResponse(
                steps=[ScriptedToolCall(name="write_file", input={"path": "../outside/a.txt", "content": "yes"})]
            ),
            ScriptedResponse(
                steps=[ScriptedToolCall(name="write_file", input={"path": "../outside/b.txt", "content": "no"})]
            ),
            ScriptedResponse(steps=[ScriptedText(text="understood")]),
        ]
    )
    engine = Engine(tmp_path / "engine.db", providers={"scripted": provider}, tools=registry)
    session = engine.sessions.create(agent=engine.agents.create(name="writer", model="scripted").id)
    broker = _wire_approvals(session)

    turn = asyncio.create_task(session.ask("write two files outside"))
    first = await broker.wait_for_request()
    assert first.call.name == "write_file" and "outside the workspace" in first.reason
    assert not (outside / "a.txt").exists()
    broker.answer(first.call.tool_use_id, "allow")
    second = await broker.wait_for_request()
    broker.answer(second.call.tool_use_id, "deny", message="keep b inside")
    result = await turn

    assert result.text == "understood"
    assert (outside / "a.txt").read_text() == "yes"
    assert not (outside / "b.txt").exists()
    stored = session.events()
    uses = [e for e in stored if isinstance(e, ev.AgentToolUse)]
    confirmations = [e for e in stored if isinstance(e, ev.UserToolConfirmation)]
    results = [e for e in stored if isinstance(e, ev.AgentToolResult)]
    assert [u.id for u in uses] == [first.call.tool_use_id, second.call.tool_use_id]
    assert [(c.tool_use_id, c.result, c.deny_message) for c in confirmations] == [
        (uses[0].id, "allow", None),
        (uses[1].id, "deny", "keep b inside"),
    ]
    assert [(r.tool_use_id, r.is_error) for r in results] == [(uses[0].id, False), (uses[1].id, True)]
    order = [e.id for e in stored]
    assert order.index(uses[1].id) < order.index(confirmations[1].id) < order.index(results[1].id)
    declined = "The user declined this tool call. They said: keep b inside"
    sent = provider.requests[2].messages[-1].content[0]
    assert isinstance(sent, ToolResultPart)
    assert sent.is_error and sent.content[0].text == declined  # type: ignore[union-attr]
    await engine.aclose()


async def test_parallel_safe_calls_of_one_response_run_together(registry: ToolRegistry, tmp_path: Path) -> None:
    started = 0
    everyone = asyncio.Event()

    @tool(registry=registry, parallel_safe=True)
    async def gather(index: int) -> str:
        """Wait until all four calls are running."""
        nonlocal started
        started += 1
        if started == 4:
            everyone.set()
        try:
            await asyncio.wait_for(everyone.wait(), 10)
        except TimeoutError:
            return f"{index} ran alone"
        return f"{index} ran together"

    calls = [ScriptedToolCall(name="gather", input={"index": i}) for i in range(4)]
    provider = ScriptedProvider([ScriptedResponse(steps=calls), ScriptedResponse(steps=[ScriptedText(text="ok")])])
    engine = Engine(tmp_path / "engine.db", providers={"scripted": provider}, tools=registry)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = await session.ask("go")
    texts = [e.content[0].text for e in result.events if isinstance(e, ev.AgentToolResult)]  # type: ignore[union-attr]
    assert texts == [f"{i} ran together" for i in range(4)]
    await engine.aclose()


async def test_a_tool_defined_between_turns_is_offered_at_the_next_turn(registry: ToolRegistry, tmp_path: Path) -> None:
    provider = ScriptedProvider()
    engine = Engine(tmp_path / "engine.db", providers={"scripted": provider}, tools=registry)
    agent = engine.agents.create(name="a", model="scripted")
    session = engine.sessions.create(agent=agent.id)
    await session.ask("first")
    assert provider.requests[0].tools == []

    @tool(registry=registry)
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    @tool(registry=registry, scope="someone_else")
    def hidden() -> str:
        return "not for this agent"

    await session.ask("second")
    assert [t.name for t in provider.requests[1].tools] == ["shout"]
    assert provider.requests[1].tools[0].description == "Say it louder."
    await engine.aclose()
