"""``engine.skills``: storing skill folders as versioned skills, and handing them to sessions.

``create(path)`` reads a folder (``skills/folder.py``, ``skills/format.py``), refuses one that cannot be
loaded with every diagnostic, and stores it: a new skill the first time its name is seen, the next version
of that skill after, and no new version when the folder is the same as the latest (content-addressed: the
store keeps each file's content once, by SHA-256, however many versions hold it). An agent names skills
with ``{"type": "custom", "skill_id", "version"?}``; a session pins every one of them to a version when it
is created (:meth:`SkillsAPI.pin`), and the engine mounts a pinned version's folder, read-only, when the
model activates it (:meth:`SkillsAPI.mount`).
"""

from __future__ import annotations

import builtins
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidInputError, NotFoundError, ResourceMountError, SkillFormatError, StoreError
from ..ids import new_id
from ..records.common import utc_now
from ..records.skill import PinnedSkill, Skill, SkillRef, check_session_cap, check_skill_path
from .folder import SkillFolder, discover, read_folder

if TYPE_CHECKING:
    from ..records.agent import Agent
    from ..store.base import Store

__all__ = ["SkillsAPI"]

_READ_ONLY_FILE = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
_READ_ONLY_DIR = _READ_ONLY_FILE | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


def _not_found(skill_id: str, version: int | None = None) -> NotFoundError:
    which = f" version {version}" if version is not None else ""
    return NotFoundError(f"no skill {skill_id!r}{which}; list the stored skills with engine.skills.list()")


