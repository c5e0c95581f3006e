"""Helpers shared by the tool tests: making calls, a scripted approver, a trivial tool."""

from __future__ import annotations

import itertools
from typing import Any

from agentcell.tools import ApprovalDecision, ApprovalRequest, ToolCall, ToolDefinition

_ids = itertools.count(1)


def make_call(name: str, /, *, scope: str | None = None, session_id: str = "sesn_test", **arguments: Any) -> ToolCall:
    number = next(_ids)
    return ToolCall(
        tool_use_id=f"sevt_{number}",
        call_id=f"toolu_{number}",
        name=name,
        input=arguments,
        scope=scope,
        session_id=session_id,
    )


def echo_tool(name: str = "echo", **options: Any) -> ToolDefinition:
    """A tool answering with its input's ``text``."""
    return ToolDefinition(name=name, run=lambda arguments, _ctx: str(arguments.get("text", "")), **options)


class Approvals:
    """An approver that answers from a script and records what it was asked."""

    def __init__(self, *answers: bool | ApprovalDecision) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> bool | ApprovalDecision:
        self.asked.append(request)
        return self.answers.pop(0)
