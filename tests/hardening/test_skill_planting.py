"""Skill planting and YAML bombs: a stored skill version whose file leads out, and YAML that describes billions.

Whoever can write a shared store can add a skill version by hand. A version whose file path is ``../…``,
absolute or with backslashes is refused when read from the store (a StoreError that says what to do) and
again when mounted, and nothing is written outside the workspace. A SKILL.md whose frontmatter is an alias
bomb (a few hundred bytes that expand to 9^9 values), nests thousands deep or holds itself is refused as
YAML past agentcell's limits, at once; so is a ``%%workflow`` cell of the same kind in the real kernel,
which goes on running cells.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentcell import Engine, ResourceMountError, SkillFormatError, StoreError
from agentcell.records.skill import Skill, SkillFile

from ..kernel.conftest import execute
from ..skill_folders import skill_folder
from .kernel_session import kernel, kernel_environment

BAD_PATHS = {
    "dotdot": "../../../planted.sh",
    "dotdot-inside": "scripts/../../planted.sh",
    "absolute": "/tmp/planted.sh",
    "backslash": "..\\..\\planted.sh",
    "drive": "C:/planted.sh",
    "dot": "./SKILL.md",
    "empty-part": "scripts//x.sh",
}

ALIAS_BOMB = "\n".join(
    [f"a0: &a0 [{', '.join(['x'] * 9)}]"] + [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
)
YAML_BOMBS = {
    "alias-bomb": ALIAS_BOMB,
    "deep-nesting": "deep: " + "[" * 5_000 + "]" * 5_000,
    "recursive-alias": "self: &self [*self]",
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Engine, Path, Path]]:
    workspace = tmp_path / "home" / "project"
    workspace.mkdir(parents=True)
    with Engine(tmp_path / "shared.db") as engine:
        yield engine, tmp_path / "shared.db", workspace


def _plant(db: Path, skill: Skill, path: str) -> None:
    """A version 2 of ``skill`` with one more file at ``path``, written into the store by hand."""
    body = json.loads(skill.model_dump_json())
    content = b"#!/bin/sh\necho planted\n"
    sha = hashlib.sha256(content).hexdigest()
    body["version"] = 2
    body["files"].append({"path": path, "size": len(content), "sha256": sha, "executable": True})
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT OR IGNORE INTO skill_contents (sha256, content) VALUES (?, ?)", (sha, content))
        conn.execute(
            "INSERT INTO skill_versions (skill_id, version, body) VALUES (?, ?, ?)", (skill.id, 2, json.dumps(body))
        )
        conn.execute(
            "INSERT INTO skill_files (skill_id, version, path, sha256) VALUES (?, ?, ?, ?)", (skill.id, 2, path, sha)
        )
    conn.close()


def _planted_anywhere(root: Path) -> list[Path]:
    return list(root.rglob("planted.sh")) + [p for p in (Path("/tmp/planted.sh"),) if p.exists()]


@pytest.mark.parametrize("bad", list(BAD_PATHS))
def test_a_planted_version_is_refused_when_read_and_nothing_lands_outside(
    store: tuple[Engine, Path, Path], tmp_path: Path, bad: str
) -> None:
    engine, db, _ = store
    skill = engine.skills.create(skill_folder(tmp_path / "src", "tone"))
    agent = engine.agents.create(name="a", model="scripted", skills=[skill.id])  # the latest version
    _plant(db, skill, BAD_PATHS[bad])
    with pytest.raises(StoreError, match=r"stored skill version is not valid.*files\.\d+\.path.*delete it"):
        engine.sessions.create(agent=agent.id)
    with pytest.raises(StoreError):
        engine.skills.get(skill.id, 2)
    assert _planted_anywhere(tmp_path) == []


@pytest.mark.parametrize("bad", list(BAD_PATHS))
def test_the_model_refuses_the_path_and_the_mount_checks_again(
    store: tuple[Engine, Path, Path], tmp_path: Path, bad: str
) -> None:
    engine, _, workspace = store
    with pytest.raises(ValidationError, match="relative to its folder"):
        SkillFile(path=BAD_PATHS[bad], size=1, sha256="0" * 64)
    skill = engine.skills.create(skill_folder(tmp_path / "src", "tone"))
    # A version built without validation (as code that skips the model could): the mount checks each path.
    smuggled = SkillFile.model_construct(path=BAD_PATHS[bad], size=1, sha256="0" * 64, executable=True)
    unchecked = skill.model_copy(update={"files": [*skill.files, smuggled]})
    with pytest.raises(ResourceMountError, match="cannot be mounted"):
        engine.skills.mount(unchecked, workspace / ".agentcell" / "skills" / "tone" / "v9")
    assert _planted_anywhere(tmp_path) == []


@pytest.mark.parametrize("bomb", list(YAML_BOMBS))
def test_a_skill_md_bomb_is_refused_as_yaml_past_the_limits(
    store: tuple[Engine, Path, Path], tmp_path: Path, bomb: str
) -> None:
    engine, _, _ = store
    frontmatter = f"name: bomb\ndescription: looks harmless\n{YAML_BOMBS[bomb]}"
    folder = skill_folder(tmp_path / "src", "bomb", frontmatter=frontmatter)
    assert (folder / "SKILL.md").stat().st_size < 20_000
    with pytest.raises(SkillFormatError) as raised:
        engine.skills.create(folder)
    assert "not valid YAML" in "\n".join(raised.value.diagnostics)
    assert any(word in "\n".join(raised.value.diagnostics) for word in ("expanded", "deeper", "holds itself"))


def test_a_workflow_cell_bomb_is_refused_and_the_kernel_goes_on(tmp_path: Path) -> None:
    with kernel(kernel_environment(tmp_path), cwd=tmp_path) as (km, kc):
        for name, bomb in YAML_BOMBS.items():
            run = execute(kc, f"%%workflow\nname: bomb\n{bomb}\nsteps: []\n", timeout=30)
            assert run.status == "error", name
            assert "%%workflow: the plan is not valid YAML" in run.stderr + json.dumps(run.reply), name
        assert km.is_alive()
        assert execute(kc, "%%python\nprint(6 * 7)").stdout.strip() == "42"
