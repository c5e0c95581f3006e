"""Opening the store a database setting names: a ``postgresql://`` URL, or a SQLite file."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigurationError
from .base import Store
from .pg_url import is_postgres_url, url_fingerprint
from .sqlite import SQLiteStore, _jupyter_data_dir

__all__ = ["LEASE_ENV", "open_store", "uploads_cache_dir"]

LEASE_ENV = "AGENTCELL_LEASE_SECONDS"
"""Overrides how long a session's lease lasts on PostgreSQL (see ``store/pg_lease.py``)."""


def _lease_seconds() -> float | None:
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ConfigurationError(f"{LEASE_ENV} must be a positive number of seconds, not {raw!r}")
    return seconds


def open_store(db: str | os.PathLike[str] | None = None) -> Store:
    """The store ``db`` names; None: ``$AGENTCELL_DB``, else the default SQLite file."""
    target = os.fspath(db) if db is not None else os.environ.get("AGENTCELL_DB", "")
    if not is_postgres_url(target):
        return SQLiteStore(db)
    try:
        from .postgres import PostgresStore
    except ImportError:
        raise ConfigurationError(
            "a postgresql:// database needs the PostgreSQL driver: pip install 'agentcell[postgres]'"
        ) from None
    seconds = _lease_seconds()
    return PostgresStore(target) if seconds is None else PostgresStore(target, lease_seconds=seconds)


def uploads_cache_dir(location: str) -> Path:
    """Where a kernel keeps its local copies of the uploads a database store holds."""
    return _jupyter_data_dir() / "agentcell" / "cache" / url_fingerprint(location) / "files"
