"""The python tool asks under workspace-write (tools/python_access.py): asked, it runs only when the user
says yes; "Allow always" is the session's ``python:kernel`` rule; only the user's own setting lets it run
unasked, and the tool's code cannot set it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentcell.errors import InvalidInputError
from agentcell.tools import ApprovalBroker, PermissionPolicy, PermissionPreset, ToolRegistry
from agentcell.tools.builtin import python_tool
from agentcell.tools.python_access import (
    PYTHON_TOOL_ENV,
    load_python_tool_setting,
    python_tool_setting,
    set_python_tool,
)

from ._support import Approvals, make_call

pytestmark = pytest.mark.usefixtures("python_tool_asks")


def _registry(workspace: Path, preset: PermissionPreset = "workspace-write") -> tuple[ToolRegistry, dict[str, object]]:
    namespace: dict[str, object] = {}
    registry = ToolRegistry(PermissionPolicy(preset, workspace))
    registry.register(python_tool(namespace, timeout=10.0))
    return registry, namespace


def test_the_table_asks_under_workspace_write_only(tmp_path: Path) -> None:
    verdicts = {
        preset: PermissionPolicy(preset, tmp_path).evaluate("python", frozenset({"kernel"}), None)
        for preset in ("read-only", "workspace-write", "danger-full-access")
    }
    assert verdicts["read-only"].permission == "deny"
    assert verdicts["danger-full-access"].permission == "allow"
    asked = verdicts["workspace-write"]
    assert asked.permission == "ask" and asked.keys == ("python:kernel",)
    assert "not sandboxed" in asked.reason and "AgentCell.python_tool" in asked.hint
    set_python_tool("allow")
    allowed = PermissionPolicy("workspace-write", tmp_path).evaluate("python", frozenset({"kernel"}), None)
    assert allowed.permission == "allow"
    read_only = PermissionPolicy("read-only", tmp_path).evaluate("python", frozenset({"kernel"}), None)
    assert read_only.permission == "deny", "the setting widens workspace-write only"


async def test_unasked_the_code_does_not_run(tmp_path: Path) -> None:
    registry, namespace = _registry(tmp_path)
    result = await registry.execute(make_call("python", code="x = 1\nopen('made.txt', 'w').write('x')"))
    assert result.denied_by == "no-approver" and result.error_code == "DENIED"
    assert 'AgentCell.python_tool = "allow"' in result.text_content, "the refusal says how to allow it"
    assert "x" not in namespace and not (tmp_path / "made.txt").exists()


async def test_declined_nothing_runs_approved_it_runs(tmp_path: Path) -> None:
    registry, namespace = _registry(tmp_path)
    approvals = Approvals(False, True)
    declined = await registry.execute(make_call("python", code="x = 1"), approver=approvals)
    assert declined.denied_by == "user" and "x" not in namespace
    approved = await registry.execute(make_call("python", code="x = 2\nx"), approver=approvals)
    assert not approved.is_error and namespace["x"] == 2
    assert [r.keys for r in approvals.asked] == [("python:kernel",)] * 2


async def test_allow_always_is_the_python_rule_of_the_session(tmp_path: Path) -> None:
    registry, namespace = _registry(tmp_path)
    broker = ApprovalBroker()
    first = make_call("python", code="n = 1")

    async def answer_when_asked() -> None:
        request = await broker.wait_for_request()
        broker.answer(request.call.tool_use_id, "allow", remember="always")

    answering = asyncio.ensure_future(answer_when_asked())
    assert not (await registry.execute(first, approver=broker)).is_error
    await answering
    assert dict(broker.remembered) == {"python:kernel": True}
    again = await registry.execute(make_call("python", code="n += 1"), approver=broker)
    assert not again.is_error and namespace["n"] == 2, "the rule let the second call run unasked"
    assert broker.pending() == []


@pytest.mark.parametrize(
    "code",
    [
        "from agentcell.tools.python_access import set_python_tool\nset_python_tool('allow')",
        "import os\nfrom agentcell.tools.python_access import load_python_tool_setting\n"
        f"os.environ['{PYTHON_TOOL_ENV}'] = 'allow'\nload_python_tool_setting()",
        "import threading\nfrom agentcell.tools.python_access import set_python_tool\nbox = []\n"
        "def go():\n    try:\n        set_python_tool('allow')\n"
        "    except BaseException as exc:\n        box.append(exc)\n"
        "t = threading.Thread(target=go)\nt.start()\nt.join()\nraise box[0]",
    ],
    ids=["set", "environment", "thread"],
)
async def test_the_tools_code_cannot_let_itself_run_unasked(tmp_path: Path, code: str) -> None:
    registry, _ = _registry(tmp_path)
    result = await registry.execute(make_call("python", code=code), approver=Approvals(True))
    assert result.is_error and "PermissionChangeRefused" in result.text_content, result.text_content
    assert python_tool_setting() == "ask"
    later = await registry.execute(make_call("python", code="1"))
    assert later.denied_by == "no-approver", "the next call still asks"


def test_the_setting_takes_two_answers() -> None:
    with pytest.raises(InvalidInputError, match="'ask' or 'allow'"):
        set_python_tool("yes")
    assert load_python_tool_setting({PYTHON_TOOL_ENV: "allow"}) == "allow"
    assert load_python_tool_setting({PYTHON_TOOL_ENV: "sure"}) == "ask", "a typo is the strict answer"
    assert load_python_tool_setting({}) == "ask"
