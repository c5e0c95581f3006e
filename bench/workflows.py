"""Workflow run scheduling overhead (issue 20).

A 100-step plan of no-op scripted steps (each step's agent answers at once, without a tool), run with
``session.run_workflow`` — checking the plan, the turn it opens, the graph, templates, resume keys, the
journal lookup, the run's and steps' events — against the same 100 step threads awaited with
``asyncio.gather`` directly, under the same concurrency limit (target: <= 1.2x). Each side runs in a fresh
engine on a fresh SQLite database (every event is one commit, as in a notebook); the sides alternate over
interleaved rounds and the ratio is the median of the rounds' ratios; before each side the garbage collector
runs, so a full collection of one side's garbage never lands in the other's time. Beside the wall-clock ratio the
bench reports the ratio of this process's CPU time, which other work on a shared machine disturbs less.

Shapes: 100 independent steps (the scheduler starts what is ready as slots free up), and a chain of 100
(each step waits for the one before; the baseline awaits the threads one after another).

Run: ``.venv/bin/python bench/workflows.py``
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, Session
from agentcell.engine.workflows import check_plan
from agentcell.engine.workflows.step import StepThread, task_text
from agentcell.ids import new_id

STEPS = 100
CONCURRENCY = 4
ROUNDS = 15


def _noop(request: Any) -> ScriptedResponse:
    return ScriptedResponse(steps=[ScriptedText(text="ok")])


def _plan(shape: str) -> dict[str, Any]:
    agent = {"inline": {"name": "noop", "system": "noop"}}
    steps = []
    for i in range(STEPS):
        step: dict[str, Any] = {"id": f"s{i}", "agent": agent, "prompt": f"step {i}"}
        if shape == "chain" and i:
            step["depends_on"] = [f"s{i - 1}"]
        steps.append(step)
    return {"name": f"bench-{shape}", "max_concurrency": CONCURRENCY, "steps": steps}


def _session(folder: Path) -> tuple[Engine, Session]:
    engine = Engine(folder / "bench.db", providers={"scripted": ScriptedProvider(_noop)})
    lead = engine.agents.create(
        name="lead",
        model="scripted",
        multiagent={"spawn_threads": False, "workflow_runs": True, "workflow_inline_agents": True},
    )
    return engine, engine.sessions.create(agent=lead.id)


async def _workflow(session: Session, shape: str) -> None:
    run = await session.run_workflow(_plan(shape))  # resume on, as by default: the journal is looked up
    assert run.status == "completed", run.error
    assert run.ran == STEPS


async def _gathered(session: Session, shape: str) -> None:
    """The same step threads, started by hand: no plan, no graph, no keys, no run events."""
    log, deps = session._log, session._deps()  # the baseline drives the engine's parts directly
    checked = check_plan(_plan(shape), settings=log.record.multiagent, session_agent=log.agent,
                         resolve_model=deps.resolve_model)  # fmt: skip
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(index: int) -> None:
        step = checked.steps[index]
        async with slots:
            thread = StepThread(log, deps, step, new_id("sthr"), parent_id=None, tool_use_id=None)
            result = await thread.run(task_text(step, step.spec.prompt))
        assert result.ok

    if shape == "chain":
        for index in range(STEPS):
            await one(index)
    else:
        await asyncio.gather(*(one(index) for index in range(STEPS)))


async def _timed(side: Callable[[Session, str], Awaitable[None]], shape: str) -> tuple[float, float, int]:
    """Wall-clock and CPU seconds (this process's) of one side, and the events it committed."""
    with tempfile.TemporaryDirectory() as folder:
        engine, session = _session(Path(folder))
        gc.collect()  # neither side pays for a full collection of the other's garbage
        started, cpu = time.perf_counter(), time.process_time()
        await side(session, shape)
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
        events = len(session.events())
        await engine.aclose()
    return seconds, cpu_seconds, events


async def measure(shape: str) -> dict[str, float]:
    # Warm up (imports, the scripted provider, SQLite's page cache), and count each side's events.
    events = (await _timed(_workflow, shape))[2], (await _timed(_gathered, shape))[2]
    ratios, cpu_ratios, ours, baseline, ours_cpu, baseline_cpu = [], [], [], [], [], []
    for round_ in range(ROUNDS):
        # Alternate which side goes first, so neither always meets a machine the other just warmed.
        if round_ % 2:
            gathered = await _timed(_gathered, shape)
            workflow = await _timed(_workflow, shape)
        else:
            workflow = await _timed(_workflow, shape)
            gathered = await _timed(_gathered, shape)
        ours.append(workflow[0])
        baseline.append(gathered[0])
        ours_cpu.append(workflow[1])
        baseline_cpu.append(gathered[1])
        ratios.append(workflow[0] / gathered[0])
        cpu_ratios.append(workflow[1] / gathered[1])
    return {
        "workflow_ms": statistics.median(ours) * 1000,
        "gather_ms": statistics.median(baseline) * 1000,
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "cpu_ratio": statistics.median(cpu_ratios),
        "workflow_cpu_ms": statistics.median(ours_cpu) * 1000,
        "gather_cpu_ms": statistics.median(baseline_cpu) * 1000,
        "workflow_events": events[0],
        "gather_events": events[1],
    }


async def main() -> None:
    print(f"{STEPS} no-op scripted steps, max_concurrency {CONCURRENCY}, {ROUNDS} interleaved rounds")
    for shape in ("independent", "chain"):
        figures = await measure(shape)
        print(
            f"{shape:>11}: run_workflow {figures['workflow_ms']:.0f} ms, gathered {figures['gather_ms']:.0f} ms; "
            f"ratio {figures['ratio']:.2f}x (rounds {figures['ratio_min']:.2f}-{figures['ratio_max']:.2f}x), "
            f"CPU {figures['workflow_cpu_ms']:.0f} vs {figures['gather_cpu_ms']:.0f} ms, "
            f"CPU-time ratio {figures['cpu_ratio']:.2f}x; target <= 1.2x; events committed "
            f"{figures['workflow_events']:.0f} vs {figures['gather_events']:.0f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
