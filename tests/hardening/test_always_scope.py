"""Always scope: "Allow always" for one shell command allows that command, not every command, over real ACP.

``agentcell acp`` as a subprocess, driven by the ACP SDK's client as an editor. The user answers "Allow
always" to ``ls`` (or "Reject always" to ``rm -rf build``); then the model tries commands that hide other
work behind it: after ``;``, ``&&``, ``||``, ``|`` and ``&``, inside ``$( … )``, a subshell and a process
substitution, with other arguments. Each must be asked about again (the editor refuses it here, and nothing
it would do happens), while the same command again runs unasked; a part answered "Reject always" refuses
the whole line unasked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp import text_block

from ..acp.conftest import RecordingClient, acp_agent, acp_env, script, workspace

__all__ = ["acp_env", "workspace"]  # the ACP tests' fixtures, used here as they are

pytestmark = pytest.mark.slow


def _bash(command: str) -> dict[str, Any]:
    return {"steps": [{"kind": "tool_call", "name": "bash", "input": {"command": command}}]}


HIDDEN = {
    "semicolon": "ls; touch made",
    "and": "ls && touch made",
    "or": "ls || touch made",
    "pipe": "ls | tee made",
    "background": "ls & touch made",
    "substitution": "ls $(touch made)",
    "quoted-substitution": 'ls "$(touch made)"',
    "subshell": "(ls; touch made)",
    "process-substitution": "ls <(touch made)",
    "other-arguments": "ls made-by-ls; touch made",
    "more-arguments": "ls -la > made",
    "newline": "ls\ntouch made",
}


async def _turns(
    env: dict[str, str], tmp_path: Path, workspace: Path, commands: list[str], answers: list[str]
) -> RecordingClient:
    """One prompt per command, each a turn whose model runs it with bash; the editor answers ``answers``."""
    responses: list[dict[str, Any]] = []
    for command in commands:
        responses += [_bash(command), {"steps": [{"kind": "text", "text": "ok"}]}]
    env["AGENTCELL_MODEL"] = script(tmp_path / "always.json", responses)
    client = RecordingClient(answers=answers)
    async with acp_agent(env, client) as agent:
        session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        for n, _ in enumerate(commands):
            await agent.conn.prompt(session_id=session.session_id, prompt=[text_block(f"turn {n}")])
    return client


@pytest.mark.parametrize("hidden", list(HIDDEN))
async def test_allow_always_for_one_command_does_not_allow_another(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path, hidden: str
) -> None:
    client = await _turns(acp_env, tmp_path, workspace, ["ls", "ls", HIDDEN[hidden]], ["allow_always", "reject_once"])
    calls = client.tool_calls()
    assert len(calls) == 3
    assert len(client.permissions) == 2, "the hidden command ran without asking"
    assert client.permissions[1].tool_call.tool_call_id == calls[2].tool_call_id  # the second `ls` was not asked
    statuses = [client.tool_updates(c.tool_call_id)[-1].status for c in calls]
    assert statuses == ["completed", "completed", "failed"]
    assert not (workspace / "made").exists()


async def test_reject_always_for_one_part_refuses_the_line_unasked(
    acp_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    (workspace / "build").mkdir()
    client = await _turns(
        acp_env, tmp_path, workspace, ["rm -rf build", "ls && rm -rf build"], ["reject_always", "allow_once"]
    )
    calls = client.tool_calls()
    assert len(client.permissions) == 1  # the second line was refused by the rule, unasked
    assert [client.tool_updates(c.tool_call_id)[-1].status for c in calls] == ["failed", "failed"]
    assert (workspace / "build").is_dir()
