"""Tool pipeline benchmarks.

1. Overhead of the registry pipeline on a no-op tool, against calling the bare function in the same run
   (target: <= 50 us at p50), with no hooks and with one hook of each kind.
2. Eight parallel-safe 100 ms tools called in one response, through the engine's turn loop on the scripted
   provider (target: <= 150 ms wall for the tool phase).

Run: ``.venv/bin/python bench/tools.py``
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell.tools import (
    ALLOW,
    ToolCall,
    ToolContext,
    ToolDefinition,
    ToolRegistry,
    ToolResult,
    function_tool,
)

SAMPLES = 20_000
WARMUP = 2_000


async def noop(arguments: dict[str, Any], ctx: ToolContext | None) -> str:
    return ""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _time_each(run: Any, samples: int) -> list[float]:
    """Microseconds of each awaited call."""
    for _ in range(WARMUP):
        await run()
    timings = []
    clock = time.perf_counter_ns
    for _ in range(samples):
        start = clock()
        await run()
        timings.append((clock() - start) / 1000)
    return timings


def _hooked(registry: ToolRegistry) -> None:
    async def around(call: ToolCall, proceed: Any) -> ToolResult:
        result: ToolResult = await proceed()
        return result

    registry.pre_execute(lambda call: None)
    registry.guard(lambda call: ALLOW)
    registry.around_dispatch(around)
    registry.post_execute(lambda call, result: None)
    registry.on_outcome(lambda outcome: None)


async def pipeline_overhead() -> dict[str, float]:
    plain, hooked = ToolRegistry(), ToolRegistry()
    for registry in (plain, hooked):
        registry.register(ToolDefinition(name="noop", run=noop, parallel_safe=True))
    _hooked(hooked)
    call = ToolCall(tool_use_id="sevt_bench", call_id="toolu_bench", name="noop", input={}, scope="agent_bench")

    async def noop_async() -> str:
        return ""

    def noop_sync() -> str:
        return ""

    plain.register(function_tool(noop_async))
    plain.register(function_tool(noop_sync))
    as_async = call.model_copy(update={"name": "noop_async"})
    as_sync = call.model_copy(update={"name": "noop_sync"})

    bare = await _time_each(lambda: noop({}, None), SAMPLES)
    through = await _time_each(lambda: plain.execute(call), SAMPLES)
    with_hooks = await _time_each(lambda: hooked.execute(call), SAMPLES)
    async_function = await _time_each(lambda: plain.execute(as_async), SAMPLES)
    sync_function = await _time_each(lambda: plain.execute(as_sync), SAMPLES // 4)
    base = statistics.median(bare)
    return {
        "function_async_p50": statistics.median(async_function),
        "function_sync_p50": statistics.median(sync_function),
        "bare_p50": base,
        "pipeline_p50": statistics.median(through),
        "pipeline_p99": _percentile(through, 0.99),
        "overhead_p50": statistics.median(through) - base,
        "hooked_p50": statistics.median(with_hooks),
        "hooked_overhead_p50": statistics.median(with_hooks) - base,
    }


async def parallel_tools(rounds: int = 5) -> dict[str, float]:
    async def wait(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(0.1)
        return "waited"

    registry = ToolRegistry()
    registry.register(ToolDefinition(name="wait", run=wait, parallel_safe=True))
    calls = [ScriptedToolCall(name="wait", input={"n": i}) for i in range(8)]
    script = []
    for _ in range(rounds):
        script += [ScriptedResponse(steps=calls), ScriptedResponse(steps=[ScriptedText(text="done")])]
    tool_phases, turns = [], []
    with tempfile.TemporaryDirectory() as directory:
        engine = Engine(Path(directory) / "bench.db", providers={"scripted": ScriptedProvider(script)}, tools=registry)
        session = engine.sessions.create(agent=engine.agents.create(name="bench", model="scripted").id)
        for _ in range(rounds):
            marks: dict[str, float] = {}

            def mark(item: Any, marks: dict[str, float] = marks) -> None:
                # The tool phase: from the last tool use committed to the last result recorded.
                if item.type in ("agent.tool_use", "agent.tool_result"):
                    marks[item.type] = time.perf_counter()

            unsubscribe = session.subscribe(mark)
            start = time.perf_counter()
            result = await session.ask("go")
            turns.append(time.perf_counter() - start)
            unsubscribe()
            assert result.text == "done", result.text
            tool_phases.append(marks["agent.tool_result"] - marks["agent.tool_use"])
        await engine.aclose()
    return {
        "tool_phase_ms_median": statistics.median(tool_phases) * 1000,
        "tool_phase_ms_max": max(tool_phases) * 1000,
        "turn_ms_median": statistics.median(turns) * 1000,
    }


async def main() -> None:
    overhead = await pipeline_overhead()
    print(f"no-op tool, {SAMPLES:,} calls each (microseconds)")
    print(f"  bare function          p50 {overhead['bare_p50']:7.2f}")
    print(f"  through the registry   p50 {overhead['pipeline_p50']:7.2f}   p99 {overhead['pipeline_p99']:7.2f}")
    print(f"  pipeline overhead      p50 {overhead['overhead_p50']:7.2f}   (target <= 50)")
    print(f"  with 5 hooks overhead  p50 {overhead['hooked_overhead_p50']:7.2f}")
    print(f"  @tool async function   p50 {overhead['function_async_p50']:7.2f}   (validation included)")
    print(f"  @tool sync function    p50 {overhead['function_sync_p50']:7.2f}   (runs in a worker thread)")
    parallel = await parallel_tools()
    print("8 parallel-safe 100 ms tools in one response, through the turn loop (milliseconds)")
    median, worst = parallel["tool_phase_ms_median"], parallel["tool_phase_ms_max"]
    print(f"  tool phase  median {median:6.1f}   max {worst:6.1f}   (target <= 150)")
    print(f"  whole turn  median {parallel['turn_ms_median']:6.1f}   (two scripted model requests included)")


if __name__ == "__main__":
    asyncio.run(main())
