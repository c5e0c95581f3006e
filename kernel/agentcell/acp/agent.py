"""agentcell as an ACP agent: the SDK's ``Agent`` protocol over one :class:`~agentcell.Engine`.

Sessions live in the same store the kernel uses (``Engine()``: ``$AGENTCELL_DB``, else the Jupyter data
directory), so a conversation started in a notebook can be loaded in an editor and continued, and the other
way round. A session the editor has open is *live* here: its tools work in the editor's ``cwd``, its
approvals go to the editor as ``session/request_permission``, its file tools go through the editor when it
advertised ``fs``, and its updates stream through one :class:`~agentcell.acp.outbox.Outbox`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AuthenticateResponse,
    AvailableCommandsUpdate,
    ClientCapabilities,
    CloseSessionResponse,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    ForkSessionResponse,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    StopReason,
    TextContentBlock,
    ToolCallUpdate,
)

from acp import RequestError

from .. import Engine, McpServer, OutcomeSpec, Session, __version__
from ..errors import AgentCellError, ConfigurationError, InvalidInputError, SessionBusyError
from ..events import BudgetReached, ContentBlock, ErrorStop, Interrupted, MaxTurns, TextBlock
from ..providers.defaults import default_model
from ..skills.attach import leading_skills, session_pins
from ..tools.base import ApprovalDecision, ApprovalRequest
from ..tools.file_access import install_file_access
from ..tools.permissions import PermissionPolicy
from ..tools.registry import ToolRegistry
from .auth import auth_methods, authenticate
from .client_files import ClientFiles
from .commands import available_commands, parse_command, run_command
from .config import PERMISSIONS, config_options, model_config, model_options, permission_modes
from .content import PromptBlock, invalid_params, leading_text, rpc_error, to_blocks
from .fork import fork_session
from .listing import list_page
from .outbox import Outbox, TextChunk, WriteNow
from .toolcalls import kind_of, title_of
from .updates import UpdateMapper

__all__ = ["ACP_SYSTEM", "AgentCellAcpAgent", "engine_tools"]

log = logging.getLogger(__name__)

ACP_SYSTEM = (
    "You are a coding agent working in the user's workspace through their editor. Use the file tools to read "
    "and change files (paths are relative to the workspace) and bash to run commands. Answer in Markdown, "
    "briefly."
)
_OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow always (this session)", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Reject always (this session)", kind="reject_always"),
]
_ANSWERS: dict[str, tuple[Any, Any]] = {
    "allow_once": ("allow", "once"),
    "allow_always": ("allow", "always"),
    "reject_once": ("deny", "once"),
    "reject_always": ("deny", "always"),
}
McpServers = list[HttpMcpServer | SseMcpServer | McpServerStdio | Any] | None


@dataclass(slots=True)
class _Live:
    session: Session
    cwd: Path
    mapper: UpdateMapper
    outbox: Outbox
    files: ClientFiles
    disposers: list[Callable[[], None]] = field(default_factory=list)
    prompting: bool = False
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    """Set while no prompt is running: the latest ``session/prompt`` has its answer."""

    def __post_init__(self) -> None:
        self.answered.set()


def engine_tools() -> ToolRegistry:
    """The tools of an editor's sessions: the file tools and bash (no notebook namespace for python)."""
    from ..tools.builtin import bash_tool, file_tools

    registry = ToolRegistry()
    registry.register_all([*file_tools(), bash_tool()])
    return registry


def _mcp_servers(servers: McpServers) -> list[dict[str, Any]]:
    converted: list[dict[str, Any]] = []
    for server in servers or []:
        if isinstance(server, McpServerStdio):
            env = {v.name: v.value for v in server.env}
            converted.append(
                {"name": server.name, "type": "stdio", "command": [server.command, *server.args], "env": env}
            )
        elif isinstance(server, HttpMcpServer):
            headers = {h.name: h.value for h in server.headers}
            converted.append({"name": server.name, "type": "http", "url": server.url, "headers": headers})
        else:
            kind = getattr(server, "type", "?")
            raise invalid_params(
                f"the MCP server {getattr(server, 'name', '?')} is of type {kind}; agentcell takes stdio or http"
            )
    return converted


def _cwd_metadata(workspace: Path) -> dict[str, str]:
    """The session's ``cwd`` metadata, which ``session/list`` filters on (none past a metadata value's limit)."""
    return {"cwd": str(workspace)} if len(str(workspace)) <= 512 else {}


def _stop_reason(stop: object, provider_stop: str | None) -> StopReason:
    if isinstance(stop, Interrupted):
        return "cancelled"
    if isinstance(stop, MaxTurns | BudgetReached):
        return "max_turn_requests"
    if provider_stop == "max_tokens":
        return "max_tokens"
    if provider_stop == "refusal":
        return "refusal"
    return "end_turn"


