"""Seed 002 server tools, on the loopback Anthropic server: web search enabled beside the agent's own
tools, its call and result kept in the log and sent back in the history, counted in server_tool_use."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcell import Engine, InvalidInputError
from agentcell import events as ev
from agentcell.providers.anthropic import AnthropicProvider
from agentcell.tools import PermissionPolicy, ToolRegistry
from agentcell.tools.builtin import file_tools

from .conftest import API_KEY, FAST, SSEServer, sse_reply


async def test_web_search_runs_beside_the_agents_tools_and_stays_in_the_history(
    server: SSEServer, tmp_path: Path
) -> None:
    registry = ToolRegistry(PermissionPolicy("workspace-write", tmp_path, temp_dirs=()))
    registry.register_all(file_tools())
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.url, retry=FAST)
    engine = Engine(tmp_path / "db", providers={"anthropic": provider}, tools=registry)
    try:
        agent = engine.agents.create(
            name="a",
            model="anthropic:claude-sonnet-4-5",
            tools=[{"type": "server", "name": "web_search", "max_uses": 3}],
        )
        session = engine.sessions.create(agent=agent.id)
        server.queue(sse_reply("anthropic_pause_turn.sse"), sse_reply("anthropic_text.sse"))
        result = await session.ask("what is the weather in Zürich?")
    finally:
        await engine.aclose()
    first, second = server.requests
    tools = first.body["tools"]
    assert {"type": "web_search_20250305", "name": "web_search", "max_uses": 3} in tools
    assert {"read_file", "write_file"} <= {t["name"] for t in tools}  # beside the agent's own tools
    [use] = [e for e in result.events if isinstance(e, ev.AgentServerToolUse)]
    [answer] = [e for e in result.events if isinstance(e, ev.AgentServerToolResult)]
    assert (use.name, use.input) == ("web_search", {"query": "weather Zürich"})
    assert answer.tool_use_id == use.id and answer.kind == "web_search_tool_result"
    assert answer.content[0]["url"] == "https://example.com/zurich"
    # pause_turn: the engine sent the turn so far back, the server blocks where they were.
    assistant = second.body["messages"][-1]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "server_tool_use", "web_search_tool_result", "text"]
    assert assistant["content"][2]["tool_use_id"] == assistant["content"][1]["id"] == use.call_id
    assert session.usage.server_tool_use.web_search_requests == 1
    assert result.stop_reason == ev.EndTurn()


def test_server_tools_need_an_anthropic_model(tmp_path: Path) -> None:
    with Engine(tmp_path / "db") as engine, pytest.raises(InvalidInputError, match="run on Anthropic's side"):
        engine.agents.create(name="a", model="scripted", tools=[{"type": "server", "name": "web_fetch"}])


def test_web_fetch_asks_for_its_beta() -> None:
    from agentcell.providers.anthropic import build_body
    from agentcell.providers.base import Message, ModelRequest, TextPart
    from agentcell.records.agent import ServerTool

    request = ModelRequest(
        model="claude-sonnet-4-5",
        messages=[Message(role="user", content=[TextPart(text="read it")])],
        server_tools=[ServerTool(name="web_fetch", allowed_domains=["example.com"])],
    )
    body, betas = build_body(request)
    assert body["tools"] == [{"type": "web_fetch_20250910", "name": "web_fetch", "allowed_domains": ["example.com"]}]
    assert betas == ["web-fetch-2025-09-10"]
