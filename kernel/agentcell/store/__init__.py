"""Persistence: the Store protocol and its SQLite implementation."""

from .base import Store
from .sqlite import SCHEMA_VERSION, SQLiteStore, default_db_path

__all__ = ["SCHEMA_VERSION", "SQLiteStore", "Store", "default_db_path"]
