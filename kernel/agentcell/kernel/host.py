"""The notebook's agent host: one engine, the notebook's session, and its configuration.

One :class:`NotebookAgent` lives in each IPython shell that loaded agentcell (the kernel preloads it).
It finds the notebook's session through the path Jupyter gives the kernel (``JPY_SESSION_NAME``), so a
restarted kernel, or the notebook reopened tomorrow, continues the same conversation; a console without
a path gets a new session per kernel. Configuration is the ``AgentCell`` traitlets object, reachable as
``%config AgentCell.*``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets import Bool, Enum, Float, Int, TraitError, Unicode, default, observe, validate
from traitlets.config import Configurable

from ..errors import PermissionChangeRefused, TurnError, TurnInterrupted, UserError
from ..records.common import CACHE_CHOICES, PERMISSION_PRESETS
from .notebook_id import NotebookIdentity, NotebookIdentityAnswer, notebook_user

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..acp_client import ExternalAgent
    from ..acp_client.recording import ExchangeReplay
    from ..core import Engine
    from ..engine.outcomes import OutcomeSpec
    from ..engine.workflows import WorkflowRun
    from ..records.agent import Agent
    from ..render.renderer import RendererFactory, TurnRenderer
    from ..sessions import Session, TurnResult
    from .magics.proposals import WaitingProposals
    from .magics.workflow import WorkflowCell
    from .turn_context import NotebookContextSource

__all__ = ["DEFAULT_SYSTEM", "LOCAL_WINDOW_CHARS", "AgentCell", "NotebookAgent"]

LOCAL_WINDOW_CHARS = 16_000
"""About the characters of the embedded local model's 4,096-token window."""

DEFAULT_SYSTEM = (
    "You are an assistant working inside a Jupyter notebook. Answer in Markdown. When computing or "
    "inspecting data helps, use the python tool: it runs in the notebook's own namespace, so the user's "
    "variables are there and what you define stays for the next cells."
)


class AgentCell(Configurable):
    """agentcell's settings (``%config AgentCell.model = "claude-…"``)."""

    model = Unicode("", help="Model for new notebooks; empty picks the default (see `%model`).").tag(config=True)
    system = Unicode(DEFAULT_SYSTEM, help="System prompt for new notebooks.").tag(config=True)
    permissions = Enum(PERMISSION_PRESETS, "workspace-write", help="Permission preset for new sessions.").tag(
        config=True
    )
    budget = Unicode("", help="Budget in USD for new sessions; empty for none.").tag(config=True)
    python_tool = Enum(
        ("ask", "allow"),
        "ask",
        help="Under workspace-write the python tool asks before it runs (its code is not sandboxed); 'allow' lets "
        "it run unasked. Only you can set it (not the agent's code); AGENTCELL_PYTHON_TOOL sets it at start.",
    ).tag(config=True)
    db = Unicode("", help="Database file; empty uses $AGENTCELL_DB or the Jupyter data directory.").tag(config=True)
    max_updates_per_second = Float(30.0, help="Most display updates a streaming turn sends per second.").tag(
        config=True
    )
    cache = Enum(
        CACHE_CHOICES,
        "5m",
        help="Prompt caching: 5-minute or 1-hour entries on Anthropic models (a llama.cpp server's and the "
        "local model's cache either way), or off. A model's own extra['cache'] overrides it.",
    ).tag(config=True)
    renderer = Enum(
        ("widget", "markdown"),
        "widget",
        help="How a turn is shown: the turn widget (approvals, Stop, cost meter), or plain Markdown updates.",
    ).tag(config=True)

    context = Enum(
        ("on", "off", "cells", "variables"),
        "on",
        help="What each turn takes from the notebook: the code cells run since the previous turn and a summary "
        "of your variables (on), only one of them, or nothing (off). `%context` shows and switches it.",
    ).tag(config=True)
    context_cell_chars = Int(10_000, help="Most characters of one code cell (source and outputs) a turn sends; "
                             "the middle of longer ones is cut, with a note.").tag(config=True)  # fmt: skip
    context_turn_chars = Int(60_000, help="Most characters of code cells one turn sends; cells from the middle "
                             "of a longer run are left out, with a note.").tag(config=True)  # fmt: skip
    context_images = Int(4, help="Most images of code cells one turn sends (the rest as their text).").tag(config=True)
    propose_cells = Bool(
        True,
        help="Let the agent propose cells (new ones, edits, deletions) that you accept (`%accept N`, or the lab "
        "extension's buttons) or reject (`%reject N`); never under read-only. Off: the agent is offered no "
        "notebook_edit tool and shown no cell ids.",
    ).tag(config=True)

    host: NotebookAgent | None = None

    @observe("model")
    def _model_changed(self, change: dict[str, Any]) -> None:
        if self.host is not None and self.host.has_session and change["new"]:
            self.host.set_model(change["new"])

    @observe("cache")
    def _cache_changed(self, change: dict[str, Any]) -> None:
        if self.host is not None:
            self.host.apply_cache_setting()

    @default("python_tool")
    def _python_tool_default(self) -> str:
        from ..tools.python_access import python_tool_setting  # read from the environment once, at start

        return python_tool_setting()

    @validate("permissions", "budget", "python_tool")
    def _only_by_the_user(self, proposal: dict[str, Any]) -> Any:
        # Checked before the value is taken: a refused change leaves the setting new sessions get as it was.
        from ..tools.authority import refuse_from_tool_code

        try:
            refuse_from_tool_code(f"setting AgentCell.{proposal['trait'].name}")
        except PermissionChangeRefused as exc:
            raise TraitError(str(exc)) from None  # a TraitError makes traitlets put the old value back
        return proposal["value"]

    @observe("python_tool")
    def _python_tool_changed(self, change: dict[str, Any]) -> None:
        from ..tools.python_access import set_python_tool

        set_python_tool(change["new"])

    @observe("permissions")
    def _permissions_changed(self, change: dict[str, Any]) -> None:
        if self.host is not None and self.host.has_session:
            self.host.session.update(permissions=change["new"])


