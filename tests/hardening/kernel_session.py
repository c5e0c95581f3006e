"""What the hardening families share: one real agentcell kernel on a loopback Anthropic server, and the
turn's three accounts of itself (the widget's live items, its final state, the event log on disk) to hold
against each other."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

from ..kernel.conftest import Execution, execute
from ..providers.conftest import API_KEY, SSEServer
from ..widgets.conftest import TURN_MIMETYPE, TurnDriver


def kernel_environment(root: Path, **extra: str) -> dict[str, str]:
    """A kernel's environment of its own under ``root``: no provider keys or settings of the developer's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCELL_"))}
    env.update(
        AGENTCELL_DB=str(root / "kernel.db"),
        AGENTCELL_MODEL="scripted",
        AGENTCELL_REPLAY="off",
        JPY_SESSION_NAME=str(root / "notebook.ipynb"),
        JUPYTER_DATA_DIR=str(root / "jupyter-data"),
        PYTHONUNBUFFERED="1",
        AGENTCELL_PYTHON_TOOL="allow",  # the families that are not about its asking run it unasked
    )
    env.update(extra)
    return env


def loopback_claude(server: SSEServer, root: Path, **extra: str) -> dict[str, str]:
    """The environment of a kernel whose model is Claude, served by ``server``; a stall fails in 0.5 s."""
    return kernel_environment(
        root,
        AGENTCELL_MODEL="claude-sonnet-4-5",
        ANTHROPIC_BASE_URL=server.url,
        ANTHROPIC_API_KEY=API_KEY,
        AGENTCELL_STALL_SECONDS="0.5",
        **extra,
    )


@contextmanager
def kernel(env: dict[str, str], cwd: Path | None = None) -> Iterator[tuple[KernelManager, BlockingKernelClient]]:
    km, kc = start_new_kernel(kernel_name="agentcell", env=env, cwd=str(cwd) if cwd else None, startup_timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@dataclass
class MarkdownNotebook:
    """One kernel a family's cases share, with its turns shown in Markdown (the widget's own families
    check the widget): the cells it runs, the scripted model it is given, and its log on disk."""

    km: KernelManager
    kc: BlockingKernelClient
    root: Path
    db: str
    scripts: int = 0

    def cell(self, code: str, timeout: float = 40) -> Execution:
        return execute(self.kc, code, timeout=timeout)

    def use_script(self, *responses: dict[str, Any]) -> int:
        """Make the scripted ``responses`` the model of the next turns; returns the script's number."""
        self.scripts += 1
        path = self.root / f"script-{self.scripts}.json"
        path.write_text(json.dumps(list(responses)))
        assert self.cell(f"%model scripted:{path}", timeout=50).status == "ok"
        return self.scripts


@contextmanager
def markdown_kernel(root: Path) -> Iterator[tuple[KernelManager, BlockingKernelClient, str]]:
    """A kernel of its own under ``root``, its renderer set to Markdown; yields its database's path too."""
    env = kernel_environment(root)
    with kernel(env, cwd=root) as (km, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        yield km, kc, env["AGENTCELL_DB"]


def logged_events(db: str | Path) -> list[dict[str, Any]]:
    """Every event row of the store, in order."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM events ORDER BY seq")]
    finally:
        conn.close()


@dataclass
class TurnAccounts:
    """One finished turn, as the widget streamed it, as its final state holds it, and as the log has it."""

    live: list[dict[str, Any]]
    """The durable items the widget was sent while the turn ran (previews left out)."""
    final: list[dict[str, Any]]
    """The finished turn's events in the bundle that replaced the live view."""
    logged: list[dict[str, Any]]
    """The log's events from the turn's user.message on."""
    markdown: str
    reply: dict[str, Any]

    def texts(self, events: list[dict[str, Any]]) -> list[str]:
        return [b["text"] for e in events if e["type"] == "agent.message" for b in e["content"] if b["type"] == "text"]


def run_turn(driver: TurnDriver, code: str, cell_id: str, db: str | Path, timeout: float = 45) -> TurnAccounts:
    driver.execute(code, cell_id=cell_id)
    driver.until_idle(timeout)
    reply = driver.kc.get_shell_msg(timeout=10)
    while reply["parent_header"].get("msg_id") != driver.msg_id:
        reply = driver.kc.get_shell_msg(timeout=10)
    live = [i for b in driver.batches for i in b.get("items", []) if not i["type"].startswith("event_")]
    bundle = driver.final_bundle
    final = list(bundle[TURN_MIMETYPE]["events"])
    opening = final[0]["id"]
    events = logged_events(db)
    start = next(n for n, e in enumerate(events) if e["id"] == opening)
    # The turn's own rows: up to its closing status (a later cell's rows are not written yet).
    end = next(n for n in range(start, len(events)) if events[n]["type"] == "session.status_idle")
    return TurnAccounts(live, final, events[start : end + 1], str(bundle.get("text/markdown", "")), reply["content"])


def assert_no_loss_or_duplication(turn: TurnAccounts) -> None:
    """The widget's live items, its final state and the log tell the same turn: every logged event once, in
    the log's order, and the same text."""
    logged_ids = [e["id"] for e in turn.logged]
    assert len(set(logged_ids)) == len(logged_ids), "the log holds an event twice"
    final_ids = [e["id"] for e in turn.final]
    assert final_ids == [i for i in logged_ids if i in set(final_ids)], "the final state reorders the log"
    durable = {"user.message", "agent.message", "agent.tool_use", "agent.tool_result", "session.error"}
    assert [e["id"] for e in turn.logged if e["type"] in durable] == [
        e["id"] for e in turn.final if e["type"] in durable
    ], "the final state lost or added an event the log has"
    live_ids = [i["id"] for i in turn.live if "id" in i]
    assert len(set(live_ids)) == len(live_ids), "the widget was sent an event twice"
    assert [i for i in live_ids if i in set(logged_ids)] == [i for i in logged_ids if i in set(live_ids)]
    assert set(logged_ids) <= set(live_ids), "the live view missed an event the log has"
    assert turn.texts(turn.final) == turn.texts(turn.logged) == turn.texts(turn.live)
