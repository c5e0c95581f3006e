"""The HTTP providers in the engine: retries split between provider and runner, no text lost or doubled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcell import Engine, TextBlock
from agentcell import events as ev
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.providers.defaults import register_http_providers

from .conftest import API_KEY, FAST, SSEServer, sse_reply

FULL_TEXT = "Héllo, wörld — 日本語で こんにちは 🎉!"


def _text(event: ev.AgentMessage) -> str:
    return "".join(b.text for b in event.content if isinstance(b, TextBlock))


async def test_a_mid_stream_failure_is_retried_by_the_engine_without_lost_or_doubled_text(
    server: SSEServer, tmp_path: Path
) -> None:
    server.queue(sse_reply("anthropic_error_midstream.sse"), sse_reply("anthropic_text.sse"))
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    engine = Engine(tmp_path / "db.sqlite", providers={"anthropic": provider})
    try:
        agent = engine.agents.create(name="a", model="anthropic:claude-sonnet-4-5")
        session = engine.sessions.create(agent=agent.id)
        items = [item async for item in session.send("hi")]
    finally:
        await engine.aclose()

    messages = [i for i in items if isinstance(i, ev.AgentMessage)]
    assert [_text(m) for m in messages] == [FULL_TEXT]
    starts = [i.event.id for i in items if isinstance(i, ev.EventStart)]
    assert len(starts) == 2 and starts[1] == messages[0].id != starts[0]
    by_preview: dict[str, str] = {}
    for item in items:
        if isinstance(item, ev.EventDelta):
            by_preview[item.event_id] = by_preview.get(item.event_id, "") + item.delta.content.text  # type: ignore[union-attr]
    assert by_preview == {
        starts[0]: "Partial answ",
        starts[1]: FULL_TEXT,
    }  # abandoned preview, then the real one
    errors = [i for i in items if isinstance(i, ev.SessionError)]
    assert [(e.error.type, e.error.retry_status) for e in errors] == [("model_overloaded_error", "retrying")]
    ends = [i for i in items if isinstance(i, ev.SpanModelRequestEnd)]
    assert [e.is_error for e in ends] == [True, False]
    assert isinstance(items[-1], ev.SessionStatusIdle) and items[-1].stop_reason == ev.EndTurn()
    assert len(server.requests) == 2
    # The model is asked the same thing twice: the failed attempt left nothing in the history.
    assert server.requests[0].body["messages"] == server.requests[1].body["messages"]


async def test_an_early_failure_is_retried_by_the_provider_and_the_engine_never_sees_it(
    server: SSEServer, tmp_path: Path
) -> None:
    server.queue(sse_reply("anthropic_error_early.sse"), sse_reply("anthropic_text.sse"))
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    engine = Engine(tmp_path / "db.sqlite", providers={"anthropic": provider})
    try:
        agent = engine.agents.create(name="a", model="anthropic:claude-sonnet-4-5")
        session = engine.sessions.create(agent=agent.id)
        result = await session.ask("hi")
    finally:
        await engine.aclose()
    assert result.text == FULL_TEXT
    types = [e.type for e in result.events]
    assert "session.error" not in types
    assert types.count("span.model_request_start") == 1
    assert len(server.requests) == 2


async def test_the_registered_prefixes_serve_bare_claude_names_with_caching_and_prices(
    server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    server.queue(sse_reply("anthropic_cache.sse"))
    engine = Engine(tmp_path / "db.sqlite")
    register_http_providers(engine.providers)
    try:
        agent = engine.agents.create(
            name="a",
            model={"id": "claude-sonnet-4-5", "base_url": server.url, "extra": {"cache": "1h"}},
            system="You are terse. " * 300,  # long enough to cache
        )
        session = engine.sessions.create(agent=agent.id)
        result = await session.ask("hi")
    finally:
        await engine.aclose()
    assert result.text == "Cached answer."
    (sent,) = server.requests
    assert sent.body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    end = next(e for e in result.events if isinstance(e, ev.SpanModelRequestEnd))
    usage = end.model_usage
    assert usage.cache_read_input_tokens == 1800 and usage.cache_creation.ephemeral_1h_input_tokens == 300
    # Sonnet 4.5 list prices: $3 in, $15 out, $0.30 cache read, $3.75 5m write, $6 1h write per MTok.
    expected = (21 * 3 + 7 * 15 + 1800 * 0.3 + 200 * 3.75 + 300 * 6) / 1e6
    assert float(usage.list_cost) == pytest.approx(expected)


async def test_a_steer_the_turn_never_delivered_reaches_no_later_request(server: SSEServer, tmp_path: Path) -> None:
    # The reply streams slowly enough that the steer arrives while it does; then the user stops the turn,
    # so the steer is never delivered (issue 14: it leaked into the next cell's prompt).
    server.queue(sse_reply("anthropic_text.sse", chunk_size=24, pause=0.05), sse_reply("anthropic_text.sse"))
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    engine = Engine(tmp_path / "db.sqlite", providers={"anthropic": provider})
    try:
        agent = engine.agents.create(name="a", model="anthropic:claude-sonnet-4-5")
        session = engine.sessions.create(agent=agent.id)
        steered = False
        async for item in session.send("first question"):
            if isinstance(item, ev.EventDelta) and not steered:
                session.steer("A LATE STEER")
                session.interrupt()
                steered = True
        undelivered = [e for e in session.events() if isinstance(e, ev.SessionSteerUndelivered)]
        assert steered and len(undelivered) == 1
        _ = [item async for item in session.send("second question")]
    finally:
        await engine.aclose()
    assert len(server.requests) == 2
    assert "A LATE STEER" not in json.dumps(server.requests[1].body)
    assert "second question" in json.dumps(server.requests[1].body)
