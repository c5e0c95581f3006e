"""The SQLite store's session lease: one kernel drives a session at a time, as on PostgreSQL.

Two kernels of one person can open the same notebook (two browser tabs, a notebook and ``agentcell run``)
over the same database; without a lease their turns interleave in one session and a cell shows the other
kernel's answer. A turn's lease is an exclusive ``flock`` on a file of its own for the session, in a folder
beside the database (``<db>-leases/``). The operating system drops the lock when the process ends however it
ends, so a killed kernel's session is free at once, with nothing to renew or expire. On a system without
``flock`` (Windows) the lease is a no-op, as it was everywhere before.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

from ..errors import SessionDrivenElsewhereError, StoreError

__all__ = ["FileLease", "NoLease", "take_file_lease"]

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")


class NoLease:
    def release(self) -> None:
        return None


class FileLease:
    """A held lease: the open, locked file; released by closing it (idempotent)."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the file drops the lock


def take_file_lease(database: Path, session_id: str) -> FileLease | NoLease:
    """Lock the session for this process's caller; raises SessionDrivenElsewhereError while another holds it."""
    if sys.platform == "win32":
        return NoLease()
    import fcntl  # POSIX only

    if not _SAFE_NAME.match(session_id):
        raise StoreError(f"cannot take a lease for a session id like {session_id!r}")
    folder = database.with_name(database.name + "-leases")
    try:
        folder.mkdir(exist_ok=True)
        fd = os.open(folder / f"{session_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreError(f"cannot take the session's lease in {folder}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        who = f"another kernel (pid {holder})" if holder else "another kernel"
        raise SessionDrivenElsewhereError(
            f"session {session_id} is being driven by {who} on this database. Read it or follow it from here "
            f"(`%session follow {session_id}`, `agentcell follow {session_id}`), and drive it once that kernel's "
            "turn has ended; nothing was written.",
            session_id,
        ) from None
    with contextlib.suppress(OSError):  # who holds it, for the message another kernel gets
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    return FileLease(fd)


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode(errors="replace").strip()
    except OSError:
        return ""
