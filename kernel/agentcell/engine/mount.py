"""Mounting a session's resources under its workspace, and describing them in the system prompt.

The workspace is the directory the session's tools work in (the tool registry's permission policy for the
session). At the start of the session's first turn (or on ``session.mount()``):

- a git repository is cloned with the system ``git`` into its mount path (default
  ``<workspace>/<repo-name>``) and checked out at its branch or commit. A token for a private repository
  reaches git only through the environment of that one git process, as an HTTP header (git >= 2.31 reads
  ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``): it is never in the URL, the clone's
  ``.git/config``, the command line, an event, the store or an error message.
- an uploaded file is copied from the upload store to its mount path (default
  ``<workspace>/uploads/<file_id>``).

A mount path already holding that clone or file is left as it is (the agent may have changed it since).
Memory stores are not files: they are reached through the memory tools (see ``tools/builtin/memory.py``).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from ..errors import NotFoundError, ResourceMountError
from ..records.resources import FileResource, GitRepository, Resource

if TYPE_CHECKING:
    from .deps import FileSource

__all__ = ["Mounted", "describe_mounts", "mount_path", "mount_resources", "public_url", "workspace_for"]

GIT_TIMEOUT = 600.0


@dataclass(frozen=True, slots=True)
class Mounted:
    resource: Resource
    path: Path
    fresh: bool
    """False when the path already held it."""


def workspace_for(host: object, session_id: str) -> Path:
    """The directory a session's tools work in: the tool host's permission policy's workspace for it."""
    from ..tools.base import ToolCall

    policy_for = getattr(host, "policy_for", None)
    if policy_for is None:
        return Path.cwd().resolve()
    probe = ToolCall(tool_use_id="", call_id="", name="", input={}, session_id=session_id)
    return Path(policy_for(probe).workspace)


def _repo_name(url: str) -> str:
    tail = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1] or url.rstrip("/").rsplit(":", 1)[-1]
    name = tail.removesuffix(".git")
    return name if name and name not in (".", "..") else "repo"


def mount_path(resource: GitRepository | FileResource, workspace: Path) -> Path:
    """Where the resource goes: its mount path (relative to the workspace, or absolute inside it)."""
    if resource.mount_path is None:
        if isinstance(resource, GitRepository):
            return workspace / _repo_name(resource.url)
        return workspace / "uploads" / resource.file_id
    target = Path(os.path.realpath(workspace / Path(resource.mount_path).expanduser()))
    if target == workspace or not target.is_relative_to(workspace):
        raise ResourceMountError(
            f"the mount path {resource.mount_path} is not inside the workspace {workspace}; "
            "give a path relative to the workspace"
        )
    return target


def mount_resources(resources: Sequence[Resource], workspace: Path, files: FileSource) -> list[Mounted]:
    """Clone and copy a session's git repositories and files into its workspace (blocking: run it in a
    worker thread from async code). Raises ResourceMountError with what went wrong."""
    mounted: list[Mounted] = []
    for resource in resources:
        if isinstance(resource, GitRepository):
            target = mount_path(resource, workspace)
            mounted.append(Mounted(resource, target, _clone(resource, target)))
        elif isinstance(resource, FileResource):
            target = mount_path(resource, workspace)
            mounted.append(Mounted(resource, target, _copy_upload(files, resource, target)))
    return mounted


# ---------------------------------------------------------------------------------------------- git


