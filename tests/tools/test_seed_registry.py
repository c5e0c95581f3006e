"""The tool-registry spec of seed 000, sentence by sentence (the ones the registry once got wrong)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.errors import ToolRegistrationError
from agentcell.providers.base import ModelRequest, TextPart
from agentcell.providers.scripted import ScriptSource
from agentcell.tools import PermissionPolicy, ToolCall, ToolDefinition, ToolOutcome, ToolRegistry, ToolResult

from ._support import echo_tool, make_call


def test_run_code_is_a_reserved_name() -> None:
    """'duplicates within one layer and the reserved `run_code` name fail'."""
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError, match="reserved"):
        registry.register(echo_tool("run_code"))
    with pytest.raises(ToolRegistrationError, match="reserved"):
        registry.register(echo_tool("run_code"), scope="agent_1")
    registry.register(echo_tool("run_code_fast"))  # only that exact name
    with pytest.raises(ToolRegistrationError, match="reserved"):
        registry.restrict(deny=["run_code"])


async def test_the_correlation_token_is_assigned_before_policy_and_seen_by_every_hook() -> None:
    """'The registry assigns its correlation token before policy begins' — visible to pre-execute hooks,
    guards and around-dispatch hooks, not only to the tool and the observers."""
    registry = ToolRegistry()
    seen: dict[str, str | None] = {}

    def tool(arguments: dict[str, Any], context: Any) -> str:
        seen["tool"] = context.token
        return "ok"

    registry.register(ToolDefinition(name="act", run=tool))
    registry.pre_execute(lambda call: seen.__setitem__("pre", call.token))

    def guard(call: ToolCall) -> None:
        seen["guard"] = call.token

    registry.guard(guard)

    async def around(call: ToolCall, proceed: Any) -> ToolResult:
        seen["around"] = call.token
        result: ToolResult = await proceed()
        return result

    registry.around_dispatch(around)
    outcomes: list[ToolOutcome] = []
    registry.on_outcome(outcomes.append)
    outcome = await registry.run(make_call("act"))
    assert outcome.token.startswith("tex_")
    assert seen == {"pre": outcome.token, "guard": outcome.token, "around": outcome.token, "tool": outcome.token}
    assert outcome.call.token == outcome.token and outcomes == [outcome]


async def test_the_outcome_is_frozen_all_the_way_down() -> None:
    """'The returned outcome is the same lossless, frozen snapshot final observers receive': no observer can
    change what the caller or another observer sees, not even inside the call's input."""
    registry = ToolRegistry()
    registry.register(echo_tool())
    seen_by_second: list[object] = []

    def meddler(outcome: ToolOutcome) -> None:
        outcome.call.input["text"] = "changed"  # type: ignore[index]

    def tamper_nested(outcome: ToolOutcome) -> None:
        outcome.call.input["nested"]["k"] = "changed"  # type: ignore[index]

    registry.on_outcome(meddler)
    registry.on_outcome(tamper_nested)
    registry.on_outcome(lambda outcome: seen_by_second.append(dict(outcome.call.input)))
    outcome = await registry.run(make_call("echo", text="original", nested={"k": "v"}, items=[1, 2]))
    assert outcome.call.input["text"] == "original"
    assert outcome.call.input["nested"]["k"] == "v"
    assert seen_by_second == [{"text": "original", "nested": {"k": "v"}, "items": (1, 2)}]
    with pytest.raises(TypeError):
        outcome.call.input["text"] = "x"  # type: ignore[index]
    with pytest.raises(ValidationError, match="frozen"):
        outcome.result.content[0].text = "x"  # type: ignore[misc]
    assert outcome.call.model_dump_json()  # still plain JSON for whoever records it


def _engine_with(tmp_path: Path, registry: ToolRegistry, script: ScriptSource) -> Engine:
    return Engine(
        tmp_path / "db", providers={"scripted": ScriptedProvider(script)}, tools=registry, advisors={"*": ["*"]}
    )


def test_every_tool_call_goes_through_the_pipeline_the_engines_own_included(tmp_path: Path) -> None:
    """A deny-all guard stops consult_advisor; observers see the engine's own tools' calls too."""
    registry = ToolRegistry(PermissionPolicy("workspace-write", tmp_path, temp_dirs=()))
    registry.guard(lambda call: "nothing runs today")
    observed: list[str] = []
    registry.on_outcome(lambda outcome: observed.append(f"{outcome.call.name}:{outcome.denied_by}"))
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="consult_advisor", input={"question": "which way?"})]),
        ScriptedResponse(steps=[ScriptedText(text="done")]),
    ]
    with _engine_with(tmp_path, registry, script) as engine:
        agent = engine.agents.create(name="a", model="scripted", advisor="scripted")
        session = engine.sessions.create(agent=agent.id)
        result = session.send_sync("go")
    [answer] = [e for e in result.events if isinstance(e, ev.AgentToolResult)]
    assert (answer.is_error, answer.error_code, answer.denied_by) == (True, "DENIED", "guard")
    assert "nothing runs today" in answer.content[0].text  # type: ignore[union-attr]
    assert observed == ["consult_advisor:guard"]
    assert [e for e in result.events if isinstance(e, ev.SpanModelRequestStart)].__len__() == 2  # no advisor request


def test_observers_see_a_thread_being_spawned_and_waited_for(tmp_path: Path) -> None:
    registry = ToolRegistry(PermissionPolicy("workspace-write", tmp_path, temp_dirs=()))
    observed: list[str] = []
    registry.on_outcome(lambda outcome: observed.append(outcome.call.name))
    coordinator = iter(
        [
            ScriptedResponse(steps=[ScriptedToolCall(name="spawn_thread", input={"task": "count to three"})]),
            ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={})]),
            ScriptedResponse(steps=[ScriptedText(text="it counted")]),
        ]
    )

    def respond(request: ModelRequest) -> ScriptedResponse:
        first = request.messages[0].content[0]
        if isinstance(first, TextPart) and first.text == "count to three":  # the thread's own request
            return ScriptedResponse(steps=[ScriptedText(text="1 2 3")])
        return next(coordinator)

    with _engine_with(tmp_path, registry, respond) as engine:
        agent = engine.agents.create(name="a", model="scripted", multiagent={"inline_agents": True})
        session = engine.sessions.create(agent=agent.id)
        result = session.send_sync("delegate")
    assert result.text == "it counted"
    assert observed == ["spawn_thread", "wait_thread"]
