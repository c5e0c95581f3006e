"""A follower in another process (``agentcell follow``) sees a turn's durable log exactly once, in order."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcell import Engine
from agentcell.store.pg_scratch import ScratchPostgres

pytestmark = pytest.mark.slow

WRITER = Path(__file__).with_name("_drive_turn.py")


@pytest.fixture
def own_server() -> Iterator[ScratchPostgres]:
    """A server of the test's own, since the test restarts it."""
    server = ScratchPostgres().start()
    try:
        yield server
    finally:
        server.stop()


def _kill(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()


def _spawn(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _follow_then(db: str, restart: ScratchPostgres | None) -> None:
    with contextlib.ExitStack() as stack:
        writer = _spawn(str(WRITER), db)
        stack.enter_context(writer)
        stack.callback(_kill, writer)  # runs first: a stuck child is killed before its pipes are closed
        assert writer.stdout is not None and writer.stdin is not None
        session_id = writer.stdout.readline().split()[1]
        follower = _spawn("-m", "agentcell.cli", "follow", session_id, "--db", db, "--all", "--until-idle", "--jsonl")
        stack.enter_context(follower)
        stack.callback(_kill, follower)
        assert follower.stdout is not None and follower.stderr is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
        seen: list[str] = []
        for line in follower.stdout:
            seen.append(json.loads(line)["id"])
            if len(seen) == 40 and restart is not None:
                assert writer.poll() is None  # the turn is still running
                restart.restart()  # every connection of both processes is cut in the middle of the turn
        assert follower.wait(timeout=60) == 0, follower.stderr.read()
        assert writer.stdout.readline().strip() == "stop end_turn", writer.stderr.read() if writer.stderr else ""
    with Engine(db) as engine:
        stored = [e.id for e in engine.sessions.get(session_id).events()]
    assert len(stored) > 120  # 21 model requests and 20 tool results make the durable log
    assert seen == stored  # each event once, in order, none missing, across the restart


def test_a_follower_in_another_process_sees_each_event_once_across_a_postgresql_restart(
    own_server: ScratchPostgres,
) -> None:
    _follow_then(own_server.create_database("follow"), own_server)


def test_a_follower_of_a_sqlite_file_polls_it_from_another_process(tmp_path: Path) -> None:
    _follow_then(str(tmp_path / "shared.db"), None)
