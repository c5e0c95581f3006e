"""The turn loop: previews and buffered events, tools, custom tools, stop reasons, retries, interrupts."""

from __future__ import annotations

import asyncio
import threading
import time
from decimal import Decimal
from pathlib import Path

import pytest

from agentcell import (
    CustomTool,
    CustomToolResult,
    ScriptedDelay,
    ScriptedError,
    ScriptedResponse,
    ScriptedText,
    ScriptedThinking,
    ScriptedToolCall,
    TextBlock,
)
from agentcell import events as ev
from agentcell.providers.base import TextPart, ThinkingPart, ToolResultPart
from agentcell.tools.simple import SimpleTools
from agentcell.usage import Usage

from ..conftest import event_seen, scripted_engine


def _text(event: ev.Event) -> str:
    assert isinstance(event, ev.AgentMessage)
    return "".join(b.text for b in event.content if isinstance(b, TextBlock))


async def test_previews_stream_then_the_buffered_event_reconciles_them(db_path: Path) -> None:
    engine, _ = scripted_engine(db_path, [ScriptedResponse(steps=[ScriptedText(text="Hello, world!", chunk_size=3)])])
    agent = engine.agents.create(name="a", model="scripted")
    session = engine.sessions.create(agent=agent.id)
    items = [item async for item in session.send("hi")]
    types = [i.type for i in items]
    assert types[:3] == ["user.message", "session.status_running", "span.model_request_start"]
    assert types[-4:] == ["agent.message", "span.model_request_end", "session.usage", "session.status_idle"]
    start = next(i for i in items if isinstance(i, ev.EventStart))
    deltas = [i for i in items if isinstance(i, ev.EventDelta)]
    message = next(i for i in items if isinstance(i, ev.AgentMessage))
    assert start.event.id == message.id and all(d.event_id == message.id for d in deltas)
    assert len(deltas) == 5
    assert "".join(d.delta.content.text for d in deltas) == _text(message) == "Hello, world!"  # type: ignore[union-attr]
    assert types.index("event_start") < types.index("event_delta") < types.index("agent.message")
    stored = session.events()
    assert [e.type for e in stored] == [t for t in types if not t.startswith("event_")]  # previews never stored
    await engine.aclose()


async def test_thinking_is_previewed_start_only_and_sent_back_with_its_signature(db_path: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedThinking(thinking="let me think", signature="sig-1"), ScriptedText(text="42")]),
        ScriptedResponse(steps=[ScriptedText(text="again 42")]),
    ]
    engine, provider = scripted_engine(db_path, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    items = [item async for item in session.send("question")]
    thinking = next(i for i in items if isinstance(i, ev.AgentThinking))
    starts = [i for i in items if isinstance(i, ev.EventStart) and i.event.type == "agent.thinking"]
    assert [s.event.id for s in starts] == [thinking.id]
    assert not [i for i in items if isinstance(i, ev.EventDelta) and i.event_id == thinking.id]
    assert (thinking.thinking, thinking.signature) == ("let me think", "sig-1")
    await session.ask("follow-up")
    assistant = provider.requests[1].messages[1]
    assert assistant.role == "assistant"
    assert assistant.content[0] == ThinkingPart(thinking="let me think", signature="sig-1")
    assert assistant.content[1] == TextPart(text="42")
    await engine.aclose()


async def test_tool_calls_run_and_their_results_reach_the_model(db_path: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="add", input={"a": 2, "b": 3}, id="toolu_1")]),
        ScriptedResponse(steps=[ScriptedText(text="5")]),
    ]
    engine, provider = scripted_engine(db_path, script)
    tools = SimpleTools()
    tools.add(lambda a, b: a + b, name="add", description="add two numbers")
    engine.tools = tools
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = await session.ask("2+3?")
    use = next(e for e in result.events if isinstance(e, ev.AgentToolUse))
    tool_result = next(e for e in result.events if isinstance(e, ev.AgentToolResult))
    assert (use.name, use.input, use.call_id) == ("add", {"a": 2, "b": 3}, "toolu_1")
    assert tool_result.tool_use_id == use.id and not tool_result.is_error
    assert tool_result.content == [TextBlock(text="5")]
    assert provider.requests[0].tools[0].name == "add"
    sent = provider.requests[1].messages[-1].content[0]
    assert sent == ToolResultPart(call_id="toolu_1", content=[TextBlock(text="5")])
    assert result.text == "5" and isinstance(result.stop_reason, ev.EndTurn)
    await engine.aclose()


