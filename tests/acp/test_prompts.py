"""Prompt turns over ACP on the scripted provider: text and thinking, tool calls with permission asked and
granted, refused, remembered for the session, cancelled mid-question; file tools through the editor."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    AgentMessageChunk,
    AvailableCommandsUpdate,
    FileEditToolCallContent,
    ReadTextFileResponse,
    SessionInfoUpdate,
    ToolCallStart,
    UsageUpdate,
)

from acp import text_block
from agentcell import Engine

from .conftest import RecordingClient, acp_agent, script, text_of

pytestmark = pytest.mark.slow

BASH = {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": "echo from-bash"}}]}


def _stored_types(db: str, session_id: str) -> list[str]:
    with Engine(db) as engine:
        return [e.type for e in engine.sessions.get(session_id).events()]


async def test_text_and_thinking_stream_as_chunks_with_usage(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    reply = {
        "steps": [
            {"kind": "thinking", "thinking": "The user greets me."},
            {"kind": "text", "text": "Hello from the scripted double, in many small deltas.", "chunk_size": 3},
        ]
    }
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [reply])
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
    client = agent.client
    assert answer.stop_reason == "end_turn"
    assert client.thoughts() == "The user greets me."
    assert client.text() == "Hello from the scripted double, in many small deltas."
    message_ids = {u.message_id for u in client.of(AgentMessageChunk)}
    assert len(message_ids) == 1 and None not in message_ids
    usage = client.of(UsageUpdate)
    assert usage and usage[-1].used > 0 and usage[-1].size > 0 and usage[-1].cost is not None
    assert [u.title for u in client.of(SessionInfoUpdate)] == ["hello"]
    names = {c.name for u in client.of(AvailableCommandsUpdate) for c in u.available_commands}
    assert {"model", "budget", "usage", "outcome", "permissions"} <= names


async def test_usage_update_carries_the_window_the_provider_reports_and_the_tokens_the_conversation_uses(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    # The scripted provider reports a 50,000-token window for its model, as a real provider's metadata does;
    # the session's model config names none, so the gauge's size can only come from the provider.
    replies = [
        {"steps": [{"kind": "text", "text": "First."}], "usage": {"input_tokens": 1200, "output_tokens": 34}},
        {"steps": [{"kind": "text", "text": "Second."}], "usage": {"input_tokens": 1300, "output_tokens": 21}},
    ]
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"responses": replies, "context_window": 50_000}))
    acp_env["AGENTCELL_MODEL"] = f"scripted:{path}"
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        for prompt in ("one", "two"):
            answer = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block(prompt)])
            assert answer.stop_reason == "end_turn"
    gauges = [(u.used, u.size) for u in agent.client.of(UsageUpdate)]
    assert gauges[-1] == (1300 + 21, 50_000)
    assert (1200 + 34, 50_000) in gauges  # after the first turn: its request's input and output


async def test_a_tool_call_asks_permission_and_runs_when_allowed(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [BASH])
    client = RecordingClient(answers=["allow_once"])
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("run it")])
    assert answer.stop_reason == "end_turn"
    [call] = client.tool_calls()
    assert (call.title, call.kind, call.status, call.raw_input) == (
        "Run `echo from-bash`",
        "execute",
        "pending",
        {"command": "echo from-bash"},
    )
    [asked] = client.permissions
    assert asked.tool_call.tool_call_id == call.tool_call_id
    assert [o.kind for o in asked.options] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    updates = client.tool_updates(call.tool_call_id)
    assert [u.status for u in updates] == ["in_progress", "completed"]
    assert "from-bash" in text_of(updates[-1])
    # The order on the wire: the tool call, then the question about it, then its progress.
    wire = [m.get("method") or "" for m in agent.wire.received]
    assert wire.index("session/request_permission") > 0
    stored = _stored_types(acp_env["AGENTCELL_DB"], session.session_id)
    assert stored.index("agent.tool_use") < stored.index("user.tool_confirmation") < stored.index("agent.tool_result")


async def test_a_refused_tool_call_fails_and_tells_the_model(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [BASH])
    client = RecordingClient(answers=["reject_once"])
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("run it")])
    [call] = client.tool_calls()
    [update] = client.tool_updates(call.tool_call_id)
    assert update.status == "failed"
    assert update.raw_output == {"error_code": "DECLINED", "denied_by": "user"}
    assert "declined" in text_of(update)
    assert client.text() == "You said: (tool result)"


async def test_allow_always_is_remembered_for_the_session(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [BASH, {"steps": []}, BASH])
    client = RecordingClient(answers=["allow_always"])
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("first")])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("second")])
    calls = client.tool_calls()
    assert len(calls) == 2 and len(client.permissions) == 1
    assert [client.tool_updates(c.tool_call_id)[-1].status for c in calls] == ["completed", "completed"]


async def test_cancel_while_a_permission_is_pending_answers_cancelled(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [BASH])
    client = RecordingClient(answers=["hold"])
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        prompt = asyncio.ensure_future(agent.conn.prompt(session_id=session.session_id, prompt=[text_block("go")]))
        await client.asked.wait()
        await agent.conn.cancel(session_id=session.session_id)
        client.release.set()  # as the spec asks: the client answers its pending question "cancelled"
        answer = await prompt
    assert answer.stop_reason == "cancelled"
    [call] = client.tool_calls()
    assert client.tool_updates(call.tool_call_id)[-1].status == "failed"
    assert not (workspace / "from-bash").exists()


async def test_file_tools_go_through_the_editor_when_it_advertises_fs(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    notes = str(workspace / "notes.txt")
    edit = {"path": "notes.txt", "old_string": "unsaved", "new_string": "edited"}
    steps = [
        {"steps": [{"kind": "tool_call", "name": "read_file", "input": {"path": "notes.txt"}}]},
        {"steps": [{"kind": "tool_call", "name": "edit_file", "input": edit}]},
        {"steps": [{"kind": "tool_call", "name": "write_file", "input": {"path": "new.txt", "content": "fresh"}}]},
    ]
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", steps)
    client = RecordingClient(files={notes: "an unsaved buffer\n"})
    async with acp_agent(acp_env, client, fs=True) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("edit the notes")])
    read, edited, written = client.tool_calls()
    assert "an unsaved buffer" in text_of(client.tool_updates(read.tool_call_id)[-1])
    assert read.locations is not None and read.locations[0].path == notes
    assert client.files[notes] == "an edited buffer\n"
    assert client.files[str(workspace / "new.txt")] == "fresh"
    assert (workspace / "notes.txt").read_text() == "one\ntwo\n" and not (workspace / "new.txt").exists()
    diffs = [
        c
        for u in [*client.tool_updates(edited.tool_call_id), *client.tool_updates(written.tool_call_id)]
        for c in u.content or []
        if isinstance(c, FileEditToolCallContent)
    ]
    assert [(d.path, d.old_text, d.new_text) for d in diffs] == [
        (notes, "an unsaved buffer\n", "an edited buffer\n"),
        (str(workspace / "new.txt"), None, "fresh"),
    ]
    assert ("write", notes, "an edited buffer\n") in client.fs_calls


async def test_switching_to_read_only_makes_the_preset_refuse_writes(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    """Switching the preset to read-only makes the same write refused by the preset, without asking."""
    write = {"steps": [{"kind": "tool_call", "name": "write_file", "input": {"path": "x.txt", "content": "x"}}]}
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [write])
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.set_config_option(config_id="permission", session_id=session.session_id, value="read-only")
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("write x")])
    [call] = [u for u in client.updates if isinstance(u, ToolCallStart)]
    [update] = client.tool_updates(call.tool_call_id)
    assert update.status == "failed" and update.raw_output == {"error_code": "DENIED", "denied_by": "preset"}
    assert client.permissions == [] and not (workspace / "x.txt").exists()


class ThrowingEditor(RecordingClient):
    """An editor whose read handler throws for a missing file, as a TypeScript one does: the SDK answers
    -32603 "Internal error" whatever went wrong."""

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        self.fs_calls.append(("read", path))
        if path not in self.files:
            raise RuntimeError(f"ENOENT: no such file or directory, open '{path}'")
        return ReadTextFileResponse(content=self.files[path])


async def test_a_new_file_is_written_through_an_editor_that_answers_a_missing_read_with_a_generic_error(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    write = {
        "steps": [{"kind": "tool_call", "name": "write_file", "input": {"path": "src/new.py", "content": "x = 1\n"}}]
    }
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [write])
    client = ThrowingEditor()
    async with acp_agent(acp_env, client, fs=True) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("create src/new.py")])
    new = str(workspace / "src" / "new.py")
    [call] = client.tool_calls()
    result = client.tool_updates(call.tool_call_id)[-1]
    assert result.status == "completed", text_of(result)
    assert client.files[new] == "x = 1\n" and ("read", new) in client.fs_calls
    diffs = [c for c in result.content or [] if isinstance(c, FileEditToolCallContent)]
    assert [(d.path, d.old_text, d.new_text) for d in diffs] == [(new, None, "x = 1\n")]
