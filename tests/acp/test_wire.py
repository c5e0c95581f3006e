"""Bad input on the wire, sent as raw lines to ``agentcell acp``: each gets a JSON-RPC error with a clear
message, and the process answers the next good request as if nothing happened. Nothing but JSON-RPC
appears on its stdout."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from .conftest import acp_agent, agent_command, raw_agent, script

pytestmark = pytest.mark.slow


async def test_bad_lines_get_errors_and_the_process_goes_on(acp_env: dict[str, str], workspace: Path) -> None:
    async with raw_agent(acp_env) as peer:  # which also holds that the process exits by itself, status 0
        await peer.send("this is not json\n")
        parse = await peer.receive()
        await peer.send("[1, 2, 3]\n")
        not_object = await peer.receive()
        await peer.send('{"jsonrpc": "2.0", "id": 5, "params": {}}\n')
        no_method = await peer.receive()
        await peer.request(6, "session/teleport", {})
        unknown = await peer.answer(6)
        await peer.request(7, "initialize", {"protocolVersion": 1})
        initialized = await peer.answer(7)
        await peer.request(8, "session/new", {"mcpServers": []})
        no_cwd = await peer.answer(8)
        await peer.request(9, "session/new", {"cwd": "relative/dir", "mcpServers": []})
        relative = await peer.answer(9)
        await peer.request(
            10, "session/prompt", {"sessionId": "sesn_missing", "prompt": [{"type": "text", "text": "x"}]}
        )
        missing = await peer.answer(10)
        await peer.request(11, "session/new", {"cwd": str(workspace), "mcpServers": []})
        created = await peer.answer(11)
        session_id = created["result"]["sessionId"]
        audio = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        await peer.request(12, "session/prompt", {"sessionId": session_id, "prompt": [audio]})
        no_audio = await peer.answer(12)
        await peer.request(13, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "ok?"}]})
        prompted = await peer.answer(13)
    assert (parse["id"], parse["error"]["code"]) == (None, -32700) and "not JSON" in parse["error"]["message"]
    assert not_object["error"]["code"] == -32600 and "JSON object" in not_object["error"]["message"]
    assert (no_method["id"], no_method["error"]["code"]) == (5, -32600)
    assert unknown["error"]["code"] == -32601
    assert initialized["result"]["protocolVersion"] == 1
    assert no_cwd["error"]["code"] == -32602
    assert relative["error"]["code"] == -32602 and "absolute" in relative["error"]["message"]
    assert missing["error"]["code"] == -32002 and "sesn_missing" in missing["error"]["message"]
    assert no_audio["error"]["code"] == -32602 and "audio" in no_audio["error"]["message"]
    assert prompted["result"] == {"stopReason": "end_turn"}


async def test_requests_from_a_file_and_answers_to_a_file(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    """``agentcell acp < requests.jsonl > answers.jsonl``: stdout a regular file (no pipe to watch), stdin
    one too; the end of such an input is not a client gone away, so what it asked is answered first, and
    the permission the turn asks for gets an error (nobody is there to answer) rather than a wait."""
    bash = {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": "touch asked"}}]}
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [bash])
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/load",
            "params": {"sessionId": session.session_id, "cwd": str(workspace), "mcpServers": []},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": session.session_id, "prompt": [{"type": "text", "text": "from a file"}]},
        },
    ]
    asked, answers = workspace.parent / "requests.jsonl", workspace.parent / "answers.jsonl"
    asked.write_text("".join(json.dumps(r) + "\n" for r in requests))
    with asked.open("rb") as stdin, answers.open("wb") as stdout:
        process = await asyncio.create_subprocess_exec(
            *agent_command(), stdin=stdin, stdout=stdout, stderr=asyncio.subprocess.PIPE, env=acp_env
        )
        _, stderr = await process.communicate()
    messages = [json.loads(line) for line in answers.read_text().splitlines()]
    results = {m["id"]: m.get("result", m.get("error")) for m in messages if "id" in m and "method" not in m}
    said = "".join(
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert process.returncode == 0, stderr.decode()
    assert results[1]["protocolVersion"] == 1 and results[3] == {"stopReason": "end_turn"}
    [asked_permission] = [m for m in messages if m.get("method") == "session/request_permission"]
    assert asked_permission["params"]["toolCall"]["title"] == "Run `touch asked`"
    assert said.endswith("You said: (tool result)") and not (workspace / "asked").exists()


async def test_stdin_from_dev_null_ends_at_once_and_cleanly(acp_env: dict[str, str]) -> None:
    """A device the event loop cannot watch (epoll refuses /dev/null) is read like a file: empty, so done."""
    process = await asyncio.create_subprocess_exec(
        *agent_command(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=acp_env,
    )
    stdout, stderr = await process.communicate()
    assert (process.returncode, stdout, stderr) == (0, b"", b"")
