"""Budgets that do not over-refuse, on the real Anthropic path (loopback server): the worst case prices
input as the request is billed, counts tokens exactly when the cheap bound does not fit, and shortens
max_tokens before refusing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from agentcell import Engine
from agentcell import events as ev
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.tools import PermissionPolicy, ToolRegistry
from agentcell.tools.builtin import builtin_tools
from agentcell.usage import worst_case_cost

from .conftest import API_KEY, FAST, SSEServer, json_reply, sse_reply

SYSTEM = (
    "You are an assistant working inside a Jupyter notebook. Answer in Markdown. When computing or inspecting "
    "data helps, use the python tool: it runs in the notebook's own namespace."
)


def _notebook_like(server: SSEServer, tmp_path: Path) -> tuple[Engine, AnthropicProvider, ToolRegistry]:
    """Claude Sonnet at list price with the notebook's tools: the setup that refused every short prompt."""
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    registry = ToolRegistry(PermissionPolicy("workspace-write", tmp_path, temp_dirs=()))
    registry.register_all(builtin_tools(namespace={}))
    return Engine(tmp_path / "db.sqlite", providers={"anthropic": provider}, tools=registry), provider, registry


async def test_a_short_prompt_runs_with_little_budget_left(
    server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, provider, _ = _notebook_like(server, tmp_path)
    bounds: list[int] = []
    safe_bound = provider.input_token_bound
    monkeypatch.setattr(provider, "input_token_bound", lambda request: bounds.append(safe_bound(request)) or bounds[-1])
    try:
        agent = engine.agents.create(
            name="nb", model={"id": "anthropic:claude-sonnet-4-5", "max_tokens": 500}, system=SYSTEM
        )
        session = engine.sessions.create(agent=agent.id)
        for n in range(4):  # some conversation first
            server.queue(sse_reply("anthropic_text.sse"))
            await session.ask(f"question {n}: " + "tell me about notebooks " * 20)
        spent = session.usage.list_cost
        session.update(budget=spent + Decimal("0.0468"))
        server.queue(sse_reply("anthropic_text.sse"))
        before = len(server.requests)
        result = await session.ask("Short answer please")
    finally:
        await engine.aclose()
    assert result.stop_reason == ev.EndTurn()
    sent = server.requests[before:]
    assert [r.path for r in sent] == ["/v1/messages"]  # the cheap bound fitted: no count needed
    assert sent[0].body["max_tokens"] == 500  # not shortened either
    pricing = provider.pricing("claude-sonnet-4-5")
    # The old worst case priced every input token as a 1-hour cache write the request never asked for,
    # and refused this prompt; the request is billed as plain input.
    assert worst_case_cost(pricing, bounds[-1], 500, "any") > Decimal("0.0468")
    assert worst_case_cost(pricing, bounds[-1], 500, "plain") <= Decimal("0.0468")
    assert session.usage.list_cost <= spent + Decimal("0.0468")


BYTE_BOUND = 20_000
"""The cheap bound the next tests fix, so their figures are known."""


async def test_the_exact_count_is_asked_only_when_the_cheap_bound_does_not_fit(
    server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, provider, _ = _notebook_like(server, tmp_path)
    monkeypatch.setattr(provider, "input_token_bound", lambda request: BYTE_BOUND)
    pricing = provider.pricing("claude-sonnet-4-5")
    try:
        agent = engine.agents.create(
            name="nb", model={"id": "anthropic:claude-sonnet-4-5", "max_tokens": 500}, system=SYSTEM
        )
        session = engine.sessions.create(agent=agent.id, budget=worst_case_cost(pricing, 2_000, 500, "plain"))
        server.queue(json_reply(200, {"input_tokens": 900}), sse_reply("anthropic_text.sse"))
        result = await session.ask("Short answer please")
    finally:
        await engine.aclose()
    assert result.stop_reason == ev.EndTurn()
    count, message = server.requests
    assert count.path == "/v1/messages/count_tokens"
    assert set(count.body) <= {"model", "messages", "system", "tools", "tool_choice", "thinking"}
    assert count.body["messages"] == message.body["messages"] and count.headers["x-api-key"] == API_KEY
    assert message.path == "/v1/messages" and message.body["max_tokens"] == 500


async def test_a_failed_count_falls_back_to_the_safe_bound_and_shortens(
    server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, provider, _ = _notebook_like(server, tmp_path)
    monkeypatch.setattr(provider, "input_token_bound", lambda request: BYTE_BOUND)
    pricing = provider.pricing("claude-sonnet-4-5")
    # The notebook's tools and system prompt are long enough to cache: the request carries breakpoints
    # (caching is on by default), so its worst case prices the input as 5-minute cache writes.
    budget = worst_case_cost(pricing, BYTE_BOUND, 1_000, "5m")  # room for 1,000 output tokens, not 4,000
    try:
        agent = engine.agents.create(
            name="nb", model={"id": "anthropic:claude-sonnet-4-5", "max_tokens": 4000}, system=SYSTEM
        )
        session = engine.sessions.create(agent=agent.id, budget=budget)
        server.queue(json_reply(500, {"type": "error", "error": {"type": "api_error", "message": "no"}}))
        server.queue(sse_reply("anthropic_text.sse"))
        result = await session.ask("Short answer please")
    finally:
        await engine.aclose()
    assert result.stop_reason == ev.EndTurn()
    assert [r.path for r in server.requests] == ["/v1/messages/count_tokens", "/v1/messages"]
    [start] = [e for e in result.events if isinstance(e, ev.SpanModelRequestStart)]
    assert (start.max_tokens, start.budget_shortened_from) == (1_000, 4000)
    assert server.requests[1].body["max_tokens"] == 1_000
    assert server.requests[1].body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert session.usage.list_cost <= budget