class AgentCellAcpAgent:
    """One per connection. ``engine`` is made on first use (``Engine(tools=...)`` by default)."""

    def __init__(self, engine: Callable[[], Engine] | None = None, *, model: str | None = None) -> None:
        self._make_engine = engine or (lambda: Engine(tools=engine_tools()))
        self._engine: Engine | None = None
        self._model = model
        self._client: Client | None = None
        self._capabilities = ClientCapabilities()
        self._live: dict[str, _Live] = {}
        self.write_now: WriteNow | None = None
        """Set by :func:`~agentcell.acp.wire.serve`: text that finds a session's outbox idle goes out at once."""

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._make_engine()
            # The engine's modules and registries live as long as the process: keep them out of the
            # collector's full passes, which a streaming turn's garbage triggers again and again.
            gc.freeze()
        return self._engine

    @property
    def client(self) -> Client:
        if self._client is None:  # the SDK connects before any message is handled
            raise RequestError.internal_error({"details": "no client connection"})
        return self._client

    async def aclose(self) -> None:
        for session_id in list(self._live):
            await self._detach(session_id)
        if self._engine is not None:
            await self._engine.aclose()

    # ------------------------------------------------------------------------------------------ setup

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        del protocol_version, client_info, kwargs  # v1 is the only version; it is answered whatever was asked
        self._capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                    fork=SessionForkCapabilities(),
                ),
            ),
            auth_methods=auth_methods(),
            agent_info=Implementation(name="agentcell", title="agentcell", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        return authenticate(method_id)

    async def new_session(
        self, cwd: str, mcp_servers: McpServers = None, additional_directories: list[str] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        workspace = self._workspace(cwd)
        engine = self.engine
        try:
            model = default_model(self._model)
            agent = engine.agents.create(
                name=workspace.name or "workspace",
                model=model_config(model),
                system=ACP_SYSTEM,
                mcp_servers=_mcp_servers(mcp_servers),
            )
            session = engine.sessions.create(agent=agent.id, metadata=_cwd_metadata(workspace))
        except ConfigurationError as exc:
            raise RequestError(-32603, str(exc)) from None
        except AgentCellError as exc:
            raise rpc_error(exc) from None
        live = self._attach(session, workspace)
        # A new session has no resources: mounting them now is instant, and spares the first prompt the
        # worker-thread round trip the engine makes to mount them before its first request.
        session.mount()
        self._announce_commands(live)
        return NewSessionResponse(
            session_id=session.id, config_options=config_options(session), modes=permission_modes(session)
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: McpServers = None, **kwargs: Any
    ) -> LoadSessionResponse:
        live = await self._open(cwd, session_id, mcp_servers)
        for event in live.session.events():
            live.outbox.put_all(live.mapper.replay(event))
        live.outbox.put(live.mapper.usage_now(live.session))
        self._announce_commands(live)
        await live.outbox.flush()  # the whole conversation and the commands go before the answer
        return LoadSessionResponse(config_options=config_options(live.session), modes=permission_modes(live.session))

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: McpServers = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        live = await self._open(cwd, session_id, mcp_servers)
        self._announce_commands(live)
        return ResumeSessionResponse(config_options=config_options(live.session), modes=permission_modes(live.session))

    async def fork_session(
        self, cwd: str, session_id: str, mcp_servers: McpServers = None, **kwargs: Any
    ) -> ForkSessionResponse:
        workspace = self._workspace(cwd)
        live = self._live.get(session_id)
        if live is not None and live.prompting:
            raise RequestError(-32600, f"a prompt is running in session {session_id}; fork it once it has ended")
        try:
            source = self.engine.sessions.get(session_id)
            forked = fork_session(self.engine, source, _cwd_metadata(workspace))
            servers = _mcp_servers(mcp_servers)
            if servers and [McpServer.model_validate(s) for s in servers] != forked.agent.mcp_servers:
                forked.update(mcp_servers=servers)
        except AgentCellError as exc:
            raise rpc_error(exc) from None
        live = self._attach(forked, workspace)
        self._announce_commands(live)
        return ForkSessionResponse(
            session_id=forked.id, config_options=config_options(forked), modes=permission_modes(forked)
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        self._get(session_id)
        await self._detach(session_id)
        return CloseSessionResponse()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        return list_page(self.engine, cwd, cursor)

    def _workspace(self, cwd: str) -> Path:
        path = Path(cwd)
        if not path.is_absolute():
            raise invalid_params(f"cwd must be an absolute path, not {cwd!r}")
        if not path.is_dir():
            raise invalid_params(f"cwd {cwd} is not a directory")
        return path.resolve()

    async def _open(self, cwd: str, session_id: str, mcp_servers: McpServers) -> _Live:
        workspace = self._workspace(cwd)
        try:
            session = self.engine.sessions.get(session_id)
        except AgentCellError as exc:
            raise rpc_error(exc) from None
        if session.status == "terminated":
            raise invalid_params(f"session {session_id} was terminated; start a new session")
        try:
            servers = _mcp_servers(mcp_servers)
            if servers and [McpServer.model_validate(s) for s in servers] != session.agent.mcp_servers:
                agent = self.engine.agents.update(session.agent.id, mcp_servers=servers)
                session.update(agent_version=agent.version)
            if "cwd" not in session.metadata and (where := _cwd_metadata(workspace)):
                session.update(metadata={**session.metadata, **where})
        except AgentCellError as exc:
            raise rpc_error(exc) from None
        await self._detach(session_id)  # opened here before: start over in the new cwd
        return self._attach(session, workspace)

    def _attach(self, session: Session, workspace: Path) -> _Live:
        fs = self._capabilities.fs
        loop = asyncio.get_running_loop()
        files = ClientFiles(
            self.client,
            loop,
            session.id,
            read=bool(fs and fs.read_text_file),
            write=bool(fs and fs.write_text_file),
        )
        mapper = UpdateMapper(workspace, lambda: session.agent.model, files.diffs)
        live = _Live(session, workspace, mapper, Outbox(self.client, session.id, self.write_now), files)
        registry = self.engine.tools
        set_policy = getattr(registry, "set_policy", None)
        if set_policy is not None:
            live.disposers.append(
                set_policy(PermissionPolicy(session.record.permissions, workspace), session_id=session.id)
            )
        live.disposers.append(install_file_access(session.id, files.access()))
        session.approver = self._approver(live)
        self._live[session.id] = live
        return live

    def _announce_commands(self, live: _Live) -> None:
        # Queued: after session/new and session/resume it goes behind their answer, so the client knows
        # the session id first; session/load flushes it before its answer, with the replay (ACP-LOAD-002).
        live.outbox.put(
            AvailableCommandsUpdate(
                session_update="available_commands_update", available_commands=available_commands(live.session)
            )
        )

    def _dispose(self, live: _Live) -> None:
        live.session.approver = None
        for dispose in live.disposers:
            dispose()

    async def _detach(self, session_id: str) -> None:
        """Stop serving a session here. A running prompt is cancelled as ``session/cancel`` would, and
        answered (``cancelled``) before the session's updates stop: a client never waits for an answer
        that cannot come."""
        live = self._live.pop(session_id, None)
        if live is not None:
            live.session.interrupt()
            await live.answered.wait()
            self._dispose(live)
            await live.outbox.close()

    def _get(self, session_id: str) -> _Live:
        live = self._live.get(session_id)
        if live is None:
            raise RequestError(
                -32002,
                f"no session {session_id!r} is open here; create one with session/new or open it with session/load",
            )
        return live

    # ------------------------------------------------------------------------------------------ config

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        live = self._get(session_id)
        session = live.session
        if not isinstance(value, str):
            raise invalid_params(f"{config_id} is a select; send one of its option values as a string")
        try:
            if config_id == "model":
                offered = [o.value for o in model_options(session.agent.model.id)]
                if value not in offered:
                    raise invalid_params(f"model {value!r} is not configured here; choose one of {', '.join(offered)}")
                agent = self.engine.agents.update(session.agent.id, model=model_config(value))
                if agent.version != session.agent.version:
                    session.update(agent_version=agent.version)
            elif config_id == "permission":
                self._set_permissions(live, value)
            elif config_id == "budget":
                session.update(budget=None if value == "none" else value)
            else:
                raise invalid_params(f"unknown config option {config_id!r}; agentcell has model, permission and budget")
        except AgentCellError as exc:
            raise rpc_error(exc) from None
        options = config_options(session)
        live.outbox.put(ConfigOptionUpdate(session_update="config_option_update", config_options=options))
        await live.outbox.flush()
        return SetSessionConfigOptionResponse(config_options=options)

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
        live = self._get(session_id)
        try:
            self._set_permissions(live, mode_id)
        except AgentCellError as exc:
            raise rpc_error(exc) from None
        live.outbox.put(
            ConfigOptionUpdate(session_update="config_option_update", config_options=config_options(live.session))
        )
        await live.outbox.flush()
        return SetSessionModeResponse()

    def _set_permissions(self, live: _Live, preset: str) -> None:
        if preset not in PERMISSIONS:
            raise InvalidInputError(f"unknown permission preset {preset!r}; use one of {', '.join(PERMISSIONS)}")
        live.session.update(permissions=preset)
        live.outbox.put(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=preset))

    # ------------------------------------------------------------------------------------------ prompts

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> PromptResponse:
        live = self._get(session_id)
        if live.prompting:
            raise RequestError(-32600, f"a prompt is already running in session {session_id}; cancel it first")
        text = leading_text(prompt)
        command = parse_command(text)
        if command is None:  # `/name` of one of the session's skills activates it for the turn
            skills = leading_skills(text, [p.name for p in session_pins(live.session)])
            return await self._turn(live, to_blocks(prompt), skills)
        result = run_command(self.engine, live.session, *command)
        if result.turn is not None:
            return await self._turn(live, result.turn)
        live.outbox.put(TextChunk("message", None, result.reply))
        if result.commands_changed:
            self._announce_commands(live)
        if result.config_changed:
            options = config_options(live.session)
            live.outbox.put(ConfigOptionUpdate(session_update="config_option_update", config_options=options))
            live.outbox.put(
                CurrentModeUpdate(session_update="current_mode_update", current_mode_id=live.session.record.permissions)
            )
        await live.outbox.flush()
        return PromptResponse(stop_reason="end_turn")

    async def _turn(
        self, live: _Live, message: list[ContentBlock] | OutcomeSpec, skills: Sequence[str] = ()
    ) -> PromptResponse:
        session, outbox, mapper = live.session, live.outbox, live.mapper
        live.prompting = True
        live.answered.clear()
        try:
            await outbox.forward(session.send(message, skills=skills), mapper.live)
            result = session.last_turn
            assert result is not None  # send() ends only once the turn did
        except SessionBusyError as exc:
            raise RequestError(-32600, f"{exc} (in another window or notebook)") from None
        except AgentCellError as exc:
            raise rpc_error(exc) from None
        finally:
            live.prompting = False
            try:
                if session.title is None:  # after the turn: its first text is not kept waiting for a store write
                    self._title(live, message)
                await outbox.flush()
            finally:
                live.answered.set()
        if isinstance(result.stop_reason, ErrorStop):
            raise RequestError(-32603, f"the turn failed: {result.stop_reason.message}", {"stored": True})
        return PromptResponse(stop_reason=_stop_reason(result.stop_reason, mapper.provider_stop))

    @staticmethod
    def _title(live: _Live, message: list[ContentBlock] | OutcomeSpec) -> None:
        """A new session is named after its first prompt."""
        if isinstance(message, OutcomeSpec):
            text = message.description
        else:
            text = " ".join(b.text for b in message if isinstance(b, TextBlock))
        title = " ".join(text.split())[:80]
        if title:
            live.session.update(title=title)
            live.outbox.put(SessionInfoUpdate(session_update="session_info_update", title=title))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        live = self._live.get(session_id)
        if live is None:
            log.warning("session/cancel for %s, which is not open here", session_id)
            return
        live.session.interrupt()

    # ------------------------------------------------------------------------------------------ approvals

    def _approver(self, live: _Live) -> Callable[[ApprovalRequest], Any]:
        async def approve(request: ApprovalRequest) -> ApprovalDecision:
            # The session's own broker holds the request (and remembers "always" answers, as in the
            # notebook); the editor is asked beside it and its answer goes to the broker.
            asking = asyncio.get_running_loop().create_task(self._ask_client(live, request))
            try:
                decision = await live.session.approvals(request)
            finally:
                asking.cancel()
            if decision.allow:
                live.outbox.put_all(live.mapper.started(request.call.tool_use_id))
            return decision

        return approve

    async def _ask_client(self, live: _Live, request: ApprovalRequest) -> None:
        tool_use_id = request.call.tool_use_id
        await live.outbox.flush()  # the tool_call goes before the question about it
        if all(p.call.tool_use_id != tool_use_id for p in live.session.approvals.pending()):
            return
        known = live.mapper.tool_call(tool_use_id)
        title, kind, arguments = known or (
            title_of(request.call.name, request.call.input),
            kind_of(request.call.name),
            request.call.input,
        )
        reason = ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=request.reason))
        tool_call = ToolCallUpdate(
            tool_call_id=tool_use_id,
            title=title,
            kind=kind,
            status="pending",
            raw_input=dict(arguments),
            content=[reason],
        )
        try:
            response = await self.client.request_permission(
                session_id=live.session.id, tool_call=tool_call, options=_OPTIONS
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("session/request_permission failed: %s", exc)
            self._answer(live, tool_use_id, ("deny", "once"), f"the editor could not be asked ({exc})")
            return
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):  # the user cancelled the prompt
            live.session.interrupt()
            return
        self._answer(live, tool_use_id, _ANSWERS.get(outcome.option_id, ("deny", "once")), None)

    @staticmethod
    def _answer(live: _Live, tool_use_id: str, answer: tuple[Any, Any], message: str | None) -> None:
        with contextlib.suppress(InvalidInputError):  # answered meanwhile, or the turn was interrupted
            live.session.confirm_tool(tool_use_id, answer[0], remember=answer[1], message=message)
