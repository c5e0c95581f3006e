"""Codex (``@zed-industries/codex-acp`` from npm; ``tests/acp_agents``, ``make acp-agents``) answering a real
kernel's turns, its model a provider of its own config (``CODEX_HOME/config.toml``) pointed at a loopback
stand-in of OpenAI's Responses API (Codex speaks no other: ``wire_api = "chat"`` is refused). A text turn
streams into the cell, ``%agent show`` names Codex's session, and the next turn goes on in that session;
Stop cancels a reply mid-stream and the next turn runs.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from ..providers.conftest import Recorded, Reply, SSEServer
from .conftest import execute, first_external_turn, npm_agent, running_kernel, stopped_mid_reply

pytestmark = pytest.mark.slow

TEXT = "Héllo from Codex — 日本語 🎉"
CONFIG = """model = "loop-model"
model_provider = "loop"

[model_providers.loop]
name = "Loopback"
base_url = "{url}/v1"
env_key = "LOOP_API_KEY"
wire_api = "responses"
"""


def _responses_stream(text: str, pieces: int = 4, **reply: Any) -> Reply:
    """A Responses API stream of one assistant message, ``text`` in ``pieces`` deltas."""
    response: dict[str, Any] = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
                                "model": "loop-model", "output": []}  # fmt: skip
    item: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress",
                            "content": []}  # fmt: skip
    size = -(-len(text) // pieces)
    deltas = [text[i : i + size] for i in range(0, len(text), size)]
    done = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    usage = {"input_tokens": 120, "output_tokens": 9, "total_tokens": 129, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
    events = [
        ("response.created", {"response": response}),
        ("response.output_item.added", {"output_index": 0, "item": item}),
        *[("response.output_text.delta", {"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": d})
          for d in deltas],
        ("response.output_item.done", {"output_index": 0, "item": done}),
        ("response.completed", {"response": {**response, "status": "completed", "output": [done], "usage": usage}}),
    ]  # fmt: skip
    body = "".join(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in events)
    return Reply(body=body.encode(), headers={"content-type": "text/event-stream"}, **reply)


@pytest.fixture
def codex_env(kernel_env: dict[str, str], tmp_path: Path, server: SSEServer) -> dict[str, str]:
    folder = tmp_path / "project"
    folder.mkdir()
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(CONFIG.format(url=server.url))
    kernel_env.update(
        JPY_SESSION_NAME=str(folder / "notebook.ipynb"),
        PATH=f"{npm_agent('codex-acp').parent}{os.pathsep}{kernel_env['PATH']}",
        HOME=str(home),
        CODEX_HOME=str(home / ".codex"),  # Codex's config, sessions and logs: the test's own
        LOOP_API_KEY="sk-loopback-test",
    )
    return kernel_env


def test_codex_answers_a_notebook_turn(codex_env: dict[str, str], server: SSEServer) -> None:
    def answer(request: Recorded) -> Reply:
        return _responses_stream(TEXT)

    server.queue(*[answer] * 10)
    folder = Path(codex_env["JPY_SESSION_NAME"]).parent
    with running_kernel(codex_env, cwd=folder) as (km, kc):
        turn = first_external_turn(kc, "codex", "Say hello.")
        assert TEXT in turn.final_markdown
        partial = [d for d in turn.displays if TEXT not in json.dumps(d, ensure_ascii=False)]
        assert partial  # it streamed: the cell showed the reply before it was whole
        [asked] = [r for r in server.requests if r.path == "/v1/responses"]  # it reached the loopback model
        assert asked.body["model"] == "loop-model" and asked.headers["authorization"] == "Bearer sk-loopback-test"
        assert "Say hello." in json.dumps(asked.body["input"])
        shown = execute(kc, "%agent show").stdout  # who answers: Codex, its command and session
        assert re.search(r"answers this notebook \(codex-acp; running, session [\w-]+\)$", shown, re.M), shown
        again = execute(kc, "Say hello again.", timeout=120)  # the same process and session go on
        assert again.status == "ok" and TEXT in again.final_markdown
        assert "Say hello." in json.dumps(server.requests[-1].body["input"])  # the conversation so far
        assert _codex_processes(folder)  # its node wrapper and the binary it started
        assert "(codex stopped)" in execute(kc, "%agent local").stdout
        deadline = time.monotonic() + 30
        while _codex_processes(folder):  # the binary ends with its wrapper, not left running
            assert time.monotonic() < deadline, f"left running: {_codex_processes(folder)}"
            time.sleep(0.05)
        assert km.is_alive()


def _codex_processes(folder: Path) -> list[int]:
    """The live (not zombie) processes running codex-acp in ``folder``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            running = "codex-acp" in (proc / "cmdline").read_text() and (proc / "cwd").resolve() == folder.resolve()
            if running and not (proc / "stat").read_text().split(") ")[1].startswith("Z"):
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def test_stop_cancels_codexs_reply_and_the_next_turn_runs(codex_env: dict[str, str], server: SSEServer) -> None:
    long = _responses_stream(" ".join(f"w{i}" for i in range(2000)), pieces=2000, chunk_size=400, pause=0.05)

    def answer(request: Recorded) -> Reply:
        last = json.dumps(request.body["input"][-1]) if isinstance(request.body, dict) else ""
        return long if "Count slowly" in last else _responses_stream(TEXT)

    server.queue(*[answer] * 10)
    folder = Path(codex_env["JPY_SESSION_NAME"]).parent
    with running_kernel(codex_env, cwd=folder) as (km, kc):
        assert TEXT in first_external_turn(kc, "codex", "Say hello.").final_markdown
        stopped_mid_reply(
            km, kc, "Count slowly.", lambda: any("Count slowly" in json.dumps(r.body) for r in server.requests)
        )
        after = execute(kc, "Say hello again.", timeout=120)
        assert after.status == "ok" and TEXT in after.final_markdown
        execute(kc, "%agent local")  # stopped, not left behind by the test's killed kernel
