"""Two real agentcell kernels (through jupyter_client) on one PostgreSQL database."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from agentcell import Engine, Event

from ..kernel.conftest import Execution, execute, running_kernel, write_script

pytestmark = pytest.mark.slow

LEASE = 3.0
"""A short lease, so a takeover after SIGKILL happens within seconds."""


def _env(kernel_env: dict[str, str], tmp_path: Path, url: str, name: str) -> dict[str, str]:
    return {
        **kernel_env,
        "AGENTCELL_DB": url,
        "AGENTCELL_LEASE_SECONDS": str(LEASE),
        "JPY_SESSION_NAME": str(tmp_path / f"{name}.ipynb"),
        "JUPYTER_DATA_DIR": str(tmp_path / f"{name}-data"),
    }


def _session_id(kc: Any) -> str:
    return execute(kc, "%session").stdout.split()[1]


def _wait_for(url: str, session_id: str, event_type: str, timeout: float = 30) -> list[Event]:
    """The session's events up to the first of ``event_type``, as they commit (read by a third process)."""

    async def follow() -> list[Event]:
        seen: list[Event] = []
        with Engine(url) as engine:
            async for event in engine.sessions.follow(session_id):
                seen.append(event)
                if event.type == event_type:
                    return seen
        return seen

    return asyncio.run(asyncio.wait_for(follow(), timeout))


def _turn_events(run: Execution) -> list[dict[str, Any]]:
    """The durable events a kernel reported for the turn it ran (its final output carries them)."""
    bundle = next(d for d in reversed(run.displays) if "application/vnd.agentcell.turn+json" in d)
    return list(bundle["application/vnd.agentcell.turn+json"]["events"])


