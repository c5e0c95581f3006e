"""Waking a follower on PostgreSQL: LISTEN on its own connection, reconnecting when the server goes away.

Each event insert notifies ``agentcell_events`` with ``session_id:seq`` when its transaction commits. The
follower listens on a connection of its own and wakes for its session's notifications of a position past
the one it holds; it then reads by position (:mod:`.follow`). Notifications sent while the connection is
down are lost, which is why a reconnect wakes the follower to read again; a slow safety poll covers
anything else.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from types import TracebackType
from typing import Self

import psycopg

from ..errors import StoreError
from .pg_schema import CHANNEL

__all__ = ["NotifyWakeups"]

SAFETY_POLL_SECONDS = 30.0


class NotifyWakeups:
    def __init__(
        self,
        conninfo: str,
        session_id: str,
        *,
        error: Callable[[str, Exception], StoreError],
        reconnect_seconds: float,
    ) -> None:
        self._conninfo = conninfo
        self._prefix = f"{session_id}:"
        self._error = error
        self._reconnect_seconds = reconnect_seconds
        self._conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None

    async def _connect(self) -> None:
        conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
        except BaseException:
            await conn.close()
            raise
        self._conn = conn

    async def _reconnect(self) -> None:
        await self._close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._reconnect_seconds
        delay = 0.05
        while True:
            try:
                await self._connect()
                return
            except psycopg.OperationalError as exc:
                if loop.time() + delay > deadline:
                    raise self._error("follow the session (the database stays unreachable)", exc) from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()

    async def __aenter__(self) -> Self:
        try:
            await self._connect()
        except psycopg.OperationalError as exc:
            raise self._error("listen for new events", exc) from None
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._close()

    async def wait(self, after_seq: int) -> None:
        if self._conn is None:
            await self._reconnect()
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SAFETY_POLL_SECONDS
        try:
            while (left := deadline - loop.time()) > 0:
                async with contextlib.aclosing(self._conn.notifies(timeout=left)) as notes:
                    async for note in notes:
                        if note.payload.startswith(self._prefix) and _seq(note.payload, self._prefix) > after_seq:
                            return
        except psycopg.OperationalError:
            # The server went away (a restart, a failover): what it notified meanwhile is lost, so listen
            # again and let the follower read everything after its position.
            await self._reconnect()


def _seq(payload: str, prefix: str) -> int:
    try:
        return int(payload[len(prefix) :])
    except ValueError:
        return 0
