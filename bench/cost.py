"""What prompt caching does to a long session's bill, and to the local model's next turn (issue 22).

1. **List cost, cached vs uncached.** A 20-turn notebook session on ``claude-sonnet-4-5`` through the real
   engine and Anthropic provider, against the loopback Anthropic server of the provider tests extended to
   emulate the API's prefix cache from the breakpoints each request carries (``tests/providers/
   prefix_cache.py``: entries written at breakpoints, a breakpoint hitting an entry at any of the 20 block
   boundaries before it, the model's minimum cacheable length, TTLs). Each turn calls tools before it
   answers; every fourth turn makes twelve parallel calls (a reply that adds more than 20 blocks). The same
   script runs three times in one run: caching on by default (5-minute entries), ``cache="1h"``, and
   ``cache="off"``, the baseline. Prices are genai-prices' list prices. Reported: each session's list cost,
   the ratio to the baseline (target <= 0.35x), what the cached session's own log says it would have cost
   uncached (it must equal the baseline), and the requests whose breakpoints missed a cached prefix.
2. **Local model, time to first token.** The bundled SmolLM2-135M: turn 10 of a conversation whose earlier
   turns went through the same provider (its KV cache kept), against the same turn-10 prompt evaluated
   cold (``cache="off"``) in the same run, interleaved over several rounds: target <= 0.3x.

    .venv/bin/python bench/cost.py [--turns 20] [--rounds 5] [--skip-local]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.providers.conftest import Recorded, Reply, SSEServer  # noqa: E402 - the provider tests' server
from tests.providers.prefix_cache import PrefixCache, Turn, answer, prefix_blocks  # noqa: E402

from agentcell import Engine  # noqa: E402
from agentcell import events as ev  # noqa: E402
from agentcell._format import format_cache_saving, format_usd  # noqa: E402
from agentcell.providers._http import RetryPolicy  # noqa: E402
from agentcell.providers.anthropic import AnthropicProvider  # noqa: E402
from agentcell.providers.base import (  # noqa: E402
    Message,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseAccumulator,
    TextDelta,
    TextPart,
)
from agentcell.providers.local import LocalProvider  # noqa: E402
from agentcell.tools.simple import SimpleTools  # noqa: E402

MODEL = "claude-sonnet-4-5"
PARALLEL_EVERY = 4
PARALLEL_CALLS = 12
SYSTEM = (
    "You are an analyst working in a Jupyter notebook. The user's cells and their outputs are your context; "
    "run code to inspect data before you answer, explain each step in a sentence or two, and keep answers "
    "short. When a table is large, summarise it instead of repeating it. "
) * 30
"""About 1,700 tokens: a notebook agent's instructions, notes and listing."""