def test_both_kernels_read_one_session_only_one_drives_and_the_second_takes_over_after_sigkill(
    kernel_env: dict[str, str], tmp_path: Path, pg_url: str
) -> None:
    slow = "import time\nfor _ in range(600): time.sleep(0.05)"
    call = {"kind": "tool_call", "name": "python", "input": {"code": slow}}
    long_job = [
        {"steps": [{"kind": "text", "text": "on it"}, call]},
        {"steps": [{"kind": "text", "text": "finished"}]},
    ]
    env_a = _env(kernel_env, tmp_path, pg_url, "alice")
    env_a["AGENTCELL_MODEL"] = write_script(tmp_path / "long.json", long_job)
    env_b = _env(kernel_env, tmp_path, pg_url, "bob")
    quick = write_script(tmp_path / "quick.json", [{"steps": [{"kind": "text", "text": "taken over"}]}])
    with running_kernel(env_a) as (km_a, kc_a), running_kernel(env_b) as (_, kc_b):
        execute(kc_a, "%config AgentCell.renderer = 'markdown'")
        execute(kc_b, "%config AgentCell.renderer = 'markdown'")
        session_id = _session_id(kc_a)
        assert f"resumed session {session_id}" in execute(kc_b, f"%session resume {session_id}").stdout
        kc_a.execute("Do the long job.")  # runs for 30 s: the python tool sleeps
        committed = [e.id for e in _wait_for(pg_url, session_id, "agent.tool_use")]

        # Both read it; the second may not drive it while the first holds the lease.
        shown = execute(kc_b, "%session show").stdout
        assert session_id in shown and int(shown.split("events: ")[1].split()[0]) >= len(committed)
        refused = execute(kc_b, "Let me take a turn.")
        assert refused.status == "error"
        assert f"session {session_id} is being driven by another kernel" in refused.stderr
        assert "Traceback" not in refused.stderr

        # SIGKILL the driver mid-turn: its lease lapses within LEASE seconds and the second kernel drives.
        assert km_a.provisioner is not None
        os.kill(km_a.provisioner.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        killed_at = time.monotonic()
        while km_a.is_alive():
            time.sleep(0.05)
        with Engine(pg_url) as reader:
            before_takeover = [e.id for e in reader.sessions.get(session_id).events()]
        assert before_takeover[: len(committed)] == committed  # every committed event is there
        took_over = None
        while took_over is None or took_over.status == "error":
            assert time.monotonic() - killed_at < 4 * LEASE, took_over.stderr if took_over else "never tried"
            if took_over is not None:
                assert "is being driven by another kernel" in took_over.stderr
            took_over = execute(kc_b, f"%model {quick}")  # a write: refused until the lease lapses
        taken = execute(kc_b, "Carry on.")
        assert taken.status == "ok" and taken.final_markdown.startswith("taken over"), taken.stderr
        # Not before the lease lapsed: its last renewal was at most a third of it before the kill.
        assert time.monotonic() - killed_at >= LEASE / 2

    with Engine(pg_url) as reader:
        events = reader.sessions.get(session_id).events()
    ids = [e.id for e in events]
    assert ids[: len(before_takeover)] == before_takeover and len(set(ids)) == len(ids)
    assert [e.type for e in events][-1] == "session.status_idle"
    assert [e.content[0].text.strip() for e in events if e.type == "user.message"] == [  # type: ignore[union-attr]
        "Do the long job.",
        "Carry on.",
    ]


def test_two_kernels_appending_to_their_own_sessions_at_once_lose_and_duplicate_nothing(
    kernel_env: dict[str, str], tmp_path: Path, pg_url: str
) -> None:
    text = {"kind": "text", "chunk_size": 1, "delay": 0.002}
    barrier = tmp_path / "barrier"
    barrier.mkdir()

    def step_code(name: str, other: str, i: int) -> str:
        # Each step's python call waits for the other kernel to reach the same step, so the two turns append
        # in lockstep however the machine schedules the two processes (a started-first kernel on a busy
        # machine could otherwise finish before the other began).
        return (
            f"import pathlib, time\nbarrier = pathlib.Path({str(barrier)!r})\n"
            f"(barrier / '{name}-{i}').touch()\ngive_up = time.monotonic() + 120\n"
            f"while not (barrier / '{other}-{i}').exists() and time.monotonic() < give_up:\n    time.sleep(0.01)\n{i}"
        )

    kernels = []
    for name, other in (("alice", "bob"), ("bob", "alice")):
        steps = [
            {
                "steps": [
                    {**text, "text": f"step {i} "},
                    {"kind": "tool_call", "name": "python", "input": {"code": step_code(name, other, i)}},
                ]
            }
            for i in range(20)
        ] + [{"steps": [{"kind": "text", "text": "done"}]}]
        env = _env(kernel_env, tmp_path, pg_url, name)
        env["AGENTCELL_MODEL"] = write_script(tmp_path / f"{name}.json", steps)
        kernels.append(running_kernel(env))
    with kernels[0] as (_, kc_a), kernels[1] as (_, kc_b):
        for kc in (kc_a, kc_b):
            execute(kc, "%config AgentCell.renderer = 'markdown'")
            execute(kc, "%session title concurrent")  # start each session before the race
        ids = (_session_id(kc_a), _session_id(kc_b))
        # Both turns at once: each kernel appends ~120 events while the other does.
        pending = [kc.execute("Work through the steps.") for kc in (kc_a, kc_b)]
        runs = [_collect(kc, msg_id, timeout=180) for kc, msg_id in zip((kc_a, kc_b), pending, strict=True)]
    assert all(run.status == "ok" and run.final_markdown.startswith("step 0") for run in runs)
    import psycopg

    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT session_id, seq, position, id FROM agentcell.events ORDER BY position").fetchall()
    for session_id, run in zip(ids, runs, strict=True):
        mine = [r for r in rows if r[0] == session_id]
        reported = [e["id"] for e in _turn_events(run)]
        assert len(reported) > 100
        assert [r[3] for r in mine][-len(reported) :] == reported  # the turn's events, all there, in order
        assert [r[1] for r in mine] == list(range(1, len(mine) + 1))  # seq counts 1..n with no gap or repeat
    assert len({r[3] for r in rows}) == len(rows) and len({r[2] for r in rows}) == len(rows)
    order = [r[0] for r in rows if r[0] in ids]
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert switches >= 20, "the two kernels did not append at the same time"
    assert sorted(p.name for p in barrier.iterdir()) == sorted(f"{n}-{i}" for n in ("alice", "bob") for i in range(20))


def _collect(kc: Any, msg_id: str, timeout: float = 60) -> Execution:
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        messages.append(msg)
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    return Execution(reply["content"]["status"], reply["content"], messages)


def test_session_follow_shows_another_kernels_turn_live_and_read_only(
    kernel_env: dict[str, str], tmp_path: Path, pg_url: str
) -> None:
    answer = "The answer is forty-two."
    with Engine(pg_url) as driver:
        session = driver.sessions.create(agent=driver.agents.create(name="lead", model="scripted").id)
        session.send_sync("first question")
        with running_kernel(_env(kernel_env, tmp_path, pg_url, "watcher")) as (_, kc):
            started = execute(kc, f"%session follow {session.id}")
            assert started.status == "ok"
            assert f"Following session `{session.id}`" in started.displays[0]["text/markdown"]
            display_id = started.of("display_data")[0]["content"]["transient"]["display_id"]

            def shown_until(done: Any) -> str:
                deadline = time.monotonic() + 20
                while True:
                    assert time.monotonic() < deadline, "the view was not updated"
                    msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
                    if msg["msg_type"] == "update_display_data":
                        assert msg["content"]["transient"]["display_id"] == display_id  # the same output
                        if done(text := msg["content"]["data"]["text/markdown"]):
                            return str(text)

            shown_until(lambda text: "You said: first question" in text)  # the latest turn, from the store
            session.send_sync(answer)  # driven here, in another process: the kernel's view follows it
            seen = shown_until(
                lambda text: f"You said: {answer}" in text and text.count(" · turn ") == 2
            )  # both footers
            assert f"**you:** {answer}" in seen and "· idle ·" in seen
            assert "application/vnd.jupyter.widget-view+json" not in json.dumps(started.displays)  # no Stop
            assert "stopped following 1 session" in execute(kc, "%session follow stop").stdout
            missing = execute(kc, "%session follow sesn_nope")
            assert missing.status == "error" and "no session with id 'sesn_nope'" in missing.stderr
