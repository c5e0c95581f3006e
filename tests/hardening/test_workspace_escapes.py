"""Workspace escapes: 38 ways out of the workspace, tried with every file tool under every permission preset.

Each attempt names a secret file (or directory) outside the workspace through ``..``, absolute paths,
``~``, symlinks, symlinked parents, hard links, FIFOs and ``/proc``. Under ``read-only`` and
``workspace-write`` no call leaks a byte of the secret, changes or adds anything outside, or hangs; with no
approver the preset's "ask" is a "no". Under ``danger-full-access``, which promises no confinement, the
same reading attempts do return the secret: that proves each attempt is a real way out, so its refusal
under the other presets means something. FIFOs never hang a tool, whatever the preset.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentcell.tools import PERMISSION_PRESETS, PermissionPolicy, PermissionPreset, ToolRegistry
from agentcell.tools.builtin import file_tools

from ..tools._support import make_call

FILE_TOOLS = file_tools()  # built once: making their schemas costs more than a call
SECRET = "the secret"
ENV_MARKER = "AGENTCELL_HARDENING_ENV_MARKER"
ENV_VALUE = "environ-canary-7f3a"


@dataclass(frozen=True)
class Room:
    """The workspace, the directory beside it that holds the secret, and an fd held open on the secret."""

    workspace: Path
    outside: Path
    fd: int

    @property
    def secret(self) -> Path:
        return self.outside / "secret.txt"


def _link(room: Room, name: str, target: str | Path) -> None:
    path = room.workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


Setup = Callable[[Room], str]
"""Prepares the workspace for one attempt and returns the path the call names."""

ATTEMPTS: dict[str, tuple[Setup, bool]] = {
    # name: (setup returning the path, whether reading that path reaches the secret when nothing confines)
    "dotdot": (lambda r: "../outside/secret.txt", True),
    "dot-dotdot": (lambda r: "./../outside/secret.txt", True),
    "subdir-dotdot": (lambda r: "sub/../../outside/secret.txt", True),
    "missing-dir-dotdot": (lambda r: "nowhere/../../outside/secret.txt", True),
    "deep-dotdot": (lambda r: "../" * 40 + str(r.secret).lstrip("/"), True),
    "absolute": (lambda r: str(r.secret), True),
    "absolute-via-workspace": (lambda r: f"{r.workspace}/../outside/secret.txt", True),
    "double-slash": (lambda r: "/" + str(r.secret), True),
    "dot-segments": (lambda r: f"{r.outside}/./././secret.txt", True),
    "absolute-dir": (lambda r: str(r.outside), False),
    "dotdot-dir": (lambda r: "../outside", False),
    "dotdot-dir-slash": (lambda r: "../outside/", False),
    "tilde": (lambda r: "~/secret.txt", True),
    "tilde-dotdot": (lambda r: "~/../outside/secret.txt", True),
    "tilde-dir": (lambda r: "~", False),
    "symlink-file": (lambda r: (_link(r, "link.txt", r.secret), "link.txt")[1], True),
    "relative-symlink": (lambda r: (_link(r, "rel.txt", "../outside/secret.txt"), "rel.txt")[1], True),
    "symlink-chain": (
        lambda r: (_link(r, "b.txt", r.secret), _link(r, "a.txt", "b.txt"), "a.txt")[2],
        True,
    ),
    "symlinked-dir": (lambda r: (_link(r, "door", r.outside), "door/secret.txt")[1], True),
    "symlinked-parent": (
        lambda r: (_link(r, "nested/deeper/door", r.outside), "nested/deeper/door/secret.txt")[1],
        True,
    ),
    "relative-symlinked-dir": (lambda r: (_link(r, "reldoor", "../outside"), "reldoor/secret.txt")[1], True),
    "symlink-to-root": (lambda r: (_link(r, "root", "/"), "root/" + str(r.secret).lstrip("/"))[1], True),
    "symlink-dir-then-dotdot": (
        # Lexically door/.. is the workspace; really it is the outside directory's parent.
        lambda r: (_link(r, "door", r.outside), "door/../outside/secret.txt")[1],
        True,
    ),
    "dangling-symlink-out": (lambda r: (_link(r, "dangling.txt", r.outside / "new.txt"), "dangling.txt")[1], False),
    "symlinked-dir-new-file": (lambda r: (_link(r, "door", r.outside), "door/new.txt")[1], False),
    "symlink-loop": (lambda r: (_link(r, "loop", "loop"), "loop")[1], False),
    "symlinked-dir-listing": (lambda r: (_link(r, "door", r.outside), "door")[1], False),
    "hard-link": (lambda r: (os.link(r.secret, r.workspace / "alias.txt"), "alias.txt")[1], True),
    "hard-link-in-subdir": (
        lambda r: (
            (r.workspace / "sub" / "deep").mkdir(),
            os.link(r.secret, r.workspace / "sub/deep/a.txt"),
            "sub/deep/a.txt",
        )[2],
        True,
    ),
    "fifo-inside": (lambda r: (os.mkfifo(r.workspace / "pipe"), "pipe")[1], False),
    "fifo-outside-via-symlink": (
        lambda r: (os.mkfifo(r.outside / "pipe"), _link(r, "pipe.txt", r.outside / "pipe"), "pipe.txt")[2],
        False,
    ),
    "proc-self-root": (lambda r: "/proc/self/root" + str(r.secret), True),
    "proc-thread-self-root": (lambda r: "/proc/thread-self/root" + str(r.secret), True),
    "proc-pid-root": (lambda r: f"/proc/{os.getpid()}/root{r.secret}", True),
    "proc-self-fd": (lambda r: f"/proc/self/fd/{r.fd}", True),
    "symlink-to-proc-root": (
        lambda r: (_link(r, "proc", "/proc/self/root"), "proc/" + str(r.secret).lstrip("/"))[1],
        True,
    ),
    "proc-self-environ": (lambda r: "/proc/self/environ", False),
    "proc-self-cwd-dotdot": (
        lambda r: "/proc/self/root/" + str(r.outside).lstrip("/") + "/../outside/secret.txt",
        True,
    ),
}

TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "read_file": lambda path: {"path": path},
    "write_file": lambda path: {"path": path, "content": "stolen"},
    "edit_file": lambda path: {"path": path, "old_string": SECRET, "new_string": "stolen"},
    "list_files": lambda path: {"path": path},
    "grep": lambda path: {"pattern": "secret", "path": path},
}


@pytest.fixture
def room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Room]:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    (workspace / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (workspace / "notes.txt").write_text("nothing to see\n")
    monkeypatch.setenv("HOME", str(outside))  # ~ is the directory with the secret
    monkeypatch.setenv(ENV_MARKER, ENV_VALUE)
    fd = os.open(outside / "secret.txt", os.O_RDONLY)
    try:
        yield Room(workspace, outside, fd)
    finally:
        os.close(fd)


def _snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every name under ``directory`` and the bytes of its regular files."""
    found: dict[str, bytes | None] = {}
    for path in sorted(directory.rglob("*")):
        regular = path.is_file() and not path.is_symlink() and not path.is_fifo()
        found[str(path.relative_to(directory))] = path.read_bytes() if regular else None
    return found


