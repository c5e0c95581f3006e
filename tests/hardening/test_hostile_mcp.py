"""Hostile MCP servers: an answer that never ends, a call never answered, Stop while one starts, in the real kernel.

One agentcell kernel (through jupyter_client, Markdown turns, ``danger-full-access`` so MCP tools run
unasked) with its own temporary folder and a call limit of 3 s (``AGENTCELL_MCP_CALL_TIMEOUT``). A server
over streamable HTTP answers one tool with a message that never ends: the call ends with an error saying
the answer was not read to its end, and the kernel kept at most 128 MiB of it in the temporary folder (it
would have read and kept up to 1 GiB). Its other tool never answers: the call ends with a ``TIMEOUT`` that
names the setting, within the limit, and the turn goes on. A stdio server that never answers its start is
stopped with the kernel's Stop: its process is gone, and the kernel goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..kernel.conftest import execute
from ..tools._support import NEVER_STARTING_SERVER, process_alive
from .kernel_session import MarkdownNotebook, kernel, kernel_environment, logged_events

pytestmark = pytest.mark.slow

HOSTILE = Path(__file__).with_name("hostile_mcp_server.py")
CALL_LIMIT = 3.0
KEPT_LIMIT = 128 << 20


class Notebook(MarkdownNotebook):
    def turn_calling(self, name: str) -> tuple[float, dict[str, Any]]:
        """A turn whose model calls ``name`` once, then says it goes on; its seconds and logged result."""
        n = self.scripts + 1
        self.use_script(
            {"steps": [{"kind": "tool_call", "name": name, "input": {}}]},
            {"steps": [{"kind": "text", "text": f"going on {n}"}]},
        )
        run = self.cell(f"Call {name}, turn {n}.", timeout=120)
        assert run.status == "ok", run.reply
        assert f"going on {n}" in run.final_markdown
        result = [e for e in logged_events(self.db) if e["type"] == "agent.tool_result"][-1]
        return run.reply_time - run.messages[0]["time"], result


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    process = subprocess.Popen([sys.executable, str(HOSTILE)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    yield f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait()
    process.stdout.close()


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory, hostile: str) -> Iterator[Notebook]:
    root = tmp_path_factory.mktemp("hostile-mcp")
    (root / "tmp").mkdir()
    env = kernel_environment(root, AGENTCELL_MCP_CALL_TIMEOUT=str(CALL_LIMIT), TMPDIR=str(root / "tmp"))
    with kernel(env, cwd=root) as (km, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        nb = Notebook(km, kc, root, env["AGENTCELL_DB"])
        assert nb.cell("%permissions danger-full-access").status == "ok"  # MCP tools run unasked here
        assert nb.cell(f"%mcp add hostile --url {hostile}").status == "ok"
        yield nb


def _kept_bytes(root: Path) -> int:
    folder = root / "tmp" / "agentcell-mcp-results"
    return sum(f.stat().st_size for f in folder.iterdir()) if folder.exists() else 0


def test_an_answer_that_never_ends_is_cut_at_what_is_kept_and_the_call_ends(notebook: Notebook) -> None:
    seconds, result = notebook.turn_calling("hostile__endless")
    text = json.dumps(result["content"])
    assert result["is_error"] and "The answer was not read to its end" in text, text[:2000]
    assert "agentcell stopped reading it there" in text
    assert 0 < _kept_bytes(notebook.root) <= KEPT_LIMIT, "the temporary folder kept more than the limit"
    assert seconds < CALL_LIMIT + 30


def test_a_call_never_answered_times_out_naming_the_setting(notebook: Notebook) -> None:
    seconds, result = notebook.turn_calling("hostile__silent")
    text = json.dumps(result["content"])
    assert result["is_error"] and result["error_code"] == "TIMEOUT", text
    assert f"within {CALL_LIMIT:g} s" in text and "AGENTCELL_MCP_CALL_TIMEOUT" in text
    assert seconds < CALL_LIMIT + 15


def test_stop_while_a_server_starts_ends_its_process(notebook: Notebook) -> None:
    fifo = notebook.root / "stuck.pid"
    os.mkfifo(fifo)
    script = notebook.root / "never_starts.py"
    script.write_text(NEVER_STARTING_SERVER)
    assert notebook.cell(f"%mcp add stuck -- {sys.executable} {script} {fifo}").status == "ok"
    notebook.use_script({"steps": [{"kind": "text", "text": "never reached"}]})
    msg_id = notebook.kc.execute("Start your servers.")
    pid = int(fifo.read_text())  # the server's process is up: the turn waits for its start
    asked = time.monotonic()
    notebook.km.interrupt_kernel()  # Stop
    while True:
        msg = notebook.kc.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["content"].get("execution_state") == "idle":
            break
    assert time.monotonic() - asked < 10
    try:
        assert not process_alive(pid), "the server's process outlived Stop"
    finally:
        if process_alive(pid):
            os.kill(pid, 9)
    assert notebook.cell("%mcp remove stuck").status == "ok"
    notebook.use_script({"steps": [{"kind": "text", "text": "back again"}]})
    assert "back again" in notebook.cell("Are you there?", timeout=60).final_markdown
