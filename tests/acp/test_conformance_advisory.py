"""The ADVISORY and INFORMATIONAL tiers of the ACP test kit's v1 checklist, each test named by the kit's ids,
against ``agentcell acp`` as a subprocess. Where the kit only records a behaviour (INFORMATIONAL), the test
pins the one agentcell chose, so a change shows."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp.schema import ResourceContentBlock

from acp import RequestError, text_block

from .conftest import acp_agent, agent_command, raw_agent

pytestmark = pytest.mark.slow


async def test_acp_jsonrpc_004_005_error_001_unknown_methods_get_32601_and_the_connection_goes_on(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with raw_agent(acp_env) as peer:
        await peer.request(1, "session/teleport", {})
        unknown = await peer.answer(1)
        await peer.request(2, "session/new", {"cwd": "not/absolute", "mcpServers": []})
        invalid = await peer.answer(2)
        await peer.request(3, "initialize", {"protocolVersion": 1})
        await peer.answer(3)
        await peer.request(4, "session/new", {"cwd": str(workspace), "mcpServers": []})
        created = await peer.answer(4)
    assert unknown["error"]["code"] == -32601 and invalid["error"]["code"] == -32602
    assert created["result"]["sessionId"]
    for error in (unknown["error"], invalid["error"]):
        assert error["message"] and "\n" not in error["message"]
        json.dumps(error.get("data"))


async def test_acp_init_004_agent_info_has_name_and_version(acp_env: dict[str, str]) -> None:
    async with acp_agent(acp_env, initialize=False) as agent:
        answer = await agent.conn.initialize(protocol_version=1)
    assert answer.agent_info is not None
    assert answer.agent_info.name == "agentcell" and answer.agent_info.version


async def test_acp_prompt_003_meta_001_a_resource_link_and_meta_are_taken(
    acp_env: dict[str, str], workspace: Path
) -> None:
    link = ResourceContentBlock(type="resource_link", uri=f"file://{workspace}/notes.txt", name="notes.txt")
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        linked = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("see"), link])
        traced = await agent.conn.prompt(
            session_id=session.session_id,
            prompt=[text_block("traced")],
            traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
    assert (linked.stop_reason, traced.stop_reason) == ("end_turn", "end_turn")


async def test_acp_load_003_the_load_answer_is_an_object(acp_env: dict[str, str], workspace: Path) -> None:
    async with raw_agent(acp_env) as peer:
        session_id = await peer.open_session(workspace)
        await peer.request(3, "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []})
        loaded = await peer.answer(3)
    assert isinstance(loaded["result"], dict)


async def test_acp_delete_002_not_applicable_delete_is_not_offered(acp_env: dict[str, str]) -> None:
    async with acp_agent(acp_env, initialize=False) as agent:
        answer = await agent.conn.initialize(protocol_version=1)
    assert answer.agent_capabilities is not None and answer.agent_capabilities.session_capabilities is not None
    assert answer.agent_capabilities.session_capabilities.delete is None


async def test_acp_schema_002_no_invented_root_fields(acp_env: dict[str, str], workspace: Path) -> None:
    """The harness holds every message to exactly what the SDK's models keep (an invented key would not
    round-trip); this exchange touches each kind of answer and update a basic session makes."""
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
        await agent.conn.set_config_option(config_id="permission", session_id=session.session_id, value="read-only")
        await agent.conn.list_sessions()
    assert agent.wire.problems == [] and len(agent.wire.received) > 5


async def test_acp_auth_001_005_auth_method_ids_are_unique_and_no_session_waits_for_authenticate(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(acp_env, initialize=False) as agent:
        answer = await agent.conn.initialize(protocol_version=1)
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    ids = [m.id for m in answer.auth_methods or []]
    assert ids and len(ids) == len(set(ids))
    assert session.session_id


async def test_acp_shutdown_001_stderr_001_it_exits_by_itself_when_stdin_closes_and_writes_no_stderr(
    acp_env: dict[str, str], workspace: Path
) -> None:
    process = await asyncio.create_subprocess_exec(
        *agent_command(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=acp_env,
    )
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}},
    ]
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(json.dumps(r) + "\n" for r in requests).encode())
    await process.stdin.drain()
    answered = [json.loads(await process.stdout.readline()) for _ in range(2)]
    process.stdin.close()
    _, stderr = await process.communicate()  # no signal sent: it ends on its own (or the test times out)
    assert [a["id"] for a in answered] == [1, 2]
    assert process.returncode == 0 and stderr == b""


async def test_acp_info_parse_001_invalidreq_001_bad_lines_get_errors_and_the_connection_goes_on(
    acp_env: dict[str, str],
) -> None:
    async with raw_agent(acp_env) as peer:
        await peer.send("{not json\n")
        parse = await peer.receive()
        await peer.send('{"foo": "bar"}\n')
        invalid = await peer.receive()
        await peer.request(1, "initialize", {"protocolVersion": 1})
        initialized = await peer.answer(1)
    assert (parse["id"], parse["error"]["code"]) == (None, -32700)
    assert (invalid["id"], invalid["error"]["code"]) == (None, -32600)
    assert initialized["result"]["protocolVersion"] == 1


async def test_acp_info_unknownsession_001_unknown_session_ids_are_32002_not_crashes(
    acp_env: dict[str, str], workspace: Path
) -> None:
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
