"""Session time accounting from status events.

Two figures, as seed 002 defines them: ``active_seconds`` is the time the session spent running, summing
each thread's own running time (the primary thread's ``session.status_running``/``_idle``, each spawned
thread's ``session.thread_status_running``/``_idle``); ``runtime_seconds`` is the time during which at least
one thread was running, overlaps counted once — the duration a session's runtime cost is priced on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..events import SessionStatusIdle, SessionStatusRunning, SessionThreadStatusIdle, SessionThreadStatusRunning
from ..records.common import utc_now
from .log import SessionLog

__all__ = ["SessionStats", "Transition", "runtime_seconds", "session_stats", "thread_seconds"]

Transition = tuple[datetime, str | None, Literal["running", "idle"]]


def runtime_seconds(transitions: Iterable[Transition], end: datetime) -> float:
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


def thread_seconds(transitions: Iterable[Transition], end: datetime) -> float:
    """Seconds each thread spent running, summed over the threads (a thread still running counts up to
    ``end``)."""
    since: dict[str | None, datetime] = {}
    total = 0.0
    for at, thread, state in transitions:
        if state == "running":
            since.setdefault(thread, at)
        elif thread in since:
            total += (at - since.pop(thread)).total_seconds()
    return total + sum(max(0.0, (end - started).total_seconds()) for started in since.values())


@dataclass(frozen=True, slots=True)
class SessionStats:
    duration_seconds: float
    """Since creation; frozen at termination."""
    active_seconds: float
    """Time spent running, each thread's own running time summed (two threads running for a second add
    two seconds)."""
    runtime_seconds: float
    """Time during which at least one thread was running, overlaps counted once: what runtime is priced on."""


_STATUS_TYPES = (
    "session.status_running",
    "session.status_idle",
    "session.status_terminated",
    "session.thread_status_running",
    "session.thread_status_idle",
)


def session_stats(log: SessionLog, *, running: bool) -> SessionStats:
    """The session's stats from its status events; ``running``: a turn is under way in this process."""
    now = utc_now()
    record = log.record
    end = record.terminated_at or now
    transitions: list[Transition] = []
    last_seen: datetime = record.created_at
    for event in log.events(types=_STATUS_TYPES):
        last_seen = event.created_at
        if isinstance(event, SessionStatusRunning | SessionThreadStatusRunning):
            transitions.append((event.created_at, event.thread_id, "running"))
        elif isinstance(event, SessionStatusIdle | SessionThreadStatusIdle):
            transitions.append((event.created_at, event.thread_id, "idle"))
    # A thread left running by a process that died stopped when its last status was written.
    last = log.last_event(None)
    last_event_time = last.created_at if last is not None else record.created_at
    active_end = now if running else min(end, max(last_seen, last_event_time))
    return SessionStats(
        duration_seconds=max(0.0, (end - record.created_at).total_seconds()),
        active_seconds=thread_seconds(transitions, active_end),
        runtime_seconds=runtime_seconds(transitions, active_end),
    )
