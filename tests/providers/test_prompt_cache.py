"""Prompt caching end to end: the engine and the Anthropic provider against the loopback server emulating the
API's prefix cache from the breakpoints each request carries (``prefix_cache``)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from agentcell import Engine
from agentcell import events as ev
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.tools.simple import SimpleTools
from agentcell.usage import worst_case_cost

from .conftest import API_KEY, FAST, SSEServer
from .prefix_cache import PrefixCache, Turn, answer

SYSTEM = "You are a data analyst working in a Jupyter notebook. Explain each step briefly. " * 60


def _tools() -> SimpleTools:
    tools = SimpleTools()
    tools.add(
        lambda rows: "\n".join(f"row {i}: {i * i}" for i in range(int(rows))),
        name="load",
        description="Load the first rows of the table.",
        input_schema={"type": "object", "properties": {"rows": {"type": "integer"}}, "required": ["rows"]},
    )
    return tools


def _script(turns: int) -> list[Turn]:
    """Each turn: a tool call, then an answer."""
    replies: list[Turn] = []
    for n in range(turns):
        replies.append(Turn(text="Loading.", calls=[("load", {"rows": 40 + n})], output_tokens=40))
        replies.append(Turn(text=f"Turn {n}: the table has grown.", output_tokens=60))
    return replies


async def _session(
    server: SSEServer, tmp_path: Path, turns: int, *, cache: str | None, budget: Decimal | None = None
) -> tuple[Engine, list[ev.Event], PrefixCache]:
    prefix = PrefixCache()
    server.queue(*(answer(prefix, t) for t in _script(turns)))
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    engine = Engine(tmp_path / f"{cache}.sqlite", providers={"anthropic": provider}, tools=_tools())
    model: dict[str, object] = {"id": "anthropic:claude-sonnet-4-5", "max_tokens": 1000}
    if cache is not None:
        model["extra"] = {"cache": cache}
    agent = engine.agents.create(name="nb", model=model, system=SYSTEM)
    session = engine.sessions.create(agent=agent.id, budget=budget)
    for n in range(turns):
        await session.ask(f"Question {n}: load the table and tell me what changed.")
    return engine, list(session.events()), prefix


def _spans(events: list[ev.Event]) -> list[ev.SpanModelRequestEnd]:
    return [e for e in events if isinstance(e, ev.SpanModelRequestEnd)]


async def test_a_session_reads_its_prefix_back_and_its_uncached_cost_is_what_off_costs(
    server: SSEServer, tmp_path: Path
) -> None:
    engine, events, prefix = await _session(server, tmp_path, 4, cache=None)  # the default: on, 5 minutes
    await engine.aclose()
    spans = _spans(events)
    assert len(spans) == 8
    usages = [s.model_usage for s in spans]
    assert usages[0].cache_read_input_tokens == 0 and usages[0].cache_creation.ephemeral_5m_input_tokens > 0
    # Every later request reads everything the previous one wrote: tools + system and the turns so far.
    for earlier, later in zip(prefix.served, prefix.served[1:], strict=False):
        assert later.cache_read == earlier.cache_read + earlier.write_5m
    assert not any(u.missed for u in prefix.served)
    assert all(u.breakpoints == 3 for u in prefix.served[1:])
    assert not [e for e in events if isinstance(e, ev.SessionError)]
    cached = sum((u.list_cost for u in usages if u.list_cost is not None), Decimal(0))
    uncached = sum((u.uncached_cost for u in usages if u.uncached_cost is not None), Decimal(0))

    engine, off_events, off_prefix = await _session(server, tmp_path, 4, cache="off")
    await engine.aclose()
    off_spans = _spans(off_events)
    assert all(u.breakpoints == 0 and u.cache_read == 0 for u in off_prefix.served)
    off_cost = sum((s.model_usage.list_cost for s in off_spans if s.model_usage.list_cost is not None), Decimal(0))
    # What the log says the cached session would have cost uncached is what the same session costs uncached.
    assert uncached == off_cost
    assert cached < Decimal("0.5") * off_cost
    assert [s.model_usage.total_input_tokens for s in spans] == [s.model_usage.total_input_tokens for s in off_spans]


async def test_one_hour_entries_are_written_at_the_hour_premium(server: SSEServer, tmp_path: Path) -> None:
    engine, events, _ = await _session(server, tmp_path, 2, cache="1h")
    await engine.aclose()
    spans = _spans(events)
    first, second = spans[0].model_usage, spans[1].model_usage
    assert first.cache_creation.ephemeral_1h_input_tokens > 0 and first.cache_creation.ephemeral_5m_input_tokens == 0
    # Sonnet 4.5: $3 input, $6 per MTok for 1-hour writes, $0.30 reads, $15 output (genai-prices).
    assert first.list_cost == (
        Decimal(first.input_tokens) * 3
        + Decimal(first.cache_creation.ephemeral_1h_input_tokens) * 6
        + Decimal(first.output_tokens) * 15
    ) / Decimal(1_000_000)
    assert second.list_cost == (
        Decimal(second.input_tokens) * 3
        + Decimal(second.cache_read_input_tokens) * Decimal("0.3")
        + Decimal(second.cache_creation.ephemeral_1h_input_tokens) * 6
        + Decimal(second.output_tokens) * 15
    ) / Decimal(1_000_000)


async def test_the_budget_reserves_the_write_premium_so_the_cap_holds(server: SSEServer, tmp_path: Path) -> None:
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    pricing = provider.pricing("claude-sonnet-4-5")
    assert pricing is not None
    # Room for the first request priced as plain input, not as 5-minute writes of every input token.
    bound = len(SYSTEM.encode()) + 2_000
    budget = worst_case_cost(pricing, bound, 1000, "plain")
    assert worst_case_cost(pricing, bound, 1000, "5m") > budget
    engine, events, _ = await _session(server, tmp_path, 3, cache=None, budget=budget)
    await engine.aclose()
    spans = _spans(events)
    starts = [e for e in events if isinstance(e, ev.SpanModelRequestStart)]
    # The first request could be billed as writes: it went out shortened to what the budget pays for.
    assert starts[0].budget_shortened_from == 1000 and starts[0].max_tokens < 1000
    spent = sum((s.model_usage.list_cost for s in spans if s.model_usage.list_cost is not None), Decimal(0))
    assert spent <= budget


@pytest.mark.parametrize("cache", ["5m", "off"])
async def test_more_than_four_breakpoints_never_leave_the_provider(
    server: SSEServer, tmp_path: Path, cache: str
) -> None:
    engine, events, prefix = await _session(server, tmp_path, 3, cache=cache)
    await engine.aclose()
    spans = _spans(events)
    assert len(spans) == 6 and not any(s.is_error for s in spans)
    assert max(u.breakpoints for u in prefix.served) <= 4


async def test_a_cache_that_keeps_missing_is_said_once_with_the_likely_cause(server: SSEServer, tmp_path: Path) -> None:
    prefix = PrefixCache()
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    engine = Engine(tmp_path / "db.sqlite", providers={"anthropic": provider}, tools=_tools())
    agent = engine.agents.create(name="nb", model="anthropic:claude-sonnet-4-5", system=SYSTEM)
    session = engine.sessions.create(agent=agent.id)
    for n in range(5):
        # A system prompt that changes every turn (say, it shows the time): nothing after it is ever read.
        agent = engine.agents.update(agent.id, system=f"It is {10 + n}:00. {SYSTEM}")
        session.update(agent_version=agent.version)
        server.queue(answer(prefix, Turn(text=f"Answer {n}.")))
        await session.ask(f"Question {n}?")
    events = list(session.events())
    await engine.aclose()
    assert [u.cache_read for u in prefix.served] == [0] * 5 and all(u.write_5m for u in prefix.served)
    warnings = [e for e in events if isinstance(e, ev.SessionError)]
    assert len(warnings) == 1
    assert warnings[0].error.type == "prompt_cache_miss"
    assert "system prompt changed" in warnings[0].error.message
    # It came after the third request, the second that missed, and ended no turn.
    ends = [i for i, e in enumerate(events) if isinstance(e, ev.SpanModelRequestEnd)]
    assert ends[2] < events.index(warnings[0]) < ends[3]
    assert [e.stop_reason for e in events if isinstance(e, ev.SessionStatusIdle)] == [ev.EndTurn()] * 5
