"""Skill folders for tests: ``SKILL.md`` written from its parts, and files beside it; and the events a
kernel or an ACP agent under test stored (read from its SQLite database, as another process would)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any


def skill_folder(
    parent: Path,
    name: str,
    *,
    description: str | None = "What it does and when to use it.",
    body: str = "# Instructions\nDo the thing.",
    frontmatter: str | None = None,
    files: dict[str, str] | None = None,
    folder: str | None = None,
) -> Path:
    """Write ``parent/<folder or name>/SKILL.md`` (``frontmatter`` replaces the generated keys) and ``files``."""
    root = parent / (folder or name)
    root.mkdir(parents=True, exist_ok=True)
    if frontmatter is None:
        keys = [f"name: {name}"] + ([f"description: {description}"] if description is not None else [])
        frontmatter = "\n".join(keys)
    (root / "SKILL.md").write_text(f"---\n{frontmatter}\n---\n{body}\n")
    for relative, content in (files or {}).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def stored_events(db: str) -> list[dict[str, Any]]:
    """Every event in the database, in log order, as JSON."""
    conn = sqlite3.connect(db)
    try:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM events ORDER BY seq")]
    finally:
        conn.close()
