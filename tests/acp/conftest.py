"""``agentcell acp`` as a subprocess driven by the ACP SDK's own client side, and a recording client.

Every message the agent sends is checked against the SDK's schema models: it must validate, and dumping
what was validated must give back exactly what was sent (the models ignore unknown keys, so a misspelt or
invented field shows up as a difference). The agent may call only the client methods the client
advertised.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResumeSessionResponse,
    SessionNotification,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from pydantic import BaseModel

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block

from ..providers.conftest import server  # noqa: F401 - the loopback Anthropic server, a fixture here too

RESPONSES: dict[str, type[BaseModel]] = {
    "initialize": InitializeResponse,
    "authenticate": AuthenticateResponse,
    "session/new": NewSessionResponse,
    "session/load": LoadSessionResponse,
    "session/resume": ResumeSessionResponse,
    "session/close": CloseSessionResponse,
    "session/fork": ForkSessionResponse,
    "session/list": ListSessionsResponse,
    "session/set_config_option": SetSessionConfigOptionResponse,
    "session/set_mode": SetSessionModeResponse,
    "session/prompt": PromptResponse,
}
AGENT_REQUESTS: dict[str, type[BaseModel]] = {
    "session/request_permission": RequestPermissionRequest,
    "fs/read_text_file": ReadTextFileRequest,
    "fs/write_text_file": WriteTextFileRequest,
}


def _strict(model: type[BaseModel], payload: Any) -> str | None:
    """Why ``payload`` is not exactly an instance of ``model``, or None."""
    try:
        parsed = model.model_validate(payload)
    except ValueError as exc:
        return f"{model.__name__}: {exc}"
    again = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if again != payload:
        sent, kept = json.dumps(payload)[:400], json.dumps(again)[:400]
        return f"{model.__name__} does not round-trip: sent {sent}, the model keeps {kept}"
    return None


@dataclass
class Wire:
    """Every message of the connection; ``problems`` lists those of the agent's that break the schema."""

    advertised: set[str]
    sent: dict[Any, str] = field(default_factory=dict)
    received: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def observe(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction == StreamDirection.OUTGOING:
            if "method" in message and "id" in message:
                self.sent[message["id"]] = message["method"]
            return
        self.received.append(message)
        problem = self._check(message)
        if problem:
            self.problems.append(problem)

    def _check(self, message: dict[str, Any]) -> str | None:
        if message.get("jsonrpc") != "2.0":
            return f"not JSON-RPC 2.0: {message}"
        method = message.get("method")
        if method == "session/update":
            return _strict(SessionNotification, message.get("params"))
        if method is not None:
            if method not in self.advertised:
                return f"the agent called {method}, which the client did not advertise"
            return _strict(AGENT_REQUESTS[method], message.get("params"))
        if "error" in message:
            error = message["error"]
            ok = isinstance(error.get("code"), int) and isinstance(error.get("message"), str) and error["message"]
            return None if ok else f"malformed error {error}"
        answered = self.sent.get(message.get("id"))
        if answered is None:
            return f"a response to nothing: {message}"
        return _strict(RESPONSES[answered], message.get("result"))

    def errors(self) -> list[dict[str, Any]]:
        return [m["error"] for m in self.received if "error" in m]

    def updates_after(self, method: str, session_id: str) -> list[dict[str, Any]]:
        """The ``session/update``s of ``session_id`` that came after the answer to the first ``method`` request."""
        request_id = next(i for i, m in self.sent.items() if m == method)
        answered = next(n for n, m in enumerate(self.received) if m.get("id") == request_id and "method" not in m)
        return [
            m
            for m in self.received[answered + 1 :]
            if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
        ]


class RecordingClient:
    """An editor: records updates, answers permission requests from a script, serves files from memory."""

    def __init__(self, *, answers: list[str] | None = None, files: dict[str, str] | None = None) -> None:
        self.updates: list[Any] = []
        self.permissions: list[RequestPermissionRequest] = []
        self.answers = list(answers or [])
        """Option ids in order; ``cancelled`` answers so, ``hold`` waits until ``release`` is set."""
        self.release = asyncio.Event()
        self.asked = asyncio.Event()
        self.files = dict(files or {})
        self.fs_calls: list[tuple[str, ...]] = []
        self.on_update: Callable[[Any], None] | None = None

    def on_connect(self, conn: Any) -> None:
        del conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        if self.on_update is not None:
            self.on_update(update)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append(RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options))
        self.asked.set()
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if answer == "hold":
            await self.release.wait()
            answer = "cancelled"
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        self.fs_calls.append(("read", path))
        if path not in self.files:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.files[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.fs_calls.append(("write", path, content))
        self.files[path] = content
        return WriteTextFileResponse()

    # ------------------------------------------------------------------------------------------ reading

    def of(self, kind: type[Any]) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def text(self, kind: type[Any] = AgentMessageChunk) -> str:
        return "".join(u.content.text for u in self.of(kind) if isinstance(u.content, TextContentBlock))

    def thoughts(self) -> str:
        return self.text(AgentThoughtChunk)

    def tool_calls(self) -> list[ToolCallStart]:
        return self.of(ToolCallStart)

    def tool_updates(self, tool_call_id: str) -> list[ToolCallProgress]:
        return [u for u in self.of(ToolCallProgress) if u.tool_call_id == tool_call_id]

    def clear(self) -> None:
        self.updates.clear()


@dataclass
class Agent:
    conn: ClientSideConnection
    client: RecordingClient
    wire: Wire
    process: asyncio.subprocess.Process


def agent_command() -> list[str]:
    return [sys.executable, "-m", "agentcell.cli", "acp"]


class RawPeer:
    """A client that writes raw lines to ``agentcell acp`` and reads its stdout line by line (``lines``)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[bytes] = []

    async def send(self, line: bytes | str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() if isinstance(line, str) else line)
        await self.process.stdin.drain()

    async def request(self, request_id: int | str, method: str, params: Any) -> None:
        await self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n")

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 30)
        assert line, "the agent closed its stdout"
        self.lines.append(line)
        message: dict[str, Any] = json.loads(line)  # only JSON-RPC on stdout
        return message

    async def answer(self, request_id: int | str) -> dict[str, Any]:
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def open_session(self, cwd: Path) -> str:
        """``initialize`` (ids -1) and ``session/new`` (-2) answered; the new session's id."""
        await self.request(-1, "initialize", {"protocolVersion": 1})
        await self.answer(-1)
        await self.request(-2, "session/new", {"cwd": str(cwd), "mcpServers": []})
        session_id: str = (await self.answer(-2))["result"]["sessionId"]
        return session_id


@asynccontextmanager
async def raw_agent(env: dict[str, str]) -> AsyncIterator[RawPeer]:
    """``agentcell acp`` with nothing in between: the test writes and reads the lines itself. On leaving,
    stdin is closed and the process must exit on its own, with status 0."""
    process = await asyncio.create_subprocess_exec(
        *agent_command(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        limit=1 << 20,
    )
    try:
        yield RawPeer(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        _, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode(errors="replace")


@asynccontextmanager
async def acp_agent(
    env: dict[str, str], client: RecordingClient | None = None, *, fs: bool = False, initialize: bool = True
) -> AsyncIterator[Agent]:
    """``agentcell acp`` started as the editor would, initialized (advertising ``fs`` when asked)."""
    client = client or RecordingClient()
    advertised = {"session/request_permission"} | ({"fs/read_text_file", "fs/write_text_file"} if fs else set())
    wire = Wire(advertised)
    command, *args = agent_command()
    async with spawn_agent_process(client, command, *args, env=env, observers=[wire.observe]) as (conn, process):
        agent = Agent(conn, client, wire, process)
        if initialize:
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=False
            )
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=capabilities,
                client_info=Implementation(name="agentcell-tests", version="1"),
            )
        yield agent
    assert wire.problems == []


@pytest.fixture
def acp_env(tmp_path: Path) -> dict[str, str]:
    """The agent process's environment: its own store, the scripted model, no keys of the developer's.
    ``$AGENT_PYTHONPATH`` becomes the agent's PYTHONPATH: ``make pytest-acp-sdk011`` runs the agent on the
    ACP SDK 0.11 that way, while the tests' client (an editor) stays on the SDK installed here."""
    data = tmp_path / "jupyter-data"
    data.mkdir(exist_ok=True)
    path = {"PYTHONPATH": os.environ["AGENT_PYTHONPATH"]} if os.environ.get("AGENT_PYTHONPATH") else {}
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "AGENTCELL_DB": str(tmp_path / "shared.db"),
        "AGENTCELL_MODEL": "scripted",
        "JUPYTER_DATA_DIR": str(data),
        "PYTHONUNBUFFERED": "1",
        **path,
    }


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("one\ntwo\n")
    return root


SLOW = {"steps": [{"kind": "text", "text": "x" * 400, "chunk_size": 4, "delay": 0.02}]}
"""A reply of 400 characters that streams for about two seconds: long enough to act while it runs."""


async def streaming_prompt(agent: Agent, session_id: str) -> asyncio.Future[PromptResponse]:
    """A prompt started and already streaming (its first text arrived); await it for the answer."""
    first = asyncio.Event()
    agent.client.on_update = lambda update: first.set() if isinstance(update, AgentMessageChunk) else None
    prompt = asyncio.ensure_future(agent.conn.prompt(session_id=session_id, prompt=[text_block("go")]))
    await first.wait()
    return prompt


async def session_with_one_turn(env: dict[str, str], workspace: Path, text: str) -> str:
    """A session made and prompted once by an earlier ``agentcell acp`` process (gone when this returns)."""
    async with acp_agent(env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block(text)])
    return session.session_id


def script(path: Path, responses: list[dict[str, Any]]) -> str:
    """A scripted-provider script file; returns the model id that plays it."""
    path.write_text(json.dumps(responses))
    return f"scripted:{path}"


def text_of(result: Any) -> str:
    return "".join(c.content.text for c in (result.content or []) if getattr(c, "type", "") == "content")