def default_model(explicit: str = "") -> str:
    """explicit (``%model``, ``AgentCell.model``) > $AGENTCELL_MODEL > a key that is set > the local model."""
    from ..providers.defaults import default_model as providers_default

    return providers_default(explicit or None)


_wakeup_sockets: dict[int, tuple[socket.socket, socket.socket]] = {}
"""Per loop: the socket pair whose write end is the signal wakeup fd. Held for the life of the process: a
closed write end's fd number would be reused by another file (the SQLite database) and the signal
handler would write into it."""


def _wake_loop_on_signals(loop: asyncio.AbstractEventLoop) -> None:
    """Make a signal wake the kernel's event loop whichever thread receives it.

    Linux hands a process-directed SIGINT to any thread. When a worker thread (the python tool's code, the
    local model) gets it, Python only flags it for the main thread, which sleeps in the selector while the
    turn awaits that worker: the interrupt would wait for the worker to finish. A wakeup fd watched by the
    loop makes the selector return, so the kernel's SIGINT handler runs at once.
    """
    if id(loop) in _wakeup_sockets or threading.current_thread() is not threading.main_thread():
        return
    receive, send = socket.socketpair()
    receive.setblocking(False)
    send.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(send.fileno(), warn_on_full_buffer=False)
    except ValueError:  # not the main interpreter's main thread
        receive.close()
        send.close()
        return
    if previous != -1:  # someone else relies on theirs: leave it
        signal.set_wakeup_fd(previous)
        receive.close()
        send.close()
        return
    loop.add_reader(receive.fileno(), lambda: receive.recv(4096))
    _wakeup_sockets[id(loop)] = (receive, send)


