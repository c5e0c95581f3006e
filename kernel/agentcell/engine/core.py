"""The Engine: one store, the provider and tool registries, and the agents and sessions APIs over them."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from ..agents import AgentsAPI
from ..providers.base import ModelConfig, Provider
from ..providers.registry import ProviderRegistry
from ..providers.scripted import ScriptedProvider
from ..sessions import SessionsAPI
from ..store.base import Store
from ..store.sqlite import SQLiteStore
from ..tools.base import ToolHost
from ..tools.simple import SimpleTools

__all__ = ["Engine"]

T = TypeVar("T")


def _scripted(config: ModelConfig) -> Provider:
    # "scripted" alone echoes; "scripted:/path/to/script.json" plays that file.
    if config.id in ("", "scripted"):
        return ScriptedProvider()
    return ScriptedProvider.from_file(config.id)


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
    ) -> None:
        if store is not None and db is not None:
            raise ValueError("pass either a database path or a store, not both")
        self.store: Store = store if store is not None else SQLiteStore(db)
        self.providers = ProviderRegistry()
        self.providers.register("scripted", _scripted)
        for prefix, provider in (providers or {}).items():
            self.providers.register(prefix, provider)
        self.tools: ToolHost = tools if tools is not None else SimpleTools()
        self.agents = AgentsAPI(self.store)
        self.sessions = SessionsAPI(self)
        self._sync_loop: asyncio.AbstractEventLoop | None = None
        self._sync_lock = threading.Lock()
        self._closing: asyncio.Task[None] | None = None

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
            from ..errors import UserError

            raise UserError(
                "an event loop is running here; use `await session.ask(...)` instead of send_sync"
            )
        with self._sync_lock:
            if self._sync_loop is None or self._sync_loop.is_closed():
                self._sync_loop = asyncio.new_event_loop()
            return self._sync_loop.run_until_complete(coroutine)

    async def aclose(self) -> None:
        await self.providers.aclose()
        self.store.close()

    def close(self) -> None:
        """Close providers and the store. Inside a running loop prefer ``await engine.aclose()``; here the
        providers are then closed by a task on that loop."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None:
            self._closing = running.create_task(self.providers.aclose())
        else:
            with self._sync_lock:
                loop = self._sync_loop or asyncio.new_event_loop()
                try:
                    loop.run_until_complete(self.providers.aclose())
                finally:
                    loop.close()
                    self._sync_loop = None
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
