"""The Engine, the composition root: one store, the provider and tool registries, and the services over them
— agents, sessions, the upload store (``engine.files``), the memory stores (``engine.memory_stores``) and
the skills (``engine.skills``).

Everything is built here and nowhere else: ``engine/`` (the turn) receives what it needs from the services
through :class:`~agentcell.engine.deps.TurnDeps`, and never imports them."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .agents import DEFAULT_ADVISORS, AgentsAPI
from .errors import ConfigurationError
from .files import FilesAPI
from .memory import MemoryStoresAPI
from .providers.base import Provider
from .providers.defaults import register_builtin_providers
from .providers.registry import ProviderRegistry
from .records.agent import Agent, McpServer
from .sessions_api import SessionsAPI
from .skills.api import SkillsAPI
from .store.base import Store
from .store.open import open_store, uploads_cache_dir
from .store.sqlite import SQLiteStore
from .tools.base import ToolHost
from .tools.registry import default_registry

if TYPE_CHECKING:
    from .providers.replay import Replayer
    from .tools.mcp import McpServerStatus, McpTools

__all__ = ["Engine"]

T = TypeVar("T")


class Engine:
    """Entry point of the engine API.

    >>> engine = Engine("demo.db")                                     # doctest: +SKIP
    >>> agent = engine.agents.create(name="helper", model="scripted")  # doctest: +SKIP
    >>> session = engine.sessions.create(agent=agent.id)               # doctest: +SKIP
    >>> session.send_sync("hello").text                                # doctest: +SKIP
    'You said: hello'
    """

    def __init__(
        self,
        db: str | os.PathLike[str] | None = None,
        *,
        store: Store | None = None,
        providers: Mapping[str, Provider] | None = None,
        tools: ToolHost | None = None,
        replay: Replayer | None = None,
        advisors: Mapping[str, Sequence[str]] = DEFAULT_ADVISORS,
        data_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """``db``: a SQLite file, or a ``postgresql://`` URL of a database shared by a team (the
        ``postgres`` extra); None: ``$AGENTCELL_DB``, else a file in the Jupyter data directory.
        ``advisors``: which advisor models an agent's model may consult (model pattern -> advisor
        patterns, see ``agents.DEFAULT_ADVISORS``). ``data_dir``: where uploads live with SQLite (by
        default next to the database, ``<db>.files/``), or this kernel's copies of the uploads a database
        keeps. Memory stores live in the store itself."""
        if store is not None and db is not None:
            raise ValueError("pass either a database path or a store, not both")
        self.store: Store = store if store is not None else open_store(db)
        self.providers = ProviderRegistry()
        register_builtin_providers(self.providers)
        for prefix, provider in (providers or {}).items():
            self.providers.register(prefix, provider)
        self.replay = replay
        """Records or replays every model request (see ``providers/replay.py``); None sends them live."""
        if replay is not None:
            self.providers.intercept(replay.wrap)
        # The process-wide registry by default, so @agentcell.tool functions are offered at the next turn.
        self.tools: ToolHost = tools if tools is not None else default_registry()
        self.agents = AgentsAPI(self.store, advisors=advisors)
        blobs = self.store.files
        if blobs is not None:
            cache = Path(data_dir) / "files" if data_dir is not None else uploads_cache_dir(self.store.location)
            self.files = FilesAPI(cache, blobs=blobs)
            """Uploaded files, mounted by sessions as ``{"type": "file", "file_id": ...}``."""
        else:
            base = Path(self.store.location)
            if data_dir is not None:
                base = Path(data_dir) / base.name
            self.files = FilesAPI(base.with_name(f"{base.stem}.files"))
            legacy = base.with_name(f"{base.stem}.memory.db")  # where memory lived before schema 2
            if isinstance(self.store, SQLiteStore) and legacy.is_file():
                self.store.import_memory(legacy)
        self.memory_stores = MemoryStoresAPI(self.store)
        """Memory stores, attached by sessions as ``{"type": "memory_store", "memory_store_id": ...}``."""
        self.skills = SkillsAPI(self.store)
        """Skills (folders in the Agent Skills format), versioned; agents name them as
        ``{"type": "custom", "skill_id": ...}``."""
        self.sessions = SessionsAPI(self)
        self._sync_loop: asyncio.AbstractEventLoop | None = None
        self._sync_lock = threading.Lock()
        self._closing: asyncio.Task[None] | None = None
        self._mcp: dict[str, tuple[list[McpServer], McpTools]] = {}
        """Per tool scope: the servers running for it. The scope is the agent id, so sessions share them,
        unless a session replaced the agent's servers for itself."""

    async def ensure_mcp(self, agent: Agent, scope: str | None = None) -> list[McpServerStatus]:
        """Start the agent's MCP servers (once per tool scope and server list: the agent's id, or a session's
        own scope when it replaced the servers) and register their tools in that scope; returns the status
        of servers that just started. Servers of an earlier list stop."""
        scope = scope or agent.id
        current = self._mcp.get(scope)
        if current is not None and current[0] == agent.mcp_servers:
            return []
        if current is not None:
            del self._mcp[scope]
            await current[1].stop()
        if not agent.mcp_servers:
            return []
        from .tools.mcp import McpTools
        from .tools.registry import ToolRegistry

        if not isinstance(self.tools, ToolRegistry):
            raise ConfigurationError("MCP servers need the engine's tools to be a ToolRegistry")
        tools = McpTools(self.tools, agent.mcp_servers, scope=scope)
        self._mcp[scope] = (list(agent.mcp_servers), tools)
        try:
            return await tools.start()
        except asyncio.CancelledError:
            # Stopped while starting: the next turn starts them again rather than finding them "started".
            if self._mcp.get(scope, (None, None))[1] is tools:
                del self._mcp[scope]
            await asyncio.shield(tools.stop())
            raise

    async def _stop_mcp(self) -> None:
        running, self._mcp = list(self._mcp.values()), {}
        for _, tools in running:
            await tools.stop()

    def run_sync(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the engine's own loop, for callers without one.

        One long-lived loop (rather than ``asyncio.run`` each time) keeps providers' connection pools usable
        across calls.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coroutine.close()
            from .errors import UserError

            raise UserError("an event loop is running here; use `await session.ask(...)` instead of send_sync")
        with self._sync_lock:
            if self._sync_loop is None or self._sync_loop.is_closed():
                self._sync_loop = asyncio.new_event_loop()
            return self._sync_loop.run_until_complete(coroutine)

    async def aclose(self) -> None:
        await self._stop_mcp()
        await self.providers.aclose()
        self.memory_stores.close()
        self.store.close()

    def close(self) -> None:
        """Close providers and the store. Inside a running loop prefer ``await engine.aclose()``; here the
        providers are then closed by a task on that loop."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None:
            self._closing = running.create_task(self._aclose_providers())
        else:
            with self._sync_lock:
                loop = self._sync_loop or asyncio.new_event_loop()
                try:
                    loop.run_until_complete(self._aclose_providers())
                finally:
                    loop.close()
                    self._sync_loop = None
        self.memory_stores.close()
        self.store.close()

    async def _aclose_providers(self) -> None:
        await self._stop_mcp()
        await self.providers.aclose()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
