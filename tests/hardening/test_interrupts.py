"""Interrupts: Stop reaches idle in at most 2 s wherever the turn is, keeps what was said, and the kernel goes on.

One agentcell kernel (through jupyter_client) is interrupted as JupyterLab's Stop button does
(``KernelManager.interrupt_kernel``, SIGINT) while the model streams, while a sync tool sleeps, while an
async tool waits forever, while the python tool's code loops, and twice in a row. Each time the kernel is
idle within 2 s, the log closes the turn as interrupted (the text streamed so far kept, marked so), and the
next cell runs as usual.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from ..kernel.conftest import execute
from .kernel_session import MarkdownNotebook, logged_events, markdown_kernel

pytestmark = pytest.mark.slow

STOP_WITHIN = 2.0


@dataclass
class Stopped:
    seconds: float
    """From the interrupt to the kernel's idle status."""
    reply: dict[str, Any]
    turn: list[dict[str, Any]]
    """The log's rows of the interrupted turn."""


class Notebook(MarkdownNotebook):
    def script(self, *responses: dict[str, Any]) -> None:
        self.use_script(*responses)

    def interrupt_when(self, code: str, ready: Callable[[dict[str, Any]], bool], *, times: int = 1) -> Stopped:
        """Run ``code``, interrupt once an IOPub message of it satisfies ``ready``; wait for idle."""
        msg_id = self.kc.execute(code)
        deadline = time.monotonic() + 40
        while True:
            msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id and ready(msg):
                break
        asked = time.monotonic()
        for _ in range(times):
            self.km.interrupt_kernel()
        while True:
            msg = self.kc.get_iopub_msg(timeout=10)
            state = msg["content"].get("execution_state")
            if msg["parent_header"].get("msg_id") == msg_id and state == "idle":
                break
        seconds = time.monotonic() - asked
        reply = self.kc.get_shell_msg(timeout=10)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=10)
        events = logged_events(self.db)
        opening = max(n for n, e in enumerate(events) if e["type"] == "user.message")
        return Stopped(seconds, reply["content"], events[opening:])

    def goes_on(self) -> None:
        assert self.km.is_alive()
        self.script({"steps": [{"kind": "text", "text": "back again"}]})
        assert "back again" in execute(self.kc, "Are you there?", timeout=50).final_markdown


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook]:
    root = tmp_path_factory.mktemp("interrupts")
    with markdown_kernel(root) as (km, kc, db):
        nb = Notebook(km, kc, root, db)
        nb.goes_on()  # the first turn loads the engine: the cases below time the interrupt, not that
        yield nb


def _shows(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda msg: text in json.dumps(msg["content"].get("data", {}))


def _stream_says(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda msg: msg["msg_type"] == "stream" and text in msg["content"]["text"]


def _closed_as_interrupted(stopped: Stopped) -> None:
    assert stopped.seconds <= STOP_WITHIN, f"idle {stopped.seconds:.2f} s after the interrupt"
    assert stopped.turn[-1]["type"] == "session.status_idle"
    assert stopped.turn[-1]["stop_reason"]["type"] == "interrupted", stopped.turn[-1]
    assert any(e["type"] == "user.interrupt" for e in stopped.turn)


def test_stop_while_the_model_streams_keeps_the_text_so_far(notebook: Notebook) -> None:
    words = "".join(f"word{n} " for n in range(4000))
    notebook.script({"steps": [{"kind": "text", "text": words, "chunk_size": 5, "delay": 0.005}]})
    stopped = notebook.interrupt_when("Talk for a long time.", _shows("word30 "))
    _closed_as_interrupted(stopped)
    [message] = [e for e in stopped.turn if e["type"] == "agent.message"]
    kept = message["content"][0]["text"]
    assert message["interrupted"] and kept.startswith("word0 word1 ") and words.startswith(kept)
    assert len(kept) < len(words)
    notebook.goes_on()


@pytest.mark.parametrize(
    "body",
    [
        "def stuck() -> str:\n    time.sleep(60)\n    return 'never'\n",
        "async def stuck() -> str:\n    await asyncio.Event().wait()\n    return 'never'\n",
    ],
    ids=["sync-tool-sleeps", "async-tool-waits"],
)
def test_stop_while_a_tool_hangs(notebook: Notebook, body: str) -> None:
    code = "%%python\nimport asyncio, time\nfrom agentcell import tool\n@tool\n" + body.replace(
        "-> str:\n", '-> str:\n    """Hangs."""\n', 1
    )
    assert execute(notebook.kc, code).status == "ok"
    notebook.script(
        {"steps": [{"kind": "tool_call", "name": "stuck", "input": {}}]},
        {"steps": [{"kind": "text", "text": "unreachable"}]},
    )
    stopped = notebook.interrupt_when("Call stuck.", lambda m: m["msg_type"] == "display_data")
    _closed_as_interrupted(stopped)
    notebook.goes_on()


def test_stop_while_the_python_tools_code_loops(notebook: Notebook) -> None:
    loop = "print('looping', flush=True)\nwhile True:\n    pass\n"
    notebook.script(
        {"steps": [{"kind": "tool_call", "name": "python", "input": {"code": loop}}]},
        {"steps": [{"kind": "text", "text": "unreachable"}]},
    )
    stopped = notebook.interrupt_when("Loop forever.", lambda m: m["msg_type"] == "display_data")
    _closed_as_interrupted(stopped)
    notebook.goes_on()


def test_stop_pressed_twice_still_ends_in_one_idle_turn(notebook: Notebook) -> None:
    words = "".join(f"again{n} " for n in range(4000))
    notebook.script({"steps": [{"kind": "text", "text": words, "chunk_size": 5, "delay": 0.005}]})
    stopped = notebook.interrupt_when("Talk again.", _shows("again20 "), times=2)
    _closed_as_interrupted(stopped)
    assert [e["type"] for e in stopped.turn].count("session.status_idle") == 1
    notebook.goes_on()
