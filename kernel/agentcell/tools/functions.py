"""Python functions as tools: ``@tool`` and :func:`function_tool`.

The input schema comes from the signature (annotations and defaults) through pydantic, and the
descriptions from the docstring: its text up to the first section is the tool's description, and a
Google-style ``Args:`` section (or reST ``:param name:`` lines) describes the parameters. The model's
input is validated against the same model before the function runs; a validation error goes back to the
model as an ``INVALID_INPUT`` result naming each wrong argument. A parameter annotated
:class:`~agentcell.tools.definition.ToolContext` receives the call's context and is not shown to the model.

Async functions are awaited; plain functions run in a worker thread, so a slow one neither blocks the
event loop nor the other tools of a parallel batch.

>>> @tool
... def add(a: int, b: int = 1) -> int:
...     '''Add two numbers.'''
...     return a + b
>>> add(2)          # the function itself is unchanged
3
>>> untool(add)     # and the registration can be undone
True
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..errors import ToolRegistrationError
from .base import ToolCall, ToolResult
from .definition import ToolContext, ToolDefinition
from .permissions import Access, PathUse
from .registry import Disposer, ToolRegistry, default_registry

__all__ = ["function_tool", "tool", "untool"]

F = TypeVar("F", bound=Callable[..., Any])

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|See Also)\s*:?\s*$"
)
_PARAM_SECTIONS = {"Args", "Arguments", "Parameters", "Params"}
_REST_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class _Registration:
    function: Callable[..., Any]
    registry: ToolRegistry
    scope: str | None
    definition: ToolDefinition
    dispose: Disposer


_registrations: list[_Registration] = []
_registrations_lock = threading.Lock()


# ---------------------------------------------------------------------------------------------- decorator


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool | Callable[[ToolCall], object] = False,
    scope: str | None = None,
    access: Iterable[Access] = (),
    timeout: float | None = None,
    registry: ToolRegistry | None = None,
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool | Callable[[ToolCall], object] = False,
    scope: str | None = None,
    access: Iterable[Access] = (),
    timeout: float | None = None,
    registry: ToolRegistry | None = None,
) -> F | Callable[[F], F]:
    """Offer a function to agents as a tool, from their next turn on; returns the function unchanged.

    Without ``scope`` the tool is global (every agent sees it); with ``scope=agent.id`` only that agent.
    ``registry`` defaults to the process-wide one the Engine uses. Defining the function again (re-running
    a notebook cell) replaces the earlier registration; :func:`untool` removes it.
    """

    def decorate(function: F) -> F:
        definition = function_tool(
            function,
            name=name,
            description=description,
            parallel_safe=parallel_safe,
            access=access,
            timeout=timeout,
        )
        target = registry if registry is not None else default_registry()
        with _registrations_lock:
            _drop_redefined(target, scope, definition.name, function)
            dispose = target.register(definition, scope=scope)
            _registrations.append(_Registration(function, target, scope, definition, dispose))
        return function

    return decorate(fn) if fn is not None else decorate


def untool(fn: Callable[..., Any]) -> bool:
    """Undo every ``@tool`` registration of ``fn``; False when it had none."""
    with _registrations_lock:
        owned = [r for r in _registrations if r.function is fn]
        for registration in owned:
            registration.dispose()
            _registrations.remove(registration)
    return bool(owned)


def _drop_redefined(registry: ToolRegistry, scope: str | None, name: str, function: Callable[..., Any]) -> None:
    """Dispose of what an earlier definition of the same function (a re-run notebook cell) registered
    under ``name``, so redefining a tool replaces it instead of failing as a duplicate."""
    identity = _identity(function)
    for registration in list(_registrations):
        if (
            registration.registry is registry
            and registration.scope == scope
            and registration.definition.name == name
            and _identity(registration.function) == identity
        ):
            registration.dispose()  # exact and idempotent: a registration already undone stays undone
            _registrations.remove(registration)


def _identity(function: Callable[..., Any]) -> tuple[str, str]:
    return getattr(function, "__module__", ""), getattr(function, "__qualname__", repr(function))


# ---------------------------------------------------------------------------------------------- definition


def function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool | Callable[[ToolCall], object] = False,
    access: Iterable[Access] = (),
    paths: Callable[[Mapping[str, Any]], Sequence[PathUse]] | None = None,
    timeout: float | None = None,
    origin: str = "function",
) -> ToolDefinition:
    """A :class:`ToolDefinition` for ``fn`` (not registered)."""
    if not callable(fn):
        raise ToolRegistrationError(f"@tool needs a function, not {fn!r}")
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    summary, parameter_docs = parse_docstring(inspect.getdoc(fn) or "")
    model, context_parameter, positional = _input_model(fn, tool_name, parameter_docs)
    schema = _clean_schema(model.model_json_schema())
    is_async = inspect.iscoroutinefunction(fn)

    async def run(arguments: dict[str, Any], context: ToolContext) -> Any:
        try:
            validated = model.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.error(_explain(tool_name, exc), "INVALID_INPUT")
        values = {field: getattr(validated, field) for field in type(validated).model_fields}
        if context_parameter is not None:
            values[context_parameter] = context
        args = [values.pop(p) for p in positional]
        if is_async:
            return await fn(*args, **values)
        outcome = await asyncio.to_thread(_in_thread, fn, args, values)
        if isinstance(outcome, _Raised):
            return ToolResult.error(f"{type(outcome.exception).__name__}: {outcome.exception}".rstrip(": "))
        return outcome

    return ToolDefinition(
        name=tool_name,
        run=run,
        description=description if description is not None else summary,
        input_schema=schema,
        parallel_safe=parallel_safe,
        access=frozenset(access),
        paths=paths,
        timeout=timeout,
        origin=origin,
    )


@dataclass(frozen=True, slots=True)
class _Raised:
    exception: BaseException


def _in_thread(fn: Callable[..., Any], args: list[Any], values: dict[str, Any]) -> Any:
    """Call a plain function in the worker thread, keeping what it raises there: a GeneratorExit or
    KeyboardInterrupt carried across into the event loop's future breaks the interpreter's bookkeeping."""
    try:
        return fn(*args, **values)
    except BaseException as exc:
        return _Raised(exc)


def _input_model(
    fn: Callable[..., Any], tool_name: str, docs: Mapping[str, str]
) -> tuple[type[BaseModel], str | None, list[str]]:
    """The pydantic model of ``fn``'s parameters, the name of its context parameter, and its
    positional-only parameters (passed by position)."""
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise ToolRegistrationError(f"cannot read the signature of {tool_name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    context_parameter = None
    positional: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ToolRegistrationError(
                f"{tool_name!r} takes *{parameter.name}; a tool's parameters must be named one by one"
            )
        annotation = hints.get(parameter.name, Any)
        if annotation is ToolContext:
            context_parameter = parameter.name
            continue
        if parameter.kind is parameter.POSITIONAL_ONLY:
            positional.append(parameter.name)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, Field(default, description=docs.get(parameter.name)))
    try:
        model = create_model(
            f"{tool_name}_input",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
        model.model_json_schema()
    except Exception as exc:
        raise ToolRegistrationError(f"cannot describe the parameters of {tool_name!r}: {exc}") from exc
    return model, context_parameter, positional


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # Titles repeat the names; dropping them saves the model's tokens and changes no meaning.
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _explain(tool_name: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "input"
        got = f" (got {item['input']!r})" if item["type"] not in ("missing", "extra_forbidden") else ""
        problems.append(f"{where}: {item['msg']}{got}")
    return f"invalid input for {tool_name}: " + "; ".join(problems)


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (text before the first section) and the parameter descriptions of a docstring."""
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    indent: int | None = None
    for line in doc.splitlines():
        header = _SECTION.match(line)
        rest = _REST_PARAM.match(line)
        if header:
            section, current, indent = header.group(1), None, None
            continue
        if rest:
            section, current = "Args", rest.group(1)
            params[current] = rest.group(2).strip()
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in _PARAM_SECTIONS or not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        entry = re.match(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
        if entry and (indent is None or depth <= indent):
            indent = depth
            current = entry.group(1)
            params[current] = entry.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params
