"""Every ACP stop reason agentcell answers, each from the turn that produces it: end_turn (elsewhere),
max_tokens, max_turn_requests (the turn's request limit, or the budget), refusal (the loopback Anthropic
server), cancelled (see the conformance tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp import text_block

from ..providers.conftest import API_KEY, SSEServer, sse_reply
from .conftest import acp_agent, script

pytestmark = pytest.mark.slow

READ = {"steps": [{"kind": "tool_call", "name": "read_file", "input": {"path": "notes.txt"}}]}


async def test_max_tokens_and_max_turn_requests(acp_env: dict[str, str], workspace: Path, tmp_path: Path) -> None:
    cut = {"steps": [{"kind": "text", "text": "cut short"}], "stop_reason": "max_tokens"}
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [cut, *[READ] * 25])
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        short = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("say a lot")])
        endless = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("read forever")])
    assert short.stop_reason == "max_tokens"
    assert endless.stop_reason == "max_turn_requests"
    assert len(agent.client.tool_calls()) == 25


async def test_a_spent_budget_stops_the_turn_and_says_so(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    priced = tmp_path / "priced.json"
    priced.write_text(json.dumps({"responses": [], "pricing": {"input_mtok": 3, "output_mtok": 15}}))
    acp_env["AGENTCELL_MODEL"] = f"scripted:{priced}"
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.set_config_option(config_id="budget", session_id=session.session_id, value="0.1")
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("/budget 0.000001")])
        agent.client.clear()
        stopped = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("spend")])
    assert stopped.stop_reason == "max_turn_requests"
    assert "budget is spent" in agent.client.text()


async def test_a_refusal_on_the_anthropic_server(acp_env: dict[str, str], workspace: Path, server: SSEServer) -> None:
    server.queue(sse_reply("anthropic_refusal.sse"))
    acp_env.update(
        ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=server.url, AGENTCELL_MODEL="anthropic:claude-sonnet-5-5"
    )
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        refused = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("something bad")])
    assert refused.stop_reason == "refusal"
    assert "declined to answer: This request would facilitate harm." in agent.client.text()
