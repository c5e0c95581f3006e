"""Resources a session mounts into its workspace: git repositories, uploaded files, memory stores.

They are typed and stored with the session here; mounting them is the engine's job at session start.
Secrets such as a repository token are kept out of every serialization (events, snapshots, widgets).
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, SecretStr

__all__ = ["FileResource", "GitRepository", "MemoryStoreResource", "Resource"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GitRepository(_Model):
    type: Literal["git_repository"] = "git_repository"
    url: str = Field(min_length=1)
    branch: str | None = None
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    """A full 40-character commit SHA."""
    mount_path: str | None = None
    """Defaults to ``<workspace>/<repo-name>``."""
    skills: bool = True
    """Whether the skill folders of the clone (``skills/*/SKILL.md``, ``.agents/skills/*/SKILL.md``) become
    skills of the session when it is mounted."""
    authorization_token: SecretStr | None = Field(default=None, exclude=True)
    """Used to clone; never stored or shown."""


class FileResource(_Model):
    type: Literal["file"] = "file"
    file_id: str = Field(min_length=1)
    mount_path: str | None = None
    """Defaults to ``<workspace>/uploads/<file_id>``."""


class MemoryStoreResource(_Model):
    type: Literal["memory_store"] = "memory_store"
    memory_store_id: str = Field(min_length=1)
    access: Literal["read_write", "read_only"] = "read_write"
    instructions: str | None = Field(default=None, max_length=4096)
    """Guidance rendered into the memory section of the system prompt."""


Resource: TypeAlias = Annotated[GitRepository | FileResource | MemoryStoreResource, Field(discriminator="type")]
