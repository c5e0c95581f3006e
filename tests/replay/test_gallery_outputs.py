"""The gallery is committed with its outputs, and they are what a fresh replay of each notebook's
recording produces (regenerate with ``tests/replay/gallery_outputs.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .gallery_outputs import GALLERY, TURN_MIMETYPE, normalized, replay

pytestmark = pytest.mark.slow


@pytest.mark.timeout(600)
def test_the_committed_gallery_outputs_equal_a_fresh_replay(tmp_path: Path) -> None:
    executed = replay(GALLERY, tmp_path)
    assert set(executed) >= {"quickstart.ipynb", "tools_and_approvals.ipynb", "threads.ipynb", "outcomes.ipynb"}
    for name, fresh in executed.items():
        committed = json.loads((GALLERY / name).read_text(encoding="utf-8"))
        turns = [o for c in committed["cells"] for o in c.get("outputs", []) if TURN_MIMETYPE in o.get("data", {})]
        assert turns, f"{name} is committed without its turns' outputs"
        assert "widgets" not in committed["metadata"], f"{name} carries widget state"
        assert normalized(committed) == normalized(json.loads(fresh.read_text(encoding="utf-8"))), name
