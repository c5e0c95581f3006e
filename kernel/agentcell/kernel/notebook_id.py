"""The notebook's own id, kept in its metadata (``metadata.agentcell.notebook_id``) by agentcell's
JupyterLab / Notebook 7 extension, so the notebook keeps its session when it is renamed or moved.

The kernel reads it from the saved notebook: a Jupyter server tells the kernel the notebook's path
(``JPY_SESSION_NAME``), not its contents. A notebook never saved with an id has none yet; the host asks
again at the next turn (see ``NotebookAgent._adopt_notebook_id``).

The recording follows the notebook the same way: the store remembers where each notebook id's recording
lives, and a kernel that starts for a renamed or moved notebook finds its recording there (``follow_recording``).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store.base import Store

__all__ = ["METADATA_KEY", "follow_recording", "notebook_file", "saved_notebook_id"]

log = logging.getLogger(__name__)

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


_RECORDING_SUFFIX = ".agentcell.jsonl"


def follow_recording(notebook_path: str | None, recording: Path, store: Store) -> Path | None:
    """Bring the notebook's recording to ``recording`` (its place beside the notebook) from where the store saw
    it last, when the notebook was renamed or moved since; returns the path it came from, or None.

    A rename moves the recording. When the notebook it sat beside is still there, the notebook was copied
    (JupyterLab's Duplicate keeps the metadata, so both carry one id), and each copy keeps a recording."""
    notebook_id = saved_notebook_id(notebook_path)
    if notebook_id is None:
        return None
    key = f"notebook-recording:{notebook_id}"
    known = store.get_value(key)
    moved_from: Path | None = None
    if known and Path(known) != recording and not recording.exists() and Path(known).is_file():
        before = Path(known)
        beside = before.with_name(before.name.removesuffix(_RECORDING_SUFFIX) + ".ipynb")
        try:
            if beside.exists():
                shutil.copy2(before, recording)
            else:
                shutil.move(before, recording)
        except OSError as exc:  # a read-only folder: replaying still works from the old place next time
            log.warning("could not bring the recording %s to %s: %s", before, recording, exc)
        else:
            moved_from = before
    store.set_value(key, str(recording))
    return moved_from
