"""Skill folders for tests: ``SKILL.md`` written from its parts, and files beside it."""

from __future__ import annotations

from pathlib import Path


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
