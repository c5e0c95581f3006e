"""The host runs a turn with one listener, the renderer, and closes it with the session's record of the
turn however the turn ended: answered, interrupted, or never started."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from agentcell import ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.kernel.host import NotebookAgent, TurnInterrupted
from agentcell.tools import default_registry, tool, untool

from .conftest import Recorder


async def test_the_renderer_sees_every_item_and_closes_with_the_turns_record(host: NotebookAgent) -> None:
    host.engine.providers.register("scripted", ScriptedProvider([ScriptedResponse(steps=[ScriptedText(text="Hi!")])]))
    recorder = Recorder()
    host.renderer_factory = lambda session: recorder
    await host.ask("hello")
    session = host.session
    assert recorder.closes == 1 and recorder.closed is session.last_turn is host.last
    durable = [i for i in recorder.items if not ev.is_preview(i)]
    assert [e.id for e in durable] == [e.id for e in recorder.closed.events]
    assert any(ev.is_preview(i) for i in recorder.items)  # the previews reached it live
    seen = len(recorder.items)
    session.update(title="after the turn")  # a session.updated goes to listeners: no longer to the renderer
    assert len(recorder.items) == seen


async def test_an_interrupted_turn_closes_the_renderer_with_its_closing_events(host: NotebookAgent) -> None:
    started = asyncio.Event()

    @tool(registry=default_registry())
    async def wait_here() -> str:
        """Wait until interrupted."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    script = [ScriptedResponse(steps=[ScriptedToolCall(name="wait_here")])]
    host.engine.providers.register("scripted", ScriptedProvider(script))
    recorder = Recorder()
    host.renderer_factory = lambda session: recorder
    try:
        turn = asyncio.create_task(host.ask("wait"))
        await started.wait()
        turn.cancel()  # what a kernel interrupt does to the cell's task
        with pytest.raises(TurnInterrupted):
            await turn
    finally:
        untool(wait_here)
    closed = recorder.closed
    assert closed is not None and closed is host.session.last_turn
    assert isinstance(closed.stop_reason, ev.Interrupted)
    result = next(e for e in closed.events if isinstance(e, ev.AgentToolResult))
    assert (result.is_error, result.error_code) == (True, "INTERRUPTED")  # answered after the cancellation
    assert isinstance(closed.events[-1], ev.SessionStatusIdle)


async def test_a_turn_that_never_started_closes_the_renderer_with_nothing(host: NotebookAgent) -> None:
    host.engine.providers.register("scripted", ScriptedProvider([ScriptedResponse(steps=[ScriptedText(text="ok")])]))
    host.renderer_factory = lambda session: Recorder()
    await host.ask("a first turn")  # so that the session has a last turn the next one must not be shown
    recorder = Recorder()
    host.renderer_factory = lambda session: recorder
    host.next_tool_choice = ("no_such_tool",)
    with pytest.raises(UsageError, match="no_such_tool"):
        await host.ask("force a tool that is not there")
    assert recorder.closes == 1 and recorder.closed is None


@pytest.mark.parametrize("kind", ["not a database", "a directory"])
def test_a_database_problem_is_one_line_in_a_prose_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    from agentcell.kernel.extension import load, unload

    target = tmp_path / "broken.db"
    if kind == "a directory":
        target.mkdir()
    else:
        target.write_text("garbage, not SQLite")
    monkeypatch.setenv("AGENTCELL_DB", str(target))
    monkeypatch.setenv("AGENTCELL_MODEL", "scripted")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    shell = InteractiveShell.instance()
    load(shell, prose_is_agent=True)
    try:
        result = shell.run_cell("Hello there")
    finally:
        unload(shell)
        InteractiveShell.clear_instance()
    assert type(result.error_in_exec).__name__ == "StoreError"
    assert str(result.error_in_exec).endswith("point AGENTCELL_DB at another file")
    shown = capsys.readouterr()
    assert "Traceback" not in shown.out + shown.err
    assert (shown.out + shown.err).strip().count("\n") == 0  # one line
