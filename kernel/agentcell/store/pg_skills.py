"""Skills in PostgreSQL: each version a row, each file's content once (by SHA-256), shared by versions.

``skill_files`` says which version holds which content, with a foreign key to the content: deleting a skill
removes the contents no version holds any more, and a content another kernel is storing a version with at
that moment is kept (the key refuses to let it go; it is collected by a later delete).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import psycopg

from ..records.skill import Skill, stored_skill
from .pg_versions import SKILL_VERSIONS, insert_version

__all__ = ["PgSkills"]

T = TypeVar("T")
Run = Callable[[str, Callable[[Any], T]], T]

_COLLECT = (
    "DELETE FROM agentcell.skill_contents AS c WHERE NOT EXISTS "
    "(SELECT 1 FROM agentcell.skill_files AS f WHERE f.sha256 = c.sha256)"
)


class PgSkills:
    """The skill half of a PostgreSQL store."""

    def __init__(self, run: Run[Any]) -> None:
        self._run = run

    def put_skill_version(self, skill: Skill, contents: Mapping[str, bytes]) -> None:
        body = skill.model_dump_json()

        def work(conn: Any) -> None:
            with conn.transaction():
                if not insert_version(conn, SKILL_VERSIONS, skill.id, skill.version, body):
                    return  # the same version, stored by this call before its connection was lost
                with conn.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO agentcell.skill_contents (sha256, content) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                        [(f.sha256, contents[f.sha256]) for f in skill.files],
                    )
                    cursor.executemany(
                        "INSERT INTO agentcell.skill_files (skill_id, version, path, sha256) VALUES (%s, %s, %s, %s)",
                        [(skill.id, skill.version, f.path, f.sha256) for f in skill.files],
                    )

        self._run(f"store skill {skill.name} version {skill.version}", work)

    def get_skill_version(self, skill_id: str, version: int | None) -> Skill | None:
        if version is None:
            sql = "SELECT body FROM agentcell.skill_versions WHERE skill_id = %s ORDER BY version DESC LIMIT 1"
            params: tuple[object, ...] = (skill_id,)
        else:
            sql = "SELECT body FROM agentcell.skill_versions WHERE skill_id = %s AND version = %s"
            params = (skill_id, version)
        rows = self._run(f"read skill {skill_id}", lambda conn: conn.execute(sql, params).fetchall())
        return stored_skill(rows[0][0]) if rows else None

    def list_skills(self) -> list[Skill]:
        rows = self._run(
            "list skills",
            lambda conn: conn.execute(
                "SELECT DISTINCT ON (skill_id) body FROM agentcell.skill_versions ORDER BY skill_id, version DESC"
            ).fetchall(),
        )
        return [stored_skill(body) for (body,) in rows]

    def list_skill_versions(self, skill_id: str) -> list[Skill]:
        rows = self._run(
            f"list the versions of skill {skill_id}",
            lambda conn: conn.execute(
                "SELECT body FROM agentcell.skill_versions WHERE skill_id = %s ORDER BY version", (skill_id,)
            ).fetchall(),
        )
        return [stored_skill(body) for (body,) in rows]

    def skill_content(self, sha256: str) -> bytes | None:
        rows = self._run(
            "read a skill's file",
            lambda conn: conn.execute(
                "SELECT content FROM agentcell.skill_contents WHERE sha256 = %s", (sha256,)
            ).fetchall(),
        )
        return bytes(rows[0][0]) if rows else None

    def delete_skill(self, skill_id: str) -> bool:
        def work(conn: Any) -> bool:
            done = conn.execute("DELETE FROM agentcell.skill_versions WHERE skill_id = %s", (skill_id,)).rowcount
            # Another kernel storing a version that holds one of these contents just now keeps it.
            with contextlib.suppress(psycopg.errors.ForeignKeyViolation):
                conn.execute(_COLLECT)
            return bool(done)

        return bool(self._run(f"delete skill {skill_id}", work))
