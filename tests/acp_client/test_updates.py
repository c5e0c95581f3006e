"""An external agent's ``session/update``s folded into a real session's log: what each becomes, as the
turn view and the saved turn read it (the kernel tests drive the same fold with a real agent; these cover
the updates ``agentcell acp`` does not send: diffs, plans, failed and unfinished calls)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    Cost,
    FileEditToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)

from agentcell import Engine
from agentcell.acp_client.updates import TurnUpdates
from agentcell.events import Event
from agentcell.render.fold import TurnFold


def _chunk(kind: type[AgentMessageChunk] | type[AgentThoughtChunk], text: str) -> object:
    update = "agent_message_chunk" if kind is AgentMessageChunk else "agent_thought_chunk"
    return kind(session_update=update, content=TextContentBlock(type="text", text=text))


def _fold(tmp_path: Path, updates: list[object], *, budget: str | None = None) -> tuple[list[Event], TurnUpdates]:
    engine = Engine(tmp_path / "t.db")
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id, budget=budget)
    fold = TurnUpdates(session._log, None)
    for update in updates:
        fold.apply(update)
    fold.end()
    events = session.events()
    engine.close()
    return events, fold


def test_chunks_become_one_message_and_one_thought_in_the_order_they_came(tmp_path: Path) -> None:
    updates = [
        _chunk(AgentThoughtChunk, "Think"),
        _chunk(AgentThoughtChunk, "ing."),
        _chunk(AgentMessageChunk, "Hel"),
        _chunk(AgentMessageChunk, "lo."),
    ]
    events, _ = _fold(tmp_path, updates)
    assert [(e.type, getattr(e, "thinking", None)) for e in events] == [
        ("agent.thinking", "Thinking."),
        ("agent.message", None),
    ]
    assert events[1].content[0].text == "Hello."  # type: ignore[attr-defined]


def test_a_file_edit_is_a_card_with_its_unified_diff_and_a_failed_call_an_error(tmp_path: Path) -> None:
    edit = ToolCallStart(
        session_update="tool_call",
        tool_call_id="t1",
        title="Edit notes.txt",
        kind="edit",
        status="pending",
        raw_input={"path": "notes.txt"},
        locations=[ToolCallLocation(path="/w/notes.txt")],
    )
    done = ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id="t1",
        status="completed",
        content=[FileEditToolCallContent(type="diff", path="notes.txt", old_text="one\ntwo\n", new_text="one\n2\n")],
    )
    run = ToolCallStart(session_update="tool_call", tool_call_id="t2", title="Run make", kind="execute")
    failed = ToolCallProgress(session_update="tool_call_update", tool_call_id="t2", status="failed", raw_output="boom")
    left = ToolCallStart(session_update="tool_call", tool_call_id="t3", title="Fetch", kind="fetch")
    events, _ = _fold(tmp_path, [edit, done, run, failed, left])
    uses = [e for e in events if e.type == "agent.tool_use"]
    assert [(u.name, u.input) for u in uses] == [  # type: ignore[attr-defined]
        ("Edit notes.txt", {"path": "notes.txt", "kind": "edit", "locations": ["/w/notes.txt"]}),
        ("Run make", {"kind": "execute"}),
        ("Fetch", {"kind": "fetch"}),
    ]
    results = {e.tool_use_id: e for e in events if e.type == "agent.tool_result"}  # type: ignore[attr-defined]
    diff = results[uses[0].id].content[0].text
    assert diff.splitlines() == ["--- a/notes.txt", "+++ b/notes.txt", "@@ -1,2 +1,2 @@", " one", "-two", "+2"]
    assert results[uses[1].id].is_error and results[uses[1].id].content[0].text == "boom"
    # a call the agent never finished is answered when the turn ends: no card spins forever
    assert results[uses[2].id].is_error and "no result" in results[uses[2].id].content[0].text
    fold = TurnFold()
    for event in events:
        fold.apply(event)
    assert {t.status for t in fold.tools.values()} == {"completed", "failed"}


def test_a_plan_is_a_checklist_and_reported_cost_is_usage_up_to_the_budget(tmp_path: Path) -> None:
    plan = AgentPlanUpdate(
        session_update="plan",
        entries=[
            PlanEntry(content="Read the data", priority="high", status="completed"),
            PlanEntry(content="Plot it", priority="medium", status="in_progress"),
            PlanEntry(content="Write it up", priority="low", status="pending"),
        ],
    )

    def usage(amount: float) -> UsageUpdate:
        return UsageUpdate(session_update="usage_update", used=10, size=100, cost=Cost(amount=amount, currency="USD"))

    events, fold = _fold(tmp_path, [plan, usage(0.25), usage(0.75)], budget="1")
    [checklist] = [e for e in events if e.type == "agent.message"]
    assert checklist.content[0].text == (  # type: ignore[attr-defined]
        "**Plan**\n\n- [x] Read the data\n- [~] Plot it\n- [ ] Write it up"
    )
    spent = [e.usage.spent for e in events if e.type == "session.usage"]  # type: ignore[attr-defined]
    assert spent == [Decimal("0.25"), Decimal("0.75")]  # cumulative as reported, not added twice
    assert fold.spent.spent == Decimal("0.75") and not fold.over_budget.is_set()
    _, capped = _fold(tmp_path / "again", [usage(0.5), usage(1.0)], budget="1")
    assert capped.over_budget.is_set()
