"""Every rule of the registry: scoped registration, restrictions, guards, views, execution modes, and the
pipeline's order, failures and final record."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcell import Engine, ScriptedProvider, ScriptedResponse
from agentcell.errors import ToolRegistrationError, UserError
from agentcell.events import TextBlock
from agentcell.tools import (
    ALLOW,
    Deny,
    ToolCall,
    ToolContext,
    ToolDefinition,
    ToolOutcome,
    ToolRegistry,
    ToolResult,
)

from ._support import echo_tool, make_call

# ---------------------------------------------------------------------------------------------- register


def test_a_registered_tool_is_visible_and_its_disposer_removes_exactly_it(registry: ToolRegistry) -> None:
    first = echo_tool()
    dispose = registry.register(first)
    assert registry.get("echo") is first
    assert [s.name for s in registry.schemas()] == ["echo"]
    dispose()
    assert registry.get("echo") is None
    second = echo_tool()
    registry.register(second)
    dispose()  # the old disposer must not remove the new registration of the same name
    assert registry.get("echo") is second


def test_a_scoped_tool_shadows_the_global_one_only_in_its_scope(registry: ToolRegistry) -> None:
    global_echo, scoped_echo = echo_tool(description="global"), echo_tool(description="scoped")
    registry.register(global_echo)
    dispose = registry.register(scoped_echo, scope="agent_a")
    assert registry.get("echo", "agent_a") is scoped_echo
    assert registry.get("echo", "agent_b") is global_echo
    assert registry.get("echo") is global_echo
    assert [s.description for s in registry.schemas("agent_a")] == ["scoped"]
    dispose()
    assert registry.get("echo", "agent_a") is global_echo


def test_a_duplicate_in_one_layer_fails_but_other_layers_may_reuse_the_name(registry: ToolRegistry) -> None:
    registry.register(echo_tool())
    with pytest.raises(ToolRegistrationError, match="already registered globally"):
        registry.register(echo_tool())
    registry.register(echo_tool(), scope="agent_a")
    with pytest.raises(ToolRegistrationError, match="already registered in scope 'agent_a'"):
        registry.register(echo_tool(), scope="agent_a")
    registry.register(echo_tool(), scope="agent_b")


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dotted.name", "ünïcode", "newline\n"])
def test_invalid_names_fail(registry: ToolRegistry, name: str) -> None:
    with pytest.raises(ToolRegistrationError, match="invalid tool name"):
        registry.register(echo_tool(name))


def test_transport_names_are_reserved_for_mcp_tools(registry: ToolRegistry) -> None:
    with pytest.raises(ToolRegistrationError, match="reserved"):
        registry.register(echo_tool("server__tool"))
    registry.register(echo_tool("server__tool", origin="mcp"), scope="agent_a")
    assert registry.get("server__tool", "agent_a") is not None


def test_registration_errors_are_user_errors(registry: ToolRegistry) -> None:
    assert issubclass(ToolRegistrationError, UserError)


# ---------------------------------------------------------------------------------------------- restrict


@pytest.fixture
def three(registry: ToolRegistry) -> ToolRegistry:
    for name in ("a", "b", "c"):
        registry.register(echo_tool(name))
    return registry


def _names(registry: ToolRegistry, scope: str | None = None) -> list[str]:
    return [s.name for s in registry.schemas(scope)]


def test_allow_keeps_only_the_named_tools_and_deny_removes_them(three: ToolRegistry) -> None:
    three.restrict(allow=["a", "b"], scope="agent_a")
    three.restrict(deny=["c"], scope="agent_b")
    assert _names(three, "agent_a") == ["a", "b"]
    assert _names(three, "agent_b") == ["a", "b"]
    assert _names(three, "agent_c") == ["a", "b", "c"]
    assert _names(three) == ["a", "b", "c"]


def test_restrictions_intersect_and_each_disposer_lifts_only_its_own(three: ToolRegistry) -> None:
    lift_allow = three.restrict(allow=["a", "b"], scope="agent_a")
    lift_deny = three.restrict(deny=["a"], scope="agent_a")
    assert _names(three, "agent_a") == ["b"]
    lift_deny()
    assert _names(three, "agent_a") == ["a", "b"]
    lift_deny()  # idempotent
    assert _names(three, "agent_a") == ["a", "b"]
    lift_allow()
    assert _names(three, "agent_a") == ["a", "b", "c"]


def test_a_restriction_without_scope_masks_every_view(three: ToolRegistry) -> None:
    three.restrict(deny=["b"])
    assert _names(three) == ["a", "c"]
    assert _names(three, "agent_a") == ["a", "c"]


def test_scoped_registrations_stay_visible_under_an_allow_list(three: ToolRegistry) -> None:
    three.register(echo_tool("mine"), scope="agent_a")
    three.restrict(allow=["a"], scope="agent_a")
    assert _names(three, "agent_a") == ["a", "mine"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "empty restriction"),
        ({"allow": [], "deny": []}, "empty restriction"),
        ({"deny": ["nope"]}, "no global tool named 'nope'"),
        ({"allow": ["a", "nope"]}, "no global tool named 'nope'"),
        ({"deny": ["server__tool"]}, "MCP tool name"),
        ({"deny": "a"}, "list of tool names"),
    ],
)
def test_bad_restrictions_fail(three: ToolRegistry, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolRegistrationError, match=message):
        three.restrict(scope="agent_a", **arguments)
    assert _names(three, "agent_a") == ["a", "b", "c"]


def test_restricting_a_name_local_to_the_scope_fails(three: ToolRegistry) -> None:
    three.register(echo_tool("mine"), scope="agent_a")
    three.register(echo_tool("a"), scope="agent_a")
    with pytest.raises(ToolRegistrationError, match="registered in scope 'agent_a' itself"):
        three.restrict(deny=["mine"], scope="agent_a")
    with pytest.raises(ToolRegistrationError, match="registered in scope 'agent_a' itself"):
        three.restrict(deny=["a"], scope="agent_a")


async def test_a_restricted_away_tool_reads_as_absent_everywhere(three: ToolRegistry) -> None:
    ran: list[str] = []
    three.register(ToolDefinition(name="hidden", run=lambda a, c: ran.append("ran"), parallel_safe=True))
    three.restrict(deny=["hidden"], scope="agent_a")
    call = make_call("hidden", scope="agent_a")
    assert three.get("hidden", "agent_a") is None
    assert "hidden" not in _names(three, "agent_a")
    assert three.execution_mode(call) == "exclusive"
    assert three.evaluate_permission(call) is None
    result = await three.execute(call)
    assert (result.is_error, result.error_code) == (True, "UNKNOWN_TOOL")
    assert ran == []


# ---------------------------------------------------------------------------------------------- views


def test_schemas_are_deep_copies_of_the_model_facing_fields(registry: ToolRegistry) -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string", "enum": ["x"]}}}
    registry.register(echo_tool(input_schema=schema, title="Echo!", description="says it back"))
    first = registry.schemas()[0]
    assert set(first.model_dump()) == {"name", "description", "input_schema"}
    assert first.input_schema == schema
    first.input_schema["properties"]["text"]["enum"].append("y")
    assert registry.schemas()[0].input_schema["properties"]["text"]["enum"] == ["x"]
    assert schema["properties"]["text"]["enum"] == ["x"]  # type: ignore[index]


def test_offered_schemas_are_built_once_per_registration_and_follow_visibility(registry: ToolRegistry) -> None:
    """What the engine sends with each model request: the same fields as ``schemas``, built on first use
    and shared afterwards; a new registration of the name gets its own, a hidden tool none."""
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    dispose = registry.register(echo_tool(input_schema=schema, description="says it back"))
    first = registry.offered()
    assert [s.model_dump() for s in first] == [s.model_dump() for s in registry.schemas()]
    assert registry.offered()[0] is first[0]
    assert first[0].input_schema is not schema  # a copy of the definition's, taken once
    dispose()
    assert registry.offered() == []
    registry.register(echo_tool(input_schema={"type": "object"}, description="again"))
    again = registry.offered()[0]
    assert again is not first[0] and again.description == "again"
    registry.restrict(deny=["echo"])
    assert registry.offered() == []


def test_a_model_request_carries_the_registrys_offered_schemas(tmp_path: Path) -> None:
    """The engine asks the registry for its shared schemas, not a deep copy per request."""
    reply = ScriptedResponse.model_validate({"steps": [{"kind": "text", "text": "ok"}]})
    provider = ScriptedProvider([reply, reply])
    registry = ToolRegistry()
    registry.register(echo_tool())

    async def two_turns() -> None:
        engine = Engine(tmp_path / "db", providers={"scripted": provider}, tools=registry)
        session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
        for _ in range(2):
            async for _item in session.send("go"):
                pass
        await engine.aclose()

    asyncio.run(two_turns())
    echo = [[t for t in request.tools if t.name == "echo"] for request in provider.requests]
    assert len(echo) == 2 and echo[0] and echo[0][0] is echo[1][0] is registry.offered()[0]


def _classifier_raises(call: ToolCall) -> object:
    raise RuntimeError("broken classifier")


@pytest.mark.parametrize(
    ("flag", "mode"),
    [
        (True, "parallel"),
        (False, "exclusive"),
        (lambda call: True, "parallel"),
        (lambda call: call.input.get("fast") is True, "exclusive"),
        (lambda call: 1, "exclusive"),
        (lambda call: "yes", "exclusive"),
        (lambda call: None, "exclusive"),
        (_classifier_raises, "exclusive"),
    ],
)
def test_only_an_exact_true_is_parallel(registry: ToolRegistry, flag: Any, mode: str) -> None:
    registry.register(echo_tool(parallel_safe=flag))
    assert registry.execution_mode(make_call("echo")) == mode


def test_unknown_and_scoped_calls_are_classified_through_the_visible_definition(
    registry: ToolRegistry,
) -> None:
    registry.register(echo_tool(parallel_safe=True))
    registry.register(echo_tool(parallel_safe=False), scope="agent_a")
    assert registry.execution_mode(make_call("missing")) == "exclusive"
    assert registry.execution_mode(make_call("echo")) == "parallel"
    assert registry.execution_mode(make_call("echo", scope="agent_a")) == "exclusive"


# ---------------------------------------------------------------------------------------------- guards


def _counting_tool(ran: list[dict[str, Any]]) -> ToolDefinition:
    def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ran.append(arguments)
        return "ran"

    return ToolDefinition(name="act", run=run)


async def test_a_guard_denies_with_its_reason_and_the_tool_does_not_run(registry: ToolRegistry) -> None:
    ran: list[dict[str, Any]] = []
    registry.register(_counting_tool(ran))
    registry.guard(lambda call: ALLOW)
    registry.guard(lambda call: Deny("not on Fridays") if call.input.get("day") == "fri" else ALLOW)
    registry.guard(lambda call: ALLOW)
    denied = await registry.run(make_call("act", day="fri"))
    assert denied.result.is_error and denied.result.error_code == "DENIED"
    assert "not on Fridays" in denied.result.text_content
    assert (denied.stage, denied.denied_by) == ("guard", "guard")
    assert ran == []
    allowed = await registry.execute(make_call("act", day="mon"))
    assert allowed.text_content == "ran"


async def _async_guard(call: ToolCall) -> object:
    return ALLOW


@pytest.mark.parametrize(
    ("guard", "reason"),
    [
        (lambda call: True, "instead of ALLOW"),
        (lambda call: 0, "instead of ALLOW"),
        (lambda call: 1 / 0, "ZeroDivisionError"),
        (_async_guard, "guards must be synchronous"),
    ],
)
async def test_a_guard_that_answers_anything_else_denies(registry: ToolRegistry, guard: Any, reason: str) -> None:
    ran: list[dict[str, Any]] = []
    registry.register(_counting_tool(ran))
    registry.guard(guard)
    result = await registry.execute(make_call("act"))
    assert result.error_code == "DENIED"
    assert reason in result.text_content
    assert ran == []


async def test_a_returned_string_denies_and_is_the_reason(registry: ToolRegistry) -> None:
    """Seed 000: 'synchronous check; a returned string denies the execution'."""
    ran: list[dict[str, Any]] = []
    registry.register(_counting_tool(ran))
    registry.guard(lambda call: "no writes after five")
    result = await registry.execute(make_call("act"))
    assert (result.error_code, result.denied_by) == ("DENIED", "guard")
    assert result.text_content == "blocked by a guard: no writes after five"
    assert ran == []


async def test_none_is_no_objection(registry: ToolRegistry) -> None:
    registry.register(echo_tool())
    registry.guard(lambda call: None)
    assert not (await registry.execute(make_call("echo"))).is_error


async def test_no_guard_can_force_an_allow(registry: ToolRegistry) -> None:
    registry.register(echo_tool())
    registry.guard(lambda call: Deny("first says no"))
    registry.guard(lambda call: ALLOW)
    result = await registry.execute(make_call("echo"))
    assert result.error_code == "DENIED"


async def test_a_scoped_guard_applies_only_to_calls_in_its_scope(registry: ToolRegistry) -> None:
    registry.register(echo_tool())
    dispose = registry.guard(lambda call: Deny("agent a may not"), scope="agent_a")
    assert (await registry.execute(make_call("echo", scope="agent_a"))).error_code == "DENIED"
    assert not (await registry.execute(make_call("echo", scope="agent_b"))).is_error
    assert not (await registry.execute(make_call("echo"))).is_error
    dispose()
    assert not (await registry.execute(make_call("echo", scope="agent_a"))).is_error


async def test_each_guard_disposer_removes_its_own_registration(registry: ToolRegistry) -> None:
    registry.register(echo_tool())

    def guard(call: ToolCall) -> Deny:
        return Deny("no")

    first = registry.guard(guard)
    registry.guard(guard)
    first()
    first()
    assert (await registry.execute(make_call("echo"))).error_code == "DENIED"


# ---------------------------------------------------------------------------------------------- pipeline


async def test_the_pipeline_runs_its_stages_in_order(registry: ToolRegistry) -> None:
    seen: list[str] = []

    def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(f"tool:{arguments['text']}")
        return str(arguments["text"])

    registry.register(ToolDefinition(name="echo", run=run, access=frozenset({"execute"})))

    def pre(call: ToolCall) -> ToolCall:
        seen.append("pre")
        return call.model_copy(update={"input": {"text": "rewritten"}})

    def guard(call: ToolCall) -> Any:
        seen.append(f"guard:{call.input['text']}")
        return ALLOW

    async def approver(request: Any) -> bool:
        seen.append("approval")
        return True

    async def outer(call: ToolCall, proceed: Any) -> ToolResult:
        seen.append("around:outer")
        result: ToolResult = await proceed()
        seen.append("around:outer-end")
        return result

    async def inner(call: ToolCall, proceed: Any) -> ToolResult:
        seen.append("around:inner")
        result: ToolResult = await proceed()
        return result

    def post(call: ToolCall, result: ToolResult) -> None:
        seen.append("post")

    registry.pre_execute(pre)
    registry.guard(guard)
    registry.around_dispatch(outer)
    registry.around_dispatch(inner)
    registry.post_execute(post)
    registry.on_outcome(lambda outcome: seen.append("outcome"))
    outcome = await registry.run(make_call("echo", text="original"), approver=approver)
    assert seen == [
        "pre",
        "guard:rewritten",
        "approval",
        "around:outer",
        "around:inner",
        "tool:rewritten",
        "around:outer-end",
        "post",
        "outcome",
    ]
    assert outcome.result.text_content == "rewritten"
    assert outcome.call.input == {"text": "rewritten"}
    assert (outcome.permission, outcome.approved, outcome.stage) == ("ask", True, "dispatch")


async def test_a_pre_hook_may_answer_the_call_itself(registry: ToolRegistry) -> None:
    ran: list[dict[str, Any]] = []
    registry.register(_counting_tool(ran))
    registry.pre_execute(lambda call: ToolResult.text("cached"))
    outcome = await registry.run(make_call("act"))
    assert (outcome.result.text_content, outcome.stage) == ("cached", "pre")
    assert ran == []


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (lambda call: 1 / 0, "pre-execute hook failed: ZeroDivisionError"),
        (lambda call: call.model_copy(update={"name": "other"}), "change a call's input only"),
        (lambda call: call.model_copy(update={"preset": "danger-full-access"}), "change a call's input only"),
        (lambda call: "text", "change a call's input only"),
    ],
)
async def test_a_failing_pre_hook_becomes_an_error_result(registry: ToolRegistry, hook: Any, message: str) -> None:
    ran: list[dict[str, Any]] = []
    registry.register(_counting_tool(ran))
    registry.pre_execute(hook)
    result = await registry.execute(make_call("act"))
    assert result.error_code == "HOOK_FAILED"
    assert message in result.text_content
    assert ran == []


async def test_around_and_post_hook_failures_become_error_results(registry: ToolRegistry) -> None:
    registry.register(echo_tool())

    async def broken_around(call: ToolCall, proceed: Any) -> ToolResult:
        raise RuntimeError("around broke")

    dispose = registry.around_dispatch(broken_around)
    result = await registry.execute(make_call("echo", text="x"))
    assert (result.error_code, result.text_content) == (
        "HOOK_FAILED",
        "an around-dispatch hook failed: RuntimeError: around broke",
    )
    dispose()

    async def broken_post(call: ToolCall, result: ToolResult) -> ToolResult:
        raise ValueError("post broke")

    registry.post_execute(broken_post)
    outcome = await registry.run(make_call("echo", text="x"))
    assert outcome.result.error_code == "HOOK_FAILED"
    assert outcome.stage == "post"


async def test_a_post_hook_may_replace_the_result(registry: ToolRegistry) -> None:
    registry.register(echo_tool())
    registry.post_execute(lambda call, result: ToolResult.text(result.text_content.upper()))
    outcome = await registry.run(make_call("echo", text="quiet"))
    assert (outcome.result.text_content, outcome.stage) == ("QUIET", "post")


async def test_tool_failures_are_materialized(registry: ToolRegistry) -> None:
    def boom(arguments: dict[str, Any], ctx: ToolContext) -> str:
        raise KeyError("missing")

    def leave(arguments: dict[str, Any], ctx: ToolContext) -> str:
        sys.exit(3)

    async def slow(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.Event().wait()
        return "never"

    registry.register(ToolDefinition(name="boom", run=boom))
    registry.register(ToolDefinition(name="leave", run=leave))
    registry.register(ToolDefinition(name="slow", run=slow, timeout=0.05))
    boom_result = await registry.execute(make_call("boom"))
    assert (boom_result.error_code, boom_result.text_content) == ("TOOL_FAILED", "KeyError: 'missing'")
    assert (await registry.execute(make_call("leave"))).text_content == "SystemExit: 3"
    slow_result = await registry.execute(make_call("slow"))
    assert (slow_result.error_code, slow_result.text_content) == ("TIMEOUT", "slow timed out after 0.05 s")


def _returning(value: object) -> Callable[[dict[str, Any], ToolContext], object]:
    return lambda arguments, ctx: value


async def test_return_values_become_content(registry: ToolRegistry) -> None:
    values: dict[str, Any] = {
        "text": "plain",
        "data": {"a": [1, 2]},
        "none": None,
        "blocks": [TextBlock(text="x"), TextBlock(text="y")],
    }
    for name, value in values.items():
        registry.register(ToolDefinition(name=name, run=_returning(value)))
    assert (await registry.execute(make_call("text"))).text_content == "plain"
    assert (await registry.execute(make_call("data"))).text_content == '{"a": [1, 2]}'
    assert (await registry.execute(make_call("none"))).text_content == "(no output)"
    assert len((await registry.execute(make_call("blocks"))).content) == 2


# ---------------------------------------------------------------------------------------------- outcome


async def test_every_observer_receives_the_one_frozen_outcome_execute_returns(registry: ToolRegistry) -> None:
    tokens: list[str] = []

    def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        tokens.append(ctx.token)
        return "done"

    registry.register(ToolDefinition(name="work", run=run))
    received: list[ToolOutcome] = []

    def failing_observer(outcome: ToolOutcome) -> None:
        raise RuntimeError("observer broke")

    registry.on_outcome(received.append)
    registry.on_outcome(failing_observer)
    registry.on_outcome(received.append)
    result = await registry.execute(make_call("work"))
    first, second = received
    assert first is second
    assert first.result is result
    assert first.token == tokens[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.result = ToolResult.text("changed")  # type: ignore[misc]
    with pytest.raises(ValueError, match="frozen"):
        result.is_error = True  # type: ignore[misc]
    assert isinstance(result.content, tuple)
    await registry.execute(make_call("work"))
    assert received[2].token != first.token


async def test_an_unknown_tool_answers_unknown_tool_and_is_observed(registry: ToolRegistry) -> None:
    received: list[ToolOutcome] = []
    registry.on_outcome(received.append)
    result = await registry.execute(make_call("nothing"))
    assert (result.error_code, result.is_error) == ("UNKNOWN_TOOL", True)
    assert received[0].stage == "visibility" and received[0].definition is None


async def test_a_cancelled_call_propagates_and_observers_see_it_interrupted(registry: ToolRegistry) -> None:
    started = asyncio.Event()

    async def wait(arguments: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    registry.register(ToolDefinition(name="wait", run=wait))
    received: list[ToolOutcome] = []
    registry.on_outcome(received.append)
    task = asyncio.create_task(registry.execute(make_call("wait")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [(o.stage, o.result.error_code) for o in received] == [("interrupted", "INTERRUPTED")]


async def test_large_output_is_cut_for_the_model_and_kept_whole_for_the_log() -> None:
    registry = ToolRegistry(max_model_chars=100, max_log_chars=1000)
    whole = "".join(f"{i:04d}" for i in range(500))
    registry.register(ToolDefinition(name="big", run=lambda a, c: whole))
    registry.register(ToolDefinition(name="small", run=lambda a, c: whole[:100]))
    result = await registry.execute(make_call("big"))
    text = result.text_content
    assert text.startswith(whole[:50]) and text.endswith(whole[-50:])
    assert "1,900 characters cut here" in text and "has 2,000 characters" in text
    assert len(text) < 400
    assert result.full_text == whole[:1000] + "\n[... cut at 1,000 of 2,000 characters]"
    small = await registry.execute(make_call("small"))
    assert (small.text_content, small.full_text) == (whole[:100], None)


async def test_hook_and_observer_disposers_remove_them(registry: ToolRegistry) -> None:
    registry.register(echo_tool())
    received: list[ToolOutcome] = []
    disposers = [
        registry.pre_execute(lambda call: ToolResult.text("pre")),
        registry.post_execute(lambda call, result: ToolResult.text("post")),
        registry.on_outcome(received.append),
    ]
    for dispose in disposers:
        dispose()
    assert (await registry.execute(make_call("echo", text="plain"))).text_content == "plain"
    assert received == []


def test_a_disposer_does_not_remove_the_same_definition_registered_again(registry: ToolRegistry) -> None:
    definition = echo_tool()
    first = registry.register(definition)
    first()
    registry.register(definition)
    first()
    assert registry.get("echo") is definition
