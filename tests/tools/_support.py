"""Helpers shared by the tool tests: making calls, a scripted approver, a trivial tool."""

from __future__ import annotations

import itertools
from pathlib import Path
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


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie waiting for its parent does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


NEVER_STARTING_SERVER = """
import os, sys, time
with open(sys.argv[1], "w") as fifo:  # tells the test it is up
    fifo.write(str(os.getpid()))
time.sleep(3600)  # never reads its stdin: the start waits for an answer that does not come
"""
"""A stdio "MCP server" that never answers its start: ``python -c … FIFO`` writes its pid into the FIFO."""
