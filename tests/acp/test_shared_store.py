"""The notebook and the editor share one store: a session a real kernel (through jupyter_client) started
is found and loaded over ACP, continued there, and the notebook sees the continuation after a restart;
a session an editor started is resumed in the notebook."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from acp.schema import AgentMessageChunk, UserMessageChunk

from acp import text_block

from ..kernel.conftest import execute, running_kernel
from .conftest import RecordingClient, acp_agent

pytestmark = pytest.mark.slow

USER_TEXTS = (
    "%%python\nimport json\nprint(json.dumps([b.text for e in __agentcell__.session.events() "
    "if e.type == 'user.message' for b in e.content if b.text.strip()]))"
)


async def test_a_notebook_session_is_continued_in_the_editor_and_back(
    kernel_env: dict[str, str], acp_env: dict[str, str], tmp_path: Path
) -> None:
    notebook = Path(kernel_env["JPY_SESSION_NAME"])
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    acp_env["AGENTCELL_DB"] = kernel_env["AGENTCELL_DB"]
    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):
        assert execute(kc, "hello from the notebook").status == "ok"
        shown = execute(kc, "%%python\nprint(__agentcell__.session.id)")
        notebook_session = shown.stdout.strip()
        client = RecordingClient()
        async with acp_agent(acp_env, client) as agent:  # the kernel is still running: both use the store
            listed = await agent.conn.list_sessions(cwd=str(tmp_path))
            await agent.conn.load_session(cwd=str(tmp_path), session_id=notebook_session, mcp_servers=[])
            replayed = list(client.updates)
            client.clear()
            await agent.conn.prompt(session_id=notebook_session, prompt=[text_block("hello from the editor")])
            continued = client.text()
            editor = await agent.conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            await agent.conn.prompt(session_id=editor.session_id, prompt=[text_block("started in the editor")])
    assert [(s.session_id, s.title, s.cwd) for s in listed.sessions] == [
        (notebook_session, "notebook.ipynb", str(tmp_path))
    ]
    assert [u.content.text.strip() for u in replayed if isinstance(u, UserMessageChunk)] == ["hello from the notebook"]
    said = "".join(u.content.text for u in replayed if isinstance(u, AgentMessageChunk))
    assert said.strip() == "You said: hello from the notebook"
    assert continued == "You said: hello from the editor"

    with running_kernel(kernel_env, cwd=tmp_path) as (_, kc):  # the notebook's kernel, restarted
        texts = [t.strip() for t in json.loads(execute(kc, USER_TEXTS).stdout)]
        assert texts == ["hello from the notebook", "hello from the editor"]
        resumed = execute(kc, f"%session resume {editor.session_id}")
        assert resumed.status == "ok" and editor.session_id in resumed.stdout
        assert json.loads(execute(kc, USER_TEXTS).stdout) == ["started in the editor"]
