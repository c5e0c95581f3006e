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

import copy
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ToolRegistrationError
from ..providers.base import ToolSchema
from ._chain import Chain, Disposer, Slot
from .base import ExecutionMode, Permission, ToolCall
from .definition import AroundHook, Guard, Observer, PostHook, PreHook, ToolDefinition
from .output import MAX_LOG_CHARS, MAX_MODEL_CHARS
from .permissions import PermissionPolicy
from .pipeline import ToolPipeline

__all__ = ["Disposer", "ToolRegistry", "default_registry"]

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
RESERVED_NAMES = frozenset({"run_code"})
"""Names no tool may take (the code-running transport's own)."""
TRANSPORT_SEPARATOR = "__"
"""Names containing it are reserved for tools of MCP servers (``<server>__<tool>``)."""


@dataclass(frozen=True, slots=True)
class _Restriction:
    allow: frozenset[str] | None
    deny: frozenset[str]

    def hides(self, name: str) -> bool:
        return (self.allow is not None and name not in self.allow) or name in self.deny


class ToolRegistry(ToolPipeline):
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
        self._global: dict[str, Slot[ToolDefinition]] = {}
        self._scoped: dict[str, dict[str, Slot[ToolDefinition]]] = {}
        self._restrictions: dict[str | None, Chain[_Restriction]] = {}
        self._guards: dict[str | None, Chain[Guard]] = {}
        self._pre: Chain[PreHook] = Chain(self._lock)
        self._around: Chain[AroundHook] = Chain(self._lock)
        self._post: Chain[PostHook] = Chain(self._lock)
        self._observers: Chain[Observer] = Chain(self._lock)
        self._offered: dict[Slot[ToolDefinition], ToolSchema] = {}
        """Each registration's model-facing schema, built on first use (see :meth:`offered`)."""
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
        if name in RESERVED_NAMES:
            raise ToolRegistrationError(f"the tool name {name!r} is reserved; choose another name")
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
            slot = layer[name] = Slot(definition)

        def dispose() -> None:
            with self._lock:
                current = self._global if scope is None else self._scoped.get(scope, {})
                self._offered.pop(slot, None)
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
                if name in RESERVED_NAMES:
                    raise ToolRegistrationError(f"{name!r} is a reserved name; there is no such tool to restrict")
                if TRANSPORT_SEPARATOR in name:
                    raise ToolRegistrationError(f"{name!r} is an MCP tool name; restrictions mask global tools only")
                if name in local:
                    raise ToolRegistrationError(
                        f"{name!r} is registered in scope {scope!r} itself; restrictions mask global "
                        "tools only (dispose of the scoped tool instead)"
                    )
                if name not in self._global:
                    raise ToolRegistrationError(f"no global tool named {name!r} to restrict")
            chain = self._restrictions.setdefault(scope, Chain(self._lock))
        return chain.add(_Restriction(allowed, denied))

    def guard(self, guard: Guard, *, scope: str | None = None) -> Disposer:
        """Add a deny-only check that runs after the pre-execute hooks, for every call or for calls made in
        ``scope``. It returns ``ALLOW`` or ``Deny(reason)``; any guard's denial stands."""
        with self._lock:
            chain = self._guards.setdefault(scope, Chain(self._lock))
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
        return [slot.hook for slot in self._visible_slots(scope)]

    def _visible_slots(self, scope: str | None) -> list[Slot[ToolDefinition]]:
        with self._lock:
            local = dict(self._scoped.get(scope, {})) if scope is not None else {}
            shown = [s for n, s in self._global.items() if n not in local and not self._hidden(n, scope)]
        return shown + list(local.values())

    def offered(self, scope: str | None = None) -> list[ToolSchema]:
        """What :meth:`schemas` lists, as the engine puts it in every model request: each registration's
        schema built once and shared from request to request, so the caller must not change it. (A
        request per model call would otherwise deep-copy every tool's input schema again: ~30 us a tool.)"""
        offered = self._offered
        schemas: list[ToolSchema] = []
        for slot in self._visible_slots(scope):
            schema = offered.get(slot)
            if schema is None:
                schema = offered[slot] = _schema_of(slot.hook)
            schemas.append(schema)
        return schemas

    def schemas(self, scope: str | None = None) -> list[ToolSchema]:
        """The model-facing fields of every visible tool, deep-copied: changing them changes nothing here."""
        return [_schema_of(d) for d in self.definitions(scope)]

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


def _schema_of(definition: ToolDefinition) -> ToolSchema:
    """The model-facing fields of ``definition``, its input schema deep-copied."""
    return ToolSchema(
        name=definition.name,
        description=definition.description,
        input_schema=copy.deepcopy(dict(definition.input_schema)),
    )


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
