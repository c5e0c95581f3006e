"""A session's answers to tool calls waiting for approval, recorded in its log. Part of the
:class:`~agentcell.sessions.Session` handle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from .events import UserToolConfirmation
from .tools.approvals import ApprovalAnswer, ApprovalBroker

if TYPE_CHECKING:
    from .engine.log import SessionLog

__all__ = ["ApprovalMethods"]


class ApprovalMethods:
    """``Session``'s approval answers: each is logged before the waiting tool goes on."""

    if TYPE_CHECKING:
        _log: SessionLog
        approvals: ApprovalBroker

    def _record_confirmation(self, answer: ApprovalAnswer) -> None:
        # Runs on the turn's loop before the waiting tool goes on, so the log reads
        # agent.tool_use -> user.tool_confirmation -> agent.tool_result.
        confirmation = self._log.make(
            UserToolConfirmation,
            tool_use_id=answer.tool_use_id,
            result=answer.result,
            remember=answer.remember,
            deny_message=answer.deny_message,
            keys=list(answer.keys),
            by_rule=answer.by_rule,
        )
        self._log.emit(confirmation)

    def confirm_tool(
        self,
        tool_use_id: str,
        result: Literal["allow", "deny"],
        *,
        remember: Literal["once", "always"] = "once",
        message: str | None = None,
    ) -> None:
        """Answer a tool call waiting for approval (from any thread); "always" holds for the rest of the
        session. Raises InvalidInputError when nothing with that id is waiting."""
        self.approvals.answer(tool_use_id, result, remember=remember, message=message)
