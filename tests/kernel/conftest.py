"""A real agentcell kernel (or a plain python3 kernel) started through jupyter_client, and a helper that
executes a cell and collects everything it published; the notebook host over a plain IPython shell, and a
renderer that records what the host gives it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from agentcell import StreamItem, TurnResult
from agentcell.kernel.host import AgentCell, NotebookAgent
from agentcell.render.markdown import NO_MATH

from ..providers.conftest import server  # noqa: F401 - the loopback Anthropic server, for cells on Claude
from .echo_server import EchoServer, echo_server


@dataclass
class Execution:
    status: str
    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    """IOPub messages parented to the request, with a ``time`` key (monotonic seconds) added."""
    reply_time: float = 0.0

    def of(self, *types: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["msg_type"] in types]

    @property
    def stdout(self) -> str:
        return "".join(m["content"]["text"] for m in self.of("stream") if m["content"]["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(m["content"]["text"] for m in self.of("stream") if m["content"]["name"] == "stderr")

    @property
    def displays(self) -> list[dict[str, Any]]:
        return [m["content"]["data"] for m in self.of("display_data", "update_display_data", "execute_result")]

    @property
    def final_markdown(self) -> str:
        return shown_markdown(self.displays[-1]) if self.displays else ""


NPM_AGENTS = Path(__file__).parents[1] / "acp_agents" / "node_modules" / ".bin"


def npm_agent(name: str) -> Path:
    """The npm agent's command, which `make acp-agents` installs before `make pytest`: a missing one fails the
    test that needs it (a skip would hide a broken install)."""
    command = NPM_AGENTS / name
    if not command.exists():
        pytest.fail(f"the npm agent {name} is not installed: run `make acp-agents`")
    return command


def shown_markdown(bundle: dict[str, Any]) -> str:
    """A bundle's Markdown inside the element that keeps its ``$`` from MathJax (render.markdown.not_math)."""
    text = str(bundle.get("text/markdown", ""))
    return text.removeprefix(f'<div class="{NO_MATH}">\n\n').removesuffix("\n\n</div>")


def execute(kc: BlockingKernelClient, code: str, *, timeout: float = 30, cell_id: str | None = None) -> Execution:
    """Run ``code``; with ``cell_id`` the request carries it in its metadata, as JupyterLab sends it."""
    if cell_id is None:
        msg_id = kc.execute(code)
    else:
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
        request = kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
        kc.shell_channel.send(request)
        msg_id = request["header"]["msg_id"]
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        msg["time"] = time.monotonic()
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        messages.append(msg)
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    return Execution(reply["content"]["status"], reply["content"], messages, time.monotonic())


@contextmanager
def running_kernel(
    env: dict[str, str], *, kernel_name: str = "agentcell", cwd: Path | None = None
) -> Iterator[tuple[KernelManager, BlockingKernelClient]]:
    from ..widgets.conftest import start_kernel

    km, kc = start_kernel(kernel_name=kernel_name, env=env, cwd=str(cwd) if cwd else None, startup_timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@contextmanager
def external_agent_kernel(env: dict[str, str], cwd: Path, agent: str) -> Iterator[Any]:
    """A real kernel in ``cwd`` whose notebook said ``%agent acp AGENT``, driven by a client that plays the
    turn widget's browser side (``widgets/conftest.py``'s ``TurnDriver``), so approvals can be answered."""
    from ..widgets.conftest import TurnDriver, start_kernel

    km, kc = start_kernel(kernel_name="agentcell", env=env, cwd=str(cwd), startup_timeout=60)
    try:
        driver = TurnDriver(kc)
        # The widget's messages go over a subshell, as JupyterLab sends them: ipykernel 7.3 queues a comm
        # message on the main shell behind the running cell, where no approval can be answered (for the
        # engine's own calls as for the agent's: test_transport.py's main-shell test).
        driver.open_subshell()
        driver.execute(f"%agent acp {agent}")
        driver.until_idle()
        yield driver
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def first_external_turn(kc: BlockingKernelClient, agent: str, message: str) -> Execution:
    """``%agent acp AGENT`` (Markdown output), then ``message``: its turn, which must have ended well."""
    execute(kc, "%config AgentCell.renderer = 'markdown'")
    chosen = execute(kc, f"%agent acp {agent}")
    assert chosen.status == "ok", chosen.reply
    turn = execute(kc, message, timeout=120)
    assert turn.status == "ok", turn.reply
    return turn


def stopped_mid_reply(km: KernelManager, kc: BlockingKernelClient, message: str, streaming: Callable[[], bool]) -> None:
    """Send ``message``, interrupt the kernel once ``streaming()`` (the agent's model reply is under way),
    and check the cell failed and the kernel lives."""
    msg_id = kc.execute(message, stop_on_error=False)
    deadline = time.monotonic() + 120
    while not streaming():
        assert time.monotonic() < deadline, f"the agent never sent the model request for {message!r}"
        time.sleep(0.05)
    time.sleep(1)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "error" and km.is_alive()


def allowed_file_write(d: Any, label: str, target: Path) -> list[dict[str, Any]]:
    """Send "Write the file." to the external agent of ``external_agent_kernel`` ``d``; check that it asks (as
    ``label``) with ``target`` not yet written, allow once, and return the turn's final widget state."""
    d.execute("Write the file.")
    d.until(lambda m: d.comm_id is not None, 120)
    assert d.announce()["approvals"] is True
    request = d.until_item("widget.approval_request", 120)
    assert f"{label} (an external agent) asks before this call" in request["reason"]
    assert not target.exists()  # nothing written before the answer
    d.send({"type": "approval", "tool_use_id": request["tool_use_id"], "result": "allow", "remember": "once"})
    d.until_item("agent.tool_result", 120, tool_use_id=request["tool_use_id"])
    d.until_idle(120)
    state: list[dict[str, Any]] = d.final_state
    assert [c["result"] for c in state if c["type"] == "user.tool_confirmation"] == ["allow"]
    return state


def write_script(path: Path, responses: list[dict[str, Any]]) -> str:
    """Write a scripted-provider script; returns the model name that plays it."""
    path.write_text(json.dumps(responses))
    return f"scripted:{path}"


class Recorder:
    """A renderer that keeps what the host gave it: every item, and the result it was closed with."""

    def __init__(self) -> None:
        self.items: list[StreamItem] = []
        self.closed: TurnResult | None = None
        self.closes = 0

    def on_item(self, item: StreamItem) -> None:
        self.items.append(item)

    def close(self, result: TurnResult | None) -> None:
        self.closed = result
        self.closes += 1


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NotebookAgent]:
    """The notebook host over a plain IPython shell, on the scripted model. The host registers the built-in
    tools in the process-wide registry, as a kernel does: here that registry is the test's own, so later
    tests that build an Engine on the default registry see none of them."""
    from agentcell.tools import registry

    monkeypatch.setattr(registry, "_default", None)
    monkeypatch.setenv("AGENTCELL_MODEL", "scripted")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    shell = InteractiveShell.instance()
    host = NotebookAgent(shell, AgentCell(db=str(tmp_path / "nb.db")))
    try:
        yield host
    finally:
        host.close()
        InteractiveShell.clear_instance()


@pytest.fixture
def claude_echo(kernel_env: dict[str, str]) -> Iterator[EchoServer]:
    """The loopback Anthropic server, the kernel's model on it: its request log says what history the model
    got (``EchoServer.conversations``)."""
    with echo_server() as instance:
        kernel_env.update(AGENTCELL_MODEL="claude-sonnet-4-5", ANTHROPIC_BASE_URL=instance.root, ANTHROPIC_API_KEY="x")
        yield instance
