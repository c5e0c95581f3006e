"""An uploaded file: as the upload store hands it out, and as a database keeps it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

__all__ = ["StoredFile", "UploadedFile"]


@dataclass(frozen=True, slots=True)
class UploadedFile:
    id: str
    filename: str
    """The name the file had when it was uploaded."""
    size: int
    sha256: str
    created_at: datetime
    path: Path
    """Where the store keeps it (read it; do not change it)."""


@dataclass(frozen=True, slots=True)
class StoredFile:
    """An upload's description as a store that keeps uploads itself holds it (its content is apart)."""

    id: str
    filename: str
    size: int
    sha256: str
    created_at: datetime
