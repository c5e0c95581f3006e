"""Whether the ``python`` tool asks before it runs under ``workspace-write``: a setting only the user changes.

The python tool's code runs in the kernel's own process, which no in-process check confines (see
:mod:`.confine`). So under ``workspace-write`` it asks before each call, like ``bash`` ("Allow always"
makes the session's ``python:kernel`` rule). A user who trusts the model with the notebook's Python lets it
run unasked: ``%config AgentCell.python_tool = "allow"`` in the kernel, or ``AGENTCELL_PYTHON_TOOL=allow``
in the environment the kernel (or ``agentcell run``) starts with. The environment is read once, when the
process first asks, so code the tool runs cannot turn it on by setting the variable; the setting's one
writer, :func:`set_python_tool`, refuses a tool's code (:mod:`.authority`) as the preset's own magic does.

One setting per process: the kernel is one notebook, and its setting is the user's for that notebook.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Literal, TypeAlias

from ..errors import InvalidInputError
from .authority import refuse_from_tool_code

__all__ = [
    "PYTHON_TOOL_CHOICES",
    "PYTHON_TOOL_ENV",
    "PYTHON_TOOL_HINT",
    "PythonToolSetting",
    "load_python_tool_setting",
    "python_tool_setting",
    "set_python_tool",
]

PythonToolSetting: TypeAlias = Literal["ask", "allow"]
PYTHON_TOOL_CHOICES: tuple[PythonToolSetting, ...] = ("ask", "allow")
PYTHON_TOOL_ENV = "AGENTCELL_PYTHON_TOOL"
PYTHON_TOOL_HINT = (
    'To let the python tool run unasked in this kernel, the user runs %config AgentCell.python_tool = "allow" '
    "in a cell of their own (or starts the kernel, or agentcell run, with AGENTCELL_PYTHON_TOOL=allow)."
)
"""What a refusal says when nobody could be asked about a python call (a headless run)."""

_lock = threading.Lock()
_setting: list[PythonToolSetting] = []  # empty until the process first asks


def _parse(value: str, where: str) -> PythonToolSetting:
    chosen = value.strip().lower()
    if chosen not in PYTHON_TOOL_CHOICES:
        raise InvalidInputError(f"{where} is 'ask' or 'allow', not {value!r}")
    return "allow" if chosen == "allow" else "ask"


def python_tool_setting() -> PythonToolSetting:
    """``allow`` when the user let the python tool run unasked under ``workspace-write``, else ``ask``."""
    with _lock:
        if not _setting:
            _setting.append(_from(os.environ))
        return _setting[0]


def _from(environ: Mapping[str, str]) -> PythonToolSetting:
    raw = environ.get(PYTHON_TOOL_ENV, "")
    if not raw.strip():
        return "ask"
    try:
        return _parse(raw, PYTHON_TOOL_ENV)
    except InvalidInputError:
        return "ask"  # a typo must not widen anything: the strict answer


def load_python_tool_setting(environ: Mapping[str, str] | None = None) -> PythonToolSetting:
    """Take the setting from ``environ`` (the process's environment) again, as at start; the kernel calls
    it when it starts. Refused from a tool's code, like :func:`set_python_tool`."""
    refuse_from_tool_code("setting AgentCell.python_tool")
    chosen = _from(os.environ if environ is None else environ)
    with _lock:
        _setting[:] = [chosen]
    return chosen


def set_python_tool(value: str) -> PythonToolSetting:
    """Set whether the python tool asks (``ask``) or runs unasked (``allow``) under ``workspace-write``.
    Raises :class:`~agentcell.errors.PermissionChangeRefused` from a tool's code, InvalidInputError for
    anything but the two choices."""
    refuse_from_tool_code("setting AgentCell.python_tool")
    chosen = _parse(value, "AgentCell.python_tool")
    with _lock:
        _setting[:] = [chosen]
    return chosen
