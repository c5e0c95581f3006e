"""Persistence: the Store protocol and its SQLite implementation."""

from .base import SessionRecord, Store
from .sqlite import SCHEMA_VERSION, SQLiteStore, default_db_path

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "SessionRecord", "Store", "default_db_path"]
