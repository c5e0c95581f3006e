"""What an external agent asks of the notebook while a turn runs: approvals and the workspace's files.

A ``session/request_permission`` is our approval: it goes to the session's approver (the widget's Allow /
Deny, the same broker bash's approvals use, with its "always" rules), and the answer picks the agent's option
of that kind. ``fs/read_text_file`` and ``fs/write_text_file`` are served inside the notebook's workspace
only (no temp directory, no approval widens it), and the read-only preset writes nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, RequestPermissionResponse

from acp import RequestError

from ..engine.deps import TurnDeps
from ..engine.log import SessionLog
from ..errors import AgentCellError, OutsideWorkspaceError
from ..records.common import PermissionPreset
from ..tools.base import ApprovalDecision, ApprovalRequest, ToolCall
from ..tools.permissions import PermissionPolicy
from .updates import TurnUpdates

__all__ = ["AgentTurn"]

MAX_FILE_CHARS = 10_000_000
"""The largest file served to the agent, in characters."""


class AgentTurn:
    """One notebook turn as the external agent sees it."""

    def __init__(self, agent_name: str, log: SessionLog, deps: TurnDeps, updates: TurnUpdates) -> None:
        self.agent_name = agent_name
        self.log = log
        self.deps = deps
        self.updates = updates
        self.refused: list[str] = []
        """What was refused to the agent (files outside the workspace), said in the turn."""

    # ------------------------------------------------------------------------------------------ approvals

    async def permission(self, tool_call: Any, options: list[PermissionOption]) -> RequestPermissionResponse:
        updates, log = self.updates, self.log
        updates.close_text()
        call_id: str = tool_call.tool_call_id
        updates.merge(tool_call)  # the request says what the call is, where the announcement may not have
        use = updates.tool_use(call_id)
        assert use is not None
        known = updates.call(call_id)
        kind = (known.kind if known is not None else None) or tool_call.kind or "other"
        preset = log.record.permissions
        call = ToolCall(
            tool_use_id=use.id, call_id=call_id, name=use.name, input=use.input, session_id=log.id, preset=preset
        )
        request = ApprovalRequest(
            call=call,
            reason=f"{self.agent_name} (an external agent) asks before this call",
            keys=(f"acp:{kind}:{use.name}",),
            preset=preset,
        )
        decision = await self._ask(request)
        wanted = ("allow_always", "allow_once") if decision.allow else ("reject_always", "reject_once")
        if decision.remember == "once":
            wanted = wanted[::-1]
        for option_kind in wanted:
            option = next((o for o in options if o.kind == option_kind), None)
            if option is not None:
                return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def _ask(self, request: ApprovalRequest) -> ApprovalDecision:
        approver = self.deps.approver
        if approver is None:  # nobody to ask: the preset's answer to asking is no
            return ApprovalDecision(allow=False)
        try:
            answer = await approver(request)
        except AgentCellError:  # no view could answer (ApprovalUnavailable): refused unasked
            return ApprovalDecision(allow=False)
        return answer if isinstance(answer, ApprovalDecision) else ApprovalDecision(allow=bool(answer))

    # ------------------------------------------------------------------------------------------ files

    def _resolve(self, path: str, kind: Literal["read", "edit"]) -> Path:
        preset: PermissionPreset = "read-only" if self.log.record.permissions == "read-only" else "workspace-write"
        policy = PermissionPolicy(preset, self.deps.workspace, temp_dirs=())
        if not Path(path).is_absolute():
            raise RequestError.invalid_params({"path": path, "details": "ACP file paths are absolute"})
        try:
            return policy.check(path, kind, approved=False)
        except OutsideWorkspaceError as exc:
            self.refused.append(f"{'writing' if kind == 'edit' else 'reading'} {path}: {exc}")
            raise RequestError.invalid_params({"path": path, "details": str(exc)}) from None

    async def read_text(self, path: str, line: int | None, limit: int | None) -> str:
        real = self._resolve(path, "read")
        try:
            text = await asyncio.to_thread(real.read_text, encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None
        except OSError as exc:
            raise RequestError.internal_error({"path": path, "details": str(exc)}) from None
        if len(text) > MAX_FILE_CHARS:
            raise RequestError.invalid_params({"path": path, "details": f"larger than {MAX_FILE_CHARS} characters"})
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max(0, (line or 1) - 1)
        return "".join(lines[start : None if limit is None else start + limit])

    async def write_text(self, path: str, content: str) -> None:
        real = self._resolve(path, "edit")
        try:
            await asyncio.to_thread(_write, real, content)
        except OSError as exc:
            raise RequestError.internal_error({"path": path, "details": str(exc)}) from None


def _write(real: Path, content: str) -> None:
    real.parent.mkdir(parents=True, exist_ok=True)
    real.write_text(content, encoding="utf-8")
