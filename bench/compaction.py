"""A long session against the context window, with and without compaction (issue 36).

A 200-turn scripted session through the real engine: each cell is a ~2,000-character note and each answer
~1,600 characters, so the conversation grows by about 900 tokens a turn (the scripted stand-in reports
usage by size, a token per four characters, as ``input_tokens``; no prompt cache). Run twice: with the
200,000-token window of ``claude-sonnet-4-5`` known (compaction at 80 % of it, the summary written by the
stand-in), and with no window known (no compaction: the whole conversation is sent every turn, which at
200 turns still fits). Prices: $3 / $15 per million input / output tokens (Sonnet's list prices).
Reported: the largest request as a share of the window (target <= 80 %), each run's list cost, the ratio,
and the compactions made.

    .venv/bin/python bench/compaction.py [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernel"))

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText  # noqa: E402
from agentcell import events as ev  # noqa: E402
from agentcell._format import format_usd  # noqa: E402
from agentcell.engine.compaction import SUMMARY_SYSTEM  # noqa: E402
from agentcell.providers.base import ModelRequest  # noqa: E402
from agentcell.usage import flat_pricing  # noqa: E402

WINDOW = 200_000
NOTE = "Measurements of the day: pressure, wind, temperature and the tide at each hour, with remarks. " * 21
ANSWER = "Recorded. The tide is higher than yesterday's and the wind turned; the pressure keeps falling. " * 17
SUMMARY = "The user logs a daily note of weather measurements; the agent records each one and compares it. " * 20


def _reply(request: ModelRequest) -> ScriptedResponse:
    text = SUMMARY if request.system == SUMMARY_SYSTEM else ANSWER
    return ScriptedResponse(steps=[ScriptedText(text=text)])


async def _session(turns: int, *, window: int | None) -> tuple[int, Decimal, int, float]:
    """(largest request's input tokens, list cost, compactions, seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        provider = ScriptedProvider(_reply, pricing=flat_pricing(3, 15))
        engine = Engine(Path(tmp) / "bench.db", providers={"scripted": provider})
        model = {"id": "scripted", "max_tokens": 4096, **({"context_window": window} if window else {})}
        session = engine.sessions.create(agent=engine.agents.create(name="bench", model=model).id)
        started = time.perf_counter()
        for turn in range(turns):
            result = await session.ask(f"Day {turn}. {NOTE}", cell_id=f"c{turn}")
            if isinstance(result.stop_reason, ev.ErrorStop):
                raise SystemExit(f"turn {turn} failed: {result.stop_reason.message}")
        seconds = time.perf_counter() - started
        spans = [e for e in session.events(types=["span.model_request_end"]) if isinstance(e, ev.SpanModelRequestEnd)]
        largest = max(s.model_usage.total_input_tokens for s in spans)
        compactions = len(session.events(types=["session.context_compacted"]))
        cost = session.usage.list_cost
        await engine.aclose()
    return largest, cost, compactions, seconds


async def main(turns: int) -> None:
    compacted = await _session(turns, window=WINDOW)
    whole = await _session(turns, window=None)
    print(f"{turns} turns, window {WINDOW:,} tokens, compaction at 80 %")
    for label, (largest, cost, compactions, seconds) in (("with compaction", compacted), ("without", whole)):
        print(
            f"  {label:16} largest request {largest:,} tokens ({largest / WINDOW:.1%} of the window), "
            f"list cost {format_usd(cost)}, {compactions} compactions, {seconds:.1f} s"
        )
    print(f"  list cost with compaction / without: {compacted[1] / whole[1]:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    asyncio.run(main(parser.parse_args().turns))
