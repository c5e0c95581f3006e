"""The CAPABILITY tier of the ACP test kit's v1 checklist: what each capability ``agentcell acp`` advertises
promises (load, resume, list, close, modes, config options, prompt content, auth), one test per requirement,
named by the kit's id, against ``agentcell acp`` as a subprocess."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp.schema import AgentMessageChunk, AvailableCommandsUpdate, UserMessageChunk

from acp import RequestError, text_block

from .conftest import RecordingClient, acp_agent, script

pytestmark = pytest.mark.slow

SLOW = {"steps": [{"kind": "text", "text": "x" * 400, "chunk_size": 4, "delay": 0.02}]}
"""A reply that streams for about two seconds: long enough to act while it runs."""


async def test_acp_close_002_closing_a_session_mid_prompt_answers_the_prompt_cancelled(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "slow.json", [SLOW])
    client = RecordingClient()
    first = asyncio.Event()
    client.on_update = lambda update: first.set() if isinstance(update, AgentMessageChunk) else None
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        prompt = asyncio.ensure_future(agent.conn.prompt(session_id=session.session_id, prompt=[text_block("go")]))
        await first.wait()
        await agent.conn.close_session(session_id=session.session_id)
        answer = await prompt
        again = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert answer.stop_reason == "cancelled"
    assert 0 < len(client.text()) < 400
    assert agent.wire.updates_after("session/prompt", session.session_id) == []
    assert again.session_id != session.session_id


async def test_acp_load_002_every_update_of_a_load_comes_before_its_answer(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("remember me")])
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        await agent.conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        before_answer = list(client.updates)
        await agent.conn.list_sessions()  # a round trip: anything queued behind the answer has arrived by now
    assert agent.wire.updates_after("session/load", session.session_id) == []
    assert any(isinstance(u, AvailableCommandsUpdate) for u in before_answer)
    assert [u.content.text for u in before_answer if isinstance(u, UserMessageChunk)] == ["remember me"]


async def test_acp_auth_003_each_auth_method_says_honestly_whether_it_can_be_used(
    acp_env: dict[str, str], workspace: Path
) -> None:
    """Key methods succeed when their variables are set where agentcell runs and otherwise answer -32000
    with what to set; the embedded model needs nothing; a session can be made after each."""
    acp_env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # a local server: no key needed (nothing is called)
    async with acp_agent(acp_env, initialize=False) as agent:
        init = await agent.conn.initialize(protocol_version=1)
        with pytest.raises(RequestError) as anthropic:
            await agent.conn.authenticate(method_id="anthropic-api-key")
        openai = await agent.conn.authenticate(method_id="openai-api-key")
        local = await agent.conn.authenticate(method_id="local-model")
        with pytest.raises(RequestError) as unknown:
            await agent.conn.authenticate(method_id="oauth")
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    methods = [m.model_dump(by_alias=True, exclude_none=True) for m in init.auth_methods or []]
    assert [(m["id"], m.get("type", "agent")) for m in methods] == [
        ("anthropic-api-key", "env_var"),
        ("openai-api-key", "env_var"),
        ("local-model", "agent"),
    ]
    assert [v["name"] for v in methods[0]["vars"]] == ["ANTHROPIC_API_KEY"]
    assert [v["name"] for v in methods[1]["vars"]] == ["OPENAI_API_KEY", "OPENAI_BASE_URL"]
    assert anthropic.value.code == -32000 and "ANTHROPIC_API_KEY is not set" in str(anthropic.value)
    assert openai is not None and local is not None
    assert unknown.value.code == -32602 and "anthropic-api-key" in str(unknown.value)
    assert session.session_id


async def test_acp_auth_003_a_key_set_in_the_environment_authenticates(
    acp_env: dict[str, str], workspace: Path
) -> None:
    acp_env["ANTHROPIC_API_KEY"] = "sk-ant-test-not-a-real-key"
    async with acp_agent(acp_env) as agent:
        answer = await agent.conn.authenticate(method_id="anthropic-api-key")
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert answer is not None and session.session_id
