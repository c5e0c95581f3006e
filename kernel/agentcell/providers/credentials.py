"""API keys given to this process at run time (a hidden prompt in the notebook), beside the environment.

A key typed into ``%model``'s prompt lives here, in the kernel's memory only: never in ``os.environ`` (so
the agent's shell and Python tools, and the MCP servers they start, do not inherit it), never in the
notebook or the event log (:func:`agentcell._secrets.keep_secret` makes every scrubber redact it).
"""

from __future__ import annotations

import os
import threading

from .._secrets import keep_secret

__all__ = ["api_key", "remember_key"]

_given: dict[str, str] = {}
_lock = threading.Lock()


def remember_key(key_env: str, value: str) -> None:
    """Use ``value`` as the key that ``key_env`` would hold, from now on, in this process."""
    value = value.strip()
    if not value:
        return
    keep_secret(value)
    with _lock:
        _given[key_env] = value


def api_key(key_env: str) -> str | None:
    """The key for ``key_env``: one given at run time, else the environment's; None when neither is set."""
    with _lock:
        given = _given.get(key_env)
    return given or (os.environ.get(key_env, "").strip() or None)
