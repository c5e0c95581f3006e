"""``%%workflow`` and ``%workflows`` in the real kernel (jupyter_client over ZMQ): a plan given as YAML or JSON
runs as one turn, a mistake is one line, and a run killed with the kernel resumes without repeating what it
had finished."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from jupyter_client.blocking.client import BlockingKernelClient

from .conftest import execute, running_kernel, write_script

pytestmark = pytest.mark.slow

PLAN_YAML = """%%workflow topic=tides
name: explain
steps:
  - id: facts
    agent: {inline: {name: researcher}}
    for_each: [sun, moon, wind]
    prompt: "One fact about {{inputs.topic}} and the {{item}}."
  - id: merge
    agent: {inline: {name: writer}}
    depends_on: [facts]
    prompt: "Merge: {{steps.facts.outputs}}"
"""


def _events(db: str) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute("SELECT type, body FROM events ORDER BY seq"))
    finally:
        conn.close()


def test_a_workflow_cell_runs_its_yaml_plan_as_a_turn_and_prints_the_run(kernel_env: dict[str, str]) -> None:
    with running_kernel(kernel_env) as (_, kc):
        refused = execute(kc, PLAN_YAML)
        assert refused.status == "error" and "may not start workflow runs" in refused.stderr
        assert "%workflows on does both" in refused.stderr
        assert not refused.displays  # refused before the cell shows a turn
        assert "Traceback" not in refused.stderr
        assert (
            execute(kc, "%workflows").stdout.strip() == "workflows: off (`%workflows on` lets plans run); no runs yet"
        )
        on = execute(kc, "%workflows on")
        assert on.stdout.strip() == (
            "workflows on: plans may run helpers the plan defines; the agent may start runs too (agent v2)"
        )

        run = execute(kc, PLAN_YAML)

        assert run.status == "ok", run.stderr
        lines = run.stdout.strip().splitlines()
        assert lines[0].startswith("workflow 'explain' completed: 4 step items ran, 0 reused (wfrun_")
        assert lines[1].startswith("  facts (3 items)  completed") and lines[2].startswith("  merge  completed")
        # The echoing scripted model answers each item with its rendered prompt: the merge saw all three.
        facts = [f"You said: One fact about tides and the {item}." for item in ("sun", "moon", "wind")]
        assert lines[3] == f"output: You said: Merge: {json.dumps(facts, ensure_ascii=False)}"
        # The cell's saved output holds the turn's events, the run's and each step thread's among them.
        saved = run.displays[-1]["application/vnd.agentcell.turn+json"]["events"]
        types = [e["type"] for e in saved]
        assert types[0] == "user.start_workflow_run" and types.count("session.thread_created") == 4
        assert types.count("workflow_run.step_completed") == 4 and "workflow_run.completed" in types

        again = execute(kc, PLAN_YAML)
        assert again.stdout.startswith("workflow 'explain' completed: 0 step items ran, 4 reused")
        listing = execute(kc, "%workflows").stdout.strip().splitlines()
        assert listing[0] == "workflows: on; 2 runs"
        assert "explain  completed  4 ran, 0 reused" in listing[1] and "0 ran, 4 reused" in listing[2]

        as_json = execute(kc, '%%workflow fresh\n{"name": "j", "steps": [{"id": "a", "agent": {"inline": '
                              '{"name": "x"}}, "prompt": "hi"}]}')  # fmt: skip
        assert as_json.stdout.startswith("workflow 'j' completed: 1 step items ran, 0 reused")
        for bad, message in [
            ("%%workflow\nname: [unclosed", "%%workflow: the plan is not valid YAML or JSON at line"),
            ("%%workflow\n- a\n- b", "the plan is a mapping with name and steps, not list"),
            ("%%workflow max_concurrency=many\nname: x", "max_concurrency is a whole number, not 'many'"),
            ("%%workflow\n", "write the plan (YAML or JSON) in the cell"),
            (
                "%%workflow\nname: x\nsteps:\n  - {id: a, agent: {inline: {name: w}}, prompt: '{{steps.b.output}}'}",
                "step 'a'",
            ),
        ]:
            failed = execute(kc, bad)
            assert failed.status == "error" and message in failed.stderr, (bad, failed.stderr)
            assert not failed.displays
            assert "Traceback" not in failed.stderr
        assert "%workflows [list | on [AGENT_ID…] | off]" in execute(kc, "%workflows sideways").stderr
        assert "%%workflow [max_concurrency=N]" in execute(kc, "%help").displays[0]["text/plain"]
        # %threads and %workflows each keep what the other set.
        assert execute(kc, "%threads on").stdout.startswith("threads on")
        assert execute(kc, "%workflows").stdout.startswith("workflows: on")
        assert execute(kc, "%threads off").stdout.startswith("threads off")
        assert execute(kc, "%workflows").stdout.startswith("workflows: on")
        assert execute(kc, "%workflows off").stdout.strip() == "workflows off (agent v5)"
        assert execute(kc, "%threads on").stdout.startswith("threads on")
        assert execute(kc, "%workflows off").stdout.strip() == "workflows off (agent v6)"  # already off: no new version
        assert execute(kc, "%threads").stdout.startswith("threads: on")


def _wait_for(kc: BlockingKernelClient, db: str, event_type: str, count: int) -> None:
    """Read the kernel's IOPub until the database holds ``count`` events of ``event_type``: each message the
    running cell publishes is a moment something was emitted, so this waits on events, not on a clock."""
    deadline = time.monotonic() + 30
    while sum(1 for t, _ in _events(db) if t == event_type) < count:
        assert time.monotonic() < deadline, f"no {count} {event_type} events in 30 s"
        kc.get_iopub_msg(timeout=30)


def test_a_run_killed_with_the_kernel_resumes_without_repeating_its_finished_steps(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    # The first request (step one) answers at once; the second (step two) streams for a minute, long enough
    # to kill the kernel in the middle of it. The script restarts with the kernel, so the rerun's step two
    # gets the quick answer.
    slow = {"kind": "text", "text": "x" * 120, "chunk_size": 1, "delay": 0.5}
    kernel_env["AGENTCELL_MODEL"] = write_script(
        tmp_path / "s.json",
        [{"steps": [{"kind": "text", "text": "alpha"}]}, {"steps": [slow]}],
    )
    cell = (
        "%%workflow\nname: two\nsteps:\n  - {id: one, agent: {inline: {name: a}}, prompt: first}\n"
        "  - {id: two, agent: {inline: {name: b}}, depends_on: [one], prompt: 'after {{steps.one.output}}'}\n"
    )
    db = kernel_env["AGENTCELL_DB"]
    with running_kernel(kernel_env) as (km, kc):
        assert execute(kc, "%workflows on").status == "ok"
        kc.execute(cell)
        _wait_for(kc, db, "span.model_request_start", 2)  # step two's request is streaming
        assert km.provisioner is not None
        os.kill(km.provisioner.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        while km.is_alive():
            time.sleep(0.05)
        before = _events(db)
        assert [t for t, _ in before].count("workflow_run.step_completed") == 1
        assert "workflow_run.completed" not in [t for t, _ in before]
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)

        rerun = execute(kc, cell)

    assert rerun.status == "ok", rerun.stderr
    assert rerun.stdout.startswith("workflow 'two' completed: 1 step items ran, 1 reused")
    assert "  one  reused" in rerun.stdout and "output: alpha" in rerun.stdout
    after = _events(db)[len(before) :]
    types = [t for t, _ in after]
    # One request in the rerun, step two's: step one's was not repeated.
    assert types.count("span.model_request_start") == 1
    reused = [json.loads(p) for t, p in after if t == "workflow_run.step_completed" and '"reused_from"' in p]
    assert [r["step_id"] for r in reused if r.get("reused_from")] == ["one"]
    sent = [json.loads(p) for t, p in after if t == "agent.thread_message_received"]
    assert sent[-1]["content"][0]["text"] == "after alpha"
