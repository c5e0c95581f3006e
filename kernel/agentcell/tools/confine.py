"""Guard rails for the model's own Python: the permission preset applied to what the ``python`` tool's code
does, through Python's audit hooks (PEP 578).

Under ``workspace-write`` the python tool asks before it runs (or runs unasked when the user set
``AgentCell.python_tool = "allow"``, :mod:`.python_access`), and either way its code gets the preset's
file rule as guard rails: it writes, deletes, renames and links only inside the workspace, the temp
directories and ``~/.cache`` (hard links and FIFOs count as outside, as for the file tools); in the user's
home directory it reads only those and Python's own installation (so imports work, and no key file or
kernel connection file leaves through it); it starts no process (the ``bash`` tool, which asks, does that)
and opens no network connection. Under ``read-only`` the tool does not run at all; under
``danger-full-access`` nothing is confined.

The rails hold in the tool's worker thread while its code runs, and in the threads that code starts with
``threading`` (a ``ThreadPoolExecutor`` too); SQLite databases count as files written, and UDP
``sendmsg`` as a connection. The kernel, the user's own cells and other threads are untouched. They are
guard rails against a confused model, **not a sandbox**: Python code in the kernel's process can get round
any in-process check (which is why the tool asks), and some ways round need no intent to escape
(``os.open(…, dir_fd=…)`` names a path the audit event does not show whole; ``_posixsubprocess.fork_exec``
and ``multiprocessing``'s spawn start processes without an audit event; ``_thread.start_new_thread`` starts
an unconfined thread; an IPython hook the code registers runs later, in the user's cell). The bash tool's
sandbox (:mod:`.sandbox`) is the OS-level one.
"""

from __future__ import annotations

import contextlib
import functools
import os
import site
import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ..errors import OutsideWorkspaceError
from .permissions import PermissionPolicy

__all__ = ["ConfinementError", "confined", "exempt"]

_POLICY: ContextVar[PermissionPolicy | None] = ContextVar("agentcell_confined_policy", default=None)
_install_lock = threading.Lock()
_installed: list[bool] = []  # an audit hook cannot be removed: it is added once per process
_busy = threading.local()

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"}
)
_NATIVE_EVENTS = frozenset({"ctypes.dlopen", "ctypes.dlsym", "ctypes.call_function", "ctypes.cdata"})
_NETWORK_EVENTS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg", "socket.bind"})
_PATH_WRITE_EVENTS: dict[str, tuple[int, ...]] = {
    # audit event -> the positions of the paths it writes
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.link": (0, 1),
    "os.symlink": (1,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "os.mkfifo": (0,),
    "os.mknod": (0,),
    "shutil.rmtree": (0,),
    "shutil.copyfile": (1,),
    "shutil.copymode": (1,),
    "shutil.copystat": (1,),
    "shutil.move": (1,),
}


class ConfinementError(OutsideWorkspaceError):
    """The python tool's code tried what the permission preset does not let it do unasked."""


def _install() -> None:
    with _install_lock:
        if not _installed:
            sys.addaudithook(_hook)
            _carry_into_threads()
            _installed.append(True)


def _carry_into_threads() -> None:
    """A thread the confined code starts (``threading.Thread``, a ``ThreadPoolExecutor``'s workers) runs
    under the same policy: a new thread does not inherit the context the policy lives in."""
    start = threading.Thread.start

    def start_confined(thread: threading.Thread) -> None:
        policy = _POLICY.get()
        if policy is not None and not getattr(_busy, "active", False):
            run = thread.run

            def run_confined() -> None:
                with confined(policy):
                    run()

            thread.run = run_confined  # type: ignore[method-assign]
        start(thread)

    threading.Thread.start = start_confined  # type: ignore[method-assign,assignment]


@contextlib.contextmanager
def confined(policy: PermissionPolicy) -> Iterator[None]:
    """Apply ``policy`` to the Python this thread runs until the block ends (nothing under full access)."""
    if policy.preset == "danger-full-access":
        yield
        return
    _install()
    token = _POLICY.set(policy)
    try:
        yield
    finally:
        _POLICY.reset(token)


@contextlib.contextmanager
def exempt() -> Iterator[None]:
    """agentcell's own bookkeeping inside a confined thread (stopping the code uses ctypes)."""
    previous = getattr(_busy, "active", False)
    _busy.active = True
    try:
        yield
    finally:
        _busy.active = previous


@functools.cache
def _python_roots() -> tuple[Path, ...]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values(), *site.getsitepackages()}
    with contextlib.suppress(AttributeError):
        paths.add(site.getusersitepackages())
    return tuple(Path(os.path.realpath(p)) for p in paths if p)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    policy = _POLICY.get()
    if policy is None or getattr(_busy, "active", False):
        return
    # What the checks themselves do (realpath, stat) is not the code's doing. A plain flag, not exempt():
    # building a context manager raises audit events of its own.
    _busy.active = True
    try:
        _check(policy, event, args)
    finally:
        _busy.active = False