async def _attempt(
    room: Room, preset: PermissionPreset, tool: str, attempt: str
) -> tuple[str, bool, dict[str, bytes | None]]:
    """What the call answered, whether the path reaches the secret, and the outside as it was before."""
    setup, reaches = ATTEMPTS[attempt]
    path = setup(room)
    before = _snapshot(room.outside)
    registry = ToolRegistry(PermissionPolicy(preset, room.workspace, temp_dirs=()))
    registry.register_all(FILE_TOOLS)
    # A FIFO opened for reading or writing would block forever: the call must come back on its own.
    result = await asyncio.wait_for(registry.execute(make_call(tool, **TOOLS[tool](path))), timeout=15)
    return result.text_content, reaches, before


def test_the_matrix_has_at_least_30_attempts_for_each_tool_and_preset() -> None:
    assert len(ATTEMPTS) >= 30 and len(TOOLS) == 5 and len(PERMISSION_PRESETS) == 3


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
@pytest.mark.parametrize("tool", list(TOOLS))
@pytest.mark.parametrize("preset", [p for p in PERMISSION_PRESETS if p != "danger-full-access"])
async def test_a_confined_preset_lets_nothing_out(
    room: Room, preset: PermissionPreset, tool: str, attempt: str
) -> None:
    text, _, before = await _attempt(room, preset, tool, attempt)
    assert SECRET not in text, f"{tool} leaked the secret through {attempt!r}"
    assert ENV_VALUE not in text, f"{tool} leaked the process environment through {attempt!r}"
    assert _snapshot(room.outside) == before, f"{tool} changed the outside through {attempt!r}"
    assert room.secret.read_text() == f"{SECRET}\n"


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
@pytest.mark.parametrize("tool", list(TOOLS))
async def test_full_access_reaches_what_the_confined_presets_refuse(room: Room, tool: str, attempt: str) -> None:
    text, reaches, _ = await _attempt(room, "danger-full-access", tool, attempt)
    if tool == "read_file" and reaches:
        assert SECRET in text, f"{attempt!r} is no real way out: even full access did not read the secret"
    if "fifo" in attempt:
        assert "not a regular file" in text
