"""Tool faults: every BaseException, hangs, huge outputs, crashed and babbling MCP servers, in the real kernel.

One agentcell kernel (through jupyter_client); each case defines a tool in a ``%%python`` cell the way a
user does, then a scripted turn calls it. Whatever the tool does, the call becomes an error result the model
reads, the turn goes on to its answer, the cell succeeds, and the kernel stays up and keeps running cells
(issue 21, 1: a KeyboardInterrupt from a tool used to kill the kernel).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..kernel.conftest import Execution
from .kernel_session import MarkdownNotebook, logged_events, markdown_kernel

pytestmark = pytest.mark.slow

MCP_SERVER = Path(__file__).parent.parent / "tools" / "mcp_server.py"


class Notebook(MarkdownNotebook):
    def turn_calling(self, name: str, arguments: dict[str, Any] | None = None) -> tuple[Execution, dict[str, Any]]:
        """A turn whose model calls ``name`` once, then says "still here"; the run and the logged result."""
        n = self.scripts + 1
        self.use_script(
            {"steps": [{"kind": "tool_call", "name": name, "input": arguments or {}}]},
            {"steps": [{"kind": "text", "text": f"still here {n}"}]},
        )
        run = self.cell(f"Call {name}, turn {n}.")
        results = [e for e in logged_events(self.db) if e["type"] == "agent.tool_result"]
        assert run.status == "ok", run.reply
        assert f"still here {n}" in run.final_markdown  # the turn went on after the tool
        return run, results[-1]

    def alive(self) -> None:
        assert self.km.is_alive()
        assert self.cell("%%python\nprint(6 * 7)").stdout.strip() == "42"


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook]:
    root = tmp_path_factory.mktemp("tool-faults")
    with markdown_kernel(root) as (km, kc, db):
        nb = Notebook(km, kc, root, db)
        assert nb.cell("%permissions danger-full-access").status == "ok"  # MCP tools run unasked here
        yield nb


RAISED = {
    "KeyboardInterrupt": "KeyboardInterrupt()",
    "SystemExit": "SystemExit(3)",
    "GeneratorExit": "GeneratorExit()",
    "CancelledError": "asyncio.CancelledError()",
    "BaseExceptionGroup": "BaseExceptionGroup('both', [KeyboardInterrupt(), ValueError('x')])",
    "OwnBaseException": "type('OwnBaseException', (BaseException,), {})()",
    "RecursionError": "RecursionError('maximum recursion depth exceeded')",
    "MemoryError": "MemoryError()",
}


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("kind", list(RAISED))
def test_a_tool_raising_any_base_exception_is_an_error_result_and_the_kernel_stays_up(
    notebook: Notebook, kind: str, flavour: str
) -> None:
    name = f"raise_{kind.lower()}_{flavour}"
    define = "async def" if flavour == "async" else "def"
    code = f"%%python\nimport asyncio\nfrom agentcell import tool\n@tool\n{define} {name}() -> str:\n"
    code += f'    """Raises {kind}."""\n    raise {RAISED[kind]}\n'
    assert notebook.cell(code).status == "ok"
    _, result = notebook.turn_calling(name)
    assert result["is_error"] and kind in json.dumps(result["content"])
    notebook.alive()


def test_a_hanging_tool_times_out_as_an_error_result(notebook: Notebook) -> None:
    code = "%%python\nimport time\nfrom agentcell import tool\n@tool(timeout=0.5)\ndef hang() -> str:\n"
    code += '    """Never answers."""\n    time.sleep(30)\n    return "never"\n'
    assert notebook.cell(code).status == "ok"
    run, result = notebook.turn_calling("hang")
    assert result["is_error"] and "timed out after 0.5 s" in json.dumps(result["content"])
    assert run.reply_time - run.messages[0]["time"] < 10
    notebook.alive()


def test_a_huge_output_is_cut_for_the_model_and_the_log_and_the_kernel_stays_up(notebook: Notebook) -> None:
    code = "%%python\nfrom agentcell import tool\n@tool\ndef flood() -> str:\n"
    code += '    """Twenty million characters."""\n    return "0123456789" * 2_000_000\n'
    assert notebook.cell(code).status == "ok"
    run, result = notebook.turn_calling("flood")
    logged = json.dumps(result)
    assert len(logged) < 2_500_000  # the log keeps at most MAX_LOG_CHARS of it, not 20 MB
    assert sum(len(json.dumps(m["content"])) for m in run.messages) < 10_000_000
    notebook.alive()


def test_a_tool_that_crashes_its_mcp_server_answers_with_an_error_and_the_turn_goes_on(notebook: Notebook) -> None:
    assert notebook.cell(f"%mcp add doomed -- {sys.executable} {MCP_SERVER} stdio").status == "ok"
    _, result = notebook.turn_calling("doomed__crash")
    text = json.dumps(result["content"])
    assert result["is_error"] and "'doomed' is not running" in text and "about to crash" in text
    notebook.alive()
    assert notebook.cell("%mcp remove doomed").status == "ok"


def test_an_mcp_server_babbling_on_stdout_fails_fast_in_one_line(notebook: Notebook) -> None:
    babble = "import time\nfor i in range(200): print('starting up', i, flush=True)\ntime.sleep(60)"
    (notebook.root / "babble.py").write_text(babble)
    assert notebook.cell(f"%mcp add noisy -- {sys.executable} {notebook.root / 'babble.py'}").status == "ok"
    script = notebook.root / "plain.json"
    script.write_text(json.dumps([{"steps": [{"kind": "text", "text": "answered anyway"}]}]))
    assert notebook.cell(f"%model scripted:{script}").status == "ok"
    run = notebook.cell("Say something.", timeout=25)
    # The server fails at its first stdout line, in one warning, and the turn answers without it.
    assert run.status == "ok" and "answered anyway" in run.final_markdown
    said = run.final_markdown + run.stdout + run.stderr
    assert said.count("MCP server noisy did not start") == 1 and "not JSON-RPC on its stdout" in said
    assert said.count("starti") <= 1 and "Traceback" not in said  # not a traceback per babbled line
    assert run.reply_time - run.messages[0]["time"] < 15  # not the 30 s start timeout
    notebook.alive()
    assert notebook.cell("%mcp remove noisy").status == "ok"
