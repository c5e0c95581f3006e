"""Both stores under one contract: a fresh SQLite file, or a fresh database on a real PostgreSQL server.

The server is Debian's PostgreSQL started by the tests themselves in a temporary folder (``initdb`` as the
``postgres`` user, a socket in the folder, fsync off), once per test session; each test gets a database
of its own. No Docker, no mock.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from agentcell import Engine
from agentcell.store import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from agentcell.store.pg_schema import SCHEMA_VERSION as PG_SCHEMA_VERSION
from agentcell.store.pg_scratch import ScratchPostgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[ScratchPostgres]:
    server = ScratchPostgres().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: ScratchPostgres) -> str:
    """A URL of a new, empty database on the shared test server."""
    return pg_server.create_database(f"t_{uuid.uuid4().hex[:12]}")


@dataclass
class Backend:
    """What a contract test needs to reach under a store: its database, raw."""

    kind: str
    db: str
    """What Engine(db) opens: a file path or a URL."""
    schema_version: int
    integrity_error: type[Exception]
    """What the database raises when a trigger refuses a change."""
    server: ScratchPostgres | None = None

    def execute(self, sql: str) -> None:
        """Run a statement on the database directly, as another program would (tables unqualified)."""
        if self.server is None:
            conn = sqlite3.connect(self.db)
            try:
                conn.execute(sql)
                conn.commit()
            finally:
                conn.close()
            return
        with psycopg.connect(self.db, autocommit=True) as pg:
            pg.execute("SET search_path TO agentcell")
            pg.execute(sql.encode())

    def bump_version(self) -> None:
        if self.server is None:
            self.execute(f"PRAGMA user_version={self.schema_version + 1}")
        else:
            self.execute(f"UPDATE schema_version SET version = {self.schema_version + 1}")

    def fingerprint(self) -> str:
        """Changes when anything in the database does: the file's bytes, or a full dump of the schema."""
        if self.server is None:
            return hashlib.sha256(Path(self.db).read_bytes()).hexdigest()
        dump = subprocess.run(
            [str(self.server.bin / "pg_dump"), "--schema=agentcell", self.db],
            capture_output=True,
            check=True,
        ).stdout
        # pg_dump brackets its output with a random \restrict key each run: not part of the database.
        lines = [line for line in dump.splitlines() if not line.startswith((b"\\restrict", b"\\unrestrict"))]
        return hashlib.sha256(b"\n".join(lines)).hexdigest()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", str(tmp_path / "agentcell.db"), SQLITE_SCHEMA_VERSION, sqlite3.IntegrityError)
    server: ScratchPostgres = request.getfixturevalue("pg_server")
    url = server.create_database(f"t_{uuid.uuid4().hex[:12]}")
    return Backend("postgres", url, PG_SCHEMA_VERSION, psycopg.errors.RaiseException, server)


@pytest.fixture
def engine(backend: Backend) -> Iterator[Engine]:
    with Engine(backend.db) as engine:
        yield engine