class NotebookAgent:
    """What ``await __agentcell__.ask(text)`` calls. Heavy parts (engine, store) load on first use."""

    def __init__(self, shell: InteractiveShell, config: AgentCell) -> None:
        self.shell = shell
        self.config = config
        config.host = self
        # Jupyter servers give a kernel its notebook's path in JPY_SESSION_NAME; VS Code instead sets
        # __vsc_ipynb_file__ in the namespace when it starts the kernel, before `%load_ext agentcell`.
        vscode_path = shell.user_ns.get("__vsc_ipynb_file__")
        self.notebook_path: str | None = os.environ.get("JPY_SESSION_NAME") or (
            vscode_path if isinstance(vscode_path, str) and vscode_path else None
        )
        self.renderer_factory: RendererFactory = self._default_renderer
        self._engine: Engine | None = None
        self._session: Session | None = None
        self.identity = NotebookIdentity(self.notebook_path)
        """Which notebook this is, hence which session is its conversation (see notebook_id.py)."""
        self.last: TurnResult | None = None
        """The latest turn's result."""
        self.next_tool_choice: tuple[str, ...] = ()
        """Set by ``%tools force NAME…``: the next turn's first requests must call these tools, in order."""
        self.context_source: NotebookContextSource | None = None
        """The code cells and variables each turn takes (set by the extension when it loads)."""
        self._external: ExternalAgent | None = None
        self._external_restored = False
        self._exchange_replay: ExchangeReplay | None = None

    def _default_renderer(self, session: Session) -> TurnRenderer:
        rate = self.config.max_updates_per_second
        # Imported here: the kernel starts without the engine (pydantic) loaded.
        if self.config.renderer == "markdown":
            from ..render.markdown_renderer import MarkdownRenderer

            return MarkdownRenderer(session, max_rate=rate)
        from ..render.widget_renderer import WidgetRenderer

        return WidgetRenderer(session, max_rate=rate)

    # ------------------------------------------------------------------------------------------ engine

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from ..core import Engine
            from ..store import open_store
            from .replay_mode import notebook_replayer
            from .tools import notebook_tools

            store = open_store(self.config.db or None)
            replay = notebook_replayer(self.notebook_path, self.shell, store)
            self._engine = Engine(store=store, tools=notebook_tools(self.shell), replay=replay)
            self.apply_cache_setting()
        return self._engine

    def apply_cache_setting(self) -> None:
        """``AgentCell.cache`` for every model that does not set its own (the default leaves the providers'
        own, which is the same, and keeps recorded requests as they were)."""
        if self._engine is not None:
            value = self.config.cache
            self._engine.providers.cache = None if value == "5m" else value

    @property
    def has_session(self) -> bool:
        return self._session is not None

    @property
    def session(self) -> Session:
        """The notebook's session: its own (its fork, for a copy), or a new one."""
        if self._session is None:
            self._session = self._notebook_session()
            self.identity.take_note()  # said with the notices, in the cell that looked the session up
            for notice in self.identity.take_notices():
                print(f"agentcell: {notice}")
        else:
            self.identity.claim(self.engine.store, self._session)
        return self._session

    def _notebook_session(self) -> Session:
        # `agentcell run` asks once; a notebook replayed from its recording starts its conversation afresh
        replay = self.engine.replay
        fresh = os.environ.pop("AGENTCELL_NEW_SESSION", "") == "1" or (replay is not None and replay.from_start)
        if (found := self.identity.resolve(self.engine, fresh=fresh)) is not None:
            return found
        session = self.new_session()
        self.identity.restore(self.engine.store, session)  # the notebook shows turns the store lost
        return session

    def new_session(self, *, agent_id: str | None = None) -> Session:
        """Start afresh (keeping the current agent unless told otherwise) and map the notebook to it."""
        engine = self.engine
        if agent_id is None and self._session is not None:
            agent_id = self._session.agent.id
        if agent_id is None:
            name = Path(self.notebook_path).stem if self.notebook_path else "console"
            model_id = default_model(self.config.model)
            model: str | dict[str, Any] = model_id
            if model_id.startswith("local"):
                # The tiny local model rambles and samples badly: short, greedy answers by default.
                model = {"id": model_id, "max_tokens": 256, "temperature": 0}
            agent = engine.agents.create(name=name or "notebook", model=model, system=self.config.system or None)
            agent_id = agent.id
        title = Path(self.notebook_path).name if self.notebook_path else None
        session = engine.sessions.create(
            agent=agent_id,
            title=title,
            budget=self.config.budget or None,
            permissions=self.config.permissions,
            principal={"type": "user", "name": notebook_user()},  # whose notebook: see notebook_id.py
        )
        self._session = session
        self._remember(session)
        return session

    def resume(self, session_id: str) -> Session:
        session = self.engine.sessions.get(session_id)
        if session.status == "terminated":
            raise UserError(f"session {session_id} was terminated; `%session new` starts a new one")
        self._session = session
        self._remember(session)
        return session

    def _remember(self, session: Session) -> None:
        self.identity.remember(self.engine.store, session)

    def adopt_notebook_id(self, notebook_id: str) -> None:
        """The front end's word for the notebook's id (agentcell's JupyterLab extension says it before the
        notebook's first cell runs in this kernel)."""
        self.identity.adopt(notebook_id)

    def identify_notebook(self, notebook_id: str | None = None, path: str | None = None) -> NotebookIdentityAnswer:
        """What a front end asks before a notebook's cells run, and when it is renamed (a user expression,
        with the notebook's id and its path under the server's root): the notebook's session is looked up
        (a copy forks), and the answer is the id the notebook must carry and what to tell the user."""
        self.identity.adopt(notebook_id, path)
        if self._session is None:  # looked up now, so a copy forks before its first cell; the notices go back
            self._session = self._notebook_session()
        else:
            self.identity.claim(self.engine.store, self._session)
            self.identity.follow(self.engine.store, self._session)
        return NotebookIdentityAnswer(self.identity.notebook_id, self.identity.take_notices())

    # ------------------------------------------------------------------------------------------ agent edits

    def _update_agent(self, **changes: Any) -> Agent:
        session = self.session
        agent = self.engine.agents.update(session.agent.id, **changes)
        if agent.version != session.agent.version:
            session.update(agent_version=agent.version)
        return agent

    def set_model(self, model: str | dict[str, Any]) -> Agent:
        return self._update_agent(model=model)

    def check_model(self, model: str | dict[str, Any]) -> None:
        """Raise, saying what to do, unless a provider serves ``model`` and has what it needs to send a
        request (its key or base URL): said when the model is chosen, not at the first turn."""
        from ..records.model import ModelConfig

        config = ModelConfig.model_validate(model if isinstance(model, dict) else {"id": model})
        self.engine.providers.resolve(config).provider.check_ready()

    def set_system(self, system: str | None) -> Agent:
        return self._update_agent(system=system)

    def update_agent(self, **changes: Any) -> Agent:
        return self._update_agent(**changes)

    # ------------------------------------------------------------------------------------------ turns

    async def outcome(self, line: str, body: str) -> None:
        """A ``%%outcome`` cell (the router sends it here): define the outcome and work toward it."""
        from .magics.outcome import run_outcome_cell

        await run_outcome_cell(self, line, body)

    async def ask(self, text: str | OutcomeSpec, *, propose: bool = False) -> None:
        """Run one turn for a prose cell, streaming into the cell's output; a turn that ended in an error
        fails the cell. ``propose``: the agent may propose cells in this turn whatever
        ``AgentCell.propose_cells`` says (``%fix``)."""
        from ..events import ErrorStop

        tool_choice, self.next_tool_choice = self.next_tool_choice, ()

        async def turn(session: Session, cell_id: str | None) -> None:
            skills: list[str] = []
            if isinstance(text, str):  # `/name` (or `$name`) of one of its skills at the start: activate it
                from ..skills.attach import leading_skills, session_pins

                skills = leading_skills(text, [p.name for p in session_pins(session)])
            # What the notebook showed since the previous turn goes with the message (not with an outcome).
            source = self.context_source
            context = None
            if source is not None and isinstance(text, str):
                # The embedded model's window is 4,096 tokens: a turn's cells get a quarter of it at most.
                small = session.agent.model.id.startswith("local")
                editable = propose or self.config.propose_cells
                context = source.build(take=True, window_chars=LOCAL_WINDOW_CHARS if small else None, editable=editable)
                if context is not None and context.variables:
                    self._offer_inspect_tool()
            self.last = await session.ask(
                text, tool_choice=tool_choice, cell_id=cell_id, skills=skills, context=context
            )

        await self._rendered(turn)
        if self.last is not None and isinstance(self.last.stop_reason, ErrorStop):
            raise TurnError(self.last.stop_reason.message)

    def answer_proposal(
        self, number: int, outcome: str, *, cell_id: str | None = None, source: str | None = None,
        run: bool = False, message: str = "",
    ) -> str:  # fmt: skip
        """A front end's answer to the agent's proposed cell ``number`` (``agentcell run --accept-cells``, the
        lab extension): appended for the next request; what to tell the user."""
        from .magics.proposals import answer_proposal

        return answer_proposal(self, number, outcome, cell_id=cell_id, source=source, run=run, message=message)

    def pending_proposals(self) -> list[int]:
        """The numbers of the agent's proposed cells still waiting (a reopened notebook's cards cannot tell)."""
        from .magics.proposals import session_cells

        return [p.number for p in session_cells(self).pending()]

    def waiting_proposals(self) -> WaitingProposals:
        """The agent's proposed cells still waiting, whole: a notebook reopened after the agent proposed them
        with its tab closed has no card to show them by (the lab extension places them). Asked as a notebook
        opens, so it never opens a session: which one is the notebook's is known only once it has said its
        id (``identify_notebook``, before its first run); a kernel with none yet has run no turn."""
        from .magics.proposals import WaitingProposals, session_cells

        return WaitingProposals(session_cells(self).pending() if self.has_session else [])

    def _offer_inspect_tool(self) -> None:
        """Once the notebook has named the user's variables to the model, it may look at one more closely
        (offered from then on: a notebook that never did keeps its tools, and its recordings their keys)."""
        from ..tools.registry import ToolRegistry
        from .namespace import INSPECT_TOOL, inspect_variable_tool

        tools = self.engine.tools
        if isinstance(tools, ToolRegistry) and tools.get(INSPECT_TOOL) is None:
            tools.register(inspect_variable_tool(self.shell.user_ns, self.shell.user_ns_hidden))

    async def workflow(self, cell: WorkflowCell) -> WorkflowRun | None:
        """A ``%%workflow`` cell (the router sends it here through ``workflow_cell``): run the plan as one
        turn, rendered like a prose cell's; None when the turn was abandoned."""
        from IPython.core.error import UsageError

        try:  # a plan that cannot run is refused before the cell shows a turn
            self.session.check_workflow(cell.plan, inputs=cell.inputs, max_concurrency=cell.options.get(
                "max_concurrency"), budget=cell.options.get("budget"))  # fmt: skip
        except UserError as exc:
            raise UsageError(str(exc)) from None
        run: WorkflowRun | None = None

        async def turn(session: Session, cell_id: str | None) -> None:
            nonlocal run
            run = await session.run_workflow(cell.plan, inputs=cell.inputs, cell_id=cell_id, **cell.options)

        await self._rendered(turn)
        return run

    async def workflow_cell(self, line: str, body: str) -> None:
        from .magics.workflow import run_workflow_cell

        await run_workflow_cell(self, line, body)

    async def _rendered(self, turn: Callable[[Session, str | None], Awaitable[None]]) -> None:
        """Run ``turn`` on the notebook's session with its stream rendered into the cell's output."""
        from IPython.core.error import UsageError

        from .replay_mode import current_cell

        _wake_loop_on_signals(asyncio.get_running_loop())
        try:
            session = self.session
            if (note := self.identity.take_note()) is not None:  # the front end was told before the first cell
                print(f"agentcell: {note}")
            renderer = self.renderer_factory(session)
        except UserError as exc:
            raise UsageError(str(exc)) from None
        # The renderer listens to the session itself rather than to this coroutine: when an interrupt
        # cancels us, the turn's closing events (answered tool calls, the idle status) still reach it, and
        # the session's record of the turn (last_turn) is complete however it ended.
        before = session.last_turn
        external = self.external
        if external is not None:
            from ..acp_client import driver_for

            session.driver = driver_for(external, self.exchange_replay)
        else:
            session.driver = None
        unsubscribe = session.subscribe(renderer.on_item)
        # The cell the front end is running: running it again replaces its turn on the active path.
        cell_id = current_cell(self.shell).id
        try:
            await turn(session, cell_id)
        except UserError as exc:
            raise UsageError(str(exc)) from None
        except asyncio.CancelledError:
            # IPython would print a traceback through agentcell's internals; say what happened instead.
            raise TurnInterrupted from None
        finally:
            unsubscribe()
            ended = session.last_turn
            renderer.close(ended if ended is not before else None)
            if external is not None:
                from .acp_choice import remember_session

                remember_session(session, external)

    @property
    def external(self) -> ExternalAgent | None:
        """The ACP agent answering this notebook's messages (``%agent acp``); None: agentcell's own engine.
        A restarted kernel takes up the notebook's earlier choice (``acp_choice.py``)."""
        if not self._external_restored:
            self._external_restored = True
            from .acp_choice import restored_choice

            self._external = restored_choice(self.session)
        return self._external

    @property
    def exchange_replay(self) -> ExchangeReplay | None:
        """The external agent's exchange under the notebook's replay mode (None without a notebook)."""
        replayer = self.engine.replay
        if replayer is not None and (self._exchange_replay is None or self._exchange_replay.replayer is not replayer):
            from ..acp_client.recording import ExchangeReplay

            self._exchange_replay = ExchangeReplay(replayer)
        return self._exchange_replay if replayer is not None else None

    def use_external(self, agent: ExternalAgent | None) -> None:
        """Send this notebook's messages to ``agent`` from the next turn (None: back to agentcell's own
        engine), remembered in the session for a restarted kernel; the agent used before is stopped."""
        from .acp_choice import forget_choice, remember_choice

        previous = self.external
        self._external = agent
        if previous is not None and previous is not agent:
            previous.close()
        if agent is None:
            forget_choice(self.session)
        else:
            remember_choice(self.session, agent)

    def close(self) -> None:
        external, self._external = self._external, None
        if external is not None:
            external.close()
        engine, self._engine = self._engine, None
        self._session = None
        if engine is not None:
            engine.close()
