"""The CAPABILITY tier of the ACP test kit's v1 checklist: what each capability ``agentcell acp`` advertises
promises (load, resume, list, close, modes, config options, prompt content, auth), one test per requirement,
named by the kit's id, against ``agentcell acp`` as a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    TextResourceContents,
    UserMessageChunk,
)

from acp import RequestError, text_block

from .conftest import SLOW, RecordingClient, acp_agent, raw_agent, script, session_with_one_turn, streaming_prompt

pytestmark = pytest.mark.slow


async def test_acp_close_002_closing_a_session_mid_prompt_answers_the_prompt_cancelled(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    acp_env["AGENTCELL_MODEL"] = script(tmp_path / "slow.json", [SLOW])
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        prompt = await streaming_prompt(agent, session.session_id)
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
    session_id = await session_with_one_turn(acp_env, workspace, "remember me")
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        before_answer = list(client.updates)
        await agent.conn.list_sessions()  # a round trip: anything queued behind the answer has arrived by now
    assert agent.wire.updates_after("session/load", session_id) == []
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


async def test_acp_load_001_session_load_replays_the_conversation_before_answering(
    acp_env: dict[str, str], workspace: Path
) -> None:
    session_id = await session_with_one_turn(acp_env, workspace, "remember me")
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        loaded = await agent.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replayed = list(client.updates)  # as it stood when load answered
    assert loaded.config_options and loaded.modes is not None
    assert [u.content.text for u in replayed if isinstance(u, UserMessageChunk)] == ["remember me"]
    assert "".join(u.content.text for u in replayed if isinstance(u, AgentMessageChunk)) == "You said: remember me"


async def test_acp_resume_001_002_resume_answers_without_replaying_history(
    acp_env: dict[str, str], workspace: Path
) -> None:
    session_id = await session_with_one_turn(acp_env, workspace, "one")
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        resumed = await agent.conn.resume_session(cwd=str(workspace), session_id=session_id)
        before_answer = list(client.updates)
    assert resumed.config_options
    assert not [u for u in before_answer if isinstance(u, UserMessageChunk | AgentMessageChunk | AgentThoughtChunk)]


async def test_acp_list_001_002_list_gives_an_array_and_an_empty_one_for_an_unused_cwd(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    unused = tmp_path / "nobody-works-here"
    unused.mkdir()
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        everything = await agent.conn.list_sessions()
        nothing = await agent.conn.list_sessions(cwd=str(unused))
    listed = next(m for m in reversed(agent.wire.received) if "result" in m and "sessions" in (m["result"] or {}))
    assert [s.session_id for s in everything.sessions] == [session.session_id]
    assert nothing.sessions == [] and listed["result"]["sessions"] == []


async def test_acp_delete_001_not_advertised_and_session_delete_is_an_unknown_method(acp_env: dict[str, str]) -> None:
    """Sessions are kept (the notebook may hold them too), so delete is not offered: nothing to check but that."""
    async with raw_agent(acp_env) as peer:
        await peer.request(1, "initialize", {"protocolVersion": 1})
        caps = (await peer.answer(1))["result"]["agentCapabilities"]
        await peer.request(2, "session/delete", {"sessionId": "sesn_x"})
        deleted = await peer.answer(2)
    assert "delete" not in caps["sessionCapabilities"]
    assert deleted["error"]["code"] == -32601


async def test_acp_close_001_closing_an_idle_session_answers_an_empty_object(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with raw_agent(acp_env) as peer:
        session_id = await peer.open_session(workspace)
        await peer.request(3, "session/close", {"sessionId": session_id})
        closed = await peer.answer(3)
    assert closed["result"] == {}


async def test_acp_adddirs_001_not_advertised(acp_env: dict[str, str]) -> None:
    """One workspace a session (the permission presets are drawn around it): no additional directories."""
    async with acp_agent(acp_env, initialize=False) as agent:
        answer = await agent.conn.initialize(protocol_version=1)
    caps = answer.agent_capabilities
    assert caps is not None and caps.session_capabilities is not None
    assert caps.session_capabilities.additional_directories is None


async def test_acp_modes_001_002_modes_are_the_presets_and_set_mode_switches_them(
    acp_env: dict[str, str], workspace: Path
) -> None:
    client = RecordingClient()
    async with acp_agent(acp_env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        await agent.conn.set_session_mode(session_id=session.session_id, mode_id="read-only")
    modes = session.modes
    assert modes is not None and modes.current_mode_id in [m.id for m in modes.available_modes]
    assert [u.current_mode_id for u in client.of(CurrentModeUpdate)] == ["read-only"]
    echoed = [m for m in agent.wire.received if m.get("method") == "session/update"]
    assert all("modeId" not in m["params"]["update"] for m in echoed)


async def test_acp_config_001_002_values_are_among_the_options_and_a_change_answers_the_whole_list(
    acp_env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        changed = await agent.conn.set_config_option(config_id="budget", session_id=session.session_id, value="none")
    before = [getattr(o, "root", o) for o in session.config_options or []]
    after = {getattr(o, "root", o).id: getattr(o, "root", o).current_value for o in changed.config_options}
    assert all(o.current_value in [c.value for c in o.options] for o in before)
    assert list(after) == [o.id for o in before] and after["budget"] == "none"


async def test_acp_promptcap_001_002_003_images_and_embedded_resources_are_taken_audio_is_refused(
    acp_env: dict[str, str], workspace: Path
) -> None:
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    image = ImageContentBlock(type="image", data=pixel, mime_type="image/png")
    resource = EmbeddedResourceContentBlock(
        type="resource",
        resource=TextResourceContents(uri=f"file://{workspace}/notes.txt", text="one\ntwo\n", mime_type="text/plain"),
    )
    async with acp_agent(acp_env) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        seen = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("look"), image])
        read = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("read"), resource])
    assert (seen.stop_reason, read.stop_reason) == ("end_turn", "end_turn")
    # audio is not advertised (promptCapabilities.audio false): such a prompt gets -32602, see test_wire


async def test_acp_auth_004_logout_not_advertised(acp_env: dict[str, str]) -> None:
    """Nothing to log out of: keys live in the environment."""
    async with raw_agent(acp_env) as peer:
        await peer.request(1, "initialize", {"protocolVersion": 1})
        caps = (await peer.answer(1))["result"]["agentCapabilities"]
        await peer.request(2, "logout", {})
        logout = await peer.answer(2)
    assert not caps.get("auth", {}).get("logout")
    assert logout["error"]["code"] == -32601
