"""Bounded resources through the real kernel (issue 21, 9): a 50 MB MCP tool result, and a 5 MB prose cell.

The kernel runs the scripted model; what is measured is what a user pays: the kernel process's resident
memory (from /proc), and every byte the kernel published on IOPub for the cell.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

pytestmark = pytest.mark.slow

SERVER = Path(__file__).with_name("huge_mcp_server.py")
TURN = "application/vnd.agentcell.turn+json"


def _rss(km: KernelManager) -> int:
    pid = km.provisioner.process.pid  # type: ignore[union-attr]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _run(kc: BlockingKernelClient, code: str, timeout: float = 50) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = []
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=messages.append)
    return reply["content"], messages


def _iopub_bytes(messages: list[dict[str, Any]]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for message in messages:
        size = len(json.dumps(message["content"])) + sum(len(b) for b in message.get("buffers") or ())
        sizes[message["msg_type"]] = sizes.get(message["msg_type"], 0) + size
    return sizes


def _turn_events(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    bundles = [m["content"]["data"] for m in messages if TURN in m["content"].get("data", {})]
    assert bundles, "the turn left no bundle"
    events: list[dict[str, Any]] = bundles[-1][TURN]["events"]
    return events


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KernelManager, BlockingKernelClient, Path]]:
    """One kernel for the module: its own database, temp directory and script (rewritten per test: the
    scripted model reads its file at each turn's first request)."""
    import os

    root = tmp_path_factory.mktemp("resources")
    (root / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(
        AGENTCELL_DB=str(root / "kernel.db"),
        AGENTCELL_MODEL="scripted",
        JPY_SESSION_NAME=str(root / "notebook.ipynb"),
        TMPDIR=str(root / "tmp"),
    )
    km, kc = start_new_kernel(kernel_name="agentcell", env=env, cwd=str(root), startup_timeout=60)
    try:
        yield km, kc, root
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _script(kc: BlockingKernelClient, root: Path, name: str, responses: list[dict[str, Any]]) -> None:
    path = root / f"{name}.json"
    path.write_text(json.dumps(responses))
    reply, _ = _run(kc, f"%model scripted:{path}")
    assert reply["status"] == "ok"


def test_a_50_mb_mcp_result_is_cut_with_a_note_and_kept_whole_in_bounded_memory(
    kernel: tuple[KernelManager, BlockingKernelClient, Path],
) -> None:
    km, kc, root = kernel
    for code in ("%permissions danger-full-access", f"%mcp add huge -- {sys.executable} {SERVER}"):
        reply, _ = _run(kc, code)
        assert reply["status"] == "ok", reply

    def call(megabytes: int) -> dict[str, Any]:
        return {"steps": [{"kind": "tool_call", "name": "huge__huge", "input": {"megabytes": megabytes}}]}

    answer = {"steps": [{"kind": "text", "text": "read it"}]}
    _script(kc, root, "huge", [call(0), answer, call(50), answer])
    _run(kc, "warm up")  # a small call first: the server is started and the engine's code loaded
    before = _rss(km)

    reply, messages = _run(kc, "fetch the huge thing")

    assert reply["status"] == "ok", reply
    grown = _rss(km) - before
    assert grown < 40_000_000, f"the kernel grew by {grown:,} bytes for a 50 MB result"
    (result,) = [e for e in _turn_events(messages) if e["type"] == "agent.tool_result"]
    shown = "".join(block["text"] for block in result["content"])
    assert shown.startswith("0123456789abcdef" * 64)
    assert "answered with 10" in shown and "bytes, over the cap of 1,000,000 bytes per message" in shown
    (kept,) = (root / "tmp" / "agentcell-mcp-results").iterdir()
    assert f"is kept in {kept}" in shown
    assert kept.stat().st_size > 100_000_000  # the text, and the SDK's structured copy of it
    message = json.loads(kept.read_bytes())
    assert len(message["result"]["content"][0]["text"]) > 50_000_000
    kept.unlink()
    sent = sum(_iopub_bytes(messages).values())
    assert sent < 5_000_000, f"{sent:,} bytes over IOPub"


def test_a_5_mb_cell_is_sent_back_as_previews_and_logged_whole(
    kernel: tuple[KernelManager, BlockingKernelClient, Path],
) -> None:
    _, kc, root = kernel
    _script(kc, root, "big", [{"steps": [{"kind": "text", "text": "a long read"}]}])
    cell = "word " * 1_000_000

    reply, messages = _run(kc, cell)

    assert reply["status"] == "ok", reply
    sizes = _iopub_bytes(messages)
    # Before: 5 MB each in execute_input, the widget's items and the final bundle (15.9 MB in all).
    assert sizes["execute_input"] < 20_000
    assert sizes.get("comm_msg", 0) < 50_000
    assert sizes["update_display_data"] < 50_000
    assert sum(sizes.values()) < 2_000_000, sizes  # the widget's code (comm_open) is most of the rest
    (prompt,) = [e for e in _turn_events(messages) if e["type"] == "user.message"]
    text = prompt["content"][0]["text"]
    assert text.startswith("word word") and len(text) < 2_200
    assert text.endswith("more characters not shown here: the cell holds the whole prompt]")
    with sqlite3.connect(root / "kernel.db") as db:
        logged = [json.loads(body) for (body,) in db.execute("SELECT body FROM events WHERE type = 'user.message'")]
    assert any(e["content"][0]["text"].strip() == cell.strip() for e in logged)  # the log keeps it whole
