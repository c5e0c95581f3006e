"""The tool registry: scoped registration, restrictions, guards, and the execution pipeline.

Visibility. A tool is registered globally or in one agent scope (the agent id); a scoped tool shadows a
global one of the same name for that scope. Restrictions mask the *global* tools: a restriction made for a
scope applies to that scope, one made without a scope applies to every view, and all that apply intersect.
A tool hidden by a restriction reads as absent everywhere: ``get``, ``schemas``, ``execution_mode`` and
``execute`` (``UNKNOWN_TOOL``) alike.

Pipeline of :meth:`ToolRegistry.execute`::

    visibility -> pre-execute hooks -> guards -> permission (preset, then the user) -> around-dispatch
    hooks -> the tool -> post-execute hooks -> output truncation -> outcome to observers

Every failure on the way (an invisible tool, a hook or a tool raising, a guard or the user saying no, a
timeout) resolves to a :class:`~agentcell.tools.base.ToolResult` with ``is_error`` set; only cancellation
propagates. The :class:`~agentcell.tools.definition.ToolOutcome` is built once, frozen, and is the very
object every observer receives; ``execute`` returns its ``result``.

Disposers. Every ``register``/``restrict``/``guard``/hook method returns the function that undoes exactly
that call: calling it twice, or after the name was registered again by someone else, changes nothing.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import itertools
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from time import perf_counter
from typing import Generic, Literal, TypeVar

from ..errors import ApprovalUnavailable, ToolRegistrationError
from ..events import DeniedBy
from ..providers.base import ToolSchema
from .base import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    ExecutionMode,
    Permission,
    ToolCall,
    ToolResult,
)
from .definition import (
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
from .output import MAX_LOG_CHARS, MAX_MODEL_CHARS, as_result, truncate
from .permissions import ALLOWED, PermissionPolicy, Verdict

__all__ = ["Disposer", "ToolRegistry", "default_registry"]

log = logging.getLogger(__name__)

Disposer = Callable[[], None]
H = TypeVar("H")

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
TRANSPORT_SEPARATOR = "__"
"""Names containing it are reserved for tools of MCP servers (``<server>__<tool>``)."""

_tokens = itertools.count(1)
Stage = Literal["visibility", "pre", "guard", "approval", "dispatch", "post", "interrupted"]


@dataclass(frozen=True, slots=True)
class _Restriction:
    allow: frozenset[str] | None
    deny: frozenset[str]

    def hides(self, name: str) -> bool:
        return (self.allow is not None and name not in self.allow) or name in self.deny


@dataclass(slots=True)
class _Run:
    """What one execution learned on its way, for the outcome record."""

    call: ToolCall
    definition: ToolDefinition | None = None
    permission: Permission | None = None
    approved: bool | None = None
    denied_by: DeniedBy | None = None


class ToolRegistry:
    """A :class:`~agentcell.tools.base.ToolHost` with the full pipeline. See the module docstring."""

    def __init__(
        self,
        policy: PermissionPolicy | None = None,
        *,
        max_model_chars: int = MAX_MODEL_CHARS,
        max_log_chars: int = MAX_LOG_CHARS,
    ) -> None:
        self._lock = threading.Lock()
        # Each registration is its own slot, so a disposer removes exactly the one it came from even when
        # the same definition object is registered again later.
        self._global: dict[str, _Slot[ToolDefinition]] = {}
        self._scoped: dict[str, dict[str, _Slot[ToolDefinition]]] = {}
        self._restrictions: dict[str | None, _Chain[_Restriction]] = {}
        self._guards: dict[str | None, _Chain[Guard]] = {}
        self._pre: _Chain[PreHook] = _Chain(self._lock)
        self._around: _Chain[AroundHook] = _Chain(self._lock)
        self._post: _Chain[PostHook] = _Chain(self._lock)
        self._observers: _Chain[Observer] = _Chain(self._lock)
        self._policy = policy or PermissionPolicy()
        self._session_policies: dict[str, PermissionPolicy] = {}
        self.max_model_chars = max_model_chars
        self.max_log_chars = max_log_chars

    # ------------------------------------------------------------------------------------------ register

    def register(self, definition: ToolDefinition, *, scope: str | None = None) -> Disposer:
        """Register ``definition`` globally, or in ``scope`` where it shadows a global tool of that name.

        Raises ``ToolRegistrationError`` for an invalid or reserved name, or one taken in the same layer.
        """
        name = definition.name
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise ToolRegistrationError(f"invalid tool name {name!r}: use 1 to 64 letters, digits, '_' or '-'")
        if TRANSPORT_SEPARATOR in name and definition.origin != "mcp":
            raise ToolRegistrationError(
                f"the tool name {name!r} is reserved: names containing '__' belong to MCP servers "
                "(<server>__<tool>); choose a name without a double underscore"
            )
        if scope is not None and (not isinstance(scope, str) or not scope):
            raise ToolRegistrationError(f"a scope is an agent id (a non-empty string), not {scope!r}")
        with self._lock:
            layer = self._global if scope is None else self._scoped.setdefault(scope, {})
            if name in layer:
                where = "globally" if scope is None else f"in scope {scope!r}"
                raise ToolRegistrationError(f"a tool named {name!r} is already registered {where}; dispose of it first")
            slot = layer[name] = _Slot(definition)

        def dispose() -> None:
            with self._lock:
                current = self._global if scope is None else self._scoped.get(scope, {})
                if current.get(name) is slot:
                    del current[name]
                    if scope is not None and not current:
                        self._scoped.pop(scope, None)

        return dispose

    def register_all(self, definitions: Iterable[ToolDefinition], *, scope: str | None = None) -> Disposer:
        """Register several tools at once: all or none (a failure undoes those already registered); returns
        one disposer for them all."""
        disposers: list[Disposer] = []
        try:
            for definition in definitions:
                disposers.append(self.register(definition, scope=scope))
        except BaseException:
            for dispose in disposers:
                dispose()
            raise

        def dispose_all() -> None:
            for dispose in reversed(disposers):
                dispose()

        return dispose_all

    def restrict(
        self,
        *,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        scope: str | None = None,
    ) -> Disposer:
        """Mask global tools: ``allow`` keeps only those names, ``deny`` removes names. Restrictions that
        apply to a view intersect; tools registered in the scope itself stay visible.

        Raises ``ToolRegistrationError`` for an empty filter, a name that is not a global tool, a name the
        scope registers itself, or a reserved MCP name.
        """
        allowed = _names(allow, "allow")
        denied = _names(deny, "deny") or frozenset()
        named = (allowed or frozenset()) | denied
        if not named:
            raise ToolRegistrationError("an empty restriction masks nothing; name tools in allow or deny")
        with self._lock:
            local = self._scoped.get(scope, {}) if scope is not None else {}
            for name in sorted(named):
                if TRANSPORT_SEPARATOR in name:
                    raise ToolRegistrationError(f"{name!r} is an MCP tool name; restrictions mask global tools only")
                if name in local:
                    raise ToolRegistrationError(
                        f"{name!r} is registered in scope {scope!r} itself; restrictions mask global "
                        "tools only (dispose of the scoped tool instead)"
                    )
                if name not in self._global:
                    raise ToolRegistrationError(f"no global tool named {name!r} to restrict")
            chain = self._restrictions.setdefault(scope, _Chain(self._lock))
        return chain.add(_Restriction(allowed, denied))

    def guard(self, guard: Guard, *, scope: str | None = None) -> Disposer:
        """Add a deny-only check that runs after the pre-execute hooks, for every call or for calls made in
        ``scope``. It returns ``ALLOW`` or ``Deny(reason)``; any guard's denial stands."""
        with self._lock:
            chain = self._guards.setdefault(scope, _Chain(self._lock))
        return chain.add(guard)

    def pre_execute(self, hook: PreHook) -> Disposer:
        return self._pre.add(hook)

    def around_dispatch(self, hook: AroundHook) -> Disposer:
        """Wrap every dispatch; the first registered is the outermost."""
        return self._around.add(hook)

    def post_execute(self, hook: PostHook) -> Disposer:
        return self._post.add(hook)

    def on_outcome(self, observer: Observer) -> Disposer:
        """Call ``observer`` with the frozen outcome of every execution. It cannot change the outcome; an
        observer that raises is logged and the others still run."""
        return self._observers.add(observer)

    # ------------------------------------------------------------------------------------------ policy

    @property
    def policy(self) -> PermissionPolicy:
        """The permission policy of sessions that have none of their own."""
        return self._policy

    @policy.setter
    def policy(self, policy: PermissionPolicy) -> None:
        self._policy = policy

    def set_policy(self, policy: PermissionPolicy, *, session_id: str) -> Disposer:
        """Give one session its own workspace (and default preset)."""
        with self._lock:
            self._session_policies[session_id] = policy

        def dispose() -> None:
            with self._lock:
                if self._session_policies.get(session_id) is policy:
                    del self._session_policies[session_id]

        return dispose

    def policy_for(self, call: ToolCall) -> PermissionPolicy:
        """The policy a call runs under: its session's (or the registry's), under the call's preset when
        the call names one (the runner passes the session's ``permissions``)."""
        policy = self._session_policies.get(call.session_id, self._policy)
        return policy if call.preset is None else policy.with_preset(call.preset)

    # ------------------------------------------------------------------------------------------ views

    def get(self, name: str, scope: str | None = None) -> ToolDefinition | None:
        """The definition ``scope`` resolves ``name`` to (scoped first), or None when none is visible."""
        if scope is not None:
            local = self._scoped.get(scope)
            if local is not None and (slot := local.get(name)) is not None:
                return slot.hook
        slot = self._global.get(name)
        if slot is None or self._hidden(name, scope):
            return None
        return slot.hook

    def _hidden(self, name: str, scope: str | None) -> bool:
        everywhere = self._restrictions.get(None)
        if everywhere is not None and any(r.hides(name) for r in everywhere.hooks):
            return True
        local = self._restrictions.get(scope) if scope is not None else None
        return local is not None and any(r.hides(name) for r in local.hooks)

    def definitions(self, scope: str | None = None) -> list[ToolDefinition]:
        """The definitions ``scope`` sees: visible global tools not shadowed, then the scope's own."""
        with self._lock:
            local = dict(self._scoped.get(scope, {})) if scope is not None else {}
            shown = [s.hook for n, s in self._global.items() if n not in local and not self._hidden(n, scope)]
        return shown + [s.hook for s in local.values()]

    def schemas(self, scope: str | None = None) -> list[ToolSchema]:
        """The model-facing fields of every visible tool, deep-copied: changing them changes nothing here."""
        return [
            ToolSchema(
                name=d.name,
                description=d.description,
                input_schema=copy.deepcopy(dict(d.input_schema)),
            )
            for d in self.definitions(scope)
        ]

    def execution_mode(self, call: ToolCall) -> ExecutionMode:
        """``parallel`` only when the visible definition says exactly True; everything else is exclusive."""
        definition = self.get(call.name, call.scope)
        if definition is None:
            return "exclusive"
        flag: object = definition.parallel_safe
        if callable(flag):
            try:
                flag = flag(call)
            except Exception:
                return "exclusive"
        return "parallel" if flag is True else "exclusive"

    def evaluate_permission(self, call: ToolCall) -> Permission | None:
        """The preset's verdict for ``call`` before anyone is asked (None for an invisible tool); the runner
        can put it on ``agent.tool_use.evaluated_permission``."""
        definition = self.get(call.name, call.scope)
        if definition is None:
            return None
        return self._verdict(definition, call, self.policy_for(call)).permission

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
            return policy.evaluate(definition.name, definition.access, paths)
        except Exception as exc:
            # A path the model chose may not resolve (a null byte, a directory we may not enter): fail closed.
            return Verdict("deny", f"cannot check the files {definition.name} would touch: {_describe(exc)}")

    # ------------------------------------------------------------------------------------------ execute

    async def execute(self, call: ToolCall, *, approver: Approver | None = None) -> ToolResult:
        return (await self.run(call, approver=approver)).result

    async def run(self, call: ToolCall, *, approver: Approver | None = None) -> ToolOutcome:
        """Execute ``call`` and return the frozen outcome observers receive."""
        token = f"tex_{next(_tokens)}"
        started = perf_counter()
        state = _Run(call)
        try:
            result, stage = await self._pipeline(state, token, approver)
        except asyncio.CancelledError:
            interrupted = ToolResult.error("interrupted before the tool finished", "INTERRUPTED")
            self._finish(token, state, interrupted, "interrupted", started)
            raise
        return self._finish(token, state, result, stage, started)

    def _finish(self, token: str, state: _Run, result: ToolResult, stage: Stage, started: float) -> ToolOutcome:
        outcome = ToolOutcome(
            token=token,
            call=state.call,
            definition=state.definition,
            result=truncate(result, self.max_model_chars, self.max_log_chars).model_copy(
                update={"denied_by": state.denied_by}
            ),
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

    async def _pipeline(self, state: _Run, token: str, approver: Approver | None) -> tuple[ToolResult, Stage]:
        call = state.call
        definition = self.get(call.name, call.scope)
        if definition is None:
            return ToolResult.error(f"no tool named {call.name!r} is available", "UNKNOWN_TOOL"), "visibility"
        state.definition = definition

        for hook in self._pre.hooks:
            try:
                answer = hook(call)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as exc:
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
        if approver is None:
            state.denied_by = "no-approver"
            return ToolResult.error(
                f"not run: {verdict.reason}. That needs the user's approval under the {policy.preset} "
                "preset, and no one can be asked in this session.",
                "DENIED",
            )
        request = ApprovalRequest(call=state.call, reason=verdict.reason, keys=verdict.keys, preset=policy.preset)
        try:
            answer = await approver(request)
        except ApprovalUnavailable as exc:
            state.denied_by = "no-view"
            return ToolResult.error(f"not run: {_describe(exc)}", "DENIED")
        except Exception as exc:
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
        except Exception as exc:
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
            except Exception as exc:
                return _hook_failed("a post-execute hook", exc), "post"
            if replaced is None:
                continue
            if not isinstance(replaced, ToolResult):
                problem = f"returned {type(replaced).__name__}, not a ToolResult"
                return ToolResult.error(f"a post-execute hook {problem}", "HOOK_FAILED"), "post"
            result, stage = replaced, "post"
        return result, stage


@dataclass(eq=False, slots=True)
class _Slot(Generic[H]):
    # eq=False: a disposer removes its own registration, even when the same hook was added twice.
    hook: H


class _Chain(Generic[H]):
    """The registrations of one kind, in order. ``hooks`` is replaced (never mutated) on change, so a
    running pipeline iterates a stable snapshot without taking the lock."""

    __slots__ = ("_lock", "_slots", "hooks")

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._slots: tuple[_Slot[H], ...] = ()
        self.hooks: tuple[H, ...] = ()

    def add(self, hook: H) -> Disposer:
        slot = _Slot(hook)
        with self._lock:
            self._slots = (*self._slots, slot)
            self.hooks = tuple(s.hook for s in self._slots)

        def dispose() -> None:
            with self._lock:
                kept = tuple(s for s in self._slots if s is not slot)
                if len(kept) != len(self._slots):
                    self._slots = kept
                    self.hooks = tuple(s.hook for s in kept)

        return dispose


def _wrap(
    hook: AroundHook, call: ToolCall, proceed: Callable[[], Awaitable[ToolResult]]
) -> Callable[[], Awaitable[ToolResult]]:
    def step() -> Awaitable[ToolResult]:
        return hook(call, proceed)

    return step


async def _invoke(definition: ToolDefinition, context: ToolContext) -> ToolResult:
    """Run the tool itself; everything it raises (but cancellation) becomes an error result."""
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
    except (Exception, SystemExit) as exc:  # a tool calling sys.exit() must not end the turn
        return ToolResult.error(_describe(exc))
    return as_result(value)


def _consult(guard: Guard, call: ToolCall) -> GuardDecision:
    """A guard's decision; a guard that raises or answers anything but Allow/Deny denies (fail closed)."""
    try:
        decision: object = guard(call)
    except Exception as exc:
        return Deny(f"a guard failed ({_describe(exc)}), so the call is not run")
    if inspect.iscoroutine(decision):
        decision.close()  # never awaited on purpose: guards are synchronous
        return Deny("a guard is async; guards must be synchronous, so the call is not run")
    if isinstance(decision, Allow | Deny):
        return decision
    return Deny(f"a guard answered {decision!r} instead of ALLOW or Deny(reason), so the call is not run")


def _beyond_input(changed: ToolCall, call: ToolCall) -> bool:
    """Whether a hook changed more than the input: the tool, scope, session or preset are not its to pick."""
    return changed.model_copy(update={"input": call.input}) != call


def _hook_failed(what: str, exc: BaseException) -> ToolResult:
    return ToolResult.error(f"{what} failed: {_describe(exc)}", "HOOK_FAILED")


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _names(names: Iterable[str] | None, field: str) -> frozenset[str] | None:
    if names is None:
        return None
    if isinstance(names, str):
        raise ToolRegistrationError(f"{field} takes a list of tool names, not the string {names!r}")
    return frozenset(names)


_default: ToolRegistry | None = None
_default_lock = threading.Lock()


def default_registry() -> ToolRegistry:
    """The process-wide registry: ``@tool`` registers here, and the Engine uses it unless given one."""
    global _default  # noqa: PLW0603 - one registry per process, made on first use
    with _default_lock:
        if _default is None:
            _default = ToolRegistry()
        return _default
