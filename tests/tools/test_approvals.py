"""The session-side approval broker: pending approvals a UI lists and answers, and "always" memory."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agentcell.errors import InvalidInputError
from agentcell.tools import (
    ApprovalAnswer,
    ApprovalBroker,
    ApprovalRequest,
    ToolContext,
    ToolDefinition,
    ToolRegistry,
)

from ._support import make_call


@pytest.fixture
def runs(registry: ToolRegistry) -> list[str]:
    ran: list[str] = []

    def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ran.append(arguments.get("command", ""))
        return "ran"

    registry.register(ToolDefinition(name="shell", run=run, access=frozenset({"execute"})))
    registry.register(ToolDefinition(name="other", run=run, access=frozenset({"execute"})))
    return ran


async def test_a_pending_approval_is_listed_answered_and_reported(registry: ToolRegistry, runs: list[str]) -> None:
    requested: list[ApprovalRequest] = []
    answered: list[ApprovalAnswer] = []
    broker = ApprovalBroker(on_request=requested.append, on_answer=answered.append)
    call = make_call("shell", command="ls")
    task = asyncio.create_task(registry.execute(call, approver=broker))
    request = await broker.wait_for_request()
    assert request.call.token is not None  # the approver sees the execution's correlation token
    assert request.call == call.model_copy(update={"token": request.call.token})
    assert broker.pending() == [request] and requested == [request]
    assert runs == []
    broker.answer(call.tool_use_id, "allow")
    result = await task
    assert result.text_content == "ran" and runs == ["ls"]
    assert answered == [ApprovalAnswer(call.tool_use_id, "allow", "once", None)]
    assert broker.pending() == []


async def test_a_denial_carries_the_users_message_to_the_model(registry: ToolRegistry, runs: list[str]) -> None:
    answered: list[ApprovalAnswer] = []
    broker = ApprovalBroker(on_answer=answered.append)
    call = make_call("shell", command="rm -rf build")
    task = asyncio.create_task(registry.execute(call, approver=broker))
    await broker.wait_for_request()
    broker.answer(call.tool_use_id, "deny", message="use make clean")
    result = await task
    assert result.error_code == "DECLINED"
    assert result.text_content == "The user declined this tool call. They said: use make clean"
    assert answered[0].deny_message == "use make clean" and runs == []


@pytest.mark.parametrize("result", ["allow", "deny"])
async def test_an_always_answer_is_remembered_for_the_same_keys(
    registry: ToolRegistry, runs: list[str], result: Any
) -> None:
    requested: list[ApprovalRequest] = []
    broker = ApprovalBroker(on_request=requested.append)
    first = make_call("shell", command="one")
    task = asyncio.create_task(registry.execute(first, approver=broker))
    await broker.wait_for_request()
    broker.answer(first.tool_use_id, result, remember="always")
    await task
    second = await registry.execute(make_call("shell", command="two"), approver=broker)
    assert len(requested) == 1
    assert second.is_error == (result == "deny")
    assert broker.remembered == {"shell:execute": result == "allow"}
    # Another tool has other keys: it is asked about.
    third = asyncio.create_task(registry.execute(make_call("other"), approver=broker))
    pending = await broker.wait_for_request()
    assert pending.keys == ("other:execute",)
    broker.answer(pending.call.tool_use_id, "deny")
    await third
    broker.forget()
    fourth = asyncio.create_task(registry.execute(make_call("shell"), approver=broker))
    await broker.wait_for_request()
    assert len(requested) == 3
    fourth.cancel()
    with pytest.raises(asyncio.CancelledError):
        await fourth


async def test_an_answer_may_come_from_another_thread(registry: ToolRegistry, runs: list[str]) -> None:
    recorded_on: list[int] = []
    broker = ApprovalBroker(on_answer=lambda answer: recorded_on.append(threading.get_ident()))
    call = make_call("shell", command="from a thread")
    task = asyncio.create_task(registry.execute(call, approver=broker))
    await broker.wait_for_request()
    thread = threading.Thread(target=broker.answer, args=(call.tool_use_id, "allow"))
    thread.start()
    result = await task
    thread.join()
    assert result.text_content == "ran"
    # The answer is recorded on the loop's thread (where the session's events are emitted), not the UI's.
    assert recorded_on == [threading.get_ident()]


async def test_answers_to_nothing_or_in_bad_words_are_refused(registry: ToolRegistry, runs: list[str]) -> None:
    broker = ApprovalBroker()
    with pytest.raises(InvalidInputError, match="no tool use 'sevt_nope' is waiting"):
        broker.answer("sevt_nope", "allow")
    call = make_call("shell")
    task = asyncio.create_task(registry.execute(call, approver=broker))
    await broker.wait_for_request()
    with pytest.raises(InvalidInputError, match="'allow' or 'deny'"):
        broker.answer(call.tool_use_id, "maybe")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="'once' or 'always'"):
        broker.answer(call.tool_use_id, "allow", remember="forever")  # type: ignore[arg-type]
    broker.answer(call.tool_use_id, "allow")
    with pytest.raises(InvalidInputError, match="is waiting"):
        broker.answer(call.tool_use_id, "allow")
    await task


async def test_an_interrupted_call_leaves_no_pending_approval(registry: ToolRegistry, runs: list[str]) -> None:
    broker = ApprovalBroker()
    call = make_call("shell")
    task = asyncio.create_task(registry.execute(call, approver=broker))
    await broker.wait_for_request()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert broker.pending() == []
    with pytest.raises(InvalidInputError):
        broker.answer(call.tool_use_id, "allow")
    assert runs == []
