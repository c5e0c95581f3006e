"""Skills: folders of instructions in the open Agent Skills format, as the engine stores and pins them.

A skill is a folder with a ``SKILL.md`` (YAML frontmatter, then Markdown instructions) and any other files
(``scripts/``, ``references/``, ``assets/``). Loading one (``skills/format.py``) yields a :class:`Skill`
version with the diagnostics its folder earned; the store keeps each version immutable, its files by
content. An agent names its skills with :class:`SkillRef`; a session pins each to a version
(:class:`PinnedSkill`) when it is created, so a replay, or the same session reopened tomorrow, sees the same
text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InvalidInputError, StoreError

__all__ = [
    "MAX_SESSION_SKILLS",
    "SKILL_NAME_PATTERN",
    "PinnedSkill",
    "Skill",
    "SkillDiagnostic",
    "SkillFile",
    "SkillRef",
    "check_session_cap",
]

MAX_SESSION_SKILLS = 20
"""The most skills one session may have, across its agents and threads."""

SKILL_NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
"""The spec's name: lowercase letters, digits and single hyphens, not at either end."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SkillDiagnostic(_Model):
    """Something wrong with a skill folder, where it is. ``error``: the skill was skipped (or refused);
    ``warning``: it loads anyway."""

    level: Literal["warning", "error"]
    code: str
    """A stable code: ``yaml_error``, ``missing_description``, ``name_mismatch``, ``unknown_key``..."""
    message: str
    file: str = "SKILL.md"
    """The file the problem is in, relative to the skill folder (or its path when it is the folder)."""
    line: int | None = None
    """1-based, when the problem is on a line."""

    def __str__(self) -> str:
        if self.file == ".":  # about the folder itself, whose path the message names
            return f"{self.level}: {self.message}"
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.level}: {self.message}"


def check_skill_path(path: str) -> str:
    """``path`` when it names a file inside a skill's folder: relative, with ``/``, no ``.`` or ``..`` part,
    no backslash, drive or NUL. Raises InvalidInputError otherwise: a stored version is mounted under the
    workspace, so a path like ``../../.bashrc`` would write outside it (a shared store is anyone's to write)."""
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or "\\" in path
        or "\0" in path
        or (len(path) > 1 and path[1] == ":")
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise InvalidInputError(
            f"a skill file's path is relative to its folder, with '/' and no '.', '..', backslash or drive: "
            f"{path!r} is not"
        )
    return path


class SkillFile(_Model):
    """One file of a skill folder (its content is kept apart, by its SHA-256)."""

    path: str
    """Relative to the skill folder, with ``/`` (checked: no ``..``, absolute or backslash path)."""
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    executable: bool = False

    @field_validator("path")
    @classmethod
    def _inside_the_folder(cls, path: str) -> str:
        try:
            return check_skill_path(path)
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from None


class Skill(_Model):
    """One immutable version of a skill."""

    id: str = Field(pattern=r"^skill_")
    version: int = Field(ge=1)
    name: str = Field(min_length=1)
    """The frontmatter's name (loaded leniently: it may break a soft rule, with a warning)."""
    description: str = Field(min_length=1)
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = {}
    allowed_tools: list[str] = []
    """``allowed-tools`` split on spaces (experimental in the spec; shown, not enforced)."""
    body: str
    """The Markdown instructions after the frontmatter, trimmed: what activation hands the model."""
    files: list[SkillFile]
    """Every file of the folder, ``SKILL.md`` included, sorted by path."""
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 over the files' paths, modes and contents: the same folder gives the same digest."""
    diagnostics: list[SkillDiagnostic] = []
    """The warnings it loaded with."""
    source: str | None = None
    """Where it came from when not ``engine.skills.create`` (``git_repository <url>``); skills of one name
    and source are versions of one skill."""
    created_at: datetime

    @property
    def resources(self) -> list[str]:
        """The files besides ``SKILL.md``: what activation lists without reading."""
        return [f.path for f in self.files if f.path != "SKILL.md"]


def stored_skill(body: str | bytes) -> Skill:
    """A skill version as a store row holds it, validated as one written through the API would be; a row
    that is not (a path leading out of the folder, planted in a shared database) raises StoreError."""
    try:
        return Skill.model_validate_json(body)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise StoreError(
            f"a stored skill version is not valid and is not used ({where}: {problem['msg']}); whoever can "
            "write the store wrote it, not agentcell: delete it (engine.skills.delete) and create it again"
        ) from None


class SkillRef(_Model):
    """An agent's reference to a stored skill: its latest version when the session is created, or the one
    given."""

    type: Literal["custom"] = "custom"
    skill_id: str = Field(min_length=1)
    version: int | None = Field(default=None, ge=1)

    @field_validator("version", mode="before")
    @classmethod
    def _latest(cls, value: object) -> object:
        if value == "latest":
            return None
        if isinstance(value, str) and value.isdigit():
            return int(value)
        return value


class PinnedSkill(_Model):
    """A skill as a session pinned it for one of its agents: the version, with what the catalog shows."""

    agent_id: str
    """The agent (the session's own, or a helper its threads run) whose skill this is."""
    skill_id: str
    version: int = Field(ge=1)
    name: str
    description: str
    source: str | None = None
    """Set for a skill a mounted repository brought (``git_repository <url>``), not one of the agent's."""


def check_session_cap(pinned: Sequence[PinnedSkill]) -> None:
    """Raise InvalidInputError when the pins hold more than MAX_SESSION_SKILLS skill versions."""
    distinct = {(p.skill_id, p.version) for p in pinned}
    if len(distinct) > MAX_SESSION_SKILLS:
        raise InvalidInputError(
            f"a session has at most {MAX_SESSION_SKILLS} skills across its agents and threads; this one would "
            f"have {len(distinct)}: remove some from the agents' skills"
        )
