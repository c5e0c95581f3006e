"""The agent exchange's recording: one run per file, entries answered in recorded order, text chunks joined
so that no secret is split across two, and no secret written."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.schema import AgentMessageChunk, TextContentBlock, ToolCallStart

from agentcell._secrets import REDACTED
from agentcell.acp_client.recording import ExchangeRecording, exchange_path
from agentcell.errors import InvalidInputError


def _chunk(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text))


def test_entries_replay_in_order_with_chunks_joined_and_secrets_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret-123")
    path = exchange_path(tmp_path / "nb.agentcell.jsonl")
    assert path.name == "nb.agentcell-acp.jsonl"
    recording = ExchangeRecording(path, fresh=True)
    call = ToolCallStart(session_update="tool_call", tool_call_id="t1", title="Run ls", kind="execute")
    recording.append("claude", "hi", [_chunk("the key is sk-ant-very"), _chunk("-secret-123."), call], "end_turn")
    recording.append("claude", "hi", [_chunk("second answer")], "cancelled")
    written = path.read_text()
    assert "very-secret" not in written
    again = ExchangeRecording(path)
    first, second, third = (again.take("claude", "hi") for _ in range(3))
    assert first is not None and second is not None and third == first  # starting over after the last
    [text, tool] = first.parsed()
    assert text.content.text == f"the key is {REDACTED}."  # one chunk, so the secret was whole to scrub
    assert isinstance(tool, ToolCallStart) and tool.title == "Run ls"
    assert second.stop_reason == "cancelled"
    assert again.take("codex", "hi") is None and again.knows("claude") and not again.knows("codex")
    ExchangeRecording(path, fresh=True).append("claude", "new run", [], "end_turn")  # %record: one run a file
    assert [e.prompt for e in ExchangeRecording(path).entries] == ["new run"]


def test_a_damaged_recording_says_which_line_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "nb.agentcell-acp.jsonl"
    path.write_text('{"agentcell_acp_recording": 1}\n{"agent": "x"}\n')
    with pytest.raises(InvalidInputError, match=r"damaged at line 2: .*re-record it"):
        ExchangeRecording(path).entries  # noqa: B018 - reading is what fails
