"""OpenCode (``opencode-ai`` from npm, ``opencode acp``; ``tests/acp_agents``, ``make acp-agents``) answering a
real kernel's turns, its model an OpenAI-compatible provider of its own config pointed at the loopback server
speaking the chat-completions protocol. A text turn streams into the cell and ``%agent show`` names OpenCode's
session; its file write waits for the widget's approval and is done once allowed; Stop cancels a reply
mid-stream and the next turn runs. Nothing leaves the machine: its model list is the one it bundles
(``OPENCODE_DISABLE_MODELS_FETCH``), its provider package (``@ai-sdk/openai-compatible``) one it bundles too.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from ..providers.conftest import Recorded, Reply, SSEServer, sse_body
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

TEXT = "Héllo from OpenCode — 日本語 🎉"
CHUNK = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "loop-model"}


def _stream(*deltas: dict[str, Any], finish: str = "stop", **reply: Any) -> Reply:
    """A chat-completions stream: one chunk per delta, then the finish reason."""
    chunks = [{**CHUNK, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                   "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}})  # fmt: skip
    return Reply(body=sse_body(*chunks, "[DONE]"), headers={"content-type": "text/event-stream"}, **reply)


def _text(text: str) -> Reply:
    return _stream({"role": "assistant", "content": text})


def _write_call(path: Path, content: str) -> Reply:
    arguments = json.dumps({"filePath": str(path), "content": content})
    call = {"index": 0, "id": "call_write1", "type": "function", "function": {"name": "write", "arguments": arguments}}
    return _stream({"role": "assistant", "tool_calls": [call]}, finish="tool_calls")


def _user_text(request: Recorded) -> str:
    """The user's words in a chat-completions request (OpenCode's title request quotes them too)."""
    body = request.body if isinstance(request.body, dict) else {}
    return json.dumps([m for m in body.get("messages", []) if m.get("role") == "user"])


def _last_user_text(request: Recorded) -> str:
    body = request.body if isinstance(request.body, dict) else {}
    return json.dumps([m for m in body.get("messages", []) if m.get("role") == "user"][-1:])


def _is_title(request: Recorded) -> bool:
    body = request.body if isinstance(request.body, dict) else {}
    return "title generator" in json.dumps(body.get("messages", [])[:1])


def _answered_tool(request: Recorded) -> bool:
    body = request.body if isinstance(request.body, dict) else {}
    return any(m.get("role") == "tool" for m in body.get("messages", []))


@pytest.fixture
def opencode_env(kernel_env: dict[str, str], tmp_path: Path, server: SSEServer) -> dict[str, str]:
    folder = tmp_path / "project"
    folder.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"loop": {"npm": "@ai-sdk/openai-compatible", "name": "Loopback",
                              "options": {"baseURL": f"{server.url}/v1", "apiKey": "sk-loopback-test"},
                              "models": {"loop-model": {"name": "Loop model"}}}},
        "model": "loop/loop-model",
        "permission": {"edit": "ask"},  # its file writes are asked of the notebook (its default: done unasked)
        "autoupdate": False,
        "share": "disabled",
    }  # fmt: skip
    (folder / "opencode.json").write_text(json.dumps(config))
    kernel_env.update(
        JPY_SESSION_NAME=str(folder / "notebook.ipynb"),
        PATH=f"{npm_agent('opencode').parent}{os.pathsep}{kernel_env['PATH']}",
        HOME=str(home),  # OpenCode's own config, data and cache: the test's
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        OPENCODE_DISABLE_MODELS_FETCH="1",  # its bundled model list: no models.dev
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        OPENCODE_DISABLE_SHARE="1",
    )
    return kernel_env


def _main_requests(server: SSEServer) -> list[Recorded]:
    return [r for r in server.requests if r.path.endswith("/chat/completions") and not _is_title(r)]


def test_opencode_answers_a_notebook_turn_and_stop_cancels_it(opencode_env: dict[str, str], server: SSEServer) -> None:
    words = [{"content": f"w{i} "} for i in range(2000)]
    long = _stream({"role": "assistant", "content": ""}, *words, chunk_size=400, pause=0.05)  # written slowly

    def answer(request: Recorded) -> Reply:
        if _is_title(request):
            return _text("A title")
        return long if "Count slowly" in _last_user_text(request) else _text(TEXT)

    server.queue(*[answer] * 40)
    folder = Path(opencode_env["JPY_SESSION_NAME"]).parent
    with running_kernel(opencode_env, cwd=folder) as (km, kc):
        assert TEXT in first_external_turn(kc, "opencode", "Say hello.").final_markdown
        [asked] = [r for r in _main_requests(server) if "Say hello." in _user_text(r)]  # it reached the model
        assert asked.body["model"] == "loop-model" and asked.headers["authorization"] == "Bearer sk-loopback-test"
        shown = execute(kc, "%agent show").stdout  # who answers: OpenCode, its command and session
        assert re.search(
            r"^OpenCode \S+ answers this notebook \(opencode acp; running, session ses_\w+\)$", shown, re.M
        )
        assert "model = loop/loop-model" in execute(kc, "%agent acp").stdout  # its own settings
        stopped_mid_reply(
            km, kc, "Count slowly.", lambda: any("Count slowly" in _user_text(r) for r in _main_requests(server))
        )
        after = execute(kc, "Say hello again.", timeout=120)
        assert after.status == "ok" and TEXT in after.final_markdown


def test_opencodes_file_write_waits_for_the_widgets_approval(opencode_env: dict[str, str], server: SSEServer) -> None:
    folder = Path(opencode_env["JPY_SESSION_NAME"]).parent
    target = folder / "hello.txt"

    def answer(request: Recorded) -> Reply:
        if _is_title(request):
            return _text("A title")
        if "Write the file" in _user_text(request) and not _answered_tool(request):
            return _write_call(target, "written by OpenCode\n")
        return _text("Done.")

    server.queue(*[answer] * 20)
    with external_agent_kernel(opencode_env, folder, "opencode") as d:
        state = allowed_file_write(d, "OpenCode", target)
        [use] = [i for i in state if i["type"] == "agent.tool_use"]
        assert use["input"]["kind"] == "edit" and str(target) in json.dumps(use["input"])
        assert target.read_text() == "written by OpenCode\n"
        [tool] = [r for r in _main_requests(server) if _answered_tool(r)]  # the model heard the write succeed
        assert "Wrote file successfully." in json.dumps(tool.body["messages"])
