"""The python tool: output, values, rich display, tracebacks, timeouts and interrupts, in one namespace."""

from __future__ import annotations

import asyncio
import base64
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from agentcell.events import ImageBlock, TextBlock
from agentcell.tools import PermissionPreset, ToolRegistry, ToolResult
from agentcell.tools.builtin import python_tool

from ._support import Approvals, make_call


@pytest.fixture
def namespace() -> dict[str, Any]:
    return {}


@pytest.fixture
def python(registry_for: Callable[[PermissionPreset], ToolRegistry], namespace: dict[str, Any]) -> ToolRegistry:
    registry = registry_for("danger-full-access")
    registry.register(python_tool(namespace, timeout=5.0))
    return registry


async def _run(registry: ToolRegistry, code: str, **extra: Any) -> ToolResult:
    return await registry.execute(make_call("python", code=code, **extra))


async def test_output_and_the_last_value_are_captured(python: ToolRegistry, namespace: dict[str, Any]) -> None:
    result = await _run(python, "import sys\nx = 21\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\nx * 2")
    assert [b.text for b in result.content if isinstance(b, TextBlock)] == [
        "to stdout\n[stderr]\nto stderr",
        "Out: 42",
    ]
    assert not result.is_error
    assert namespace["x"] == 21
    again = await _run(python, "x + 1")
    assert again.text_content == "Out: 22"


async def test_code_without_output_says_so(python: ToolRegistry) -> None:
    assert (await _run(python, "y = 1")).text_content == "(no output)"
    assert (await _run(python, "None")).text_content == "(no output)"


class _Rich:
    def _repr_png_(self) -> bytes:
        return b"\x89PNG fake"

    def _repr_html_(self) -> str:
        return "<b>rich</b>"


class _BrokenRepr:
    def _repr_html_(self) -> str:
        raise RuntimeError("no html today")

    def __repr__(self) -> str:
        return "<broken but printable>"


async def test_rich_values_become_images_and_text(python: ToolRegistry, namespace: dict[str, Any]) -> None:
    namespace.update(Rich=_Rich, BrokenRepr=_BrokenRepr)
    result = await _run(python, "Rich()")
    text, image = result.content
    assert isinstance(text, TextBlock) and text.text == "Out: [text/html]\n<b>rich</b>"
    assert isinstance(image, ImageBlock) and image.source.media_type == "image/png"
    assert base64.b64decode(image.source.data) == b"\x89PNG fake"
    assert (await _run(python, "BrokenRepr()")).text_content == "Out: <broken but printable>"


async def test_an_exception_comes_back_as_a_traceback_of_the_code(python: ToolRegistry) -> None:
    result = await _run(python, "def half(n):\n    return n / 0\n\nhalf(4)")
    assert (result.is_error, result.error_code) == (True, "PYTHON_ERROR")
    lines = result.text_content.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "line 4, in <module>" in lines[1] and lines[2].strip() == "half(4)"
    assert "line 2, in half" in lines[3] and lines[4].strip() == "return n / 0"
    assert lines[-1] == "ZeroDivisionError: division by zero"
    assert "agentcell" not in result.text_content  # none of the tool's own frames


async def test_output_before_an_error_is_kept(python: ToolRegistry) -> None:
    result = await _run(python, "print('before')\nraise SystemExit(2)")
    assert result.text_content.startswith("before\nTraceback")
    assert result.text_content.endswith("SystemExit: 2")


async def test_a_syntax_error_is_reported(python: ToolRegistry) -> None:
    result = await _run(python, "def broken(:\n    pass")
    assert result.is_error and "SyntaxError" in result.text_content


async def test_top_level_await_works(python: ToolRegistry) -> None:
    result = await _run(python, "import asyncio\nawait asyncio.sleep(0)\n'awaited'")
    assert result.text_content == "Out: 'awaited'"


async def test_code_past_its_timeout_is_stopped(python: ToolRegistry, namespace: dict[str, Any]) -> None:
    result = await _run(python, "print('spinning')\nwhile True:\n    pass\nafter = True", timeout_seconds=0.3)
    assert (result.is_error, result.error_code) == (True, "TIMEOUT")
    assert result.text_content == "spinning\nthe code was interrupted\n[timed out after 0.3 s]"
    assert "after" not in namespace


async def test_an_interrupt_stops_the_running_code(python: ToolRegistry, namespace: dict[str, Any]) -> None:
    started = threading.Event()
    namespace["started"] = started
    task = asyncio.create_task(_run(python, "started.set()\nwhile True:\n    pass\nafter = True"))
    assert await asyncio.to_thread(started.wait, 10)
    worker = next(t for t in threading.enumerate() if t.name == "agentcell-python-tool")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # An endless loop ends only when interrupted; a thread still spinning would outlive the join.
    await asyncio.to_thread(worker.join, 10)
    assert not worker.is_alive()
    assert "after" not in namespace


async def test_only_the_codes_own_thread_is_captured(python: ToolRegistry, namespace: dict[str, Any]) -> None:
    original = sys.stdout
    namespace["beside"] = lambda: print("from another thread")
    result = await _run(python, "import threading\nt = threading.Thread(target=beside)\nt.start(); t.join()\n'done'")
    assert result.text_content == "Out: 'done'"
    assert sys.stdout is original


async def test_python_runs_unasked_under_workspace_write_and_never_under_read_only(
    registry_for: Callable[[PermissionPreset], ToolRegistry], namespace: dict[str, Any]
) -> None:
    # The notebook's own kernel is the python tool's workspace: headless runs have nobody to ask.
    writable = registry_for("workspace-write")
    writable.register(python_tool(namespace))
    approvals = Approvals(False)
    result = await writable.execute(make_call("python", code="touched = True"), approver=approvals)
    assert not result.is_error and namespace["touched"] is True
    assert approvals.asked == []
    read_only = registry_for("read-only")
    read_only.register(python_tool(namespace))
    refused = await read_only.execute(make_call("python", code="again = True"), approver=approvals)
    assert refused.is_error and refused.error_code == "DENIED" and "again" not in namespace
    assert approvals.asked == []