class SkillsAPI:
    """``engine.skills``: create, list, get and delete skills and their versions."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # ------------------------------------------------------------------------------------------ folders

    @staticmethod
    def load(path: str | os.PathLike[str]) -> SkillFolder:
        """Read a skill folder without storing it: what it says, its files, and its diagnostics."""
        return read_folder(Path(path).expanduser().resolve())

    @staticmethod
    def discover(root: str | os.PathLike[str]) -> list[SkillFolder]:
        """The skill folders of a project: ``skills/*/SKILL.md`` and ``.agents/skills/*/SKILL.md``."""
        return discover(Path(root).expanduser().resolve())

    def create(self, path: str | os.PathLike[str], *, source: str | None = None) -> Skill:
        """Store the skill folder at ``path`` and return its version: a new skill, the next version of the
        skill of that name, or the latest version itself when the folder has not changed. Raises
        SkillFormatError, listing every problem, for a folder that cannot be loaded."""
        folder = self.load(path)
        return self.store_folder(folder, source=source)

    def store_folder(self, folder: SkillFolder, *, source: str | None = None) -> Skill:
        if not folder.ok:
            problems = [str(d) for d in folder.diagnostics]
            raise SkillFormatError(
                f"cannot load the skill at {folder.path}: " + "; ".join(p for p in problems if ": error: " in p),
                problems,
            )
        front = folder.frontmatter
        latest = next((s for s in self._store.list_skills() if s.name == front.name and s.source == source), None)
        if latest is not None and latest.digest == folder.digest:
            return latest
        skill = Skill(
            id=latest.id if latest is not None else new_id("skill"),
            version=latest.version + 1 if latest is not None else 1,
            name=front.name,
            description=front.description,
            license=front.license,
            compatibility=front.compatibility,
            metadata=front.metadata,
            allowed_tools=front.allowed_tools,
            body=front.body,
            files=folder.files,
            digest=folder.digest,
            diagnostics=folder.diagnostics,
            source=source,
            created_at=utc_now(),
        )
        self._store.put_skill_version(skill, folder.contents)
        return skill

    def store_project(self, root: Path, source: str) -> tuple[builtins.list[Skill], builtins.list[str]]:
        """Store the skills a project (a cloned repository) holds, as skills of ``source``; the problems of
        the folders that could not be loaded, one line each."""
        stored: builtins.list[Skill] = []
        problems: builtins.list[str] = []
        for folder in discover(root):
            where = folder.path.relative_to(root).as_posix()
            if not folder.ok:
                problems += [f"{where}/{d}" for d in folder.diagnostics if d.level == "error"]
                continue
            stored.append(self.store_folder(folder, source=source))
        return stored, problems

    # ------------------------------------------------------------------------------------------ the store

    def get(self, skill_id: str, version: int | None = None) -> Skill:
        """The latest version, or the given one; NotFoundError when there is none."""
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
            raise InvalidInputError(f"a skill version is an integer of at least 1, not {version!r}")
        skill = self._store.get_skill_version(skill_id, version)
        if skill is None:
            raise _not_found(skill_id, version)
        return skill

    def list(self) -> builtins.list[Skill]:
        """The latest version of every skill, oldest skill first."""
        return self._store.list_skills()

    def versions(self, skill_id: str) -> builtins.list[Skill]:
        versions = self._store.list_skill_versions(skill_id)
        if not versions:
            raise _not_found(skill_id)
        return versions

    def delete(self, skill_id: str) -> None:
        """Remove the skill and all its versions. Sessions that pinned it keep its name in their catalog
        and what it put in their conversations; activating it there fails from now on."""
        if not self._store.delete_skill(skill_id):
            raise _not_found(skill_id)

    def content(self, skill: Skill, path: str) -> bytes:
        """The content of one file of a skill version."""
        file = next((f for f in skill.files if f.path == path), None)
        if file is None:
            raise NotFoundError(f"the skill {skill.name} v{skill.version} has no file {path!r}")
        content = self._store.skill_content(file.sha256)
        if content is None:
            raise StoreError(f"the content of {path} of skill {skill.name} v{skill.version} is missing from the store")
        return content

    # ------------------------------------------------------------------------------------------ sessions

    def pin(self, agents: Sequence[Agent]) -> builtins.list[PinnedSkill]:
        """Each agent's skills pinned to a version (the latest for a reference without one). Raises
        InvalidInputError for a skill that is not stored, two of one agent's skills with one name, or more
        than MAX_SESSION_SKILLS skills in all."""
        pinned: builtins.list[PinnedSkill] = []
        for agent in agents:
            names: dict[str, str] = {}
            for ref in agent.skills:
                skill = self._resolve(agent, ref)
                if (other := names.get(skill.name)) is not None and other != skill.id:
                    raise InvalidInputError(
                        f"the agent {agent.name!r} has two skills named {skill.name!r} ({other} and {skill.id}); "
                        "remove one of them"
                    )
                names[skill.name] = skill.id
                pinned.append(
                    PinnedSkill(
                        agent_id=agent.id,
                        skill_id=skill.id,
                        version=skill.version,
                        name=skill.name,
                        description=skill.description,
                    )
                )
        check_session_cap(pinned)
        return pinned

    def _resolve(self, agent: Agent, ref: SkillRef) -> Skill:
        try:
            return self.get(ref.skill_id, ref.version)
        except NotFoundError:
            which = f" version {ref.version}" if ref.version is not None else ""
            raise InvalidInputError(
                f"the agent {agent.name!r} names the skill {ref.skill_id!r}{which}, which is not stored; "
                "store it with engine.skills.create(path), or update the agent's skills"
            ) from None

    def check(self, refs: Sequence[SkillRef]) -> None:
        """Raise InvalidInputError when a reference names no stored skill (or version)."""
        for index, ref in enumerate(refs):
            try:
                self.get(ref.skill_id, ref.version)
            except NotFoundError as exc:
                raise InvalidInputError(f"skills[{index}]: {exc}") from None

    def mount(self, skill: Skill, target: Path) -> None:
        """Write the version's folder at ``target``, read-only; a folder already holding exactly it is
        left as it is, one holding anything else is replaced."""
        if _holds(target, skill):
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{skill.name}-", dir=target.parent))
        try:
            for file in skill.files:
                destination = _inside(staging, file.path)
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(self.content(skill, file.path))
                mode = _READ_ONLY_DIR if file.executable else _READ_ONLY_FILE
                destination.chmod(mode | stat.S_IWUSR)  # writable until it is complete, for the rename
            if target.exists():
                _remove(target)
            staging.rename(target)
        except BaseException:
            _remove(staging)
            raise
        _seal(target)


def _inside(folder: Path, path: str) -> Path:
    """Where ``path`` goes in ``folder``, checked again here (a version built without validation, or a path
    through a link): nothing a stored version names is written outside the folder it is mounted in."""
    try:
        check_skill_path(path)
    except InvalidInputError as exc:
        raise ResourceMountError(f"a stored skill version cannot be mounted: {exc}") from None
    destination = folder / path
    if not Path(os.path.realpath(destination)).is_relative_to(os.path.realpath(folder)):
        raise ResourceMountError(f"a stored skill version cannot be mounted: {path!r} leads out of its folder")
    return destination


def _holds(target: Path, skill: Skill) -> bool:
    """Whether ``target`` holds exactly the version's files, unchanged."""
    if not target.is_dir():
        return False
    present = {p.relative_to(target).as_posix(): p for p in target.rglob("*") if p.is_file()}
    expected = {f.path: f for f in skill.files}
    if present.keys() != expected.keys():
        return False
    return all(hashlib.sha256(present[k].read_bytes()).hexdigest() == f.sha256 for k, f in expected.items())


def _seal(root: Path) -> None:
    """Take the write permission off every file and folder under ``root`` (and ``root``)."""
    for directory, dirs, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        for name in dirs:
            (Path(directory) / name).chmod(_READ_ONLY_DIR)
    root.chmod(_READ_ONLY_DIR)


def _remove(root: Path) -> None:
    """Delete a (sealed) folder: give its folders their write permission back first."""
    if not root.exists():
        return
    for directory, dirs, _ in os.walk(root):
        Path(directory).chmod(Path(directory).stat().st_mode | stat.S_IWUSR)
        for name in dirs:
            (Path(directory) / name).chmod(_READ_ONLY_DIR | stat.S_IWUSR)
    shutil.rmtree(root)
