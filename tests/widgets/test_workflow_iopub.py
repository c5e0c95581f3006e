"""A workflow run of 20 step items streaming at once, in the real kernel with the turn widget: the widget's
traffic stays within the IOPub budget (at most ~30 messages a second), and every step's thread reaches it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import TurnDriver, write_script

pytestmark = pytest.mark.slow

ITEMS = 20


def test_twenty_steps_streaming_at_once_stay_within_the_iopub_budget(
    driver_for: Callable[[str], TurnDriver], tmp_path: Path
) -> None:
    texts = [f"item{i:02d} " * 30 for i in range(ITEMS)]
    model = write_script(
        tmp_path / "s.json",
        [{"steps": [{"kind": "text", "text": t, "chunk_size": 2, "delay": 0.004}]} for t in texts],
    )
    d = driver_for(model)
    d.execute("%workflows on")
    d.until_idle()
    items = ", ".join(str(i) for i in range(ITEMS))
    d.execute(
        f"%%workflow max_concurrency={ITEMS}\nname: wide\nsteps:\n"
        f"  - {{id: each, agent: {{inline: {{name: w}}}}, for_each: [{items}], prompt: 'item {{{{item}}}}'}}\n"
    )
    d.until_idle(60)

    summary = "".join(m["content"]["text"] for m in d.messages if m["msg_type"] == "stream")
    assert summary.startswith(f"workflow 'wide' completed: {ITEMS} step items ran, 0 reused"), summary
    comm = [m for m in d.messages if m["msg_type"] == "comm_msg"]
    span = comm[-1]["time"] - comm[0]["time"]
    assert len(comm) >= 10  # it streamed
    assert len(comm) <= 30 * span + 5, (len(comm), span)
    final = d.final_state
    threads = {i["session_thread_id"] for i in final if i["type"] == "session.thread_created"}
    assert len(threads) == ITEMS
    # Each item's thread streamed its own text to the widget, and the scripted model answered them all.
    answers = sorted(b["text"] for i in final if i["type"] == "agent.message" for b in i["content"])
    assert answers == sorted(texts)
    started = [i for i in final if i["type"] == "workflow_run.step_started"]
    assert len(started) == ITEMS  # the run's own events are in the widget's saved state too
    # ...and the saved turn's fallbacks show the run's one step with all its items done.
    markdown = d.final_bundle["text/markdown"]
    assert f"| 0 | completed | **each** | w | {ITEMS}/{ITEMS} items |" in markdown, markdown[:600]
    assert markdown.count("<summary>🧵 each · item ") == ITEMS
