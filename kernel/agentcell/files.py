"""The upload store: files a session can mount, by id.

``engine.files.upload(path)`` keeps a copy of a file and returns its id (``file_...``); a session mounts it
with ``{"type": "file", "file_id": ...}``. The store keeps its own copy, so the original can change or go
away without changing what sessions mount. Where the copy lives follows the database:

* with SQLite, in a folder next to the database (``<db>.files/<id>/``);
* with a store that keeps uploads itself (PostgreSQL, ``store.files``), in the database, so that every
  kernel sharing it can mount them, up to the store's size cap; each kernel keeps a local copy, made
  the first time it is asked for, where mounting reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import InvalidInputError, NotFoundError
from .ids import new_id
from .records.common import utc_now
from .records.files import StoredFile, UploadedFile

if TYPE_CHECKING:
    from .store.base import FileBlobs

__all__ = ["FilesAPI", "UploadedFile"]

_CONTENT = "content"
_META = "meta.json"


def _not_found(file_id: str) -> NotFoundError:
    return NotFoundError(f"no uploaded file {file_id!r}; upload one with engine.files.upload(path)")


class FilesAPI:
    """``engine.files``: upload, look up, list and delete uploaded files."""

    def __init__(self, root: Path, *, blobs: FileBlobs | None = None) -> None:
        """``root``: the folder of uploads; with ``blobs`` (a store that keeps them), of the local copies."""
        self.root = root
        self._blobs = blobs
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ the API

    def upload(self, path: str | os.PathLike[str]) -> str:
        """Copy the file at ``path`` into the store and return its new id."""
        source = Path(path).expanduser()
        if not source.is_file():
            raise InvalidInputError(f"cannot upload {source}: it is not a file")
        file_id = new_id("file")
        if self._blobs is not None:
            cap = self._blobs.max_file_bytes
            if (size := source.stat().st_size) > cap:
                raise InvalidInputError(
                    f"cannot upload {source.name}: it is {size / 2**20:.1f} MiB, and the database keeps uploads "
                    f"of at most {cap / 2**20:.0f} MiB; mount a git repository or copy it into the workspace instead"
                )
            content = source.read_bytes()
            self.import_file(_describe(file_id, source.name, content), content)
            return file_id

        def copy(target: Path) -> str:
            digest = hashlib.sha256()
            with source.open("rb") as reader, target.open("wb") as writer:
                while chunk := reader.read(1 << 20):
                    digest.update(chunk)
                    writer.write(chunk)
            return digest.hexdigest()

        self._publish(file_id, source.name, copy)
        return file_id

    def get(self, file_id: str) -> UploadedFile:
        """The upload with that id; NotFoundError when there is none."""
        if not isinstance(file_id, str) or not file_id.startswith("file_") or "/" in file_id or "\\" in file_id:
            raise _not_found(file_id)
        if self._blobs is not None:
            stored = self._blobs.get_file(file_id)
            if stored is None:
                raise _not_found(file_id)
            return _uploaded(stored, self._local_copy(stored))
        folder = self.root / file_id
        try:
            meta = json.loads((folder / _META).read_text())
        except (OSError, ValueError):
            raise _not_found(file_id) from None
        return UploadedFile(
            id=file_id,
            filename=str(meta["filename"]),
            size=int(meta["size"]),
            sha256=str(meta["sha256"]),
            created_at=datetime.fromisoformat(meta["created_at"]),
            path=folder / _CONTENT,
        )

    def list(self) -> list[UploadedFile]:
        """Every upload, oldest first (ids sort by creation time)."""
        if self._blobs is not None:
            return [self.get(stored.id) for stored in self._blobs.list_files()]
        if not self.root.is_dir():
            return []
        return [self.get(p.name) for p in sorted(self.root.iterdir()) if p.name.startswith("file_")]

    def delete(self, file_id: str) -> None:
        """Remove an upload; sessions that mounted it keep their copy."""
        upload = self.get(file_id)
        if self._blobs is not None:
            self._blobs.delete_file(file_id)
        shutil.rmtree(upload.path.parent, ignore_errors=self._blobs is not None)

    # ------------------------------------------------------------------------------------------ copying a store

    def import_file(self, file: StoredFile, content: bytes) -> None:
        """Keep ``content`` as the upload ``file`` describes, with its id (``agentcell migrate``)."""
        if self._blobs is not None:
            if len(content) > self._blobs.max_file_bytes:
                raise InvalidInputError(
                    f"the upload {file.id} ({file.filename}) is {len(content):,} bytes; the database keeps "
                    f"uploads of at most {self._blobs.max_file_bytes:,}"
                )
            self._blobs.put_file(file, content)
            return
        self._publish(file.id, file.filename, lambda target: _write(target, content), created_at=file.created_at)

    def read_bytes(self, file_id: str) -> bytes:
        return self.get(file_id).path.read_bytes()

    # ------------------------------------------------------------------------------------------ folders

    def _publish(
        self, file_id: str, filename: str, write: Callable[[Path], str], *, created_at: datetime | None = None
    ) -> None:
        """Write ``<root>/<file_id>/`` whole or not at all: in a temporary folder, then renamed."""
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".upload-", dir=self.root))
        try:
            sha256 = write(staging / _CONTENT)
            meta = {
                "filename": filename,
                "size": (staging / _CONTENT).stat().st_size,
                "sha256": sha256,
                "created_at": (created_at or utc_now()).isoformat(),
            }
            (staging / _META).write_text(json.dumps(meta))
            with self._lock:
                staging.rename(self.root / file_id)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _local_copy(self, stored: StoredFile) -> Path:
        """This kernel's copy of an upload the database keeps, fetched the first time it is needed."""
        target = self.root / stored.id / _CONTENT
        if target.is_file() and target.stat().st_size == stored.size:
            return target
        content = self._blobs.file_content(stored.id) if self._blobs is not None else None
        if content is None:
            raise _not_found(stored.id)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{_CONTENT}.{os.getpid()}.partial")
        partial.write_bytes(content)
        partial.replace(target)
        return target


def _write(target: Path, content: bytes) -> str:
    target.write_bytes(content)
    return hashlib.sha256(content).hexdigest()


def _describe(file_id: str, filename: str, content: bytes) -> StoredFile:
    return StoredFile(file_id, filename, len(content), hashlib.sha256(content).hexdigest(), utc_now())


def _uploaded(stored: StoredFile, path: Path) -> UploadedFile:
    return UploadedFile(stored.id, stored.filename, stored.size, stored.sha256, stored.created_at, path)
