"""Over ACP the agent proposes no notebook cells (an editor has its own file edits): ``notebook_edit`` is
offered under no preset, while the session's other tools are."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp import text_block

from ..providers.conftest import API_KEY, SSEServer, sse_reply
from .conftest import acp_agent

pytestmark = pytest.mark.slow


async def test_notebook_edit_is_not_offered_over_acp_under_any_preset(
    acp_env: dict[str, str], workspace: Path, server: SSEServer
) -> None:
    acp_env.update(
        ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=server.url, AGENTCELL_MODEL="anthropic:claude-sonnet-5-5"
    )
    presets = ["workspace-write", "danger-full-access"]
    server.queue(*(sse_reply("anthropic_text.sse") for _ in presets))
    async with acp_agent(acp_env) as agent:
        for preset in presets:
            session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
            await agent.conn.set_config_option(config_id="permission", session_id=session.session_id, value=preset)
            answer = await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("Add a cell.")])
            assert answer.stop_reason == "end_turn"
    offered = [[tool["name"] for tool in r.body["tools"]] for r in server.requests]
    assert len(offered) == len(presets)
    for names in offered:
        assert "notebook_edit" not in names
        assert {"read_file", "bash"} <= set(names)  # the session's tools were offered, only not that one
