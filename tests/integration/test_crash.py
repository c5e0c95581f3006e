"""A process killed with SIGKILL mid-stream loses no committed event, and the session goes on."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentcell import Engine
from agentcell import events as ev

CHILD = Path(__file__).with_name("_long_turn.py")


@pytest.mark.slow
def test_sigkill_mid_stream_keeps_every_appended_event(db_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(db_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None
    session_id = child.stdout.readline().split()[1]
    seen: list[str] = []
    for line in child.stdout:
        seen.append(line.split()[1])
        if len(seen) == 150:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()

    with Engine(db_path) as engine:
        session = engine.sessions.get(session_id)
        stored = [e.id for e in session.events()]
        assert stored[: len(seen)] == seen  # every event reported before the kill, in order
        assert session.status == "idle"
        assert session.stats.active_seconds > 0
        # The dead turn left a tool call or a message half done; the session takes a new message anyway.
        result = session.send_sync("are you still there?")
        assert result.stop_reason == ev.EndTurn()
        assert result.text == "You said: are you still there?"
        messages = session.history().messages()
        assert messages[-2].role == "user" and messages[-1].role == "assistant"
