"""'Allow always' rules: kept in the session's log, in force again when the session is reopened (a kernel
restart), said on the card when they answered, listed by ``%permissions`` and revocable there."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall, Session
from agentcell import events as ev
from agentcell.errors import InvalidInputError
from agentcell.kernel.magics.permission_rules import describe_rules, revoke_rules
from agentcell.tools import (
    ApprovalDecision,
    ApprovalRequest,
    PermissionPolicy,
    ToolContext,
    ToolDefinition,
    ToolRegistry,
)

MODEL = {"id": "scripted", "max_tokens": 4096}


def _script() -> list[ScriptedResponse]:
    turn = [
        ScriptedResponse(steps=[ScriptedToolCall(name="shell", input={"command": "ls"})]),
        ScriptedResponse(steps=[ScriptedText(text="done")]),
    ]
    return turn * 4


def _engine(db: Path, workspace: Path, ran: list[str]) -> Engine:
    registry = ToolRegistry(PermissionPolicy("workspace-write", workspace, temp_dirs=()))

    def run(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ran.append(str(arguments.get("command")))
        return "listed"

    registry.register(ToolDefinition(name="shell", run=run, access=frozenset({"execute"})))
    return Engine(db, providers={"scripted": ScriptedProvider(_script())}, tools=registry)


def _answering(session: Session, result: str, remember: str, asked: list[str]) -> Any:
    """An approver like the widget's: the user answers through ``confirm_tool``; the broker decides."""
    loop = asyncio.get_running_loop()

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        if session.approvals.recall(request.keys) is None:
            asked.append(request.call.name)
            loop.call_soon(lambda: session.confirm_tool(request.call.tool_use_id, result, remember=remember))  # type: ignore[arg-type]
        return await session.approvals(request)

    return approver


def _confirmations(session: Session) -> list[ev.UserToolConfirmation]:
    return [e for e in session.events(types=("user.tool_confirmation",)) if isinstance(e, ev.UserToolConfirmation)]


async def test_an_always_rule_outlives_a_restart_says_it_answered_and_revoked_asks_again(tmp_path: Path) -> None:
    db, workspace, ran, asked = tmp_path / "a.db", tmp_path / "ws", [], []
    workspace.mkdir()
    with _engine(db, workspace, ran) as engine:
        session = engine.sessions.create(agent=engine.agents.create(name="a", model=MODEL).id)
        session.approver = _answering(session, "allow", "always", asked)
        await session.ask("list it")
        assert asked == ["shell"] and ran == ["ls"]
        [made] = _confirmations(session)
        assert made.remember == "always" and made.keys == ["shell:execute"] and not made.by_rule
        session_id = session.id

    with _engine(db, workspace, ran) as engine:  # the kernel restarted: a new engine, the same store
        session = engine.sessions.get(session_id)
        assert dict(session.approvals.remembered) == {"shell:execute": True}
        assert "shell:execute: allow" in describe_rules(session)
        session.approver = _answering(session, "deny", "once", asked)
        await session.ask("list it again")
        assert asked == ["shell"] and ran == ["ls", "ls"]  # nobody was asked: the rule answered
        assert _confirmations(session)[-1].by_rule is True
        with pytest.raises(InvalidInputError, match=r"(?s)no always rule named .bash.*shell:execute"):
            revoke_rules(session, ["bash"])
        assert revoke_rules(session, ["shell"]) == "revoked: shell:execute (such calls ask again)"
        assert session.approvals.remembered == {}

    with _engine(db, workspace, ran) as engine:  # and the revocation outlives the next restart
        session = engine.sessions.get(session_id)
        assert session.approvals.remembered == {}
        assert describe_rules(session).startswith("always rules: none")
        session.approver = _answering(session, "deny", "once", asked)
        await session.ask("and again")
        assert asked == ["shell", "shell"] and ran == ["ls", "ls"]  # asked again, and denied
        revoked = session.events(types=("user.permission_revoked",))
        assert [e.keys for e in revoked if isinstance(e, ev.UserPermissionRevoked)] == [["shell:execute"]]
