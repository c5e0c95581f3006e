"""A re-run cell takes its turn and the turns after it off the conversation's path
(``session.turns_superseded``); their outputs, still in the notebook, are updated in place to say so."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcell.render.displays import STALE_NOTE

from .conftest import TURN_MIMETYPE, TurnDriver, write_script

pytestmark = pytest.mark.slow


def say(text: str) -> dict[str, Any]:
    return {"steps": [{"kind": "text", "text": text}]}


def test_re_running_a_cell_marks_the_superseded_turns_stale_where_they_stand(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    d = driver_for(write_script(tmp_path / "s.json", [say("First."), say("Second."), say("First again.")]))
    shown: dict[str, tuple[str, dict[str, Any]]] = {}
    for cell, prompt in (("cell-a", "Say one."), ("cell-b", "Say two.")):
        d.execute(prompt, cell_id=cell)
        d.until_idle()
        shown[cell] = (d.widget_display_id, d.final_bundle)
        assert not d.final_bundle[TURN_MIMETYPE].get("stale")

    d.execute("Say one.", cell_id="cell-a")  # the first cell again
    d.until_idle()
    updates = {
        m["content"]["transient"]["display_id"]: m["content"]["data"]
        for m in d.messages
        if m["msg_type"] == "update_display_data"
    }
    for cell in ("cell-a", "cell-b"):
        display_id, before = shown[cell]
        stale = updates[display_id]
        assert stale[TURN_MIMETYPE]["stale"] is True
        assert stale[TURN_MIMETYPE]["events"] == before[TURN_MIMETYPE]["events"]  # the same turn, marked
        for mime in ("text/markdown", "text/html", "text/plain"):
            assert STALE_NOTE in stale[mime], mime
    # The re-run's own turn is current, under a display id of its own.
    assert d.widget_display_id not in (shown["cell-a"][0], shown["cell-b"][0])
    assert not d.final_bundle[TURN_MIMETYPE].get("stale")
    assert "First again." in d.final_bundle["text/plain"]


def test_a_turn_in_a_new_cell_marks_nothing(driver_for: Callable[[str], TurnDriver], tmp_path: Path) -> None:
    d = driver_for(write_script(tmp_path / "s.json", [say("One."), say("Two.")]))
    for cell in ("cell-a", "cell-b"):
        d.execute("Go on.", cell_id=cell)
        d.until_idle()
        stale = [
            m
            for m in d.messages
            if m["msg_type"] == "update_display_data" and m["content"]["data"].get(TURN_MIMETYPE, {}).get("stale")
        ]
        assert stale == []
