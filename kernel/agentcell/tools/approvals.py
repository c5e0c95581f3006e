"""The session side of approvals: pending requests a UI can list and answer.

An :class:`ApprovalBroker` is the ``approver`` of one session. When the pipeline asks it about a call, it
records a pending approval (visible in :meth:`ApprovalBroker.pending`), calls ``on_request`` so a UI can
show it, and waits. :meth:`ApprovalBroker.answer` resolves it (from any thread; ``on_answer`` then runs on
the loop that asked, so the session can append ``user.tool_confirmation`` before the tool runs), and
remembers an ``always`` answer for the session: a later request whose keys were all answered "always
allow" runs without asking, and one with a key answered "always deny" is refused without asking.

Install a broker only where someone can answer (a notebook UI, an ACP client): a pending approval waits
until answered or until the turn is interrupted. Without an approver the preset's answer is "no".
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from ..errors import InvalidInputError
from ..events import Event, UserPermissionRevoked, UserToolConfirmation
from .authority import refuse_from_tool_code
from .base import ApprovalDecision, ApprovalRequest

__all__ = ["ApprovalAnswer", "ApprovalBroker", "describe_rules", "rules_from_events"]

_SCOPES = {"python:kernel": "  (every run of the python tool, this session)"}
"""What a rule of one key covers, where its key does not say it (a command rule's does: that command only)."""


def rules_from_events(events: Iterable[Event]) -> dict[str, bool]:
    """The "always" rules a session's log leaves in force: each ``user.tool_confirmation`` answered
    "always" makes its keys' rules (allow or deny), each ``user.permission_revoked`` drops some, in order."""
    rules: dict[str, bool] = {}
    for event in events:
        if isinstance(event, UserToolConfirmation) and event.remember == "always":
            rules.update(dict.fromkeys(event.keys, event.result == "allow"))
        elif isinstance(event, UserPermissionRevoked):
            for key in event.keys:
                rules.pop(key, None)
    return rules


def describe_rules(rules: Mapping[str, bool], revoke: str) -> str:
    """One line per "always" rule in force (what it covers when its key does not say), or a line saying
    there are none; ``revoke`` says how to revoke them where they are listed."""
    from .command_rules import COMMAND_RULE

    if not rules:
        return "always rules: none (an approval's Allow always adds one)"
    lines = [f"always rules ({revoke}):"]
    for key, allowed in sorted(rules.items()):
        scope = "  (this command only)" if key.startswith(COMMAND_RULE) else _SCOPES.get(key, "")
        lines.append(f"  {key}: {'allow' if allowed else 'deny'}{scope}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """What the user answered, as ``user.tool_confirmation`` records it."""

    tool_use_id: str
    result: Literal["allow", "deny"]
    remember: Literal["once", "always"] = "once"
    deny_message: str | None = None
    keys: tuple[str, ...] = ()
    """For an "always" answer: the keys it is remembered under (the rules it made)."""
    by_rule: bool = False
    """Nobody was asked: a remembered "always" answer decided."""


@dataclass(slots=True)
class _Pending:
    request: ApprovalRequest
    future: asyncio.Future[ApprovalDecision]
    loop: asyncio.AbstractEventLoop


class ApprovalBroker:
    """An ``Approver`` whose questions wait for :meth:`answer`. One per session."""

    def __init__(
        self,
        *,
        on_request: Callable[[ApprovalRequest], None] | None = None,
        on_answer: Callable[[ApprovalAnswer], None] | None = None,
    ) -> None:
        self._on_request = on_request
        self._on_answer = on_answer
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._remembered: dict[str, bool] = {}
        self._waiters: list[asyncio.Future[None]] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        known = self._recall(request.keys)
        if known is not None:
            if self._on_answer is not None:  # the log says which rule let the call run (or refused it)
                result: Literal["allow", "deny"] = "allow" if known else "deny"
                self._on_answer(ApprovalAnswer(request.call.tool_use_id, result, "always", None, (), by_rule=True))
            return ApprovalDecision(allow=known, remember="always")
        loop = asyncio.get_running_loop()
        tool_use_id = request.call.tool_use_id
        pending = _Pending(request, loop.create_future(), loop)
        with self._lock:
            if tool_use_id in self._pending:
                raise InvalidInputError(f"tool use {tool_use_id!r} is already waiting for approval")
            self._pending[tool_use_id] = pending
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        if self._on_request is not None:
            self._on_request(request)
        try:
            return await pending.future
        finally:
            with self._lock:
                if self._pending.get(tool_use_id) is pending:
                    del self._pending[tool_use_id]

    # ------------------------------------------------------------------------------------------ the UI side

    def pending(self) -> list[ApprovalRequest]:
        """The requests waiting for an answer, oldest first."""
        with self._lock:
            return [p.request for p in self._pending.values() if not p.future.done()]

    async def wait_for_request(self) -> ApprovalRequest:
        """The oldest pending request, waiting for one when there is none."""
        while True:
            loop = asyncio.get_running_loop()
            with self._lock:
                waiting = [p.request for p in self._pending.values() if not p.future.done()]
                if waiting:
                    return waiting[0]
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiters.append(waiter)
            await waiter

    def answer(
        self,
        tool_use_id: str,
        result: Literal["allow", "deny"],
        *,
        remember: Literal["once", "always"] = "once",
        message: str | None = None,
    ) -> ApprovalAnswer:
        """Answer the pending approval of ``tool_use_id``; callable from any thread, but not from a tool's
        code (:mod:`.authority`)."""
        refuse_from_tool_code("answering an approval", any_thread=True)
        if result not in ("allow", "deny"):
            raise InvalidInputError(f"an approval is answered 'allow' or 'deny', not {result!r}")
        if remember not in ("once", "always"):
            raise InvalidInputError(f"remember is 'once' or 'always', not {remember!r}")
        with self._lock:
            pending = self._pending.pop(tool_use_id, None)
            if pending is None or pending.future.done():
                waiting = sorted(self._pending)
                raise InvalidInputError(
                    f"no tool use {tool_use_id!r} is waiting for approval; waiting: {waiting or 'none'}"
                )
            if remember == "always":
                for key in pending.request.keys:
                    self._remembered[key] = result == "allow"
        keys = pending.request.keys if remember == "always" else ()
        answer = ApprovalAnswer(tool_use_id, result, remember, message if result == "deny" else None, keys)
        decision = ApprovalDecision(allow=result == "allow", remember=remember, message=answer.deny_message)
        on_answer = self._on_answer

        def settle() -> None:
            # On the loop that asked, and before the waiting call goes on: the session records the answer
            # (user.tool_confirmation) ahead of the tool's result, and never from a foreign thread.
            try:
                if on_answer is not None:
                    on_answer(answer)
            finally:
                if not pending.future.done():
                    pending.future.set_result(decision)

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is pending.loop:
            settle()
        else:
            pending.loop.call_soon_threadsafe(settle)
        return answer

    @property
    def remembered(self) -> Mapping[str, bool]:
        """The "always" answers of this session: key -> allowed."""
        with self._lock:
            return MappingProxyType(dict(self._remembered))

    def forget(self) -> None:
        """Drop every "always" answer; the next such call asks again."""
        refuse_from_tool_code("revoking the always rules")
        with self._lock:
            self._remembered.clear()

    def restore(self, rules: Mapping[str, bool]) -> None:
        """Take up "always" answers given before (a reopened session's, from its log)."""
        refuse_from_tool_code("adding always rules")
        with self._lock:
            self._remembered.update(rules)

    def revoke(self, keys: Iterable[str]) -> list[str]:
        """Drop the "always" answers under ``keys``; returns those there were."""
        refuse_from_tool_code("revoking always rules")
        with self._lock:
            return [key for key in keys if self._remembered.pop(key, None) is not None]

    def recall(self, keys: tuple[str, ...]) -> bool | None:
        """How remembered "always" answers decide a request with ``keys``: True, False, or None (ask)."""
        return self._recall(keys)

    def _recall(self, keys: tuple[str, ...]) -> bool | None:
        if not keys:
            return None
        with self._lock:
            answers = [self._remembered.get(key) for key in keys]
        if False in answers:
            return False
        if all(answers):
            return True
        return None
