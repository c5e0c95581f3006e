"""Deep JSON: lines nested 100,000 levels get an error from the real `agentcell acp`, which then goes on.

Python's JSON parser recurses once per level and raises ``RecursionError`` past about a thousand; before,
that one exception ended the process. Each line below goes to a running ``agentcell acp`` subprocess, and
the test holds that it answers with an error (the request's id when it could be read), that nothing but
JSON-RPC came on its stdout, and that the next ``initialize`` is answered by the same process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..acp.conftest import acp_env, raw_agent  # noqa: F401 - acp_env is a fixture here too

pytestmark = pytest.mark.slow

DEPTH = 100_000


def _nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def _nested_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _request(request_id: int, method: str, params: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"{method}","params":{params}}}'


LINES = {
    "a bare array 100,000 deep": (_nested_list(DEPTH), None),
    "a bare object 100,000 deep": (_nested_object(DEPTH), None),
    "params of session/new 100,000 deep": (_request(7, "session/new", _nested_object(DEPTH)), None),
    "a prompt's _meta 100,000 deep": (
        _request(8, "session/prompt", f'{{"sessionId":"sesn_x","prompt":[],"_meta":{_nested_list(DEPTH)}}}'),
        None,
    ),
    "_meta 500 deep (under the parser's limit)": (
        _request(9, "initialize", f'{{"protocolVersion":1,"_meta":{{"deep":{_nested_list(500)}}}}}'),
        9,
    ),
}


@pytest.mark.parametrize("case", list(LINES))
async def test_a_deeply_nested_line_is_answered_and_the_process_goes_on(
    acp_env: dict[str, str],  # noqa: F811 - the fixture imported above
    case: str,
    workspace: Path,
) -> None:
    line, request_id = LINES[case]
    async with raw_agent(acp_env) as peer:  # which also holds that the process exits by itself, status 0
        await peer.send(line + "\n")
        answer = await peer.receive()
        await peer.request(1, "initialize", {"protocolVersion": 1})
        initialized = await peer.answer(1)
        await peer.request(2, "session/new", {"cwd": str(workspace), "mcpServers": []})
        created = await peer.answer(2)
    assert answer["id"] == request_id and answer["error"]["code"] in (-32700, -32600)
    assert "nest" in answer["error"]["message"] and len(json.dumps(answer)) < 1000
    assert initialized["result"]["protocolVersion"] == 1
    assert created["result"]["sessionId"].startswith("sesn_")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root
