"""The OS sandbox of the commands the agent's tools start: bubblewrap (``bwrap``) on Linux.

Under ``read-only`` and ``workspace-write`` a command runs in a mount namespace where the whole file system
is read-only; under ``workspace-write`` the workspace and the temp directories are bound writable again,
with the folders that hold code that runs later (``.git``: its config and hooks) and the mounted skills
read-only inside them. Credential folders and files of the home directory (``~/.ssh``, ``~/.aws``,
``~/.config/gcloud``, ``~/.gnupg``, ``~/.netrc``, the kernels' connection files, …) are hidden behind an
empty folder or an empty file. The command gets its own network namespace with nothing in it (no network,
not even the host's loopback), its own process namespace (it sees only its own processes, so no other
process's environment under ``/proc``), and an environment without provider keys or other credentials
(:func:`agentcell._secrets.is_secret_variable`). Under ``danger-full-access`` nothing is confined.

Where bubblewrap cannot start (not Linux, not installed, user namespaces off), :func:`sandbox_problem` says
why: the command would run with the user's full rights, so the tool says so when it asks and an "always"
answer is not remembered (every command asks).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from .._secrets import is_secret_variable
from .permissions import PROTECTED_NAMES, READ_ONLY_DIRS, PermissionPolicy

__all__ = ["CREDENTIAL_PATHS", "PROTECTED_DIRS", "sandbox_problem", "sandboxed_command", "sandboxed_environment"]

CREDENTIAL_PATHS: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".gnupg",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".terraform.d",
    ".local/share/jupyter/runtime",
)
"""Paths under the home directory a sandboxed command cannot see."""
PROTECTED_DIRS: tuple[str, ...] = (*PROTECTED_NAMES, *READ_ONLY_DIRS)
"""What of the workspace stays read-only to a sandboxed command under ``workspace-write`` (when it exists):
what runs later (``.git/config``'s ``core.fsmonitor``, ``.git/hooks``, ``.envrc``, …) and the mounted skills."""
_PROVIDER_PREFIXES = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_API", "AGENTCELL_")


@functools.cache
def sandbox_problem() -> str | None:
    """Why commands cannot be sandboxed here, or None when bubblewrap works (tried once per process)."""
    if not sys.platform.startswith("linux"):
        return f"the command sandbox needs Linux's bubblewrap, which {sys.platform} does not have"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (`bwrap`) is not installed (Debian/Ubuntu: apt install bubblewrap)"
    probe = [bwrap, *_namespaces(), "--ro-bind", "/", "/", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start ({exc})"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
        return f"bubblewrap cannot start here ({said}); user namespaces may be off"
    return None


def _namespaces() -> list[str]:
    return ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]


def sandboxed_command(argv: list[str], policy: PermissionPolicy, cwd: Path) -> list[str]:
    """``argv`` wrapped in bubblewrap with ``policy``'s rules (unchanged under ``danger-full-access``).
    Call only when :func:`sandbox_problem` is None."""
    if policy.preset == "danger-full-access":
        return argv
    bwrap = shutil.which("bwrap") or "bwrap"
    args = [bwrap, *_namespaces(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if policy.preset == "workspace-write":
        # Outer folders first: a later bind covers an earlier one, so the read-only folders inside the
        # workspace and the hidden credentials must come after the writable roots that hold them.
        for root in sorted(set(policy.roots), key=lambda p: len(p.parts)):
            if root.is_dir():
                args += ["--bind", str(root), str(root)]
        for protected in _protected_paths(policy.workspace):
            args += ["--ro-bind", str(protected), str(protected)]
    args += _hidden_credentials(policy.workspace)
    return [*args, "--chdir", str(cwd), "--", *argv]


AGENT_SOCKETS: tuple[str, ...] = ("/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock")
"""Sockets that act with more rights than a file (a socket in the file system is reachable from any network
namespace): the container daemons'; with the user's own run folder and ``$SSH_AUTH_SOCK``, hidden too."""


_NESTED_DEPTH = 2
"""How deep the walk for nested repositories goes: the workspace's own folders (``vendor/lib/.git``)."""
_WALK_LIMIT = 2_000
"""The most entries the walk reads: a command's start must not depend on the size of the tree."""
_NOT_WALKED = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", "site-packages"})


def _protected_paths(workspace: Path) -> list[Path]:
    """What of the workspace a command may not write: the protected names at its top that exist, and the
    ``.git`` of repositories nested a few levels down (a bounded walk: big trees are not searched whole).
    A mount point must exist, so a protected name the workspace does not hold yet is not covered here."""
    found = [workspace / name for name in PROTECTED_DIRS if _real_entry(workspace / name)]
    level, seen = [workspace], 0
    for _ in range(_NESTED_DEPTH):
        below: list[Path] = []
        for folder in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            seen += len(entries)
            if seen > _WALK_LIMIT:
                return found
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False) or entry.name in _NOT_WALKED:
                    continue
                path = Path(entry.path)
                if entry.name == ".git":
                    if folder != workspace:
                        found.append(path)
                elif not entry.name.startswith(".agentcell"):
                    below.append(path)
        level = below
    return found


def _real_entry(path: Path) -> bool:
    return path.exists() and not path.is_symlink()


def _hidden_credentials(workspace: Path) -> list[str]:
    home = Path.home()
    args: list[str] = []
    sockets = [*AGENT_SOCKETS, f"/run/user/{os.getuid()}", os.environ.get("SSH_AUTH_SOCK", "")]
    for named in [*(home / relative for relative in CREDENTIAL_PATHS), *(Path(s) for s in sockets if s)]:
        path = Path(os.path.realpath(named)) if named.is_symlink() else named
        if workspace.is_relative_to(path):
            continue  # the user chose to work in there
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", os.devnull, str(path)]
    return args


def sandboxed_environment(policy: PermissionPolicy, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command starts with: ``environ`` (this process's) without provider keys or any
    other credential under the confined presets; whole under ``danger-full-access``."""
    source = dict(os.environ if environ is None else environ)
    if policy.preset == "danger-full-access":
        return source
    return {
        name: value
        for name, value in source.items()
        if not name.startswith(_PROVIDER_PREFIXES) and not is_secret_variable(name, value)
    }
