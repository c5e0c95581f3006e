"""Uploaded files in PostgreSQL: one row each, content included, up to a size cap.

On a shared database the upload must reach every kernel, not only the one whose disk it was copied to, so
the content lives in ``agentcell.files`` (``bytea``). The cap keeps one upload from filling the database
and every kernel's memory: ``engine.files.upload`` refuses a larger file before reading it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
from typing import Any, TypeVar

import psycopg

from ..errors import StoreError
from ..records.files import StoredFile

__all__ = ["MAX_FILE_BYTES", "PgFiles"]

MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest upload a PostgreSQL store keeps (64 MiB)."""

T = TypeVar("T")
Run = Callable[[str, Callable[[Any], T]], T]

_COLUMNS = "id, filename, size, sha256, created_at"


def _file(row: tuple[Any, ...]) -> StoredFile:
    file_id, filename, size, sha256, created = row
    return StoredFile(str(file_id), str(filename), int(size), str(sha256), created.astimezone(UTC))


class PgFiles:
    """The FileBlobs of a PostgreSQL store."""

    def __init__(self, run: Run[Any], max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self._run = run
        self._max = max_file_bytes

    @property
    def max_file_bytes(self) -> int:
        return self._max

    def put_file(self, file: StoredFile, content: bytes) -> None:
        if len(content) > self._max:
            raise StoreError(f"the upload {file.id} is {len(content):,} bytes; this store keeps at most {self._max:,}")

        def work(conn: Any) -> None:
            try:
                conn.execute(
                    f"INSERT INTO agentcell.files ({_COLUMNS}, content) VALUES (%s, %s, %s, %s, %s, %s)",
                    (file.id, file.filename, file.size, file.sha256, file.created_at, content),
                )
            except psycopg.errors.UniqueViolation:
                # A retry after a lost acknowledgement finds its own row: the same file is no conflict.
                row = conn.execute(f"SELECT {_COLUMNS} FROM agentcell.files WHERE id = %s", (file.id,)).fetchone()
                if row is None or _file(row) != file:
                    raise StoreError(f"an upload with id {file.id} already exists; uploads are immutable") from None

        self._run(f"store the upload {file.id}", work)

    def get_file(self, file_id: str) -> StoredFile | None:
        rows = self._run(
            f"read the upload {file_id}",
            lambda conn: conn.execute(f"SELECT {_COLUMNS} FROM agentcell.files WHERE id = %s", (file_id,)).fetchall(),
        )
        return _file(rows[0]) if rows else None

    def file_content(self, file_id: str) -> bytes | None:
        rows = self._run(
            f"read the upload {file_id}",
            lambda conn: conn.execute("SELECT content FROM agentcell.files WHERE id = %s", (file_id,)).fetchall(),
        )
        return bytes(rows[0][0]) if rows else None

    def list_files(self) -> list[StoredFile]:
        rows = self._run(
            "list the uploads",
            lambda conn: conn.execute(f"SELECT {_COLUMNS} FROM agentcell.files ORDER BY id").fetchall(),
        )
        return [_file(row) for row in rows]

    def delete_file(self, file_id: str) -> bool:
        done = self._run(
            f"delete the upload {file_id}",
            lambda conn: conn.execute("DELETE FROM agentcell.files WHERE id = %s", (file_id,)).rowcount,
        )
        return bool(done)
