"""Where the file tools read and write one session's text files: the disk, unless a host installs a
:class:`FileAccess` for that session.

An editor that drives a session (an ACP client) holds files the user has open in buffers that may not be
saved yet; it can serve reads and take writes itself, so the agent sees and edits what the user sees.
The host installs the functions that do so for the session, and ``read_file``, ``write_file`` and
``edit_file`` call them instead of opening the file. Permission checks are unchanged: a function only
ever receives a path the call was permitted to touch, already resolved. Directory walks (``list_files``,
``grep``) and images stay on the disk.

The functions run in the tool's worker thread (file tools are plain functions), so they may block.
``read_text`` raises ``FileNotFoundError`` for a file that does not exist.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .base import ToolCall

__all__ = ["FileAccess", "file_access", "install_file_access"]


@dataclass(frozen=True, slots=True)
class FileAccess:
    """How one session's text files are read and written; None leaves that side on the disk."""

    read_text: Callable[[Path, ToolCall], str] | None = None
    write_text: Callable[[Path, str, ToolCall], None] | None = None


_installed: dict[str, FileAccess] = {}
_lock = threading.Lock()


def install_file_access(session_id: str, access: FileAccess) -> Callable[[], None]:
    """Route the file tools of ``session_id`` through ``access``; returns the function that undoes it."""
    with _lock:
        _installed[session_id] = access

    def dispose() -> None:
        with _lock:
            if _installed.get(session_id) is access:
                del _installed[session_id]

    return dispose


def file_access(session_id: str) -> FileAccess | None:
    """The access installed for ``session_id``, or None (the disk)."""
    with _lock:
        return _installed.get(session_id)
