"""Memory stores and their notes: what outlives a session (kept by the store, used through the memory tools)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["MAX_NOTE_CHARS", "MAX_PATH_CHARS", "MemoryNote", "MemoryStore"]

MAX_NOTE_CHARS = 100_000
MAX_PATH_CHARS = 256


@dataclass(frozen=True, slots=True)
class MemoryStore:
    id: str
    name: str
    description: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class MemoryNote:
    path: str
    content: str
    updated_at: datetime
