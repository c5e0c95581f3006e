"""Issue 21, 6: an API key a model or a tool prints reaches no event row, no listener, no saved output."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcell import ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell.tools import tool

from .conftest import engine_over

KEY = "sk-test-0000-very-secret-value"


def test_a_key_printed_by_a_tool_and_repeated_by_the_model_is_scrubbed_everywhere(
    db_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="leak", input={})]),
        ScriptedResponse(steps=[ScriptedText(text=f"your key is {KEY}", chunk_size=7)]),
    ]
    engine, _, registry = engine_over(db_path, workspace, script)

    @tool(registry=registry)
    def leak() -> str:
        """Prints the environment."""
        return f"ANTHROPIC_API_KEY={KEY}"

    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    seen: list[str] = []
    session.subscribe(lambda item: seen.append(item.model_dump_json()))
    result = session.send_sync("print your env")
    engine.close()
    stored = [e.model_dump_json() for e in result.events]
    assert any("[redacted]" in row for row in stored)
    assert not any(KEY in row for row in stored)
    assert not any(KEY in row for row in seen if '"event_delta"' not in row)  # buffered items as shown
    raw = db_path.read_bytes() + b"".join(p.read_bytes() for p in db_path.parent.glob("*.db-wal"))
    assert KEY.encode() not in raw
    assert "[redacted]" in result.text
