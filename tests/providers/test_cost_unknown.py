"""Seed 002: 'Cumulative list cost ... Absent until cost tracking is available for the session.' A model
with no known list price has no cost ("cost unknown", never "$0"), and a budget on it is refused."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from agentcell import Engine, InvalidInputError, ScriptedProvider
from agentcell._format import format_cost
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.usage import Usage

from .conftest import API_KEY, FAST, SSEServer, sse_reply

UNKNOWN = "anthropic:claude-from-the-future"


def _engine(server: SSEServer, tmp_path: Path) -> Engine:
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    return Engine(tmp_path / "db", providers={"anthropic": provider, "scripted": ScriptedProvider()})


async def test_list_cost_is_absent_until_a_priced_request_is_counted(server: SSEServer, tmp_path: Path) -> None:
    engine = _engine(server, tmp_path)
    try:
        session = engine.sessions.create(agent=engine.agents.create(name="a", model="anthropic:claude-sonnet-4-5").id)
        assert "list_cost" not in json.loads(session.usage.model_dump_json())
        assert "server_tool_use" not in json.loads(session.usage.model_dump_json())  # not tracked either
        server.queue(sse_reply("anthropic_text.sse"))
        await session.ask("hi")
        assert session.usage.list_cost is not None and session.usage.list_cost > 0
    finally:
        await engine.aclose()


async def test_a_model_with_no_list_price_has_no_cost(server: SSEServer, tmp_path: Path) -> None:
    engine = _engine(server, tmp_path)
    try:
        session = engine.sessions.create(agent=engine.agents.create(name="a", model=UNKNOWN).id)
        server.queue(sse_reply("anthropic_text.sse"))
        result = await session.ask("hi")
    finally:
        await engine.aclose()
    assert result.usage.list_cost is None and result.usage.unpriced_requests == 1
    assert session.usage.list_cost is None and session.usage.output_tokens == 12  # tokens still counted
    assert format_cost(session.usage).startswith("cost unknown")
    assert "$0" not in format_cost(session.usage)


def test_a_budget_on_a_model_with_no_list_price_is_refused_and_says_how_to_give_prices(tmp_path: Path) -> None:
    provider = AnthropicProvider(api_key=API_KEY, base_url="http://127.0.0.1:9")
    with Engine(tmp_path / "db", providers={"anthropic": provider}) as engine:
        agent = engine.agents.create(name="a", model=UNKNOWN)
        with pytest.raises(InvalidInputError, match="no known list price") as refused:
            engine.sessions.create(agent=agent.id, budget="1.00")
        assert "input_mtok" in str(refused.value) and "--prices" in str(refused.value)
        session = engine.sessions.create(agent=agent.id)
        with pytest.raises(InvalidInputError, match="no known list price"):
            session.update(budget="1.00")
        assert session.budget is None and session.events(types=["session.updated"]) == []
        priced = engine.agents.create(
            name="b", model={"id": UNKNOWN, "prices": {"input_mtok": "3", "output_mtok": "15"}}
        )
        assert engine.sessions.create(agent=priced.id, budget="1.00").budget is not None


def test_the_local_models_known_price_of_zero_stays_zero() -> None:
    free = Usage(input_tokens=100, output_tokens=10, list_cost=Decimal(0))
    assert format_cost(free) == "$0"
    assert format_cost(Usage()) == "$0"
    partly = Usage(list_cost=Decimal("0.5"), unpriced_requests=2)
    assert format_cost(partly) == "cost unknown beyond $0.5 (2 requests with no list price)"
