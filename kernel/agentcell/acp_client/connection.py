"""One external ACP agent: its subprocess, the connection to it, and its session in the notebook's folder.

:class:`ExternalAgent` starts the agent on the first turn (``initialize``, then ``session/new`` with the
workspace as its ``cwd``) and keeps it for the next ones. What the agent sends while a turn runs goes to
that turn (:class:`~agentcell.acp_client.turn.AgentTurn`): its updates, its permission requests, its file
reads and writes. Between turns nothing is bound, and the agent's requests are refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
from asyncio.subprocess import PIPE
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from acp.client.connection import ClientSideConnection
from acp.schema import (
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SessionConfigOptionSelect,
    WriteTextFileResponse,
)

from acp import PROTOCOL_VERSION, RequestError

from .._version import __version__
from ..errors import ExternalAgentError

if TYPE_CHECKING:
    from acp.interfaces import Client

    from .turn import AgentTurn

__all__ = ["ExternalAgent"]

STDERR_TAIL = 2000
"""Characters of the agent's stderr a failure quotes."""
STOP_GRACE = 2.0
"""Seconds an agent has to exit after its stdin closes, then after SIGTERM."""
START_TIMEOUT = 60.0
"""Seconds an agent has to answer ``initialize`` and ``session/new``."""
GARBAGE_QUOTE = 200
"""Characters of a line that is not ACP the failure quotes."""
PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when its parent ends."""
GARBLED = "agentcell/garbled"
"""The extension notification the stdout filter passes on in place of the first line that is not ACP."""


class _Client:
    """The client side the agent calls: everything goes to the turn bound now."""

    def __init__(self, agent: ExternalAgent) -> None:
        self.agent = agent

    def on_connect(self, conn: Any) -> None:
        del conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        # Not awaiting anything keeps the updates in the order they came (each runs as its own task).
        if (turn := self.agent.turn) is not None and session_id == self.agent.session_id:
            turn.updates.apply(update)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        agent = self.agent
        if method == GARBLED and params.get("token") == agent._token:  # the agent cannot forge it
            agent.garbled.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        turn = self.agent.turn
        if turn is None or session_id != self.agent.session_id:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return await turn.permission(tool_call, options)

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=await self._turn(session_id).read_text(path, line, limit))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        await self._turn(session_id).write_text(path, content)
        return WriteTextFileResponse()

    def _turn(self, session_id: str) -> AgentTurn:
        turn = self.agent.turn
        if turn is None or session_id != self.agent.session_id:
            raise RequestError.invalid_request({"details": "files are served only while a notebook turn runs"})
        return turn


class ExternalAgent:
    """An ACP agent started as ``command`` in the notebook's folder, for the notebook's turns."""

    def __init__(
        self, name: str, command: Sequence[str], *, env: dict[str, str] | None = None, resume: str | None = None
    ) -> None:
        if not command:
            raise ExternalAgentError("no command to start the agent with")
        self.name = name
        self.command = list(command)
        self.env = env
        self.resume = resume
        """The agent's session of an earlier kernel, loaded at start when the agent can (``loadSession``)."""
        self.turn: AgentTurn | None = None
        """The turn the agent's updates and requests go to, while one runs."""
        self.session_id: str | None = None
        self.conn: ClientSideConnection | None = None
        self.process: asyncio.subprocess.Process | None = None
        self.options: list[SessionConfigOptionSelect] = []
        """The agent's own settings (model, mode…) as it last listed them."""
        self.agent_info: str = name
        self.label = name
        """What the user is told the agent is called: its own name once it said it, else the one chosen."""
        self.pending: dict[str, str] = {}
        """Settings asked for (``%agent acp set``) and not yet sent: sent before the next prompt."""
        self.reported_cost: Decimal | None = None
        """The agent's cumulative cost for its session, as it last reported it."""
        self.garbage: str | None = None
        """The first line the agent wrote on stdout that is not a JSON-RPC message, once it wrote one."""
        self.garbled = asyncio.Event()
        """Set once it did: its turn fails at once, rather than waiting for an answer among the garbage."""
        self._stderr: IO[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pump: asyncio.Task[None] | None = None
        self._token = ""

    @property
    def running(self) -> bool:
        return self.conn is not None and self.process is not None and self.process.returncode is None

    # ------------------------------------------------------------------------------------------ starting

    async def ensure(self, workspace: Path) -> ClientSideConnection:
        """The connection to a running agent with a session in ``workspace``; started when it is not."""
        if self.running and self.conn is not None:
            return self.conn
        await self.aclose()
        executable = shutil.which(self.command[0])
        if executable is None:
            raise ExternalAgentError(_not_installed(self.name, self.command[0]))
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - kept open for the agent's life, closed in aclose
        try:
            env = {**os.environ, **(self.env or {})}
            try:
                # Its own session: the kernel's interrupt (SIGINT to the kernel's process group) must not
                # reach the agent; Stop reaches it as session/cancel.
                process = await asyncio.create_subprocess_exec(
                    executable, *self.command[1:], stdin=PIPE, stdout=PIPE, stderr=self._stderr, env=env,
                    cwd=str(workspace), limit=1 << 24, start_new_session=True, preexec_fn=_ends_with_kernel,
                )  # fmt: skip
            except OSError as exc:
                raise ExternalAgentError(
                    f"{self.name} could not be started ({' '.join(self.command)}): {exc}"
                ) from None
            self.process = process
            self.garbage, self.garbled, self._token = None, asyncio.Event(), secrets.token_hex(8)
            assert process.stdout is not None
            # The SDK skips a line that is not JSON and goes on waiting: an agent that writes garbage would
            # hang its turn. Its lines pass through here first, so the turn hears of it.
            frames = asyncio.StreamReader(limit=1 << 24)
            self._pump = asyncio.create_task(self._filter(process.stdout, frames))
            client = cast("Client", _Client(self))  # the SDK's protocol names every optional method
            conn = self.conn = ClientSideConnection(client, process.stdin, frames)
            self._loop = asyncio.get_running_loop()
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
            )
            info = Implementation(name="agentcell", title="agentcell notebook", version=__version__)
            initialized = await self._answer(
                conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities, client_info=info),
                "initialize",
            )
            if (info_of := initialized.agent_info) is not None:
                self.agent_info = f"{info_of.name} {info_of.version}"
                self.label = info_of.title or info_of.name
            capabilities_of = initialized.agent_capabilities
            session: Any = None
            if self.resume and capabilities_of is not None and capabilities_of.load_session:
                # Its replay of the conversation reaches no turn (none is bound): the notebook shows it already.
                with contextlib.suppress(ExternalAgentError):
                    loading = conn.load_session(cwd=str(workspace), session_id=self.resume, mcp_servers=[])
                    session = await self._answer(loading, "session/load")
                    self.session_id = self.resume
            if session is None:
                session = await self._answer(conn.new_session(cwd=str(workspace), mcp_servers=[]), "session/new")
                self.session_id = session.session_id
            self.resume = None
            self.options = [o for o in session.config_options or [] if isinstance(o, SessionConfigOptionSelect)]
            self.reported_cost = None
        except BaseException:
            await self.aclose()
            raise
        return conn

    async def _answer(self, request: Any, method: str) -> Any:
        answer = asyncio.ensure_future(request)
        garbled = asyncio.ensure_future(self.garbled.wait())
        try:
            await asyncio.wait({answer, garbled}, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
            if answer.done():
                return answer.result()
            if garbled.done():
                raise self.garbled_failure(f"at {method}")
            raise ExternalAgentError(f"{self.name} did not answer {method} within {START_TIMEOUT:.0f} s")
        except (ConnectionError, RequestError) as exc:
            raise self.failure(f"{self.name} failed at {method}: {exc}") from None
        finally:
            answer.cancel()
            garbled.cancel()

    async def _filter(self, source: asyncio.StreamReader, frames: asyncio.StreamReader) -> None:
        """Pass the agent's JSON-RPC lines on to the connection; at the first that is not one, a marker
        the connection hands back (``ext_notification``) after what came before it: the turn fails with
        the agent's words so far shown."""
        partial: list[bytes] = []  # a long message comes in many chunks: joined once, when its line ends
        try:
            while chunk := await source.read(1 << 16):
                end = chunk.rfind(b"\n") + 1
                if not end:
                    partial.append(chunk)
                    continue
                lines = b"".join([*partial, chunk[:end]]) if partial else chunk[:end]
                partial = [chunk[end:]] if end < len(chunk) else []
                frames.feed_data(lines if _all_objects(lines) else b"".join(map(self._framed, lines.split(b"\n")[:-1])))
        except (OSError, ValueError):  # its stdout broke: the connection ends as when it closes
            pass
        finally:
            if rest := b"".join(partial):
                frames.feed_data(self._framed(rest))
            frames.feed_eof()

    def _framed(self, line: bytes) -> bytes:
        """``line`` passed on when it may be a JSON-RPC message (an object; the SDK parses it); the first
        that is not one kept, and the marker passed on in its place."""
        stripped = line.strip()
        if not stripped or (stripped[:1] == b"{" and stripped[-1:] == b"}"):
            return line + b"\n"
        if self.garbage is not None:
            return b""
        self.garbage = stripped[:GARBAGE_QUOTE].decode(errors="replace")
        marker = {"jsonrpc": "2.0", "method": f"_{GARBLED}", "params": {"token": self._token}}
        return json.dumps(marker).encode() + b"\n"

    def garbled_failure(self, when: str) -> ExternalAgentError:
        """The agent wrote something on stdout that is not ACP ``when``: what it was, and that it is stopped."""
        return self.failure(
            f"{self.name} wrote something that is not ACP (JSON-RPC) on its stdout {when}: {self.garbage!r}; "
            "it was stopped, the next message starts it again"
        )

    def failure(self, what: str) -> ExternalAgentError:
        """``what`` happened to the agent, with the end of what it wrote on stderr."""
        tail = self.stderr_tail()
        return ExternalAgentError(f"{what}" + (f"\nits stderr ends:\n{tail}" if tail else ""))

    def stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - STDERR_TAIL))
            return self._stderr.read().decode(errors="replace").strip()
        return ""

    # ------------------------------------------------------------------------------------------ settings

    def want(self, config_id: str, value: str) -> None:
        """Ask for one of the agent's own settings; sent before its next prompt (a magic cannot await)."""
        known = {o.id: o for o in self.options}
        if known and config_id not in known:
            raise ExternalAgentError(f"{self.name} has no setting {config_id!r}; it has {', '.join(known)}")
        if config_id in known and (values := _values(known[config_id])) and value not in values:
            raise ExternalAgentError(f"{self.name}'s {config_id} is one of {', '.join(values)}, not {value!r}")
        self.pending[config_id] = value

    async def apply_pending(self) -> None:
        """Send the settings asked for since the last prompt."""
        while self.pending:
            config_id, value = next(iter(self.pending.items()))
            del self.pending[config_id]
            await self.set_option(config_id, value)

    async def set_option(self, config_id: str, value: str) -> None:
        if self.conn is None or self.session_id is None:
            raise ExternalAgentError(f"{self.name} is not running yet; its settings are listed after its first turn")
        known = {o.id: o for o in self.options}
        if config_id not in known:
            raise ExternalAgentError(f"{self.name} has no setting {config_id!r}; it has {', '.join(known) or 'none'}")
        answer = await self._answer(
            self.conn.set_config_option(config_id=config_id, session_id=self.session_id, value=value),
            "session/set_config_option",
        )
        self.options = [o for o in answer.config_options if isinstance(o, SessionConfigOptionSelect)]

    # ------------------------------------------------------------------------------------------ stopping

    async def aclose(self, *, kill: bool = False) -> None:
        """Stop the agent: its stdin closed, then terminated if it lingers, then killed; at once killed with
        ``kill`` (it is stuck, and the interrupted turn that waits for it has little time)."""
        conn, process, pump = self.conn, self.process, self._pump
        self.conn, self.process, self.session_id, self._pump = None, None, None, None
        try:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
            if process is not None:
                await _stop(process, kill=kill)
            if pump is not None:
                pump.cancel()
        finally:
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None

    def close(self) -> None:
        """Stop the agent from synchronous code (``%agent local``): on its loop when that is running."""
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(lambda: loop.create_task(self.aclose()))


