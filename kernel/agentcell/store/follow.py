"""Following a session's log as it commits: read by position, wake on a hint.

A follower keeps the position (the session's ``seq``) of the last event it yielded and always reads
everything after it. A wake-up — a PostgreSQL notification, or the tick of SQLite's poll — is only a hint
that there may be more, so one that is missed, merged with others or spurious loses and repeats nothing.
Listening starts before the first read, so nothing that commits in between goes unnoticed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

if TYPE_CHECKING:
    from ..events import Event

__all__ = ["FOLLOW_BATCH", "POLL_SECONDS", "PollWakeups", "ReadAfter", "Wakeups", "follow_log"]

POLL_SECONDS = 0.05
"""How often a follower of a SQLite file looks for new events."""

FOLLOW_BATCH = 1000
"""The most events one read returns: a follower that starts at the beginning of a long session does not
hold all of it in memory at once."""

ReadAfter = Callable[[int], "list[tuple[int, Event]]"]
"""The session's events after a position, with their positions, in order, at most FOLLOW_BATCH of them."""


class Wakeups(Protocol):
    async def __aenter__(self) -> Self:
        """Start listening (before the follower's first read)."""

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    async def wait(self, after_seq: int) -> None:
        """Return when events after ``after_seq`` may have committed."""


class PollWakeups:
    """Wake every ``interval`` seconds: a file has no way to tell another process it changed."""

    def __init__(self, interval: float = POLL_SECONDS) -> None:
        self._interval = interval

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    async def wait(self, after_seq: int) -> None:
        del after_seq
        await asyncio.sleep(self._interval)


async def follow_log(read_after: ReadAfter, wakeups: Wakeups, start: int) -> AsyncIterator[Event]:
    """Yield the events after position ``start``, then each new one, until ``session.status_terminated``."""
    position = start
    async with wakeups:
        while True:
            # Reads block (a socket, a file lock): off the loop, so a notebook's follower never stalls it.
            rows = await asyncio.to_thread(read_after, position)
            for seq, event in rows:
                position = seq
                yield event
                if event.type == "session.status_terminated":
                    return
            if len(rows) < FOLLOW_BATCH:
                await wakeups.wait(position)
