"""Cells the agent proposes, through the real kernel against the loopback Anthropic server: on by default
(the model sees cell ids and gets ``notebook_edit``), never under read-only, off with
``AgentCell.propose_cells = False`` (no tool, no cell ids); ``%accept N`` puts the cell below (the
``set_next_input`` payload) and the next request says it was accepted, with the cell's run; ``%fix`` asks
for a fix of the failing cell as a proposed edit; an edit of a cell run with other code since is not
applied, and both the user and the model are told."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..providers.conftest import API_KEY, Reply, SSEServer, server, sse_reply
from .conftest import execute, running_kernel

pytestmark = pytest.mark.slow

__all__ = ["server"]  # the loopback Anthropic server, a fixture of tests/providers


@pytest.fixture
def claude_env(kernel_env: dict[str, str], server: SSEServer) -> dict[str, str]:
    kernel_env.update(
        ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=server.url, AGENTCELL_MODEL="anthropic:claude-sonnet-4-5"
    )
    return kernel_env


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n".encode()


def tool_call(name: str, arguments: dict[str, Any]) -> Reply:
    """What Anthropic streams for one tool call."""
    message = {"id": "msg_tool", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []}
    block = {"type": "tool_use", "id": "toolu_01", "name": name, "input": {}}
    delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
    body = b"".join([
        _event("message_start", {"message": {**message, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        _event("content_block_start", {"index": 0, "content_block": block}),
        _event("content_block_delta", {"index": 0, "delta": delta}),
        _event("content_block_stop", {"index": 0}),
        _event("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
        _event("message_stop", {}),
    ])  # fmt: skip
    return Reply(body=body, headers={"content-type": "text/event-stream"})


def _tools(body: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in body.get("tools", [])]


def _text(body: dict[str, Any]) -> str:
    texts = []
    for message in body["messages"]:
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if block.get("type") == "text":
                texts.append(block["text"])
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                texts.append(inner if isinstance(inner, str) else json.dumps(inner))
    return "\n".join(texts)


def _next_input(reply: dict[str, Any]) -> str:
    [payload] = [p for p in reply.get("payload", []) if p.get("source") == "set_next_input"]
    assert payload["replace"] is False
    return str(payload["text"])


def test_a_proposed_cell_accepted_then_run_reaches_the_next_request(
    claude_env: dict[str, str], server: SSEServer
) -> None:
    server.queue(
        sse_reply("anthropic_text.sse"),
        sse_reply("anthropic_text.sse"),
        sse_reply("anthropic_text.sse"),
        tool_call("notebook_edit", {"action": "insert", "cell_id": "c1", "source": "y = x * 2\nprint('y is', y)"}),
        sse_reply("anthropic_text.sse"),
        sse_reply("anthropic_text.sse"),
    )
    with running_kernel(claude_env) as (_, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        assert execute(kc, "%%python\nx = 21", cell_id="c1").status == "ok"
        assert execute(kc, "Hello?", cell_id="p0").status == "ok"
        assert execute(kc, "%config AgentCell.propose_cells = False").status == "ok"
        assert execute(kc, "%%python\nz = 1", cell_id="c0").status == "ok"
        assert execute(kc, "Off?", cell_id="p00").status == "ok"
        assert execute(kc, "%config AgentCell.propose_cells = True").status == "ok"
        assert execute(kc, "%permissions read-only").status == "ok"
        assert execute(kc, "Read-only?", cell_id="p01").status == "ok"
        assert execute(kc, "%permissions workspace-write").status == "ok"
        assert execute(kc, "%%python\nx = 2", cell_id="c1").status == "ok"
        turn = execute(kc, "Double x in a new cell.", cell_id="p1")
        assert turn.status == "ok", turn.reply
        shown = turn.final_markdown
        assert "Proposed 1: a new code cell after cell c1" in shown and "%accept 1" in shown
        assert "y = x * 2" in shown
        listed = execute(kc, "%proposals").stdout
        assert "Proposed 1" in listed
        accepted = execute(kc, "%accept 1", cell_id="a1")
        assert accepted.status == "ok", accepted.reply
        assert "the new cell is below" in accepted.stdout
        source = _next_input(accepted.reply)
        assert source == "%%python\ny = x * 2\nprint('y is', y)"  # this kernel's prose goes to the agent
        ran = execute(kc, source, cell_id="c2")
        assert "y is 4" in ran.stdout
        again = execute(kc, "%accept 1")
        assert again.status == "error" and "was accepted already" in again.reply["evalue"]
        assert execute(kc, "What now?", cell_id="p2").status == "ok"
    default, off, read_only, proposing, answered, after = (r.body for r in server.requests)
    assert "notebook_edit" in _tools(default) and "(cell id: c1)" in _text(default)  # on by default
    latest = {**off, "messages": off["messages"][-1:]}  # the earlier turn's cells keep the ids they were shown
    assert "notebook_edit" not in _tools(off) and "cell id:" not in _text(latest) and "z = 1" in _text(latest)
    assert "notebook_edit" not in _tools(read_only)  # never under read-only
    assert "notebook_edit" in _tools(proposing) and "(cell id: c1)" in _text(proposing)
    assert "Proposal 1 (a new code cell after cell c1) is waiting for the user's review" in _text(answered)
    said = _text(after)
    assert "The user accepted proposal 1 (a new code cell after cell c1); it has not run" in said
    assert "(cell id: c2)" in said and "y is 4" in said  # the accepted cell's run, with its output


def test_fix_proposes_an_edit_and_an_edit_of_a_changed_cell_is_not_applied(
    claude_env: dict[str, str], server: SSEServer
) -> None:
    server.queue(
        tool_call("notebook_edit", {"action": "edit", "cell_id": "c1", "source": "ratio = 1 / 2"}),
        sse_reply("anthropic_text.sse"),
        sse_reply("anthropic_text.sse"),
    )
    with running_kernel(claude_env) as (_, kc):
        assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
        assert execute(kc, "%%python\nratio = 1 / 0", cell_id="c1").status == "error"
        fixed = execute(kc, "%fix", cell_id="f1")
        assert fixed.status == "ok", fixed.reply
        assert "Proposed 1: an edit of cell c1" in fixed.final_markdown
        assert "-ratio = 1 / 0" in fixed.final_markdown and "+ratio = 1 / 2" in fixed.final_markdown
        assert execute(kc, "%%python\nratio = 3", cell_id="c1").status == "ok"  # the user changed it meanwhile
        refused = execute(kc, "%accept 1")
        assert refused.status == "error"
        assert "cell c1 changed since the agent proposed proposal 1 (an edit of cell c1)" in refused.reply["evalue"]
        assert not [p for p in refused.reply.get("payload", []) if p.get("source") == "set_next_input"]
        assert execute(kc, "Did it work?", cell_id="p2").status == "ok"
    fix, _, after = (r.body for r in server.requests)
    assert "notebook_edit" in _tools(fix)  # %fix offers it whatever propose_cells says
    assert "ZeroDivisionError" in _text(fix) and "propose the fix as an edit of that cell" in _text(fix)
    assert "Proposal 1 (an edit of cell c1) could not be applied: cell c1 changed" in _text(after)