def _all_objects(lines: bytes) -> bool:
    """Whether every line of ``lines`` (each ending in a newline) starts with ``{`` and ends with ``}``: the
    common case, told by counting rather than line by line (a reply of 20,000 deltas is 20,000 lines)."""
    count = lines.count(b"\n")
    return lines[:1] == b"{" and lines.count(b"}\n") == count and lines.count(b"\n{") == count - 1


def _ends_with_kernel() -> None:
    """In the agent's process before it runs: SIGTERM when the kernel's process ends, however it ends.

    A kernel that is killed (a restart, a crash) cannot stop its agent, and some agents do not exit when
    their stdin closes (codex-acp runs on): each restart would leave one behind. Linux only; elsewhere the
    agent's own end of input is all there is.
    """
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _values(option: SessionConfigOptionSelect) -> list[str]:
    """The values a select offers (flat, or in groups)."""
    values: list[str] = []
    for entry in option.options:
        if isinstance(value := getattr(entry, "value", None), str):
            values.append(value)
        values += [o.value for o in getattr(entry, "options", [])]
    return values


async def _stop(process: asyncio.subprocess.Process, *, kill: bool = False) -> None:
    """Its stdin closed, then SIGTERM, then SIGKILL, each to its whole process group (the agent is the leader
    of its own session): an agent started by a wrapper (codex-acp's node script) ends with its wrapper."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    for signal_it in (signal.SIGKILL,) if kill else (None, signal.SIGTERM, signal.SIGKILL):
        if signal_it is not None:
            _signal_group(process, signal_it)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_GRACE)
            _signal_group(process, signal.SIGTERM)  # what it started and left behind
            return


def _signal_group(process: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _not_installed(name: str, executable: str) -> str:
    from .known import install_hint

    hint = install_hint(name)
    return f"{executable} is not installed (not on PATH)" + (f"; {hint}" if hint else "")
