"""Two kernels, one notebook: a second kernel on the same SQLite session cannot drive it while the first does.

Two real agentcell kernels open the same notebook over the same database (two browser tabs, or a tab and
``agentcell run``). While the first kernel's turn waits in a tool, the second kernel's prose cell fails in
one line saying another kernel drives the session, and writes nothing; once the first turn ends, the second
kernel's turn runs, after the first's in the log, never inside it. The log holds every turn whole and in
order, and each cell shows its own kernel's answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ..kernel.conftest import execute, write_script
from .kernel_session import kernel, kernel_environment, logged_events

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _hold_tool(mark: Path, fifo: Path) -> str:
    return (
        "%%python\nfrom agentcell import tool\n@tool\ndef hold() -> str:\n"
        '    """Waits until the test lets it go."""\n'
        f"    with open({str(mark)!r}, 'w') as holding:\n        holding.write('holding')\n"
        f"    with open({str(fifo)!r}) as waiting:\n        return 'released ' + waiting.read()\n"
    )


def _turns(events: list[dict[str, object]]) -> list[list[str]]:
    """The log cut into turns: each from a user.message to its session.status_idle."""
    turns: list[list[str]] = []
    for event in events:
        if event["type"] == "user.message":
            assert not turns or turns[-1][-1] == "session.status_idle", "a turn began inside another"
            turns.append([])
        if turns:
            turns[-1].append(str(event["type"]))
    return turns


def test_a_second_kernel_waits_its_turn(tmp_path: Path) -> None:
    env = kernel_environment(tmp_path)
    mark, fifo = tmp_path / "holding", tmp_path / "release"
    os.mkfifo(fifo)
    os.mkfifo(mark)  # the tool says it holds by writing here: reading it waits for that
    first_model = write_script(
        tmp_path / "first.json",
        [
            {"steps": [{"kind": "text", "text": "first kernel says hello"}]},
            {"steps": [{"kind": "tool_call", "name": "hold", "input": {}}]},
            {"steps": [{"kind": "text", "text": "first kernel done"}]},
        ],
    )
    second_model = write_script(tmp_path / "second.json", [{"steps": [{"kind": "text", "text": "second kernel"}]}])
    with kernel(env, cwd=tmp_path) as (_, first), kernel(env, cwd=tmp_path) as (km2, second):
        for kc, model in ((first, first_model), (second, second_model)):
            assert execute(kc, "%config AgentCell.renderer = 'markdown'").status == "ok"
            assert execute(kc, f"%model {model}", timeout=50).status == "ok"
        assert execute(first, _hold_tool(mark, fifo)).status == "ok"
        assert "first kernel says hello" in execute(first, "Hello.", timeout=40).final_markdown
        held = first.execute("Hold on.")  # sent, not awaited: its turn waits in the tool
        assert mark.read_text() == "holding"  # returns once the first kernel's tool is waiting
        refused = execute(second, "Me too.", timeout=40)
        assert refused.status == "error"
        assert "is being driven by another kernel" in refused.stderr + json.dumps(refused.reply)
        with fifo.open("w") as release:
            release.write("now")
        reply = first.get_shell_msg(timeout=60)
        while reply["parent_header"].get("msg_id") != held:
            reply = first.get_shell_msg(timeout=60)
        assert reply["content"]["status"] == "ok"
        after = execute(second, "Me too.", timeout=40)
        assert after.status == "ok" and "second kernel" in after.final_markdown
        assert km2.is_alive()

    events = logged_events(env["AGENTCELL_DB"])
    turns = _turns(events)
    assert len(turns) == 3  # the refused cell wrote nothing
    assert all(turn[-1] == "session.status_idle" for turn in turns)
    answers = [b["text"] for e in events if e["type"] == "agent.message" for b in e["content"] if b["type"] == "text"]
    assert answers == ["first kernel says hello", "first kernel done", "second kernel"]
