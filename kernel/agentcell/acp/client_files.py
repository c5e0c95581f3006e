"""The file access of one ACP session: through the client for what it advertised, on the disk otherwise.

With ``fs.readTextFile`` the file tools read what the editor shows (unsaved buffers included); with
``fs.writeTextFile`` their writes go to the editor, which applies them to its buffers. Every write is also
remembered with the text it replaced, so the tool call's update can carry a diff the editor can review.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol, TypeVar

from acp.schema import FileEditToolCallContent, ReadTextFileResponse, WriteTextFileResponse

from acp import RequestError

from ..tools.base import ToolCall
from ..tools.file_access import FileAccess

__all__ = ["ClientFiles", "FileClient"]

T = TypeVar("T")
CLIENT_TIMEOUT = 120.0
"""Seconds a file tool waits for the editor to answer before it fails."""


class FileClient(Protocol):
    """The two client methods used here (``acp.agent.connection.AgentSideConnection`` has them)."""

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse: ...

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None: ...


def _missing(error: RequestError) -> bool:
    text = str(error).lower()
    return error.code == -32002 or "not found" in text or "no such file" in text


class ClientFiles:
    def __init__(
        self, client: FileClient, loop: asyncio.AbstractEventLoop, session_id: str, *, read: bool, write: bool
    ) -> None:
        self._client = client
        self._loop = loop
        self._session_id = session_id
        self._read_via_client = read
        self._write_via_client = write
        self._lock = threading.Lock()
        self._read_for_edit: dict[tuple[str, Path], str] = {}
        self._diffs: dict[str, list[FileEditToolCallContent]] = {}

    def access(self) -> FileAccess:
        return FileAccess(read_text=self._read if self._read_via_client else None, write_text=self._write)

    def diffs(self, tool_use_id: str) -> list[FileEditToolCallContent]:
        """The writes the call made, each with the text it replaced (None for a new file); forgotten once taken."""
        with self._lock:
            return self._diffs.pop(tool_use_id, [])

    # ------------------------------------------------------------------------------------------ worker side

    def _on_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        # File tools run in a worker thread; the connection lives on the event loop.
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(CLIENT_TIMEOUT)

    def _read(self, path: Path, call: ToolCall) -> str:
        try:
            response = self._on_loop(self._client.read_text_file(session_id=self._session_id, path=str(path)))
        except RequestError as exc:
            if _missing(exc):
                raise FileNotFoundError(str(path)) from None
            raise OSError(f"the editor could not read {path}: {exc}") from None
        if call.name == "edit_file":  # its write follows: that is the text the diff starts from
            with self._lock:
                self._read_for_edit[(call.tool_use_id, path)] = response.content
        return response.content

    def _current(self, path: Path, call: ToolCall) -> str | None:
        with self._lock:
            known = self._read_for_edit.pop((call.tool_use_id, path), None)
        if known is not None:
            return known
        if self._read_via_client:
            # This read only gives the diff its old text; it must not stop the write. An editor may answer
            # a missing file with a generic error (the TypeScript SDK sends -32603 for any handler that
            # throws), so whatever the editor could not read counts as no text before.
            try:
                return self._read(path, call.model_copy(update={"name": "write_file"}))
            except OSError:
                return None
        try:
            return path.read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError):
            return None
        except (OSError, UnicodeDecodeError):
            return ""

    def _write(self, path: Path, content: str, call: ToolCall) -> None:
        before = self._current(path, call)
        if self._write_via_client:
            try:
                self._on_loop(
                    self._client.write_text_file(session_id=self._session_id, path=str(path), content=content)
                )
            except RequestError as exc:
                raise OSError(f"the editor could not write {path}: {exc}") from None
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        diff = FileEditToolCallContent(type="diff", path=str(path), old_text=before, new_text=content)
        with self._lock:
            self._diffs.setdefault(call.tool_use_id, []).append(diff)
