"""Immutable version rows in PostgreSQL (agents' and skills' versions): insert once, and an insert retried
after a lost connection finds its own row rather than an error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg import sql

from ..errors import StoreError

__all__ = ["AGENT_VERSIONS", "SKILL_VERSIONS", "VersionTable", "insert_version"]


@dataclass(frozen=True)
class VersionTable:
    table: str
    owner_column: str
    what: str
    """How an error names the owner ("agent", "skill")."""


AGENT_VERSIONS = VersionTable("agent_versions", "agent_id", "agent")
SKILL_VERSIONS = VersionTable("skill_versions", "skill_id", "skill")


def insert_version(conn: Any, where: VersionTable, owner: str, version: int, body: str) -> bool:
    """Insert ``body`` as ``owner``'s ``version``; True when this call stored it, False when the same body is
    there already. A different body under that version is a StoreError."""
    names = {"table": sql.Identifier("agentcell", where.table), "owner": sql.Identifier(where.owner_column)}
    insert = sql.SQL(
        "INSERT INTO {table} ({owner}, version, body) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING RETURNING version"
    ).format(**names)
    if conn.execute(insert, (owner, version, body)).fetchone() is not None:
        return True
    select = sql.SQL("SELECT body FROM {table} WHERE {owner} = %s AND version = %s").format(**names)
    stored = conn.execute(select, (owner, version)).fetchone()
    if stored is None or stored[0] != body:
        raise StoreError(f"{where.what} {owner} version {version} already exists; versions are immutable")
    return False
