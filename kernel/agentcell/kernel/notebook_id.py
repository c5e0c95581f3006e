"""The notebook's own id, kept in its metadata (``metadata.agentcell.notebook_id``) by agentcell's
JupyterLab / Notebook 7 extension, so the notebook keeps its session when it is renamed or moved.

The kernel reads it from the saved notebook: a Jupyter server tells the kernel the notebook's path
(``JPY_SESSION_NAME``), not its contents. A notebook never saved with an id has none yet; the host asks
again at the next turn (see ``NotebookAgent._adopt_notebook_id``).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["METADATA_KEY", "notebook_file", "saved_notebook_id"]

METADATA_KEY = "agentcell"


def notebook_file(notebook_path: str) -> Path:
    """The notebook's file: a server's path is relative to its root, and the kernel runs in the notebook's
    folder (the same rule as the recording's, ``replay_mode.notebook_replayer``)."""
    path = Path(notebook_path)
    return path if path.is_absolute() else Path.cwd() / path.name


_read: dict[Path, tuple[int, str | None]] = {}
"""What each notebook file said at its last modification time: the host asks often, a notebook can be big."""


def saved_notebook_id(notebook_path: str | None) -> str | None:
    """The id in the saved notebook's metadata, or None (no notebook, not saved yet, not JSON, no id)."""
    if not notebook_path:
        return None
    path = notebook_file(notebook_path)
    try:
        modified = path.stat().st_mtime_ns
        if (cached := _read.get(path)) is not None and cached[0] == modified:
            return cached[1]
        with path.open(encoding="utf-8") as file:
            metadata = json.load(file).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return None
    section = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    value = section.get("notebook_id") if isinstance(section, dict) else None
    found = value if isinstance(value, str) and value else None
    _read[path] = (modified, found)
    return found