async def test_parallel_safe_calls_run_together_and_keep_call_order(db_path: Path) -> None:
    calls = [ScriptedToolCall(name="slow", input={"n": n}) for n in range(4)] + [
        ScriptedToolCall(name="exclusive", input={}),
        ScriptedToolCall(name="nope", input={}),
    ]
    engine, _ = scripted_engine(db_path, [ScriptedResponse(steps=calls)])
    tools = SimpleTools()
    running = 0
    peak = 0

    async def slow(n: int) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.2 - n * 0.04)  # later calls finish first
        running -= 1
        return f"slow {n}"

    tools.add(slow, name="slow", parallel_safe=True)
    tools.add(lambda: "alone", name="exclusive")
    engine.tools = tools
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    started = time.perf_counter()
    result = await session.ask("go")
    elapsed = time.perf_counter() - started
    results = [e for e in result.events if isinstance(e, ev.AgentToolResult)]
    texts = [b.text for r in results for b in r.content if isinstance(b, TextBlock)]
    assert texts[:5] == ["slow 0", "slow 1", "slow 2", "slow 3", "alone"]
    assert peak == 4 and elapsed < 0.5
    assert results[5].is_error and "no tool named 'nope'" in texts[5]
    await engine.aclose()


async def test_a_custom_tool_pauses_the_turn_until_the_client_answers(db_path: Path) -> None:
    script = [
        ScriptedResponse(
            steps=[ScriptedText(text="checking"), ScriptedToolCall(name="weather", input={"city": "Oslo"})]
        ),
        ScriptedResponse(steps=[ScriptedText(text="It is sunny in Oslo.")]),
    ]
    engine, provider = scripted_engine(db_path, script)
    agent = engine.agents.create(name="a", model="scripted", tools=[CustomTool(name="weather")])
    session = engine.sessions.create(agent=agent.id)
    first = await session.ask("weather?")
    use = next(e for e in first.events if isinstance(e, ev.AgentCustomToolUse))
    assert first.stop_reason == ev.RequiresAction(event_ids=[use.id])
    assert session.status == "idle"
    assert not [e for e in first.events if isinstance(e, ev.AgentToolResult)]
    with pytest.raises(ValueError, match="waiting"):
        await session.ask(CustomToolResult(custom_tool_use_id="sevt_wrong", content="x"))
    second = await session.ask(CustomToolResult(custom_tool_use_id=use.id, content="sunny"))
    assert second.text == "It is sunny in Oslo."
    assert isinstance(second.stop_reason, ev.EndTurn)
    assert provider.requests[1].messages[-1].content[0] == ToolResultPart(
        call_id=use.call_id, content=[TextBlock(text="sunny")]
    )
    await engine.aclose()


async def test_max_turns_stops_a_loop_of_tool_calls(db_path: Path) -> None:
    engine, provider = scripted_engine(
        db_path, lambda request: ScriptedResponse(steps=[ScriptedToolCall(name="again")])
    )
    tools = SimpleTools()
    tools.add(lambda: "ok", name="again")
    engine.tools = tools
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id, max_turns=3)
    result = await session.ask("loop")
    assert result.stop_reason == ev.MaxTurns()
    assert len(provider.requests) == 3
    await engine.aclose()


