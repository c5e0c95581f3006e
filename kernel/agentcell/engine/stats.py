"""Session time accounting from status events."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal

__all__ = ["active_seconds"]

Transition = tuple[datetime, str | None, Literal["running", "idle"]]


def active_seconds(transitions: Iterable[Transition], end: datetime) -> float:
    """Seconds during which at least one thread was running; overlapping threads count once.

    ``transitions`` are (time, thread_id, running|idle) in time order. A thread still running at the end is
    counted up to ``end``.
    """
    running: set[str | None] = set()
    since: datetime | None = None
    total = 0.0
    for at, thread, state in transitions:
        if state == "running":
            if not running:
                since = at
            running.add(thread)
        elif thread in running:
            running.discard(thread)
            if not running and since is not None:
                total += (at - since).total_seconds()
                since = None
    if running and since is not None:
        total += max(0.0, (end - since).total_seconds())
    return total
