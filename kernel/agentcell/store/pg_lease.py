"""One driver per session on PostgreSQL: a lease renewed while the turn runs, taken over when it lapses.

A kernel takes a session's lease when a turn starts: a row in ``agentcell.session_leases`` naming it (a
random token, with its host and pid for people to read) and an expiry on the database's clock, so the
kernels' own clocks never matter (a kernel's own estimate of how long its lease is certainly still live
only ever errs short). One daemon thread per store renews every lease it holds every third of
the lease's length; the turn gives it back when it ends. While the holder lives, another kernel asking
for the lease is refused with the holder's name and expiry. When the holder dies (a SIGKILL, a lost
machine) nobody renews it, and it can be taken once it has lapsed. A holder that comes back after losing
it cannot write either: an append checks that no other kernel holds a live lease, unless this kernel's
own lease is certainly still live — and two writers of one session collide on its ``seq`` regardless.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from ..errors import SessionDrivenElsewhereError, StoreError

__all__ = ["LEASE_SECONDS", "LIVE_HOLDER", "OTHER_LIVE_HOLDER", "PgLease", "PgLeases", "driven_elsewhere"]

LEASE_SECONDS = 15.0
"""How long a lease lasts unless renewed (renewed every third of that): how soon a dead kernel's session
can be taken over, and how long a live one may go without reaching the database before losing it."""

T = TypeVar("T")
Run = Callable[[str, Callable[[Any], T]], T]
"""The store's way to run work on a pooled connection, retrying while the server is unreachable."""

_TAKE = """
INSERT INTO agentcell.session_leases AS l (session_id, holder, host, pid, acquired_at, expires_at)
VALUES (%(session)s, %(holder)s, %(host)s, %(pid)s, now(), now() + make_interval(secs => %(ttl)s))
ON CONFLICT (session_id) DO UPDATE
    SET holder = excluded.holder, host = excluded.host, pid = excluded.pid,
        acquired_at = CASE WHEN l.holder = excluded.holder THEN l.acquired_at ELSE excluded.acquired_at END,
        expires_at = excluded.expires_at
    WHERE l.holder = excluded.holder OR l.expires_at <= now()
RETURNING holder
"""
LIVE_HOLDER = "SELECT host, pid, expires_at FROM agentcell.session_leases WHERE session_id = %s AND expires_at > now()"
"""Who holds a live lease on a session (host, pid, expiry)."""
OTHER_LIVE_HOLDER = LIVE_HOLDER + " AND holder <> %s"
"""The same, when it is not the kernel asking."""
_RELEASE = "DELETE FROM agentcell.session_leases WHERE session_id = %s AND holder = %s"


def driven_elsewhere(session_id: str, holder: tuple[str, int, datetime] | None) -> SessionDrivenElsewhereError:
    who = "another kernel"
    if holder is not None:
        host, pid, expires = holder
        until = expires.astimezone(UTC).strftime("%H:%M:%S UTC")
        who = f"another kernel (pid {pid} on {host}; its lease runs until {until} and is renewed while it works)"
    return SessionDrivenElsewhereError(
        f"session {session_id} is being driven by {who}. Read it or follow it from here (`%session follow "
        f"{session_id}`, `agentcell follow {session_id}`), and drive it once that kernel's turn has ended; "
        "nothing was written.",
        session_id,
    )


class PgLease:
    """A held lease; :meth:`release` gives it back."""

    def __init__(self, leases: PgLeases, session_id: str, valid_until: float) -> None:
        self._leases = leases
        self.session_id = session_id
        self.lost = False
        """Set when a renewal found that another kernel had taken the session over."""
        self.valid_until = valid_until
        """A monotonic time before which the lease is certainly still this kernel's: it was asked for (taken
        or renewed) at ``valid_until - seconds``, and the database set its expiry no earlier than that."""

    def live(self) -> bool:
        """Certainly still held, with a margin (a tenth of the lease) for the clocks' drift."""
        return not self.lost and time.monotonic() < self.valid_until - self._leases.seconds / 10

    def release(self) -> None:
        self._leases.release(self)


class PgLeases:
    """The leases one store holds, and the thread that renews them."""

    def __init__(
        self, run: Run[Any], seconds: float = LEASE_SECONDS, *, on_release: Callable[[str], object] | None = None
    ) -> None:
        if seconds <= 0:
            raise StoreError(f"a lease must last a positive number of seconds, not {seconds}")
        self._run = run
        self._on_release = on_release
        self.seconds = seconds
        self.holder = uuid.uuid4().hex
        self._host = socket.gethostname()
        self._held: dict[str, PgLease] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _params(self, session_id: str) -> dict[str, object]:
        return {
            "session": session_id,
            "holder": self.holder,
            "host": self._host,
            "pid": os.getpid(),
            "ttl": self.seconds,
        }

    def held(self, session_id: str) -> PgLease | None:
        return self._held.get(session_id)

    def _try_take(self, session_id: str) -> tuple[bool, tuple[str, int, datetime] | None]:
        def work(conn: Any) -> tuple[bool, tuple[str, int, datetime] | None]:
            if conn.execute(_TAKE, self._params(session_id)).fetchone() is not None:
                return True, None
            row = conn.execute(LIVE_HOLDER, (session_id,)).fetchone()
            return False, (str(row[0]), int(row[1]), row[2]) if row is not None else None

        taken: tuple[bool, tuple[str, int, datetime] | None] = self._run(
            f"take the lease of session {session_id}", work
        )
        return taken

    def take(self, session_id: str) -> PgLease:
        asked = time.monotonic()
        taken, holder = self._try_take(session_id)
        if not taken and holder is None:  # it lapsed or was released between the two statements
            taken, holder = self._try_take(session_id)
        if not taken:
            raise driven_elsewhere(session_id, holder)
        lease = PgLease(self, session_id, asked + self.seconds)
        with self._lock:
            self._held[session_id] = lease
            if self._thread is None:
                self._thread = threading.Thread(target=self._renew_forever, name="agentcell-leases", daemon=True)
                self._thread.start()
        return lease

    def release(self, lease: PgLease) -> None:
        with self._lock:
            if self._held.get(lease.session_id) is not lease:
                return
            del self._held[lease.session_id]
        if self._on_release is not None:
            self._on_release(lease.session_id)
        with contextlib.suppress(StoreError):  # unreachable: it lapses by itself
            self._run(
                f"release the lease of {lease.session_id}",
                lambda c: c.execute(_RELEASE, (lease.session_id, self.holder)),
            )

    def _renew_forever(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            with self._lock:
                held = list(self._held.values())
            for lease in held:
                asked = time.monotonic()
                try:
                    taken, _ = self._try_take(lease.session_id)
                except StoreError:
                    continue  # the server is away: try again at the next tick, while the lease lasts
                lease.lost = not taken
                if taken:
                    lease.valid_until = asked + self.seconds
                if lease.lost and self._on_release is not None:
                    self._on_release(lease.session_id)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            held = list(self._held.values())
        for lease in held:
            lease.release()