def _tools() -> SimpleTools:
    tools = SimpleTools()
    tools.add(
        lambda table, rows: "\n".join(f"{table} row {i}: {i * 7 % 101}, {i * 13 % 97}" for i in range(int(rows))),
        name="load",
        description="Load the first rows of a table of the notebook's data folder, as text. " * 4,
        input_schema={
            "type": "object",
            "properties": {"table": {"type": "string"}, "rows": {"type": "integer"}},
            "required": ["table", "rows"],
        },
    )
    tools.add(
        lambda expression: f"{expression} = {len(expression) * 3.5:.2f}",
        name="compute",
        description="Evaluate a summary statistic over the loaded tables. " * 4,
        input_schema={"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    )
    return tools


def script(turns: int) -> list[Turn]:
    """Two replies a turn: tool calls, then the answer."""
    replies: list[Turn] = []
    for n in range(turns):
        if n % PARALLEL_EVERY == PARALLEL_EVERY - 1:
            calls = [("load", {"table": f"region_{k}", "rows": 12}) for k in range(PARALLEL_CALLS)]
        else:
            calls = [("load", {"table": "sales", "rows": 30 + n}), ("compute", {"expression": f"mean(q{n})"})]
        replies.append(Turn(text=f"Let me look at the data for question {n}.", calls=calls, output_tokens=120))
        answer_text = f"Turn {n}: the figures moved by {n * 3} % since the last look; details below. " * 4
        replies.append(Turn(text=answer_text, output_tokens=250))
    return replies


def latest_only(reply: Callable[[Recorded], Reply]) -> Callable[[Recorded], Reply]:
    """The placement before issue 22 (tools + system and the latest turn), for comparison: the request as
    the server sees it loses every breakpoint between its first and its last."""

    def strip(request: Recorded) -> Reply:
        body = copy.deepcopy(request.body)
        for block in [b for b in prefix_blocks(body) if "cache_control" in b][1:-1]:
            del block["cache_control"]
        return reply(Recorded(request.path, request.headers, body))

    return strip


@dataclass
class Session:
    cache: str | None
    list_cost: Decimal
    uncached_cost: Decimal
    requests: int
    with_breakpoints: int
    missed: int
    warnings: int
    saving_line: str | None


VARIANTS = {
    "default": (None, "cache on (default, 5m)"),
    "1h": ("1h", 'cache "1h"'),
    "latest": (None, "5m, tools+system and latest turn only"),
    "off": ("off", 'cache "off" (baseline)'),
}


async def run_session(turns: int, variant: str, folder: Path) -> Session:
    cache = VARIANTS[variant][0]
    server = SSEServer()
    prefix = PrefixCache()
    replies = [answer(prefix, t) for t in script(turns)]
    server.queue(*(latest_only(r) for r in replies) if variant == "latest" else replies)
    provider = AnthropicProvider(api_key="sk-ant-bench", base_url=server.url, retry=RetryPolicy(max_retries=0))
    engine = Engine(folder / f"{variant}.sqlite", providers={"anthropic": provider}, tools=_tools())
    try:
        model: dict[str, object] = {"id": f"anthropic:{MODEL}", "max_tokens": 2000}
        if cache is not None:
            model["extra"] = {"cache": cache}
        agent = engine.agents.create(name="bench", model=model, system=SYSTEM)
        session = engine.sessions.create(agent=agent.id)
        for n in range(turns):
            await session.ask(f"Question {n}: load the tables and tell me what changed since the last turn.")
        events = list(session.events())
        usage = session.usage
    finally:
        await engine.aclose()
        server.close()
    spans = [e for e in events if isinstance(e, ev.SpanModelRequestEnd)]
    if len(spans) != 2 * turns or any(s.is_error for s in spans) or usage.uncached_cost is None:
        raise SystemExit(f"the {variant} session did not run as scripted")
    assert usage.list_cost is not None
    return Session(
        cache=cache,
        list_cost=usage.list_cost,
        uncached_cost=usage.uncached_cost,
        requests=len(prefix.served),
        with_breakpoints=sum(1 for u in prefix.served if u.breakpoints),
        missed=sum(1 for u in prefix.served if u.missed),
        warnings=sum(1 for e in events if isinstance(e, ev.SessionError)),
        saving_line=format_cache_saving(usage),
    )


# ---------------------------------------------------------------------------------------------- local model

LOCAL_SYSTEM = "You are a helpful assistant in a notebook. Answer in two short sentences. " * 40
LOCAL_TURNS = 10
LOCAL_MAX_TOKENS = 40


def _local_request(messages: list[Message], **extra: object) -> ModelRequest:
    settings = ModelSettings(max_tokens=LOCAL_MAX_TOKENS, temperature=0, extra={"seed": 42, **extra})
    return ModelRequest(model="smollm2", system=LOCAL_SYSTEM, messages=messages, settings=settings)


async def _first_token(provider: LocalProvider, request: ModelRequest) -> tuple[float, ModelResponse]:
    accumulator = ResponseAccumulator()
    first = 0.0
    start = time.perf_counter()
    async for event in provider.stream(request):
        if not first and isinstance(event, TextDelta) and event.text:
            first = time.perf_counter() - start
        accumulator.add(event)
    return first or time.perf_counter() - start, accumulator.finish()


@dataclass
class LocalRound:
    warm: float
    cold: float
    prompt_tokens: int
    reused: int


async def local_round(provider: LocalProvider, round_number: int) -> LocalRound:
    """One conversation of its own (no earlier round's saved cache shares more than the system prompt with
    it): nine turns, then turn 10 timed with the cache the conversation left, then the same prompt cold
    (``"off"`` resets the cache, so it comes second)."""
    messages: list[Message] = []

    def ask(n: int) -> None:
        question = f"Round {round_number}, question {n}: what is {n} times {n + round_number}?"
        messages.append(Message(role="user", content=[TextPart(text=question)]))

    for n in range(1, LOCAL_TURNS):
        ask(n)
        _, response = await _first_token(provider, _local_request(messages))
        messages.append(Message(role="assistant", content=[TextPart(text=response.text)]))
    ask(LOCAL_TURNS)
    warm, cached = await _first_token(provider, _local_request(messages))
    cold, plain = await _first_token(provider, _local_request(messages, cache="off"))
    # The same prompt, all of it evaluated.
    if plain.usage.cache_read_input_tokens or plain.usage.input_tokens != cached.usage.total_input_tokens:
        raise SystemExit(f"the cold request reused its cache: {plain.usage}")
    return LocalRound(warm, cold, cached.usage.total_input_tokens, cached.usage.cache_read_input_tokens)


async def local_bench(rounds: int) -> list[LocalRound]:
    provider = LocalProvider("smollm2")
    try:
        await _first_token(provider, _local_request([Message(role="user", content=[TextPart(text="Hi")])]))
        return [await local_round(provider, r) for r in range(1, rounds + 1)]
    finally:
        await provider.aclose()


# ---------------------------------------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the local-model measure")
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        runs = {v: asyncio.run(run_session(args.turns, v, Path(folder))) for v in VARIANTS}
    base = runs["off"]
    print(f"{args.turns}-turn session with tool calls on {MODEL}, loopback prefix-cache emulation:")
    for variant, run in runs.items():
        label = VARIANTS[variant][1]
        print(
            f"  {label:<38} list cost {format_usd(run.list_cost):>10}  "
            f"{run.list_cost / base.list_cost:.3f}x  uncached {format_usd(run.uncached_cost):>10}  "
            f"requests {run.requests}, with breakpoints {run.with_breakpoints}, missed {run.missed}, "
            f"warnings {run.warnings}"
        )
    default = runs["default"]
    print(f"  the default session's line: {default.saving_line}")
    ok = default.list_cost / base.list_cost <= Decimal("0.35") and default.uncached_cost == base.list_cost
    ok = ok and default.missed == 0

    if not args.skip_local:
        measured = asyncio.run(local_bench(args.rounds))
        warm = statistics.median(r.warm for r in measured)
        cold = statistics.median(r.cold for r in measured)
        print(
            f"local model, turn {LOCAL_TURNS} (median of {len(measured)} rounds, {os.cpu_count()} cores): "
            f"first token {warm * 1000:.0f} ms with the KV cache kept, {cold * 1000:.0f} ms cold: "
            f"{warm / cold:.3f}x; prompt {measured[0].prompt_tokens} tokens, {measured[0].reused} reused"
        )
        each = [[round(r.warm * 1000), round(r.cold * 1000), r.reused] for r in measured]
        print("  rounds (warm ms, cold ms, tokens reused): " + json.dumps(each))
        ok = ok and warm / cold <= 0.3
    if not ok:
        raise SystemExit("a target was missed")


if __name__ == "__main__":
    main()
