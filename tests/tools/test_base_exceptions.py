"""Issue 21, 1: every BaseException from a tool but the turn's own cancellation is an error result; the
turn goes on and the kernel stays up (a KeyboardInterrupt that left the event loop stopped it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.tools import ToolContext, ToolDefinition, ToolRegistry, tool

from ._support import make_call

RAISED: list[type[BaseException]] = [KeyboardInterrupt, GeneratorExit, SystemExit, asyncio.CancelledError]


@pytest.mark.parametrize("kind", RAISED)
@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_a_tool_raising_any_base_exception_answers_with_an_error(kind: type[BaseException], flavour: str) -> None:
    registry = ToolRegistry()

    def sync_run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        raise kind()

    async def async_run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        raise kind()

    registry.register(ToolDefinition(name="bad", run=sync_run if flavour == "sync" else async_run))
    result = await registry.execute(make_call("bad"))
    assert result.is_error and result.error_code == "TOOL_FAILED"
    assert kind.__name__ in result.text_content


@pytest.mark.parametrize("kind", RAISED)
def test_a_function_tool_in_a_thread_raising_it_leaves_the_turn_going(
    tmp_path: Path, kind: type[BaseException]
) -> None:
    registry = ToolRegistry()

    @tool(registry=registry)
    def explode() -> str:
        """Raises."""
        raise kind()

    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="explode", input={})]),
        ScriptedResponse(steps=[ScriptedText(text="still here")]),
    ]
    with Engine(tmp_path / "db", providers={"scripted": ScriptedProvider(script)}, tools=registry) as engine:
        session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
        result = session.send_sync("go")
    [answer] = [e for e in result.events if isinstance(e, ev.AgentToolResult)]
    assert answer.is_error and kind.__name__ in answer.content[0].text  # type: ignore[union-attr]
    assert result.text == "still here" and result.stop_reason == ev.EndTurn()


async def test_the_turns_own_cancellation_still_propagates() -> None:
    registry = ToolRegistry()
    started = asyncio.Event()

    async def wait(arguments: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    registry.register(ToolDefinition(name="wait", run=wait))
    task = asyncio.create_task(registry.execute(make_call("wait")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