async def test_pause_turn_continues_with_the_response_sent_back(db_path: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedText(text="part one")], stop_reason="pause_turn"),
        ScriptedResponse(steps=[ScriptedText(text="part two")]),
    ]
    engine, provider = scripted_engine(db_path, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = await session.ask("long job")
    assert result.text == "part one\n\npart two"
    assert provider.requests[1].messages[-1].role == "assistant"
    assert provider.requests[1].messages[-1].content == [TextPart(text="part one")]
    await engine.aclose()


async def test_a_refusal_is_surfaced(db_path: Path) -> None:
    engine, _ = scripted_engine(
        db_path, [ScriptedResponse(steps=[ScriptedText(text="I can't")], stop_reason="refusal")]
    )
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = await session.ask("bad idea")
    assert [e.type for e in result.errors] == ["refusal"]
    assert "declined" in result.errors[0].message
    await engine.aclose()


async def test_an_answer_cut_at_max_tokens_says_so_and_the_turn_ends(db_path: Path) -> None:
    script = [ScriptedResponse(steps=[ScriptedText(text="The first half")], stop_reason="max_tokens")]
    engine, _ = scripted_engine(db_path, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = await session.ask("a long story")
    assert result.stop_reason == ev.EndTurn() and result.text == "The first half"
    assert [e.type for e in result.errors] == ["max_tokens"]
    assert "cut off at max_tokens" in result.errors[0].message
    await engine.aclose()


async def test_a_failure_before_output_ends_the_turn_with_a_typed_error(db_path: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedError(message="overloaded", status_code=529, error_type="overloaded_error")])
    ]
    engine, provider = scripted_engine(db_path, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = await session.ask("hi")
    assert isinstance(result.stop_reason, ev.ErrorStop) and "overloaded" in result.stop_reason.message
    assert [(e.type, e.retry_status) for e in result.errors] == [("model_overloaded_error", "terminal")]
    end = next(e for e in result.events if isinstance(e, ev.SpanModelRequestEnd))
    assert end.is_error
    assert len(provider.requests) == 1  # before any output, retrying is the provider's job
    assert (await session.ask("again")).text == "You said: again"  # the session survives
    await engine.aclose()


async def test_a_failure_after_output_abandons_the_preview_and_retries_without_duplicates(
    db_path: Path,
) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedText(text="Hello wor", chunk_size=3), ScriptedError(error_class="connection")]),
        ScriptedResponse(steps=[ScriptedText(text="Hello world", chunk_size=3)]),
    ]
    engine, provider = scripted_engine(db_path, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    items = [i async for i in session.send("hi")]
    messages = [i for i in items if isinstance(i, ev.AgentMessage)]
    assert [_text(m) for m in messages] == ["Hello world"]
    starts = [i for i in items if isinstance(i, ev.EventStart)]
    assert len(starts) == 2 and starts[0].event.id != messages[0].id == starts[1].event.id
    abandoned_end = next(i for i in items if isinstance(i, ev.SpanModelRequestEnd))
    assert abandoned_end.is_error
    assert [e.error.retry_status for e in items if isinstance(e, ev.SessionError)] == ["retrying"]
    assert len(provider.requests) == 2
    stored_text = [_text(e) for e in session.events() if isinstance(e, ev.AgentMessage)]
    assert stored_text == ["Hello world"]
    await engine.aclose()


async def test_interrupt_ends_the_turn_within_a_second_and_keeps_the_shown_text(db_path: Path) -> None:
    long_text = ScriptedText(text="word " * 2000, chunk_size=5, delay=0.005)
    engine, provider = scripted_engine(db_path, [ScriptedResponse(steps=[long_text])])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    shown: list[str] = []
    interrupted_at = 0.0
    items: list[ev.StreamItem] = []
    async for item in session.send("write a lot"):
        items.append(item)
        if isinstance(item, ev.EventDelta):
            shown.append(item.delta.content.text)  # type: ignore[union-attr]
            if len(shown) == 20:
                interrupted_at = time.perf_counter()
                session.interrupt()
    elapsed = time.perf_counter() - interrupted_at
    assert elapsed < 1.0
    idle = items[-1]
    assert isinstance(idle, ev.SessionStatusIdle) and idle.stop_reason == ev.Interrupted()
    kept = [i for i in items if isinstance(i, ev.AgentMessage)]
    assert len(kept) == 1 and kept[0].interrupted
    assert _text(kept[0]) == "".join(shown)
    assert "user.interrupt" in [i.type for i in items]
    # The next message works and the model sees what was shown.
    assert (await session.ask("thanks")).text == "You said: thanks"
    assert provider.requests[1].messages[1].content == [TextPart(text="".join(shown))]
    await engine.aclose()


async def test_interrupt_during_a_tool_answers_the_call_and_stops(db_path: Path) -> None:
    engine, provider = scripted_engine(db_path, [ScriptedResponse(steps=[ScriptedToolCall(name="sleepy")])])
    tools = SimpleTools()
    started = asyncio.Event()

    async def sleepy() -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    tools.add(sleepy, name="sleepy")
    engine.tools = tools
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    task = asyncio.create_task(session.ask("go"))
    await started.wait()
    t0 = time.perf_counter()
    session.interrupt()
    result = await task
    assert time.perf_counter() - t0 < 1.0
    assert result.stop_reason == ev.Interrupted()
    answer = next(e for e in result.events if isinstance(e, ev.AgentToolResult))
    assert answer.is_error and "interrupted" in answer.content[0].text  # type: ignore[union-attr]
    await session.ask("next")
    assert isinstance(provider.requests[1].messages[2].content[0], ToolResultPart)
    await engine.aclose()


async def test_cancelling_the_consumer_interrupts_the_turn(db_path: Path) -> None:
    engine, _ = scripted_engine(db_path, [ScriptedResponse(steps=[ScriptedDelay(seconds=30)])])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    requested = event_seen(session, "span.model_request_start")
    task = asyncio.create_task(session.ask("wait"))
    await requested.wait()
    t0 = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - t0 < 1.0
    assert session.status == "idle"
    last = session.events()[-1]
    assert isinstance(last, ev.SessionStatusIdle) and last.stop_reason == ev.Interrupted()
    await engine.aclose()


def test_interrupt_from_another_thread(db_path: Path) -> None:
    engine, _ = scripted_engine(db_path, [ScriptedResponse(steps=[ScriptedDelay(seconds=30)])])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)

    requested = threading.Event()
    session.subscribe(lambda item: requested.set() if item.type == "span.model_request_start" else None)

    def stop_soon() -> None:
        assert requested.wait(10)  # the request is under way in the engine's own loop
        session.interrupt()

    stopper = threading.Thread(target=stop_soon)
    stopper.start()
    t0 = time.perf_counter()
    result = session.send_sync("wait")
    stopper.join()
    assert result.stop_reason == ev.Interrupted()
    assert time.perf_counter() - t0 < 2.0
    engine.close()