def _check(policy: PermissionPolicy, event: str, args: tuple[Any, ...]) -> None:
    preset = policy.preset
    if event == "open":
        path, mode, flags = args[0], args[1], args[2]
        if isinstance(path, int) or path is None:
            return
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        _check_path(policy, path, write=writing)
    elif event == "sqlite3.connect":
        # A database file is written (created, journaled): the session store itself is one.
        database = os.fsdecode(args[0]) if isinstance(args[0], str | bytes | os.PathLike) else ""
        if database.startswith("file:"):
            database = database[5:].split("?", 1)[0]
        if database not in ("", ":memory:"):
            _check_path(policy, database, write=True)
    elif event in _PATH_WRITE_EVENTS:
        for index in _PATH_WRITE_EVENTS[event]:
            if index < len(args) and isinstance(args[index], str | bytes | os.PathLike):
                _check_path(policy, args[index], write=True)
    elif event in _PROCESS_EVENTS:
        raise ConfinementError(
            f"the python tool starts no process under the {preset} preset ({event}); use the bash tool, "
            "which asks the user"
        )
    elif event in _NETWORK_EVENTS:
        raise ConfinementError(
            f"the python tool opens no network connection under the {preset} preset ({event}); "
            "`%permissions danger-full-access` lifts this"
        )
    elif event in _NATIVE_EVENTS:
        raise ConfinementError(f"the python tool calls no native code through ctypes under the {preset} preset")


def _check_path(policy: PermissionPolicy, path: Any, *, write: bool) -> None:
    raw = os.fsdecode(path)
    real = Path(os.path.realpath(raw))  # the code's relative paths start from the process's directory
    if real == Path(os.devnull):
        return
    cache = Path(os.path.realpath(Path.home() / ".cache"))
    if write:
        if policy.preset == "read-only":
            raise ConfinementError(f"the read-only preset does not let the python tool write {raw}")
        inside = (policy.inside(real) and not policy.protected(real)) or real.is_relative_to(cache)
        if not inside or _is_special(real):
            raise ConfinementError(
                f"the python tool writes only inside the workspace {policy.workspace} under the {policy.preset} "
                f"preset; {raw} resolves to {real} (a file outside, a hard link, a FIFO or configuration that "
                "runs code later, such as .git). The write_file tool asks the user for such paths"
            )
        return
    home = Path(os.path.realpath(Path.home()))
    allowed = (*policy.roots, cache, *_python_roots())
    if not real.is_relative_to(home) or any(real == root or real.is_relative_to(root) for root in allowed):
        return
    raise ConfinementError(
        f"in the home directory the python tool reads only the workspace {policy.workspace}, ~/.cache and "
        f"Python's own installation under the {policy.preset} preset; {raw} resolves to {real}. The read_file "
        "tool asks the user for paths outside"
    )


def _is_special(real: Path) -> bool:
    try:
        info = real.stat()
    except OSError:
        return False
    import stat

    return not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode))
