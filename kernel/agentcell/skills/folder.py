"""A skill folder on disk: its files, its digest, and where folders of skills are found.

Reading a folder keeps every file (``SKILL.md`` and whatever ``scripts/``, ``references/`` and ``assets/``
hold) with its SHA-256 and whether it is executable; the folder's digest is a hash over that list, so the
same folder read twice, anywhere, has the same digest. Version-control and cache folders are left out; a
symbolic link is followed only while it stays inside the folder. :func:`discover` finds the skill folders
of a project the way other clients do: ``skills/*/SKILL.md`` and ``.agents/skills/*/SKILL.md``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..records.skill import SkillDiagnostic, SkillFile
from .format import Frontmatter, parse_skill_md

__all__ = [
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "SKILL_DIRS",
    "SkillFolder",
    "discover",
    "folder_digest",
    "read_folder",
]

MAX_SKILL_BYTES = 8 * 1024 * 1024
"""The most a skill folder may hold, all files together (8 MiB)."""
MAX_SKILL_FILES = 1000
SKILL_DIRS = ("skills", ".agents/skills")
"""Where a project keeps its skills, one folder each: the first one found of a name wins."""
_SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".ipynb_checkpoints"})
_SKIPPED_FILES = frozenset({".DS_Store", "Thumbs.db"})


@dataclass
class SkillFolder:
    """A folder read from disk: what its ``SKILL.md`` says, its files and their contents, and its problems."""

    path: Path
    frontmatter: Frontmatter
    files: list[SkillFile] = field(default_factory=list)
    contents: dict[str, bytes] = field(default_factory=dict)
    """By SHA-256."""
    diagnostics: list[SkillDiagnostic] = field(default_factory=list)
    """The folder's and its ``SKILL.md``'s, in that order."""

    @property
    def ok(self) -> bool:
        return not any(d.level == "error" for d in self.diagnostics)

    @property
    def digest(self) -> str:
        return folder_digest(self.files)


def folder_digest(files: list[SkillFile]) -> str:
    """SHA-256 over the sorted paths, modes and content hashes."""
    digest = hashlib.sha256()
    for file in sorted(files, key=lambda f: f.path):
        digest.update(f"{file.path}\0{'x' if file.executable else '-'}\0{file.sha256}\n".encode())
    return digest.hexdigest()


def read_folder(path: Path) -> SkillFolder:
    """Read the skill folder at ``path`` (never raises for what is in it: problems are diagnostics)."""
    folder = SkillFolder(path, Frontmatter())
    problems = folder.diagnostics

    def fail(code: str, message: str, file: str = ".") -> SkillFolder:
        problems.append(SkillDiagnostic(level="error", code=code, message=message, file=file))
        return folder

    if not path.is_dir():
        return fail("not_a_folder", f"{path} is not a folder; a skill is a folder holding a SKILL.md")
    skill_md = path / "SKILL.md"
    if not skill_md.is_file():
        hint = " (there is a skill.md: rename it SKILL.md)" if (path / "skill.md").is_file() else ""
        return fail("no_skill_md", f"{path} holds no SKILL.md{hint}", "SKILL.md")
    total = 0
    for relative, real in _walk(path, problems):
        if len(folder.files) >= MAX_SKILL_FILES:
            return fail("too_many_files", f"the folder holds more than {MAX_SKILL_FILES} files; a skill keeps fewer")
        content = real.read_bytes()
        total += len(content)
        if total > MAX_SKILL_BYTES:
            return fail(
                "too_large", f"the folder holds more than {MAX_SKILL_BYTES // 2**20} MiB; a skill keeps at most that"
            )
        sha = hashlib.sha256(content).hexdigest()
        executable = bool(real.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
        folder.files.append(SkillFile(path=relative, size=len(content), sha256=sha, executable=executable))
        folder.contents[sha] = content
    text = _skill_md_text(folder.contents.get(_sha_of(folder.files, "SKILL.md"), b""))
    if text is None:
        return fail("not_utf8", "SKILL.md is not UTF-8 text", "SKILL.md")
    folder.frontmatter = parse_skill_md(text, path.name)
    problems.extend(folder.frontmatter.diagnostics)
    return folder


def _sha_of(files: list[SkillFile], path: str) -> str:
    return next((f.sha256 for f in files if f.path == path), "")


def _skill_md_text(content: bytes) -> str | None:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _walk(root: Path, problems: list[SkillDiagnostic]) -> list[tuple[str, Path]]:
    """(relative path, real path) of every file to keep, sorted; links leading out are left out."""
    real_root = Path(os.path.realpath(root))
    found: list[tuple[str, Path]] = []
    for directory, dirs, files in os.walk(root):
        here = Path(directory)
        kept = []
        for name in sorted(dirs):
            if name in _SKIPPED:
                continue
            if (here / name).is_symlink():
                relative = (here / name).relative_to(root).as_posix()
                problems.append(
                    SkillDiagnostic(
                        level="warning", code="symlink", message="a linked folder is not followed", file=relative
                    )
                )
                continue
            kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            if name in _SKIPPED_FILES or name.endswith(".pyc"):
                continue
            candidate = here / name
            relative = candidate.relative_to(root).as_posix()
            real = Path(os.path.realpath(candidate))
            if not real.is_relative_to(real_root) or not real.is_file():
                problems.append(
                    SkillDiagnostic(
                        level="warning",
                        code="symlink",
                        message="a link to something outside the folder is left out",
                        file=relative,
                    )
                )
                continue
            found.append((relative, real))
    return sorted(found)


def discover(root: Path) -> list[SkillFolder]:
    """The skill folders of a project (``skills/*`` and ``.agents/skills/*`` holding a SKILL.md), read, in
    that order; a later folder of a name already found is dropped with a warning on the first."""
    found: list[SkillFolder] = []
    names: dict[str, SkillFolder] = {}
    for parent in SKILL_DIRS:
        base = root / parent
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            if not child.is_dir() or not (child / "SKILL.md").is_file():
                continue
            folder = read_folder(child)
            name = folder.frontmatter.name or child.name
            first = names.get(name)
            if first is not None:
                first.diagnostics.append(
                    SkillDiagnostic(
                        level="warning",
                        code="shadowed",
                        message=f"another skill named {name!r} in {child.relative_to(root)} is not used",
                        file="SKILL.md",
                    )
                )
                continue
            names[name] = folder
            found.append(folder)
    return found
