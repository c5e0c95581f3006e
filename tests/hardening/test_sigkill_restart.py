"""SIGKILL and restart: a kernel killed mid-turn loses no committed event, and its notebook's session goes on.

A real agentcell kernel runs a long turn (text streaming between tool calls, or a tool that is still
running); while it runs, this test reads the event log as another process would and notes every row
committed so far, then kills the kernel with SIGKILL. The database passes SQLite's integrity check, every
noted row is still there in the same order, and a new kernel for the same notebook reopens the same session,
whose next cell is answered after the dead turn.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ..kernel.conftest import execute
from .kernel_session import kernel, kernel_environment, logged_events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]  # two kernels each, one killed

TICK = '%%python\nimport time\nfrom agentcell import tool\n@tool\ndef tick() -> str:\n    """Tocks."""\n'


def _scripts(root: Path) -> None:
    def text(n: int) -> dict[str, object]:
        return {"kind": "text", "text": f"step {n} " * 10, "chunk_size": 7, "delay": 0.002}

    turns = [{"steps": [text(n), {"kind": "tool_call", "name": "tick", "input": {}}]} for n in range(300)]
    (root / "long.json").write_text(json.dumps(turns))
    (root / "after.json").write_text(json.dumps([{"steps": [{"kind": "text", "text": "still here"}]}]))


def _rows(db: str) -> list[str]:
    try:
        return [e["id"] for e in logged_events(db)]
    except sqlite3.OperationalError:  # the kernel has not created the table yet
        return []


def _wait(ready: Callable[[], bool], timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, "the kernel never got there"
        time.sleep(0.05)  # another process's file: there is no event to await


# The fifth call of the tool never returns: it marks the file and sleeps.
HANGING = "    if len(list(MARK.parent.glob('call-*'))) >= 4:\n        MARK.touch()\n        time.sleep(60)\n"
HANGING += "    (MARK.parent / f'call-{time.monotonic_ns()}').touch()\n    return 'tock'\n"


@pytest.mark.parametrize("where", ["mid-stream", "mid-tool"])
def test_sigkill_mid_turn_keeps_every_committed_event_and_the_session_goes_on(tmp_path: Path, where: str) -> None:
    env = kernel_environment(tmp_path)
    db = env["AGENTCELL_DB"]
    _scripts(tmp_path)
    mark = tmp_path / "calls" / "inside"
    mark.parent.mkdir()
    body = HANGING if where == "mid-tool" else "    return 'tock'\n"
    with kernel(env, cwd=tmp_path) as (km, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        assert execute(kc, f"%%python\nfrom pathlib import Path\nMARK = Path({str(mark)!r})").status == "ok"
        assert execute(kc, TICK + body, timeout=50).status == "ok"
        assert execute(kc, f"%model scripted:{tmp_path / 'long.json'}", timeout=50).status == "ok"
        kc.execute("Run for a long time.")
        if where == "mid-tool":
            _wait(mark.exists)
        else:
            _wait(lambda: len(_rows(db)) >= 120)
        seen = _rows(db)
        km.signal_kernel(signal.SIGKILL)
        _wait(lambda: not km.is_alive(), timeout=10)

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    stored = [e["id"] for e in logged_events(db)]
    assert stored[: len(seen)] == seen  # every row committed before the kill, in order

    with kernel(env, cwd=tmp_path) as (_, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        assert execute(kc, f"%model scripted:{tmp_path / 'after.json'}", timeout=50).status == "ok"
        answered = execute(kc, "Are you still there?", timeout=50)
        assert answered.status == "ok" and "still here" in answered.final_markdown
    events = logged_events(db)
    assert [e["id"] for e in events][: len(seen)] == seen
    opened = [e for e in events if e["type"] == "user.message"]
    assert opened[-1]["content"][0]["text"].startswith("Are you still there?")
    assert len({e["session_id"] for e in opened}) == 1  # the same notebook, the same session
    assert events[-1]["type"] == "session.status_idle" and events[-1]["stop_reason"]["type"] == "end_turn"
