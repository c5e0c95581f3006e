"""The widget's code crosses the wire once per page, not with every turn (issue 34): through the real kernel,
a turn's IOPub bytes are its own content plus a small loader; the page asks for the views and KaTeX with
``code`` messages; a notebook nbclient executes with its defaults (widget state stored) stays small."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from queue import Empty
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agentcell_widgets import STATIC

from .conftest import TURN_MIMETYPE, TurnDriver, python_turns, write_script

pytestmark = pytest.mark.slow

SHORT_TURN_BYTES = 50_000
"""Everything a short turn sends over IOPub (issue 34's target; the views and KaTeX alone are ~840 KB)."""


def message_bytes(msg: dict[str, Any]) -> int:
    """A message's size on the wire: its four JSON frames and its binary buffers."""
    frames = (msg["header"], msg["parent_header"], msg["metadata"], msg["content"])
    return sum(len(json.dumps(f, default=str, separators=(",", ":")).encode()) for f in frames) + sum(
        len(b) for b in msg.get("buffers", [])
    )


def turn_bytes(d: TurnDriver, cell: str) -> int:
    d.execute(cell)
    d.until_idle(60)
    assert d.widget_closed and TURN_MIMETYPE in d.final_bundle
    return sum(message_bytes(m) for m in d.messages)


def answers(n: int) -> list[dict[str, Any]]:
    return [{"steps": [{"kind": "text", "text": f"Answer number {i}: forty-two."}]} for i in range(n)]


def test_a_short_turn_sends_its_own_content_and_ten_turns_do_not_grow(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    d = driver_for(write_script(tmp_path / "s.json", answers(11)))
    turn_bytes(d, "Warm up.")  # the engine loads with the first turn
    sizes = [turn_bytes(d, f"Question {i}?") for i in range(10)]
    opened = [m for m in d.messages if m["msg_type"] == "comm_open" and "_esm" in m["content"]["data"]["state"]]
    assert len(opened) == 1
    assert opened[0]["content"]["data"]["state"]["_esm"] == (STATIC / "loader.js").read_text()
    assert "_css" not in opened[0]["content"]["data"]["state"]
    print("IOPub bytes per turn:", sizes)
    assert max(sizes) <= SHORT_TURN_BYTES, sizes
    # Each turn carries its own events; the sparkline's list of earlier costs adds a few bytes a turn.
    assert max(sizes) - min(sizes) <= 1_000, sizes


def test_a_loader_asking_for_code_gets_each_part_it_names_and_makes_the_turn_live(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    bash = {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": f"touch {marker}"}}]}
    d = driver_for(write_script(tmp_path / "s.json", [*answers(1), bash, *answers(1)]))
    turn_bytes(d, "Warm up.")
    d.open_subshell()  # comms go over a subshell, as JupyterLab sends them
    d.execute("Touch the marker.")
    d.until(lambda _m: d.comm_id is not None)
    # The loader's question comes before its view can say hello, and proves as much: the turn goes live. It
    # asks up to three times, as a message can be lost on ipykernel 7.3; the kernel answers once.
    for attempt in range(3):
        d.send({"type": "code", "part": "turn"})
        try:
            live = d.until_item("widget.live", 2.5 if attempt < 2 else 30)
            break
        except Empty:
            if attempt == 2:
                raise
    assert live["approvals"] is True
    request = d.until_item("widget.approval_request")  # the turn waits for the user: its widget is open
    d.send({"type": "code", "part": "turn"})  # asked again: not sent again
    d.send({"type": "code", "part": "../../etc/passwd"})  # not a part: no answer
    d.send({"type": "code", "part": "math"})

    def code(msg: dict[str, Any]) -> dict[str, Any] | None:
        if msg["msg_type"] != "comm_msg" or msg["content"]["comm_id"] != d.comm_id:
            return None
        content: dict[str, Any] = msg["content"]["data"].get("content", {})
        return content if content.get("type") == "code" else None

    d.until(lambda m: (code(m) or {}).get("part") == "math")
    d.send({"type": "approval", "tool_use_id": request["tool_use_id"], "result": "allow", "remember": "once"})
    d.until_idle(60)
    assert marker.exists()
    answered = [(code(m), m["buffers"]) for m in d.messages if code(m) is not None]
    assert [c for c, _ in answered] == [{"type": "code", "part": "turn"}, {"type": "code", "part": "math"}]
    turn, math = (buffers for _, buffers in answered)
    assert [bytes(b) for b in turn] == [(STATIC / "turn.js").read_bytes()]
    assert [bytes(b) for b in math] == [(STATIC / "math.js").read_bytes()]
    assert b"KaTeX parse error" not in bytes(turn[0]) and b".ac-turn" in bytes(turn[0])  # views and CSS, no KaTeX
    assert b"@font-face" in bytes(math[0]) and b"font/woff2" in bytes(math[0])  # KaTeX and its fonts


def test_a_notebook_nbclient_executes_with_widget_state_is_at_most_three_times_its_transcripts(
    kernel_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = 20
    for key, value in kernel_env.items():
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)
    model = write_script(tmp_path / "s.json", python_turns(turns))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentcell", "display_name": "agentcell", "language": "markdown"}
    cells = [f"%model {model}"] + [f"Sum the first {n + 10} numbers." for n in range(turns)]
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    NotebookClient(nb, kernel_name="agentcell", timeout=60, store_widget_state=True).execute()
    saved = nbformat.writes(nb).encode()
    assert "widgets" in nb.metadata  # nbclient kept the turn widgets' state, as it does by default
    bundles = [o["data"][TURN_MIMETYPE] for c in nb.cells for o in c.outputs if TURN_MIMETYPE in o.get("data", {})]
    assert len(bundles) == turns
    transcripts = sum(len(json.dumps(b["events"], separators=(",", ":")).encode()) for b in bundles)
    assert len(saved) <= 3 * transcripts, (len(saved), transcripts, len(saved) / transcripts)
