"""The MANDATORY tier of the ACP test kit's v1 checklist (21 requirements), each test named by the kit's ids,
against ``agentcell acp`` as a subprocess: the transport and JSON-RPC framing, initialize, new sessions,
prompts, cancel, config options, auth methods, client capabilities and extension methods. Every message is
also checked against the schema by the harness (see conftest): ACP-SCHEMA-001 holds for every test here.
The other tiers: ``test_conformance_capability.py`` and ``test_conformance_advisory.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp.schema import ToolCallStart

from acp import text_block

from .conftest import SLOW, RecordingClient, acp_agent, raw_agent, script, streaming_prompt

pytestmark = pytest.mark.slow


async def test_acp_transport_001_002_schema_001_stdout_is_utf8_json_rpc_lines_only(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with raw_agent(acp_env) as peer:
        session_id = await peer.open_session(workspace)
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "héllo ✓"}]}
        await peer.request(3, "session/prompt", prompt)
        answered = await peer.answer(3)
    lines = peer.lines
    assert answered["result"] == {"stopReason": "end_turn"}
    assert all(line.endswith(b"\n") and b"\n" not in line[:-1] for line in lines)
    messages = [json.loads(line.decode("utf-8")) for line in lines]  # strict UTF-8, one JSON value a line
    assert all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in messages)
    said = "".join(
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert said == "You said: héllo ✓"


async def test_acp_jsonrpc_001_002_answers_echo_integer_and_string_ids_with_result_or_error(
    acp_env: dict[str, str],
) -> None:
    async with raw_agent(acp_env) as peer:
        await peer.request(41, "initialize", {"protocolVersion": 1})
        by_int = await peer.answer(41)
        await peer.request("req-å", "initialize", {"protocolVersion": 1})
        by_string = await peer.answer("req-å")
        await peer.request("bad", "session/new", {"mcpServers": []})
        failed = await peer.answer("bad")
    assert (by_int["id"], by_string["id"], failed["id"]) == (41, "req-å", "bad")
    assert ("result" in by_int) != ("error" in by_int) and ("result" in by_string) != ("error" in by_string)
    assert "result" not in failed
    assert isinstance(failed["error"]["code"], int) and isinstance(failed["error"]["message"], str)


async def test_acp_jsonrpc_003_a_notification_gets_no_answer(acp_env: dict[str, str], workspace: Path) -> None:
    async with raw_agent(acp_env) as peer:
        await peer.request(1, "initialize", {"protocolVersion": 1})
        await peer.answer(1)
        await peer.send(json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "sesn_x"}}))
        await peer.send("\n" + json.dumps({"jsonrpc": "2.0", "method": "_agentcell/unknown_note", "params": {}}) + "\n")
        await peer.request(2, "session/new", {"cwd": str(workspace), "mcpServers": []})
        created = await peer.receive()  # the very next line is the answer to the request, nothing before it
    assert created["id"] == 2 and "result" in created


async def test_acp_init_001_002_003_initialize_answers_version_1_whatever_was_asked(acp_env: dict[str, str]) -> None:
    async with acp_agent(acp_env, initialize=False) as agent:
        answer = await agent.conn.initialize(protocol_version=1)
        later = await agent.conn.initialize(protocol_version=65535)  # a newer client gets the version spoken here
    assert (answer.protocol_version, later.protocol_version) == (1, 1)
    caps = answer.agent_capabilities
    assert caps is not None and caps.load_session is True
    assert caps.prompt_capabilities is not None
    assert (caps.prompt_capabilities.image, caps.prompt_capabilities.audio) == (True, False)
    assert caps.prompt_capabilities.embedded_context is True
    assert caps.session_capabilities is not None
    assert caps.session_capabilities.list is not None and caps.session_capabilities.resume is not None
    assert caps.session_capabilities.close is not None and caps.session_capabilities.fork is not None


async def test_acp_session_001_002_session_new_gives_distinct_sessions_with_config_options(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        other = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert session.session_id.startswith("sesn_") and other.session_id != session.session_id
    assert [o.root.id if hasattr(o, "root") else o.id for o in session.config_options or []] == [
        "model",
        "permission",
        "budget",
    ]


async def test_acp_prompt_001_002_prompt_streams_updates_of_its_session_then_answers_end_turn(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("ping")])
    assert answer.stop_reason == "end_turn"
    assert agent.client.text() == "You said: ping"
    updates = [m["params"] for m in agent.wire.received if m.get("method") == "session/update"]
    assert updates and {p["sessionId"] for p in updates} == {session.session_id}


async def test_acp_cancel_001_002_cancel_answers_cancelled_with_every_update_before_it(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "slow.json", [SLOW])
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        prompt = await streaming_prompt(agent, session.session_id)
        await agent.conn.cancel(session_id=session.session_id)
        answer = await prompt
        cancelled_text = client.text()
        await agent.conn.list_sessions()  # a round trip: anything sent behind the answer has arrived by now
        after = agent.wire.updates_after("session/prompt", session.session_id)
        again = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("still here?")])
    assert answer.stop_reason == "cancelled"
    assert 0 < len(cancelled_text) < 400 and after == []
    assert again.stop_reason == "end_turn" and client.text().endswith("You said: still here?")


async def test_acp_config_003_no_boolean_option_for_a_client_that_did_not_advertise_them(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    new = next(m for m in agent.wire.received if "result" in m and "sessionId" in (m["result"] or {}))
    assert new["result"]["configOptions"] and all(o["type"] != "boolean" for o in new["result"]["configOptions"])
    assert session.session_id == new["result"]["sessionId"]


async def test_acp_auth_002_no_terminal_auth_for_a_client_without_auth_terminal(acp_env: dict[str, str]) -> None:
    async with acp_agent(acp_env, initialize=False) as agent:
        answer = await agent.conn.initialize(protocol_version=1)
    dumped = [m.model_dump(by_alias=True, exclude_none=True) for m in answer.auth_methods or []]
    assert dumped and all(m.get("type") != "terminal" for m in dumped)


async def test_acp_clientcap_001_002_003_no_call_to_a_client_method_it_did_not_advertise(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    reads = {"steps": [{"kind": "tool_call", "name": "read_file", "input": {"path": "notes.txt"}}]}
    writes = {"steps": [{"kind": "tool_call", "name": "write_file", "input": {"path": "out.txt", "content": "new\n"}}]}
    runs = {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": "echo ran > ran.txt"}}]}
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "files.json", [reads, writes, runs])
    client = RecordingClient(answers=["allow_once"])
    async with acp_agent(acp_env, client, fs=False) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("read, write, run")])
    methods = {m["method"] for m in agent.wire.received if "method" in m}
    assert methods == {"session/update", "session/request_permission"}  # no fs/*, terminal/*, elicitation/*
    assert client.fs_calls == []
    assert (workspace / "out.txt").read_text() == "new\n" and (workspace / "ran.txt").read_text() == "ran\n"
    assert [c.title for c in client.of(ToolCallStart)] == [
        "Read notes.txt",
        "Write out.txt",
        "Run `echo ran > ran.txt`",
    ]


async def test_acp_ext_001_an_unknown_underscore_method_gets_an_answer(acp_env: dict[str, str]) -> None:
    async with raw_agent(acp_env) as peer:
        await peer.request(1, "_agentcell/teleport", {"to": "mars"})
        answered = await peer.answer(1)
        await peer.request(2, "initialize", {"protocolVersion": 1})
        initialized = await peer.answer(2)
    assert answered["error"]["code"] == -32601
    assert initialized["result"]["protocolVersion"] == 1
