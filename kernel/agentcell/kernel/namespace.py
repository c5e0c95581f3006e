"""The user's variables, named: a compact, bounded summary of a notebook's namespace for the model.

Each variable is its name, its type and one line about it: a DataFrame's shape, columns and dtypes, an
array's shape and dtype, a collection's length, a short value's repr. pandas, polars and numpy values are
recognised by their type's module and read through their attributes, so nothing here imports them (a value
of theirs exists only if the user imported them). Left out: private names, IPython's own (``In``, ``Out``,
``_``...), modules, functions, classes and agentcell's own objects. A value whose name looks like a secret
is named and typed, never shown.
"""

from __future__ import annotations

import re
import types
from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["INSPECT_TOOL", "MAX_VARIABLES", "describe_variable", "inspect_variable_tool", "summarize_namespace"]

MAX_VARIABLES = 40
"""The most variables a turn names (the most recently defined); the rest are counted."""
_SUMMARY_CHARS = 200
_MAX_COLUMNS = 20
_SHORT_REPR = 80
_SECRET_NAME = re.compile(r"key|token|secret|passw|credential|auth", re.IGNORECASE)
_SCALARS = (int, float, complex, bool, str, bytes, type(None))
_SKIPPED_TYPES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})


def summarize_namespace(
    namespace: Mapping[str, Any], hidden: Collection[str] = (), limit: int = MAX_VARIABLES
) -> tuple[list[tuple[str, str, str]], int]:
    """``(name, type, summary)`` of the user's variables, at most ``limit`` (the latest defined), and how
    many more there were. ``hidden``: names the shell keeps out of ``%who`` (its own, agentcell's host)."""
    named = [(name, value) for name, value in list(namespace.items()) if _is_users(name, value, hidden)]
    shown = named[-limit:] if limit else []
    return [(name, *describe_variable(name, value)) for name, value in shown], len(named) - len(shown)


def _is_users(name: str, value: Any, hidden: Collection[str]) -> bool:
    if name.startswith("_") or name in _IPYTHON_NAMES or name in hidden:
        return False
    if isinstance(value, _SKIPPED_TYPES):
        return False
    return not type(value).__module__.startswith(("agentcell", "IPython", "ipykernel"))


def describe_variable(name: str, value: Any) -> tuple[str, str]:
    """The type's name and a one-line summary of ``value``, within a couple of hundred characters."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    type_name = kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"
    if _SECRET_NAME.search(name):
        return type_name, "(not shown: the name looks like a secret)"
    try:
        summary = _summary(value, module)
    except Exception as exc:  # a value whose attributes raise still has a name and a type
        summary = f"(could not be described: {type(exc).__name__})"
    if len(summary) > _SUMMARY_CHARS:
        summary = summary[: _SUMMARY_CHARS - 1] + "…"
    return type_name, summary


def _summary(value: Any, module: str) -> str:
    if module in ("pandas", "polars") and hasattr(value, "columns") and hasattr(value, "dtypes"):
        return _frame(value)
    if module in ("pandas", "polars") and hasattr(value, "dtype"):  # a Series
        label = f"name {value.name!r}, " if getattr(value, "name", None) is not None else ""
        return f"{label}length {len(value):,}, dtype {value.dtype}"
    if module == "numpy" and hasattr(value, "shape") and hasattr(value, "dtype"):
        if value.shape == ():
            return _short(repr(value))
        return f"shape {tuple(value.shape)}, dtype {value.dtype}"
    if isinstance(value, _SCALARS):
        return _short(repr(value)) + (f" ({len(value):,} characters)" if isinstance(value, str | bytes) else "")
    if isinstance(value, list | tuple | set | frozenset | dict):
        return f"length {len(value):,}"
    return ""


def _frame(frame: Any) -> str:
    rows, width = tuple(frame.shape)
    dtypes = frame.dtypes
    if hasattr(dtypes, "items"):  # pandas: a Series of dtypes by column
        pairs = [(str(column), str(dtype)) for column, dtype in list(dtypes.items())[:_MAX_COLUMNS]]
    else:  # polars: a list in column order
        pairs = [(str(c), str(d)) for c, d in list(zip(frame.columns, dtypes, strict=False))[:_MAX_COLUMNS]]
    columns = ", ".join(f"{column} {dtype}" for column, dtype in pairs)
    more = f", … {width - len(pairs)} more" if width > len(pairs) else ""
    return f"{rows:,} rows, {width} columns: {columns}{more}"


def _short(text: str) -> str:
    return text if len(text) <= _SHORT_REPR else text[: _SHORT_REPR - 1] + "…"


INSPECT_TOOL = "inspect_variable"
_DETAIL_CHARS = 4_000


def inspect_variable_tool(namespace: Mapping[str, Any], hidden: Collection[str]) -> Any:
    """The agent's read-only look at one of the user's variables (a ``ToolDefinition``): its type, the
    summary, and its repr (a DataFrame's first rows as pandas prints them), within a few thousand
    characters. It needs no permission: it changes nothing and reads only the notebook's own namespace."""
    from ..tools.functions import function_tool

    def inspect_variable(name: str) -> str:
        """Look at one of the user's notebook variables in more detail than the summary each turn carries:
        its type, shape or length, and how Python prints it (cut to a few thousand characters).

        :param name: the variable's name, as the summary lists it
        """
        if name not in namespace or not _is_users(name, namespace[name], hidden):
            names = [n for n, v in list(namespace.items()) if _is_users(n, v, hidden)][-MAX_VARIABLES:]
            return f"no variable named {name!r}; the user's variables: {', '.join(names) or 'none'}"
        value = namespace[name]
        kind, summary = describe_variable(name, value)
        head = f"{name}: {kind}" + (f", {summary}" if summary else "")
        if _SECRET_NAME.search(name):
            return head
        try:
            shown = repr(value)
        except Exception as exc:  # a broken repr still leaves the name and the type
            shown = f"(repr failed: {type(exc).__name__})"
        if len(shown) > _DETAIL_CHARS:
            shown = shown[:_DETAIL_CHARS] + f"\n… ({len(shown) - _DETAIL_CHARS:,} more characters)"
        return f"{head}\n{shown}"

    return function_tool(inspect_variable, name=INSPECT_TOOL, parallel_safe=True, origin="builtin")
