"""A third-party ACP agent from npm in a real kernel: Claude Code through ``@zed-industries/claude-agent-acp``
(``tests/acp_agents``, installed by ``make acp-agents``), its model requests answered by the loopback
Anthropic server. A text turn streams into the cell; Stop cancels a reply mid-stream and the next turn runs.

OpenCode is driven in ``test_opencode_agent.py``, codex-acp in ``test_codex_agent.py``. Gemini CLI is not: it
needs a stand-in of Google's API that this suite does not have yet.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ..providers.conftest import Recorded, Reply, SSEServer, json_reply, sse_reply
from .conftest import (
    allowed_file_write,
    execute,
    external_agent_kernel,
    first_external_turn,
    npm_agent,
    running_kernel,
    stopped_mid_reply,
)

pytestmark = pytest.mark.slow

TEXT = "Héllo, wörld — 日本語で こんにちは 🎉!"


def _sse(events: list[tuple[str, dict[str, Any]]], **reply: Any) -> Reply:
    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
    return Reply(body=body, headers={"content-type": "text/event-stream"}, **reply)


def _start(message_id: str) -> tuple[str, dict[str, Any]]:
    return ("message_start", {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-6", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})  # fmt: skip


def _write_call(path: Path, content: str) -> Reply:
    """A Messages API stream whose answer is one call of Claude Code's Write tool."""
    arguments = json.dumps({"file_path": str(path), "content": content})
    return _sse([
        _start("msg_write"),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_write1", "name": "Write", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": arguments}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 20}}),
        ("message_stop", {"type": "message_stop"}),
    ])  # fmt: skip


def _long_reply(words: int) -> Reply:
    """A Messages API stream of ``words`` text deltas, written slowly: long enough to press Stop in."""
    events = [
        _start("msg_long"),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text",
                                                                                              "text": ""}}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": f"w{i} "}}) for i in range(words)],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": words}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return _sse(events, chunk_size=400, pause=0.05)


@pytest.fixture
def claude_env(kernel_env: dict[str, str], tmp_path: Path, server: SSEServer) -> dict[str, str]:
    folder = tmp_path / "project"
    folder.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    kernel_env.update(
        JPY_SESSION_NAME=str(folder / "notebook.ipynb"),
        PATH=f"{npm_agent('claude-agent-acp').parent}{os.pathsep}{kernel_env['PATH']}",
        HOME=str(home),  # Claude Code's settings and sessions: the test's own
        ANTHROPIC_BASE_URL=server.url,
        ANTHROPIC_API_KEY="sk-ant-loopback-test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        IS_SANDBOX="1",  # Claude Code refuses to run its permission bypass as root outside a sandbox
    )
    return kernel_env


def _messages(server: SSEServer) -> list[Recorded]:
    return [r for r in server.requests if r.path.startswith("/v1/messages") and "count_tokens" not in r.path]


def test_claude_code_answers_a_notebook_turn_and_stop_cancels_it(
    claude_env: dict[str, str], server: SSEServer, tmp_path: Path
) -> None:
    long = _long_reply(2000)

    def answer(request: Recorded) -> Reply:
        if "count_tokens" in request.path:
            return json_reply(200, {"input_tokens": 10})
        # the newest text block: an interrupted prompt stays in the next request's last message
        last = json.dumps(request.body["messages"][-1]["content"][-1]) if isinstance(request.body, dict) else ""
        return long if "Count slowly" in last else sse_reply("anthropic_text.sse")

    server.queue(*[answer] * 40)
    folder = Path(claude_env["JPY_SESSION_NAME"]).parent
    with running_kernel(claude_env, cwd=folder) as (km, kc):
        assert TEXT in first_external_turn(kc, "claude", "Say hello.").final_markdown
        assert any("Say hello." in json.dumps(r.body) for r in _messages(server))  # it reached the model
        shown = execute(kc, "%agent acp").stdout  # what it says it is, and its own settings
        assert "@zed-industries/claude-agent-acp 0.23.1" in shown and "mode = default" in shown
        stopped_mid_reply(
            km, kc, "Count slowly.", lambda: any("Count slowly" in json.dumps(r.body) for r in _messages(server))
        )
        # claude-agent-acp 0.23.1 answers the first prompt after a cancel at once, empty (the cancelled query's
        # end); the next one is answered as before
        assert execute(kc, "Say hello again.", timeout=120).status == "ok"
        after = execute(kc, "Say hello once more.", timeout=120)
        assert after.status == "ok" and TEXT in after.final_markdown


def test_claude_codes_file_write_waits_for_the_widgets_approval(claude_env: dict[str, str], server: SSEServer) -> None:
    folder = Path(claude_env["JPY_SESSION_NAME"]).parent
    target = folder / "hello.txt"

    def answer(request: Recorded) -> Reply:
        if "count_tokens" in request.path:
            return json_reply(200, {"input_tokens": 10})
        last = json.dumps(request.body["messages"][-1]["content"][-1]) if isinstance(request.body, dict) else ""
        return (
            _write_call(target, "written by Claude Code\n")
            if "Write the file" in last
            else sse_reply("anthropic_text.sse")
        )

    server.queue(*[answer] * 20)
    with external_agent_kernel(claude_env, folder, "claude") as d:
        state = allowed_file_write(d, "Claude Agent", target)
        [use] = [i for i in state if i["type"] == "agent.tool_use"]
        assert use["input"]["file_path"] == str(target) and use["input"]["kind"] == "edit"
        assert target.read_text() == "written by Claude Code\n"