async def test_usage_is_reported_per_request_and_cumulatively(db_path: Path) -> None:
    usage = Usage(input_tokens=1000, output_tokens=100, cache_read_input_tokens=50)
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="t")], usage=usage),
        ScriptedResponse(steps=[ScriptedText(text="done")], usage=usage),
    ]
    engine, _ = scripted_engine(db_path, script)
    tools = SimpleTools()
    tools.add(lambda: "x", name="t")
    engine.tools = tools
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = await session.ask("go")
    ends = [e for e in result.events if isinstance(e, ev.SpanModelRequestEnd)]
    snapshots = [e for e in result.events if isinstance(e, ev.SessionUsageEvent)]
    assert len(ends) == len(snapshots) == 2
    one = usage.model_copy(update={"list_cost": Decimal("0.004515"), "uncached_cost": Decimal("0.00465")})
    # $3/M in, $15/M out, cache reads at a tenth of input; uncached, the 50 cache reads are plain input.
    assert ends[0].model_usage == one
    assert one.saved_by_cache == Decimal("0.000135")
    assert snapshots[-1].usage.input_tokens == 2000
    assert snapshots[-1].usage.list_cost == 2 * one.list_cost == session.usage.list_cost
    assert snapshots[-1].usage.uncached_cost == 2 * one.uncached_cost == session.usage.uncached_cost
    assert result.usage.output_tokens == 200
    await engine.aclose()


async def test_a_request_cut_short_is_billed_for_what_it_generated(db_path: Path) -> None:
    thinking = ScriptedThinking(thinking="x" * 4000)
    cut = ScriptedError(error_class="connection", retryable=False)
    engine, _ = scripted_engine(db_path, [ScriptedResponse(steps=[thinking, cut])])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    result = await session.ask("think hard")
    end = next(e for e in result.events if isinstance(e, ev.SpanModelRequestEnd))
    assert end.is_error and end.model_usage.output_tokens >= 1000  # 4,000 characters of thinking
    assert session.usage.list_cost == end.model_usage.list_cost > 0
    await engine.aclose()


def test_a_message_of_several_text_blocks_is_one_agent_message_previewed_by_index(tmp_path: Path) -> None:
    """Seed 002: 'Which entry in the previewed event's content array this fragment lands in. Insert content
    as that entry when the index is new; append to the existing entry otherwise.'"""
    from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText
    from agentcell import events as ev

    provider = ScriptedProvider(
        [ScriptedResponse(steps=[ScriptedText(text="first part"), ScriptedText(text="second")])]
    )
    with Engine(tmp_path / "db", providers={"scripted": provider}) as engine:
        session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
        items = []
        result = engine.run_sync(session.ask("hi", on_item=items.append))
    [message] = [e for e in result.events if isinstance(e, ev.AgentMessage)]
    assert [b.text for b in message.content] == ["first part", "second"]  # type: ignore[union-attr]
    starts = [i for i in items if isinstance(i, ev.EventStart)]
    assert [s.event.id for s in starts] == [message.id]  # one preview, reconciled by one event
    entries: list[str] = []
    for item in items:
        if isinstance(item, ev.EventDelta):
            assert item.event_id == message.id
            if item.delta.index == len(entries):
                entries.append(item.delta.content.text)  # type: ignore[union-attr]
            else:
                entries[item.delta.index] += item.delta.content.text  # type: ignore[union-attr]
    assert entries == ["first part", "second"]
    assert result.text == "first partsecond"
