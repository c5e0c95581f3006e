"""The local upload store: files a session can mount, by id.

``engine.files.upload(path)`` copies a file into a folder next to the database (``<db>.files/``) and
returns its id (``file_...``); a session mounts it with ``{"type": "file", "file_id": ...}``. The store
keeps its own copy, so the original can change or go away without changing what sessions mount.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from datetime import datetime
from pathlib import Path

from .errors import InvalidInputError, NotFoundError
from .ids import new_id
from .records.common import utc_now
from .records.files import UploadedFile

__all__ = ["FilesAPI", "UploadedFile"]

_CONTENT = "content"
_META = "meta.json"


class FilesAPI:
    """``engine.files``: upload, look up, list and delete files of the local upload store."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()

    def upload(self, path: str | os.PathLike[str]) -> str:
        """Copy the file at ``path`` into the store and return its new id."""
        source = Path(path).expanduser()
        if not source.is_file():
            raise InvalidInputError(f"cannot upload {source}: it is not a file")
        file_id = new_id("file")
        folder = self.root / file_id
        self.root.mkdir(parents=True, exist_ok=True)
        # Written in a temporary folder and renamed, so a crash never leaves a half-written upload behind.
        staging = Path(tempfile.mkdtemp(prefix=".upload-", dir=self.root))
        try:
            digest = hashlib.sha256()
            with source.open("rb") as reader, (staging / _CONTENT).open("wb") as writer:
                while chunk := reader.read(1 << 20):
                    digest.update(chunk)
                    writer.write(chunk)
            meta = {
                "filename": source.name,
                "size": (staging / _CONTENT).stat().st_size,
                "sha256": digest.hexdigest(),
                "created_at": utc_now().isoformat(),
            }
            (staging / _META).write_text(json.dumps(meta))
            with self._lock:
                staging.rename(folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return file_id

    def get(self, file_id: str) -> UploadedFile:
        """The upload with that id; NotFoundError when there is none."""
        if not isinstance(file_id, str) or not file_id.startswith("file_") or "/" in file_id or "\\" in file_id:
            raise NotFoundError(f"no uploaded file {file_id!r}; upload one with engine.files.upload(path)")
        folder = self.root / file_id
        try:
            meta = json.loads((folder / _META).read_text())
        except (OSError, ValueError):
            raise NotFoundError(f"no uploaded file {file_id!r}; upload one with engine.files.upload(path)") from None
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
        if not self.root.is_dir():
            return []
        return [self.get(p.name) for p in sorted(self.root.iterdir()) if p.name.startswith("file_")]

    def delete(self, file_id: str) -> None:
        """Remove an upload; sessions that mounted it keep their copy."""
        shutil.rmtree(self.get(file_id).path.parent)
