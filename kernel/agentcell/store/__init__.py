"""Persistence: the Store protocol, its SQLite implementation, and opening a store by name.

The PostgreSQL store (``store.postgres``) loads only when a ``postgresql://`` URL is opened: it needs the
``postgres`` extra.
"""

from .base import EventRow, FileBlobs, Lease, Store
from .open import open_store
from .sqlite import SCHEMA_VERSION, SQLiteStore, default_db_path

__all__ = ["SCHEMA_VERSION", "EventRow", "FileBlobs", "Lease", "SQLiteStore", "Store", "default_db_path", "open_store"]
