"""The execution pipeline of the tool registry (see ``registry.py`` for the order and the guarantees).

:class:`ToolPipeline` is the registry's execution half: it runs one call through visibility, the
pre-execute hooks, the guards, the permission preset and the user, the around-dispatch hooks, the tool,
the post-execute hooks and output truncation, and hands one frozen outcome to every observer.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from time import perf_counter
from typing import Literal

from ..errors import ApprovalUnavailable
from ..events import DeniedBy
from ._chain import Chain
from .authority import tool_code
from .base import ApprovalDecision, ApprovalRequest, Approver, Permission, ToolCall, ToolResult
from .definition import (
    ALLOW,
    Allow,
    AroundHook,
    Deny,
    Guard,
    GuardDecision,
    Observer,
    PostHook,
    PreHook,
    ToolContext,
    ToolDefinition,
    ToolOutcome,
)
from .output import as_result, truncate
from .permissions import ALLOWED, PermissionPolicy, Verdict

__all__ = ["Stage", "ToolPipeline"]

log = logging.getLogger("agentcell.tools.registry")

_tokens = itertools.count(1)
Stage = Literal["visibility", "pre", "guard", "approval", "dispatch", "post", "interrupted"]


@dataclass(slots=True)
class _Run:
    """What one execution learned on its way, for the outcome record."""

    call: ToolCall
    definition: ToolDefinition | None = None
    permission: Permission | None = None
    approved: bool | None = None
    denied_by: DeniedBy | None = None


class ToolPipeline:
    """The execution half of :class:`~agentcell.tools.registry.ToolRegistry` (a base class of it)."""

    _pre: Chain[PreHook]
    _around: Chain[AroundHook]
    _post: Chain[PostHook]
    _observers: Chain[Observer]
    _guards: dict[str | None, Chain[Guard]]
    max_model_chars: int
    max_log_chars: int

    def get(self, name: str, scope: str | None = None) -> ToolDefinition | None:
        raise NotImplementedError  # the registry's views answer

    def policy_for(self, call: ToolCall) -> PermissionPolicy:
        raise NotImplementedError  # the registry's policies answer

    @staticmethod
    def _verdict(definition: ToolDefinition, call: ToolCall, policy: PermissionPolicy) -> Verdict:
        if not definition.access:
            return ALLOWED
        paths = None
        if definition.paths is not None:
            try:
                paths = list(definition.paths(call.input))
            except Exception as exc:
                # Fail closed: a call whose reach cannot be told is not run.
                return Verdict("deny", f"cannot tell which files {definition.name} would touch: {exc}")
        try:
            verdict = policy.evaluate(definition.name, definition.access, paths)
        except Exception as exc:
            # A path the model chose may not resolve (a null byte, a directory we may not enter): fail closed.
            return Verdict("deny", f"cannot check the files {definition.name} would touch: {_describe(exc)}")
        if verdict.permission != "ask" or definition.scope is None:
            return verdict
        try:
            scope = definition.scope(call.input, policy)
        except Exception as exc:
            return Verdict("deny", f"cannot tell what {definition.name} would run: {_describe(exc)}")
        own = f"{definition.name}:execute"
        keys = tuple(dict.fromkeys(k for key in verdict.keys for k in (scope.keys if key == own else (key,))))
        return replace(verdict, reason=verdict.reason + scope.note, keys=keys)

    # ------------------------------------------------------------------------------------------ execute

    async def execute(
        self, call: ToolCall, *, approver: Approver | None = None, definition: ToolDefinition | None = None
    ) -> ToolResult:
        return (await self.run(call, approver=approver, definition=definition)).result

    async def run(
        self, call: ToolCall, *, approver: Approver | None = None, definition: ToolDefinition | None = None
    ) -> ToolOutcome:
        """Execute ``call`` and return the frozen outcome observers receive. ``definition`` runs a tool
        this registry does not hold (the engine's own) through the same pipeline, visibility aside."""
        token = f"tex_{next(_tokens)}"  # before any hook or guard sees the call
        started = perf_counter()
        state = _Run(call.model_copy(update={"token": token}))
        try:
            result, stage = await self._pipeline(state, token, approver, definition)
        except asyncio.CancelledError:
            interrupted = ToolResult.error("interrupted before the tool finished", "INTERRUPTED")
            self._finish(token, state, interrupted, "interrupted", started)
            raise
        return self._finish(token, state, result, stage, started)

    def _finish(self, token: str, state: _Run, result: ToolResult, stage: Stage, started: float) -> ToolOutcome:
        result = truncate(result, self.max_model_chars, self.max_log_chars)
        if result.denied_by != state.denied_by:  # a copy only when it changes: the no-op call pays none
            result = result.model_copy(update={"denied_by": state.denied_by})
        outcome = ToolOutcome(
            token=token,
            call=state.call.model_copy(update={"input": frozen(state.call.input)}),
            definition=state.definition,
            result=result,
            stage=stage,
            permission=state.permission,
            approved=state.approved,
            denied_by=state.denied_by,
            seconds=perf_counter() - started,
        )
        for observer in self._observers.hooks:
            try:
                observer(outcome)
            except Exception:
                log.exception("a tool outcome observer failed; the outcome stands")
        return outcome

    async def _pipeline(
        self, state: _Run, token: str, approver: Approver | None, given: ToolDefinition | None
    ) -> tuple[ToolResult, Stage]:
        call = state.call
        definition = given if given is not None and given.name == call.name else self.get(call.name, call.scope)
        if definition is None:
            return ToolResult.error(f"no tool named {call.name!r} is available", "UNKNOWN_TOOL"), "visibility"
        state.definition = definition

        for hook in self._pre.hooks:
            try:
                answer = hook(call)
                if inspect.isawaitable(answer):
                    answer = await answer
            except BaseException as exc:
                _reraise_cancellation(exc)
                return _hook_failed("a pre-execute hook", exc), "pre"
            if answer is None:
                continue
            if isinstance(answer, ToolResult):
                state.call = call
                return await self._post_process(call, answer, "pre")
            if not isinstance(answer, ToolCall) or _beyond_input(answer, call):
                problem = f"returned {type(answer).__name__}; a hook may change a call's input only"
                return ToolResult.error(f"a pre-execute hook {problem}", "HOOK_FAILED"), "pre"
            call = answer
        state.call = call

        for guard in self._guards_for(call.scope):
            decision = _consult(guard, call)
            if isinstance(decision, Deny):
                state.denied_by = "guard"
                return ToolResult.error(f"blocked by a guard: {decision.reason}", "DENIED"), "guard"

        policy = self.policy_for(call)
        verdict = self._verdict(definition, call, policy)
        state.permission = verdict.permission
        if verdict.permission == "deny":
            state.denied_by = "preset"
            return ToolResult.error(verdict.reason, "DENIED"), "approval"
        if verdict.permission == "ask":
            refusal = await self._ask(state, verdict, policy, approver)
            if refusal is not None:
                return refusal, "approval"

        context = ToolContext(call, token, policy, outside_approved=verdict.outside and bool(state.approved))
        result = await self._dispatch(definition, context)
        return await self._post_process(call, result, "dispatch")

    def _guards_for(self, scope: str | None) -> tuple[Guard, ...]:
        everywhere = self._guards.get(None)
        local = self._guards.get(scope) if scope is not None else None
        return (everywhere.hooks if everywhere else ()) + (local.hooks if local else ())

    async def _ask(
        self, state: _Run, verdict: Verdict, policy: PermissionPolicy, approver: Approver | None
    ) -> ToolResult | None:
        """Ask the user through ``approver``; the refusal to return, or None when allowed."""
        hint = f" {verdict.hint}" if verdict.hint else ""
        if approver is None:
            state.denied_by = "no-approver"
            return ToolResult.error(
                f"not run: {verdict.reason}. That needs the user's approval under the {policy.preset} "
                f"preset, and no one can be asked in this session.{hint}",
                "DENIED",
            )
        request = ApprovalRequest(call=state.call, reason=verdict.reason, keys=verdict.keys, preset=policy.preset)
        try:
            answer = await approver(request)
        except ApprovalUnavailable as exc:
            state.denied_by = "no-view"
            return ToolResult.error(f"not run: {_describe(exc)}{hint}", "DENIED")
        except BaseException as exc:
            _reraise_cancellation(exc)
            state.denied_by = "approver"
            return ToolResult.error(f"not run: asking the user failed ({_describe(exc)})", "APPROVAL_FAILED")
        decision = answer if isinstance(answer, ApprovalDecision) else ApprovalDecision(allow=answer is True)
        state.approved = decision.allow
        if decision.allow:
            return None
        state.denied_by = "user"
        said = f" They said: {decision.message}" if decision.message else ""
        return ToolResult.error(f"The user declined this tool call.{said}", "DECLINED")

    async def _dispatch(self, definition: ToolDefinition, context: ToolContext) -> ToolResult:
        async def invoke() -> ToolResult:
            return await _invoke(definition, context)

        proceed: Callable[[], Awaitable[ToolResult]] = invoke
        for hook in reversed(self._around.hooks):
            proceed = _wrap(hook, context.call, proceed)
        try:
            result: object = await proceed()
        except BaseException as exc:
            _reraise_cancellation(exc)
            # The tool's own failures were materialized inside; what escapes is an around hook's.
            return _hook_failed("an around-dispatch hook", exc)
        if not isinstance(result, ToolResult):
            return ToolResult.error(
                f"an around-dispatch hook returned {type(result).__name__}, not a ToolResult", "HOOK_FAILED"
            )
        return result

    async def _post_process(self, call: ToolCall, result: ToolResult, stage: Stage) -> tuple[ToolResult, Stage]:
        for hook in self._post.hooks:
            try:
                replaced: object = hook(call, result)
                if inspect.isawaitable(replaced):
                    replaced = await replaced
            except BaseException as exc:
                _reraise_cancellation(exc)
                return _hook_failed("a post-execute hook", exc), "post"
            if replaced is None:
                continue
            if not isinstance(replaced, ToolResult):
                problem = f"returned {type(replaced).__name__}, not a ToolResult"
                return ToolResult.error(f"a post-execute hook {problem}", "HOOK_FAILED"), "post"
            result, stage = replaced, "post"
        return result, stage


def _wrap(
    hook: AroundHook, call: ToolCall, proceed: Callable[[], Awaitable[ToolResult]]
) -> Callable[[], Awaitable[ToolResult]]:
    def step() -> Awaitable[ToolResult]:
        return hook(call, proceed)

    return step


async def _invoke(definition: ToolDefinition, context: ToolContext) -> ToolResult:
    """Run the tool itself; everything it raises (but cancellation) becomes an error result. Its code runs
    marked as a tool's (``authority.tool_code``): it may not change the permissions it runs under."""
    with tool_code(definition.name):
        return await _invoke_marked(definition, context)


async def _invoke_marked(definition: ToolDefinition, context: ToolContext) -> ToolResult:
    try:
        if definition.timeout is None:
            value = definition.run(dict(context.call.input), context)
            if inspect.isawaitable(value):
                value = await value
        else:
            async with asyncio.timeout(definition.timeout) as deadline:
                value = definition.run(dict(context.call.input), context)
                if inspect.isawaitable(value):
                    value = await value
    except TimeoutError as exc:
        if definition.timeout is not None and deadline.expired():
            return ToolResult.error(f"{definition.name} timed out after {definition.timeout:g} s", "TIMEOUT")
        return ToolResult.error(_describe(exc))
    except BaseException as exc:
        # SystemExit, KeyboardInterrupt, GeneratorExit, a CancelledError of the tool's own: a result, never
        # the turn's or the kernel's end (the loop would let a KeyboardInterrupt out and stop).
        _reraise_cancellation(exc)
        return ToolResult.error(_describe(exc))
    try:
        return as_result(value)
    except Exception as exc:  # the tool's own return value: blame the tool, not a hook nobody installed
        return ToolResult.error(
            f"{definition.name} returned a {type(value).__name__} that cannot be a tool result ({exc}); return a "
            "string, content blocks, a ToolResult, or JSON-serialisable data",
            "BAD_RESULT",
        )


def _reraise_cancellation(exc: BaseException) -> None:
    """Let the turn's own cancellation through; everything else a tool or hook raises is theirs."""
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise exc


def _consult(guard: Guard, call: ToolCall) -> GuardDecision:
    """A guard's decision: a string denies with that reason, None or ALLOW is no objection, Deny denies;
    a guard that raises or answers anything else denies (fail closed)."""
    try:
        decision: object = guard(call)
    except BaseException as exc:
        _reraise_cancellation(exc)
        return Deny(f"a guard failed ({_describe(exc)}), so the call is not run")
    if inspect.iscoroutine(decision):
        decision.close()  # never awaited on purpose: guards are synchronous
        return Deny("a guard is async; guards must be synchronous, so the call is not run")
    if decision is None:
        return ALLOW
    if isinstance(decision, str):
        return Deny(decision or "a guard denied the call without saying why")
    if isinstance(decision, Allow | Deny):
        return decision
    return Deny(f"a guard answered {decision!r} instead of ALLOW, None or a reason, so the call is not run")


def _beyond_input(changed: ToolCall, call: ToolCall) -> bool:
    """Whether a hook changed more than the input: the tool, scope, session or preset are not its to pick."""
    return changed.model_copy(update={"input": call.input}) != call


def _hook_failed(what: str, exc: BaseException) -> ToolResult:
    return ToolResult.error(f"{what} failed: {_describe(exc)}", "HOOK_FAILED")


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class FrozenDict(dict[str, object]):
    """A dict no one can change: what observers and the caller see of a call's input is the same."""

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a tool outcome is frozen: its call's input cannot be changed")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]


def frozen(value: object) -> object:
    """``value`` with every dict frozen and every list a tuple, all the way down."""
    if isinstance(value, dict):
        return FrozenDict({str(k): frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(frozen(v) for v in value)
    return value
