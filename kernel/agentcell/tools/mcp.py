"""MCP servers as tools: connect stdio and streamable-HTTP servers, register their tools in an agent scope.

:class:`McpTools` starts an agent's servers (``agents.McpServer``) together, registers each server's tools
in the agent's scope as ``<server>__<tool>``, and unregisters and stops them on :meth:`McpTools.stop`; it
is also an async context manager. A server that cannot start is reported in its status (the session can
emit an ``mcp_connection_failed_error``) and the others go on. A server that crashes later turns its calls
into ``MCP_UNAVAILABLE`` error results, with the end of its stderr when there is one; the session goes on.

Each connection is held open by a task of its own: the SDK's transports run anyio task groups whose
failure cancels the task that entered them, and that must never be the turn that happens to be calling a
tool.

MCP tools declare ``execute`` access: what a server does is opaque to us, and the protocol says its
annotations are untrusted hints, so the permission preset asks (``workspace-write``) or refuses
(``read-only``). ``trust_annotations=True`` lets a server's ``readOnlyHint`` make a tool a plain read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from ..errors import ToolRegistrationError
from ..events import ContentBlock, ImageBlock, ImageSource, TextBlock
from .base import ToolResult
from .definition import ToolContext, ToolDefinition
from .mcp_relay import CUT_NOTE
from .permissions import Access
from .registry import Disposer, ToolRegistry

if TYPE_CHECKING:
    from types import TracebackType

    from mcp import Client
    from mcp.types import CallToolResult, Tool

    from ..records.agent import McpServer

__all__ = ["MAX_RESULT_BYTES", "McpConnection", "McpServerStatus", "McpTools", "kernel_command"]

log = logging.getLogger(__name__)

State = Literal["stopped", "starting", "running", "failed", "crashed"]
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_STDERR_TAIL = 2000
_RELAY = Path(__file__).with_name("mcp_relay.py")
MAX_RESULT_BYTES = 1_000_000
"""A server's message (a tool result) longer than this reaches the kernel shortened, with a note saying so
(stdio: ``mcp_relay.py``; streamable HTTP: ``mcp_http.py``); ``AGENTCELL_MCP_MAX_RESULT_BYTES`` or
``McpTools(max_result_bytes=…)`` sets another cap."""


def configured_max_result_bytes() -> int:
    """The cap from ``AGENTCELL_MCP_MAX_RESULT_BYTES``, else :data:`MAX_RESULT_BYTES`."""
    given = os.environ.get("AGENTCELL_MCP_MAX_RESULT_BYTES", "").strip()
    try:
        return max(4096, int(given)) if given else MAX_RESULT_BYTES
    except ValueError:
        log.warning(
            "AGENTCELL_MCP_MAX_RESULT_BYTES=%r is not a number of bytes; the cap stays %d", given, MAX_RESULT_BYTES
        )
        return MAX_RESULT_BYTES


CALL_TIMEOUT = 300.0
"""How long one MCP tool call may take before it is abandoned with a ``TIMEOUT`` error (a server that never
answers, or never ends its answer, cannot hold a cell); ``AGENTCELL_MCP_CALL_TIMEOUT`` (seconds) or
``McpTools(call_timeout=…)`` sets another."""


def configured_call_timeout() -> float:
    """The limit from ``AGENTCELL_MCP_CALL_TIMEOUT``, else :data:`CALL_TIMEOUT`."""
    given = os.environ.get("AGENTCELL_MCP_CALL_TIMEOUT", "").strip()
    try:
        seconds = float(given) if given else CALL_TIMEOUT
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        log.warning("AGENTCELL_MCP_CALL_TIMEOUT=%r is not a number of seconds; it stays %g", given, CALL_TIMEOUT)
        return CALL_TIMEOUT
    return seconds


def kept_results_dir() -> Path:
    """Where a shortened message is kept whole (the note in the result names its file); the relay keeps
    the newest 20 there, a week at most (``mcp_relay.KEEP_FILES``)."""
    return Path(tempfile.gettempdir()) / "agentcell-mcp-results"


def kernel_command(command: str) -> str:
    """The program a stdio server's bare command names, as the user of a notebook means it.

    A kernel is started by the absolute path of its environment's Python, so that environment's ``bin``
    is often not on ``PATH`` (an unactivated virtualenv, a kernelspec run from JupyterLab elsewhere).
    ``python`` then found another interpreter, one without the server's SDK. Like IPython's ``%pip``, a
    bare ``python``/``python3`` means this process's interpreter; another bare name is looked up on
    ``PATH`` and then in the interpreter's own ``bin``, where a console script the user installed
    with ``%pip`` lives. Paths are left as written.
    """
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        return command
    if command in {"python", "python3"} and sys.executable:
        return sys.executable
    if shutil.which(command) is not None:
        return command
    beside = shutil.which(command, path=str(Path(sys.executable).parent))
    return beside if beside is not None else command


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    name: str
    state: State
    error: str | None = None
    tools: tuple[str, ...] = ()
    """The registered (prefixed) names."""


class McpConnection:
    """One MCP server, connected by a task that owns the client until :meth:`stop`."""

    def __init__(
        self,
        server: McpServer,
        *,
        cwd: Path | None = None,
        connect_timeout: float = 30.0,
        max_result_bytes: int | None = None,
    ) -> None:
        self.server = server
        self.max_result_bytes = max_result_bytes if max_result_bytes is not None else configured_max_result_bytes()
        self.cwd = cwd
        self.connect_timeout = connect_timeout
        self.state: State = "stopped"
        self.error: str | None = None
        """Why the server failed or stopped, with the end of its stderr when it wrote any."""
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._closed = asyncio.Event()
        self._stderr: IO[str] | None = None

    async def start(self) -> list[Tool]:
        """Connect and list the server's tools; raises ``ConnectionError`` when it cannot."""
        if self._owner is not None:
            raise RuntimeError(f"MCP server {self.server.name!r} was already started")
        self.state = "starting"
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[list[Tool]] = loop.create_future()
        self._owner = loop.create_task(self._own(ready), name=f"mcp-server-{self.server.name}")
        try:
            async with asyncio.timeout(self.connect_timeout):
                return await asyncio.shield(ready)
        except TimeoutError:
            self._record(f"no answer within {self.connect_timeout:g} s")
        except ConnectionError:
            pass
        except asyncio.CancelledError:
            # Stop pressed while the server starts: the owner would go on starting it, its process with it.
            self._record("stopped while starting")
            await asyncio.shield(self._abandon())
            self.state = "stopped"
            raise
        await self.stop()
        self.state = "failed"
        raise ConnectionError(f"the MCP server {self.server.name!r} could not be started: {self.error}")

    async def _own(self, ready: asyncio.Future[list[Tool]]) -> None:
        from mcp import Client

        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = await stack.enter_async_context(Client(transport))
                tools = await _list_tools(client)
                self._client = client
                self.state = "running"
                ready.set_result(tools)
                await self._stopping.wait()
        except BaseException as exc:  # whatever ends the connection is reported, never raised into a turn
            self._record(_summary(exc))
            if not ready.done():
                ready.set_exception(ConnectionError(self.error))
            elif self.state == "running":
                self.state = "crashed"
                log.warning("MCP server %r stopped: %s", self.server.name, self.error)
        finally:
            self._client = None
            self._closed.set()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        if self.server.type == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            from .mcp_http import CappedTransport, sse_event_limit

            # Each message over the cap is shortened on its way in, as the stdio relay does (mcp_http.py).
            capped = CappedTransport(
                httpx2.AsyncHTTPTransport(),
                cap=self.max_result_bytes,
                keep_dir=str(kept_results_dir()),
                name=self.server.name,
            )
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=self.server.headers, timeout=httpx2.Timeout(30.0, read=300.0), transport=capped
                )
            )
            assert self.server.url is not None  # the McpServer model requires it for http
            return streamable_http_client(
                self.server.url, http_client=http, max_sse_event_size=sse_event_limit(self.max_result_bytes)
            )
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        # The server's stderr goes to a file we can quote when it fails; stop() closes it.
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        command, *args = self.server.command
        # Through the relay (mcp_relay.py), which shortens a message above the cap before the SDK's reader,
        # quadratic in a line's length, holds it whole.
        relayed = [str(_RELAY), str(self.max_result_bytes), str(kept_results_dir()), self.server.name, "--"]
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-I", *relayed, kernel_command(command), *args],
            env=self.server.env or None,
            cwd=self.cwd,
        )
        return _strict_stdout(stdio_client(parameters, errlog=self._stderr), self.server.name)

    async def call(self, name: str, arguments: dict[str, Any], *, limit: float | None = None) -> ToolResult:
        """Call a tool of this server; a server that is gone or goes away answers with an error result, one
        that takes longer than ``limit`` seconds with a ``TIMEOUT`` one."""
        client = self._client
        if client is None or self._closed.is_set():
            return self._unavailable()
        request = asyncio.ensure_future(client.call_tool(name, arguments))
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait({request, closed}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timed_out = not request.done() and not closed.done()
            for waiter in (request, closed):
                if not waiter.done():
                    waiter.cancel()
            await asyncio.wait({request, closed})
        if timed_out:
            return ToolResult.error(
                f"the MCP server {self.server.name!r} did not answer {name} within {limit:g} s, so the call was "
                "abandoned (AGENTCELL_MCP_CALL_TIMEOUT sets how long a call may take)",
                "TIMEOUT",
            )
        if request.cancelled():
            return self._unavailable()
        failure = request.exception()
        if failure is None:
            return _convert(request.result())
        if self._closed.is_set() or _connection_closed(failure):
            # A stdio server that exited shows up here first: wind the connection down and say so.
            self._record("the connection closed (the server stopped)")
            if self.state == "running":
                self.state = "crashed"
            self._stopping.set()
            return self._unavailable()
        return ToolResult.error(f"the MCP server {self.server.name!r} failed the call: {_summary(failure)}")

    def _unavailable(self) -> ToolResult:
        return ToolResult.error(f"the MCP server {self.server.name!r} is not running: {self.error}", "MCP_UNAVAILABLE")

    def _record(self, reason: str) -> None:
        """Keep the first reason the connection ended, with what the server last wrote to stderr."""
        if self.error is not None:
            return
        tail = ""
        if self._stderr is not None and not self._stderr.closed:
            with contextlib.suppress(OSError, ValueError):
                self._stderr.flush()
                self._stderr.seek(0)
                tail = self._stderr.read()[-_STDERR_TAIL:].strip()
        self.error = f"{reason}\nits stderr ended with:\n{tail}" if tail else reason

    async def stop(self) -> None:
        """Close the connection (and end a stdio server's process); safe to call more than once."""
        owner = self._owner
        if owner is None:
            return
        self._stopping.set()
        try:
            await asyncio.wait_for(asyncio.shield(owner), 10.0)
        except TimeoutError:
            owner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await owner
        if self.state in ("running", "starting"):
            self.state = "stopped"
        if self._stderr is not None:
            self._stderr.close()

    async def _abandon(self) -> None:
        """End a start under way at once: its task cancelled, which closes the transport (the SDK ends a
        stdio server's whole process group, the relay and the server in it)."""
        owner = self._owner
        if owner is not None and not owner.done():
            owner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await owner
        if self._stderr is not None:
            self._stderr.close()

    def status(self, tools: tuple[str, ...] = ()) -> McpServerStatus:
        error = self.error if self.state in ("failed", "crashed") else None
        return McpServerStatus(name=self.server.name, state=self.state, error=error, tools=tools)


class _QuietParseErrors(logging.Filter):
    """The MCP SDK logs a full traceback for every stdout line it cannot parse; the connection reports the
    first one itself, in one line, and ends."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Failed to parse JSONRPC message" not in record.getMessage()


logging.getLogger("mcp.client.stdio").addFilter(_QuietParseErrors())


@contextlib.asynccontextmanager
async def _strict_stdout(transport: Any, name: str) -> AsyncIterator[tuple[Any, Any]]:
    """The stdio transport, ending at the first stdout line that is not JSON-RPC instead of skipping each
    (a babbling server would otherwise hang the start for its whole timeout)."""
    import anyio

    async with transport as (read, write):
        sender, receiver = anyio.create_memory_object_stream[Any](16)

        async def pump() -> None:
            async with sender:
                async for item in read:
                    if isinstance(item, Exception):
                        raise ConnectionError(  # ends the connection: _own reports it, one line
                            f"the MCP server {name!r} wrote something that is not JSON-RPC on its stdout "
                            f"({_summary(item)[:200]}); a stdio server must keep stdout for the protocol and log "
                            "to stderr"
                        )
                    await sender.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield receiver, write
            finally:
                group.cancel_scope.cancel()


def _connection_closed(exc: BaseException) -> bool:
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.error.code == CONNECTION_CLOSED


async def _list_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a server that paginates forever must not hang the start
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _summary(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_summary(inner) for inner in exc.exceptions)
    message = getattr(exc, "message", None)  # MCPError's str() is its argument tuple
    text = message if isinstance(message, str) else str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _convert(result: CallToolResult) -> ToolResult:
    from mcp.types import EmbeddedResource, ImageContent, ResourceLink, TextContent

    blocks: list[ContentBlock] = []
    for item in result.content:
        if isinstance(item, TextContent):
            blocks.append(TextBlock(text=item.text))
        elif isinstance(item, ImageContent):
            cut = item.data.find(CUT_NOTE)
            if cut >= 0:  # the relay cut the image's data: it says so instead of sending a broken image
                blocks.append(TextBlock(text=f"[an image ({item.mime_type}) that was cut]{item.data[cut:]}"))
            else:
                blocks.append(ImageBlock(source=ImageSource(media_type=item.mime_type, data=item.data)))
        elif isinstance(item, EmbeddedResource):
            text = getattr(item.resource, "text", None)
            blocks.append(TextBlock(text=text if text is not None else f"[binary resource {item.resource.uri}]"))
        elif isinstance(item, ResourceLink):
            blocks.append(TextBlock(text=f"[resource {item.name}: {item.uri}]"))
        else:
            blocks.append(TextBlock(text=f"[{item.type} content not shown]"))
    if not blocks and result.structured_content is not None:
        blocks.append(TextBlock(text=json.dumps(result.structured_content, ensure_ascii=False)))
    failed = bool(result.is_error)
    return ToolResult(content=tuple(blocks), is_error=failed, error_code="TOOL_FAILED" if failed else None)


class McpTools:
    """The MCP servers of one agent, registered in its scope while started."""

    def __init__(
        self,
        registry: ToolRegistry,
        servers: Sequence[McpServer],
        *,
        scope: str,
        cwd: Path | None = None,
        call_timeout: float | None = None,
        trust_annotations: bool = False,
        max_result_bytes: int | None = None,
    ) -> None:
        self.registry = registry
        self.scope = scope
        self.call_timeout = call_timeout if call_timeout is not None else configured_call_timeout()
        self.trust_annotations = trust_annotations
        self.connections = [McpConnection(server, cwd=cwd, max_result_bytes=max_result_bytes) for server in servers]
        self._disposers: list[Disposer] = []
        self._registered: dict[str, tuple[str, ...]] = {}

    async def start(self) -> list[McpServerStatus]:
        """Start every server at once and register the tools of those that came up."""
        results = await asyncio.gather(*(c.start() for c in self.connections), return_exceptions=True)
        for connection, outcome in zip(self.connections, results, strict=True):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome
                connection.error = connection.error or _summary(outcome)
                continue
            self._register(connection, outcome)
        return self.statuses()

    def _register(self, connection: McpConnection, tools: list[Tool]) -> None:
        prefix = connection.server.name
        names: list[str] = []
        for mcp_tool in tools:
            name = _INVALID.sub("_", f"{prefix}__{mcp_tool.name}")[:64]
            if name in names:
                log.warning("MCP tool %r of %r clashes with another as %r; skipped", mcp_tool.name, prefix, name)
                continue
            read_only = mcp_tool.annotations is not None and mcp_tool.annotations.read_only_hint is True
            access: frozenset[Access] = (
                frozenset({"read"}) if self.trust_annotations and read_only else frozenset({"execute"})
            )
            definition = ToolDefinition(
                name=name,
                run=_caller(connection, mcp_tool.name, self.call_timeout),
                description=mcp_tool.description or "",
                input_schema=mcp_tool.input_schema,
                # An untrusted hint must not let calls run side by side either.
                parallel_safe=self.trust_annotations and read_only,
                access=access,
                title=mcp_tool.title or (mcp_tool.annotations.title if mcp_tool.annotations else None),
                origin="mcp",
            )
            try:
                dispose = self.registry.register(definition, scope=self.scope)
            except ToolRegistrationError as exc:
                # E.g. server "a" tool "b__c" and server "a__b" tool "c" both become "a__b__c".
                log.warning("MCP tool %r of %r cannot be registered (%s); skipped", mcp_tool.name, prefix, exc)
                continue
            self._disposers.append(dispose)
            names.append(name)
        self._registered[prefix] = tuple(names)

    def statuses(self) -> list[McpServerStatus]:
        return [c.status(self._registered.get(c.server.name, ())) for c in self.connections]

    async def stop(self) -> None:
        """Unregister every tool and stop every server."""
        disposers, self._disposers = self._disposers, []
        for dispose in disposers:
            dispose()
        self._registered.clear()
        await asyncio.gather(*(c.stop() for c in self.connections))

    async def __aenter__(self) -> McpTools:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()


def _caller(connection: McpConnection, tool_name: str, timeout: float) -> Any:
    async def run(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        del context
        return await connection.call(tool_name, arguments, limit=timeout)

    return run