def public_url(url: str) -> str:
    """The URL without any user or password in it, for messages."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host))


def _git_env(token: str | None) -> dict[str, str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never", "LC_ALL": "C"}
    if token:
        # An extra HTTP header in this process's own config: GitHub takes the token as a basic-auth
        # password. Appended after any config the user's environment already passes the same way.
        count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env[f"GIT_CONFIG_KEY_{count}"] = "http.extraHeader"
        env[f"GIT_CONFIG_VALUE_{count}"] = f"Authorization: Basic {basic}"
        env["GIT_CONFIG_COUNT"] = str(count + 1)
    return env


def _git(args: list[str], *, env: dict[str, str], secrets: list[str], what: str) -> str:
    try:
        done = subprocess.run(["git", *args], env=env, capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError:
        raise ResourceMountError("git is not installed; mounting a repository needs the git command") from None
    except subprocess.TimeoutExpired:
        raise ResourceMountError(f"cannot {what}: git did not finish within {GIT_TIMEOUT:g} s") from None
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip() or f"git exited with status {done.returncode}"
        for secret in secrets:
            message = message.replace(secret, "***")
        raise ResourceMountError(f"cannot {what}: {message}")
    return done.stdout


def _clone(repo: GitRepository, target: Path) -> bool:
    token = repo.authorization_token.get_secret_value() if repo.authorization_token else None
    secrets = [
        s for s in (token, base64.b64encode(f"x-access-token:{token}".encode()).decode() if token else None) if s
    ]
    public = public_url(repo.url)
    env = _git_env(token)
    if target.exists() and any(target.iterdir()):
        origin = subprocess.run(
            ["git", "-C", str(target), "config", "--get", "remote.origin.url"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if origin.returncode == 0 and origin.stdout.strip() == repo.url:
            return False
        raise ResourceMountError(f"cannot clone {public} into {target}: the path exists and holds something else")
    created = not target.exists()
    try:
        clone = ["clone", "--quiet"]
        if repo.branch:
            clone += ["--branch", repo.branch]
        if repo.commit and not repo.branch:
            clone.append("--no-checkout")
        _git([*clone, "--", repo.url, str(target)], env=env, secrets=secrets, what=f"clone {public}")
        if repo.commit:
            where = f"check out {repo.commit} of {public}"
            present = subprocess.run(
                ["git", "-C", str(target), "cat-file", "-e", f"{repo.commit}^{{commit}}"],
                env=env, capture_output=True, check=False,
            )  # fmt: skip
            if present.returncode != 0:  # not on any branch the clone fetched: ask for it by id
                _git(
                    ["-C", str(target), "fetch", "--quiet", "origin", repo.commit], env=env, secrets=secrets, what=where
                )
            _git(
                ["-C", str(target), "checkout", "--quiet", "--detach", repo.commit],
                env=env,
                secrets=secrets,
                what=where,
            )
    except BaseException:
        if created:
            shutil.rmtree(target, ignore_errors=True)
        else:  # an empty directory was there before: leave it empty
            for child in target.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        raise
    return True


# ---------------------------------------------------------------------------------------------- files


def _copy_upload(files: FileSource, resource: FileResource, target: Path) -> bool:
    try:
        upload = files.get(resource.file_id)
    except NotFoundError as exc:
        raise ResourceMountError(str(exc)) from None
    if target.exists():
        if target.is_dir():
            raise ResourceMountError(f"cannot mount {resource.file_id} at {target}: a directory is there")
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    shutil.copyfile(upload.path, partial)
    partial.replace(target)
    return True


# ---------------------------------------------------------------------------------------------- prompt


def describe_mounts(resources: Sequence[Resource], workspace: Path, files: FileSource) -> str | None:
    """The system prompt's resources section: what the session mounted, and where."""
    mounts = [r for r in resources if isinstance(r, GitRepository | FileResource)]
    if not mounts:
        return None
    lines = ["# Resources", f"Mounted in the workspace ({workspace}):"]
    for resource in mounts:
        try:
            where = mount_path(resource, workspace).relative_to(workspace)
        except ResourceMountError:
            continue
        if isinstance(resource, GitRepository):
            ref = resource.commit or resource.branch or "its default branch"
            lines.append(f"- {where}/: a clone of the git repository {public_url(resource.url)} at {ref}")
        else:
            name = _upload_name(files, resource.file_id)
            lines.append(f"- {where}: the uploaded file {resource.file_id}{name}")
    return "\n".join(lines)


def _upload_name(files: FileSource, file_id: str) -> str:
    try:
        return f" ({files.get(file_id).filename})"
    except NotFoundError:
        return ""
