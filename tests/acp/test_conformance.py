"""The MANDATORY tier of the ACP test kit's conformance checklist, one named test each, against
``agentcell acp`` as a subprocess: initialize, new/load, prompt, cancel, unknown-session errors, and no
client call the client did not advertise. (Every message is also checked against the schema by the
harness, see conftest.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp.schema import AgentMessageChunk, ToolCallStart, UserMessageChunk

from acp import RequestError, text_block

from .conftest import RecordingClient, acp_agent, script

pytestmark = pytest.mark.slow


async def test_mandatory_initialize_negotiates_version_1_and_says_what_it_supports(acp_env: dict[str, str]) -> None:
    async with acp_agent(acp_env, initialize=False) as agent:
        answer = await agent.conn.initialize(protocol_version=1)
        later = await agent.conn.initialize(protocol_version=7)  # a newer client gets the version agentcell speaks
    assert (answer.protocol_version, later.protocol_version) == (1, 1)
    caps = answer.agent_capabilities
    assert caps is not None and caps.load_session is True
    assert caps.prompt_capabilities is not None
    assert (caps.prompt_capabilities.image, caps.prompt_capabilities.audio) == (True, False)
    assert caps.prompt_capabilities.embedded_context is True
    assert caps.session_capabilities is not None
    assert caps.session_capabilities.list is not None and caps.session_capabilities.resume is not None
    assert caps.session_capabilities.close is not None
    assert answer.agent_info is not None and answer.agent_info.name == "agentcell"


async def test_mandatory_session_new_gives_a_session_with_config_options(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert session.session_id.startswith("sesn_")
    assert [o.root.id if hasattr(o, "root") else o.id for o in session.config_options or []] == [
        "model",
        "permission",
        "budget",
    ]


async def test_mandatory_session_load_replays_the_conversation_before_answering(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("remember me")])
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        await agent.conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        replayed = list(client.updates)  # as it stood when load answered
    assert [u.content.text for u in replayed if isinstance(u, UserMessageChunk)] == ["remember me"]
    assert "".join(u.content.text for u in replayed if isinstance(u, AgentMessageChunk)) == "You said: remember me"


async def test_mandatory_prompt_streams_updates_then_answers_end_turn(acp_env: dict[str, str], workspace: Path) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("ping")])
    assert answer.stop_reason == "end_turn"
    assert agent.client.text() == "You said: ping"


async def test_mandatory_cancel_ends_the_prompt_with_cancelled(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    slow = {"steps": [{"kind": "text", "text": "x" * 400, "chunk_size": 4, "delay": 0.02}]}
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "slow.json", [slow])
    client = RecordingClient()
    first = asyncio.Event()
    client.on_update = lambda update: first.set() if isinstance(update, AgentMessageChunk) else None
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        prompt = asyncio.ensure_future(agent.conn.prompt(session_id=session.session_id, prompt=[text_block("go")]))
        await first.wait()
        await agent.conn.cancel(session_id=session.session_id)
        answer = await prompt
        again = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("still here?")])
    assert answer.stop_reason == "cancelled"
    assert 0 < len(client.text()) < 400 + len("You said: still here?")
    assert again.stop_reason == "end_turn" and client.text().endswith("You said: still here?")


async def test_mandatory_unknown_session_ids_are_errors_not_crashes(acp_env: dict[str, str], workspace: Path) -> None:
    async with acp_agent(acp_env) as agent:
        with pytest.raises(RequestError) as prompted:
            await agent.conn.prompt(session_id="sesn_nope", prompt=[text_block("hi")])
        with pytest.raises(RequestError) as loaded:
            await agent.conn.load_session(cwd=str(workspace), session_id="sesn_nope", mcp_servers=[])
        await agent.conn.cancel(session_id="sesn_nope")  # a notification: nothing to answer, nothing breaks
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert prompted.value.code == -32002 and "sesn_nope" in str(prompted.value)
    assert loaded.value.code == -32002 and "sesn_nope" in str(loaded.value)
    assert session.session_id


async def test_mandatory_no_call_to_a_client_method_it_did_not_advertise(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    reads = {"steps": [{"kind": "tool_call", "name": "read_file", "input": {"path": "notes.txt"}}]}
    writes = {"steps": [{"kind": "tool_call", "name": "write_file", "input": {"path": "out.txt", "content": "new\n"}}]}
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "files.json", [reads, writes])
    client = RecordingClient()
    async with acp_agent(acp_env, client, fs=False) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("read, then write")])
    methods = {m["method"] for m in agent.wire.received if "method" in m}
    assert methods == {"session/update"}
    assert client.fs_calls == []
    assert (workspace / "out.txt").read_text() == "new\n"
    assert [c.title for c in client.of(ToolCallStart)] == ["Read notes.txt", "Write out.txt"]
