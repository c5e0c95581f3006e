"""Seed 002: 'read_only mounts the store as a read-only filesystem' — for every path: the memory API refuses
writes to a store a session attached read_only, whoever calls it inside that session's turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcell import ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.tools.builtin.python import python_tool

from .conftest import engine_over

CODE = "engine.memory_stores.write(store_id, 'notes/x.md', 'overwritten by the model')\nprint('wrote')"


def test_the_models_own_python_cannot_write_a_read_only_store(db_path: Path, workspace: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="python", input={"code": CODE})]),
        ScriptedResponse(steps=[ScriptedText(text="done")]),
    ]
    engine, _, registry = engine_over(db_path, workspace, script)
    namespace: dict[str, Any] = {}
    registry.register(python_tool(namespace))
    store = engine.memory_stores.create(name="policies")
    engine.memory_stores.write(store.id, "notes/x.md", "the policy")  # outside any turn: allowed
    namespace.update(engine=engine, store_id=store.id)
    session = engine.sessions.create(
        agent=engine.agents.create(name="a", model="scripted").id,
        resources=[{"type": "memory_store", "memory_store_id": store.id, "access": "read_only"}],
        permissions="danger-full-access",
    )
    result = session.send_sync("change the policy")
    [answer] = [e for e in result.events if isinstance(e, ev.AgentToolResult)]
    assert answer.is_error and "attached read_only" in answer.content[0].text  # type: ignore[union-attr]
    assert engine.memory_stores.read(store.id, "notes/x.md").content == "the policy"
    engine.close()


def test_a_read_write_store_takes_the_same_write(db_path: Path, workspace: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="python", input={"code": CODE})]),
        ScriptedResponse(steps=[ScriptedText(text="done")]),
    ]
    engine, _, registry = engine_over(db_path, workspace, script)
    namespace: dict[str, Any] = {}
    registry.register(python_tool(namespace))
    store = engine.memory_stores.create(name="scratch")
    namespace.update(engine=engine, store_id=store.id)
    session = engine.sessions.create(
        agent=engine.agents.create(name="a", model="scripted").id,
        resources=[{"type": "memory_store", "memory_store_id": store.id}],
    )
    session.send_sync("write it")
    assert engine.memory_stores.read(store.id, "notes/x.md").content == "overwritten by the model"
    engine.close()
