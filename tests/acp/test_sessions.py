"""Sessions over ACP: config options (model on the loopback Anthropic server, preset, budget), slash
commands, and list / load / resume / close across processes sharing one store."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from acp.schema import (
    AgentMessageChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    McpServerStdio,
    SseMcpServer,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from acp import RequestError, text_block
from agentcell import Engine

from ..providers.conftest import API_KEY, SSEServer, sse_reply
from ..skill_folders import skill_folder, stored_events
from .conftest import RecordingClient, acp_agent, script, text_of

pytestmark = pytest.mark.slow

READ = {"steps": [{"kind": "tool_call", "name": "read_file", "input": {"path": "notes.txt"}}]}


def _options(options: list[object]) -> dict[str, tuple[str, list[str]]]:
    found = {}
    for option in options:
        inner = getattr(option, "root", option)
        found[inner.id] = (inner.current_value, [o.value for o in inner.options])
    return found


async def test_config_options_switch_to_the_anthropic_server_and_change_the_preset(
    acp_env: dict[str, str], workspace: Path, server: SSEServer
) -> None:
    acp_env.update(ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=server.url)
    server.queue(sse_reply("anthropic_thinking_tool.sse"), sse_reply("anthropic_text.sse"))
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        options = _options(session.config_options or [])
        assert options["model"] == ("scripted", ["scripted", "anthropic:claude-sonnet-5-5", *options["model"][1][2:]])
        assert options["permission"] == (
            "workspace-write",
            ["read-only", "workspace-write", "danger-full-access"],
        )
        changed = await agent.conn.set_config_option(
            config_id="model", session_id=session.session_id, value="anthropic:claude-sonnet-5-5"
        )
        preset = await agent.conn.set_config_option(
            config_id="permission", session_id=session.session_id, value="danger-full-access"
        )
        answer = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("weather?")])
        with pytest.raises(RequestError) as unknown:
            await agent.conn.set_config_option(config_id="model", session_id=session.session_id, value="nope:x")
    client = agent.client
    assert _options(changed.config_options)["model"][0] == "anthropic:claude-sonnet-5-5"
    assert _options(preset.config_options)["permission"][0] == "danger-full-access"
    assert [_options(u.config_options)["permission"][0] for u in client.of(ConfigOptionUpdate)] == [
        "workspace-write",
        "danger-full-access",
    ]
    assert [u.current_mode_id for u in client.of(CurrentModeUpdate)] == ["danger-full-access"]
    assert answer.stop_reason == "end_turn"
    assert client.thoughts() == "The user wants the weather in Zürich. I should call get_weather — with °C."
    [call] = client.of(ToolCallStart)
    assert call.title == "get_weather" and call.kind == "other"
    assert client.tool_updates(call.tool_call_id)[-1].status == "failed"
    messages: dict[str | None, str] = {}
    for chunk in client.of(AgentMessageChunk):
        messages[chunk.message_id] = messages.get(chunk.message_id, "") + chunk.content.text
    assert list(messages.values()) == ["Let me check the weather in Zürich ☀️", "Héllo, wörld — 日本語で こんにちは 🎉!"]
    assert [r.path for r in server.requests] == ["/v1/messages", "/v1/messages"]
    assert server.requests[0].headers["x-api-key"] == API_KEY
    assert API_KEY not in json.dumps(agent.wire.received)  # the key never reaches the editor
    assert unknown.value.code == -32602 and "nope:x" in str(unknown.value)


async def test_slash_commands_run_instead_of_a_turn(acp_env: dict[str, str], workspace: Path) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        budget = await agent.conn.prompt(session_id=sid, prompt=[text_block("/budget 0.25")])
        said_budget = agent.client.text()
        agent.client.clear()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/budget lots")])
        said_bad = agent.client.text()
        agent.client.clear()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/usage")])
        said_usage = agent.client.text()
        agent.client.clear()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/etc/hosts is a path, not a command")])
        said_path = agent.client.text()
    assert budget.stop_reason == "end_turn" and said_budget == "budget: $0.25"
    assert said_bad.startswith("/budget: a budget is an amount in USD")
    assert f"Usage of session `{sid}`" in said_usage and "| budget | $0.25" in said_usage
    assert said_path == "You said: /etc/hosts is a path, not a command"


async def test_a_session_is_listed_and_loaded_in_a_new_process_and_continued(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [READ])
    async with acp_agent(acp_env) as agent:
        first = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=first.session_id, prompt=[text_block("read my notes")])
        other = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
    script(tmp_path / "s.json", [])  # the new process plays the script from its start: now it only echoes
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        everything = await agent.conn.list_sessions()
        await agent.conn.load_session(cwd=str(workspace), session_id=first.session_id, mcp_servers=[])
        replayed = list(client.updates)
        client.clear()
        answer = await agent.conn.prompt(session_id=first.session_id, prompt=[text_block("and again")])
    assert [(s.session_id, s.cwd, s.title) for s in listed.sessions] == [
        (first.session_id, str(workspace), "read my notes")
    ]
    assert {s.session_id for s in everything.sessions} == {first.session_id, other.session_id}
    assert listed.sessions[0].updated_at
    assert [u.content.text for u in replayed if isinstance(u, UserMessageChunk)] == ["read my notes"]
    [call] = [u for u in replayed if isinstance(u, ToolCallStart)]
    assert call.title == "Read notes.txt" and call.kind == "read"
    [result] = [u for u in replayed if isinstance(u, ToolCallProgress) and u.tool_call_id == call.tool_call_id]
    assert result.status == "completed" and "one" in text_of(result)
    assert "".join(u.content.text for u in replayed if isinstance(u, AgentMessageChunk)) == "You said: (tool result)"
    assert answer.stop_reason == "end_turn" and client.text() == "You said: and again"


async def test_resume_does_not_replay_and_close_frees_the_session(acp_env: dict[str, str], workspace: Path) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("one")])
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        resumed = await agent.conn.resume_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        replayed = [u for u in client.updates if isinstance(u, UserMessageChunk | AgentMessageChunk)]
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("two")])
        await agent.conn.close_session(session_id=session.session_id)
        with pytest.raises(RequestError) as closed:
            await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("three")])
        with pytest.raises(RequestError) as relative:
            await agent.conn.load_session(cwd="project", session_id=session.session_id, mcp_servers=[])
    assert resumed.config_options and replayed == []
    assert client.text() == "You said: two"
    assert closed.value.code == -32002 and "session/load" in str(closed.value)
    assert relative.value.code == -32602 and "absolute" in str(relative.value)


async def test_threads_and_outcomes_are_tool_calls_of_their_own(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    spawn = {"task": "write a haiku", "inline_agent": {"name": "poet", "system": "you write haiku"}}
    responses = [
        {
            "steps": [
                {"kind": "tool_call", "name": "spawn_thread", "input": spawn},
                {"kind": "tool_call", "name": "wait_thread"},
            ]
        },
        {"steps": [{"kind": "text", "text": "old pond, a frog"}]},  # the thread's answer
        {"steps": [{"kind": "text", "text": "the poet wrote it"}]},
        {"steps": [{"kind": "text", "text": "Here is the haiku: old pond / frog leaps / splash"}]},
        {
            "steps": [
                {
                    "kind": "tool_call",
                    "name": "submit_verdict",
                    "input": {"result": "satisfied", "explanation": "Three lines."},
                }
            ]
        },
    ]
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", responses)
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/threads on")])
        assert client.text().startswith("threads on: the agent may spawn helpers it defines")
        client.clear()
        threaded = await agent.conn.prompt(session_id=sid, prompt=[text_block("delegate a haiku")])
        thread_updates = list(client.updates)
        client.clear()
        outcome = await agent.conn.prompt(session_id=sid, prompt=[text_block("/outcome A haiku --- three lines")])
    assert threaded.stop_reason == "end_turn"
    starts = [u for u in thread_updates if isinstance(u, ToolCallStart)]
    [thread] = [s for s in starts if s.title == "Thread: poet"]
    assert thread.tool_call_id.startswith("sthr_") and thread.status == "in_progress"
    progress = [u for u in thread_updates if isinstance(u, ToolCallProgress) and u.tool_call_id == thread.tool_call_id]
    assert progress[-1].status == "completed"
    assert "old pond, a frog" in "".join(text_of(u) for u in progress)
    assert [s.title for s in starts if s.tool_call_id != thread.tool_call_id] == ["Start a thread", "Wait for a thread"]
    said = "".join(u.content.text for u in thread_updates if isinstance(u, AgentMessageChunk))
    assert said == "the poet wrote it"  # the thread's own words stay inside its tool call
    assert outcome.stop_reason == "end_turn"
    [card] = [u for u in client.updates if isinstance(u, ToolCallStart)]
    assert card.title == "Outcome: A haiku" and card.kind == "think"
    final = [u for u in client.updates if isinstance(u, ToolCallProgress) and u.tool_call_id == card.tool_call_id]
    assert final[-1].status == "completed" and "Three lines." in text_of(final[-1])
    assert client.text() == "Here is the haiku: old pond / frog leaps / splash"


async def test_the_clients_mcp_servers_become_the_sessions_tools(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    server = Path(__file__).parent.parent / "tools" / "mcp_server.py"
    add = {"steps": [{"kind": "tool_call", "name": "calc__add", "input": {"a": 2, "b": 3}}]}
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [add])
    client = RecordingClient(answers=["allow_once"])
    calc = McpServerStdio(name="calc", command=sys.executable, args=[str(server), "stdio"], env=[])
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[calc])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("add")])
        [call] = client.tool_calls()
        update = client.tool_updates(call.tool_call_id)[-1]
        await agent.conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[calc])
        with pytest.raises(RequestError) as sse:
            await agent.conn.new_session(
                cwd=str(workspace), mcp_servers=[SseMcpServer(type="sse", name="old", url="http://x", headers=[])]
            )
    assert call.title == "calc: add"
    assert update.status == "completed" and text_of(update) == "5"
    assert sse.value.code == -32602 and "of type sse" in str(sse.value)
    with Engine(acp_env["AGENTCELL_DB"]) as engine:  # the same servers again made no new agent version
        agent_of = engine.sessions.get(session.session_id).agent
        assert (agent_of.version, [s.name for s in agent_of.mcp_servers]) == (1, ["calc"])


async def test_skills_are_slash_commands_that_activate_them(acp_env: dict[str, str], workspace: Path) -> None:
    skill_folder(workspace / ".agents" / "skills", "release-notes", description="Write release notes.", body="Group.")
    async with acp_agent(acp_env) as agent:
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/skills")])
        offered = agent.client.text()
        first = [c.name for u in agent.client.of(AvailableCommandsUpdate) for c in u.available_commands]
        agent.client.clear()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/skills add .agents/skills/release-notes")])
        added = agent.client.text()
        [update] = agent.client.of(AvailableCommandsUpdate)
        agent.client.clear()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/release-notes for v2")])
        calls = agent.client.tool_calls()
        said = agent.client.text()
        agent.client.clear()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/skills add nowhere")])
        refused = agent.client.text()
        agent.client.clear()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/skills remove release-notes")])
        removed = agent.client.text()
        [after] = agent.client.of(AvailableCommandsUpdate)
    assert "release-notes" not in first and "skills" in first  # the project's skill is offered, not attached
    assert "offered by the workspace, not attached" in offered and ".agents/skills/release-notes" in offered
    assert added.startswith("skill release-notes v1 attached (agent v2): /release-notes activates it")
    [command] = [c for c in update.available_commands if c.name == "release-notes"]
    assert command.description == "Skill: Write release notes."
    assert [(c.title, c.kind) for c in calls] == [("Load the skill release-notes", "read")]
    assert said.startswith("You said:")  # a turn ran (the scripted model echoes), after the activation
    assert refused.startswith("/skills: the folder cannot be loaded as a skill:\nerror: ")
    assert "project/nowhere is not a folder" in refused
    assert removed == "skill release-notes removed (agent v3)"
    assert "release-notes" not in [c.name for c in after.available_commands]
    activated = [e for e in stored_events(acp_env["AGENTCELL_DB"]) if e["type"] == "session.skill_activated"]
    assert [(e["name"], e["requested_by"]) for e in activated] == [("release-notes", "user")]


async def test_fork_makes_a_new_session_with_the_conversation_so_far(acp_env: dict[str, str], workspace: Path) -> None:
    """The fork has the old session's turns (copied under new ids) and goes on by itself; the old session
    is untouched and goes on by itself too."""
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("the common part")])
        fork = await agent.conn.fork_session(session_id=session.session_id, cwd=str(workspace))
        client.clear()
        await agent.conn.prompt(session_id=fork.session_id, prompt=[text_block("only in the fork")])
        said_in_fork = client.text()
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("only in the original")])
        listed = await agent.conn.list_sessions(cwd=str(workspace))
    with Engine(acp_env["AGENTCELL_DB"]) as engine:
        original, forked = engine.sessions.get(session.session_id), engine.sessions.get(fork.session_id)
        texts = {
            s.id: [b.text for e in s.events(types=["user.message"]) for b in e.content] for s in (original, forked)
        }
        seen_by_model = [m.role for m in forked.history().messages()]
        original_ids = {e.id for e in original.events()}
        forked_ids = {e.id for e in forked.events()}
    assert fork.session_id != session.session_id and fork.config_options
    assert said_in_fork == "You said: only in the fork"
    assert texts == {
        session.session_id: ["the common part", "only in the original"],
        fork.session_id: ["the common part", "only in the fork"],
    }
    assert seen_by_model == ["user", "assistant", "user", "assistant"]
    assert not original_ids & forked_ids
    assert {s.session_id: s.title for s in listed.sessions}[fork.session_id] == "the common part (fork)"


async def test_permissions_lists_the_always_rules_each_with_what_it_covers(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    ls = {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": "ls && pwd"}}]}
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "s.json", [ls, {"steps": [{"kind": "text", "text": "ok"}]}])
    async with acp_agent(acp_env, RecordingClient(answers=["allow_always"])) as agent:
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/permissions")])
        before = agent.client.text()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("list the files")])
        agent.client.clear()
        await agent.conn.prompt(session_id=sid, prompt=[text_block("/permissions")])
        after = agent.client.text()
    assert before == "permissions: workspace-write\nalways rules: none (an approval's Allow always adds one)"
    assert after.splitlines() == [
        "permissions: workspace-write",
        "always rules (for this session):",
        "  bash:$ ls: allow  (this command only)",
        "  bash:$ pwd: allow  (this command only)",
    ]
