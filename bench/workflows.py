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

A second baseline, reported beside the first and never in its place: the same gathered threads inside the
turn a user's run opens (its lease, status events, and the listener that keeps every event of the turn for
its ``TurnResult`` — which the kernel's renderer and fallbacks read), with the threads where the runner
would be. The first baseline's threads run outside any turn; the ratio to this one is the runner's own
cost (plan, graph, templates, keys, journal, the run's and items' events) without the turn's.

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
from agentcell.engine import turn as turn_module
from agentcell.engine.workflows import CheckedPlan, check_plan, start_event
from agentcell.engine.workflows.start import _recall
from agentcell.engine.workflows.step import StepThread, task_text
from agentcell.events import EndTurn
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


async def _gathered(session: Session, shape: str, checked: CheckedPlan | None = None) -> None:
    """The same step threads, started by hand: no plan, no graph, no keys, no run events."""
    log, deps = session._log, session._deps()  # the baseline drives the engine's parts directly
    if checked is None:
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


async def _gathered_in_turn(session: Session, shape: str) -> None:
    """The same gathered threads, inside the turn that ``run_workflow`` opens, in the runner's place."""
    deps = session._deps()
    start = start_event(session._log, deps, _plan(shape))

    async def threads_instead_of_runner(log: Any, deps: Any, first: Any) -> EndTurn:
        checked = _recall(first.id, log, deps)  # the plan as start_event checked it, as the runner gets it
        await _gathered(session, shape, checked)
        return EndTurn()

    saved = turn_module.run_started_by_user
    turn_module.run_started_by_user = threads_instead_of_runner
    try:
        result = await session._turns.run([start], deps)
    finally:
        turn_module.run_started_by_user = saved
    assert isinstance(result.stop_reason, EndTurn), result.stop_reason


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
    sides = {"workflow": _workflow, "gather": _gathered, "in_turn": _gathered_in_turn}
    events = {name: (await _timed(side, shape))[2] for name, side in sides.items()}
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    order = list(sides)
    for round_ in range(ROUNDS):
        # Rotate which side goes first, so none always meets a machine another just warmed.
        for name in order[round_ % 3 :] + order[: round_ % 3]:
            seconds, cpu_seconds, _ = await _timed(sides[name], shape)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)

    def ratios(of: dict[str, list[float]], baseline: str) -> list[float]:
        return [ours / theirs for ours, theirs in zip(of["workflow"], of[baseline], strict=True)]

    figures: dict[str, float] = {}
    for baseline in ("gather", "in_turn"):
        ratio, cpu_ratio = ratios(wall, baseline), ratios(cpu, baseline)
        figures |= {
            f"{baseline}_ratio": statistics.median(ratio),
            f"{baseline}_ratio_min": min(ratio),
            f"{baseline}_ratio_max": max(ratio),
            f"{baseline}_cpu_ratio": statistics.median(cpu_ratio),
        }
    for name in sides:
        figures[f"{name}_ms"] = statistics.median(wall[name]) * 1000
        figures[f"{name}_cpu_ms"] = statistics.median(cpu[name]) * 1000
        figures[f"{name}_events"] = events[name]
    return figures


async def main() -> None:
    print(f"{STEPS} no-op scripted steps, max_concurrency {CONCURRENCY}, {ROUNDS} interleaved rounds")
    for shape in ("independent", "chain"):
        f = await measure(shape)
        print(
            f"{shape:>11}: run_workflow {f['workflow_ms']:.0f} ms, gathered {f['gather_ms']:.0f} ms; "
            f"ratio {f['gather_ratio']:.2f}x (rounds {f['gather_ratio_min']:.2f}-{f['gather_ratio_max']:.2f}x), "
            f"CPU {f['workflow_cpu_ms']:.0f} vs {f['gather_cpu_ms']:.0f} ms, "
            f"CPU-time ratio {f['gather_cpu_ratio']:.2f}x; target <= 1.2x; events committed "
            f"{f['workflow_events']:.0f} vs {f['gather_events']:.0f}"
        )
        print(
            f"{'':>11}  beside the gathered threads inside the run's turn: {f['in_turn_ms']:.0f} ms, "
            f"ratio {f['in_turn_ratio']:.2f}x (rounds {f['in_turn_ratio_min']:.2f}-{f['in_turn_ratio_max']:.2f}x), "
            f"CPU {f['in_turn_cpu_ms']:.0f} ms, CPU-time ratio {f['in_turn_cpu_ratio']:.2f}x; events committed "
            f"{f['in_turn_events']:.0f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
