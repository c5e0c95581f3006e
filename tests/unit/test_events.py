"""The event union: wire names pinned, JSON round trips, and the rules a few events carry."""

from __future__ import annotations

import json
import os
import typing
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentcell import events as ev
from agentcell.ids import new_id
from agentcell.usage import Budget, Usage

SNAPSHOT = Path(__file__).parent / "snapshots" / "event_wire.json"


def _members(union: object) -> list[type[BaseModel]]:
    inner = typing.get_args(union)[0]  # Annotated[Union[...], Field]
    return list(typing.get_args(inner))


def _wire(model: type[BaseModel]) -> dict[str, object]:
    fields = model.model_fields
    return {
        "fields": sorted(fields),
        "required": sorted(name for name, info in fields.items() if info.is_required()),
    }


def test_wire_names_match_the_snapshot() -> None:
    current = {
        str(model.model_fields["type"].default): _wire(model) for model in _members(ev.Event) + _members(ev.Preview)
    }
    for name, union in (("stop_reason", ev.StopReason), ("content_block", ev.ContentBlock)):
        for model in _members(union):
            current[f"{name}:{model.model_fields['type'].default}"] = _wire(model)
    for model in (ev.ContentDelta, ev.PreviewRef, ev.ErrorInfo, Usage, Budget):
        current[f"model:{model.__name__}"] = _wire(model)
    if os.environ.get("AGENTCELL_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    pinned = json.loads(SNAPSHOT.read_text())
    assert current == pinned, "wire format changed: review it, then rerun with AGENTCELL_UPDATE_SNAPSHOTS=1"


def test_every_required_event_type_exists() -> None:
    names = {str(m.model_fields["type"].default) for m in _members(ev.Event)}
    required = {
        "user.message", "user.interrupt", "user.tool_confirmation", "user.custom_tool_result",
        "user.define_outcome", "system.message", "agent.message", "agent.thinking", "agent.tool_use",
        "agent.tool_result", "agent.custom_tool_use", "session.status_running", "session.status_idle",
        "session.error", "session.updated", "session.usage", "span.model_request_start",
        "span.model_request_end",
    }  # fmt: skip
    assert required <= names


def _envelope() -> dict[str, object]:
    return {"id": new_id("sevt"), "created_at": datetime.now(UTC), "session_id": "sesn_x"}


@pytest.mark.parametrize(
    "event",
    [
        ev.UserMessage(**_envelope(), content=[ev.TextBlock(text="hi")]),
        ev.SessionStatusIdle(**_envelope(), stop_reason=ev.RequiresAction(event_ids=["a", "b"])),
        ev.SessionStatusIdle(**_envelope(), stop_reason=ev.ErrorStop(message="boom")),
        ev.AgentToolUse(**_envelope(), call_id="toolu_1", name="python", input={"code": "1+1"}),
        ev.SessionUsageEvent(**_envelope(), usage=Usage(input_tokens=5, list_cost=Decimal("0.000015"))),
        ev.SpanModelRequestEnd(**_envelope(), model_request_start_id="s", model_usage=Usage()),
        ev.UserDefineOutcome(**_envelope(), outcome_id="outc_1", description="d", rubric=ev.TextRubric(content="r")),
    ],
)
def test_events_round_trip_through_json(event: ev.Event) -> None:
    assert ev.event_adapter.validate_json(event.model_dump_json()) == event


def test_money_travels_as_a_string_and_keeps_every_digit() -> None:
    usage = ev.SessionUsageEvent(
        **_envelope(), usage=Usage(list_cost=Decimal("0.000000123")), budget=Budget(max_list_cost="0.5")
    )
    data = json.loads(usage.model_dump_json())
    assert data["usage"]["list_cost"] == "1.23E-7" or data["usage"]["list_cost"] == "0.000000123"
    assert Decimal(data["usage"]["list_cost"]) == Decimal("0.000000123")
    assert data["budget"] == {"type": "limit", "max_list_cost": "0.5", "currency": "USD"}


def test_session_updated_carries_only_what_changed() -> None:
    only_title = ev.SessionUpdated(**_envelope(), title="new")
    assert "budget" not in json.loads(only_title.model_dump_json())
    removed_budget = ev.SessionUpdated(**_envelope(), budget=None)
    data = json.loads(removed_budget.model_dump_json())
    assert data["budget"] is None
    assert "title" not in data and "agent" not in data and "metadata" not in data
    again = ev.event_adapter.validate_json(removed_budget.model_dump_json())
    assert "budget" in json.loads(again.model_dump_json())


def test_previews_are_not_events_but_are_stream_items() -> None:
    start = ev.EventStart(event=ev.PreviewRef(type="agent.message", id="sevt_1"))
    delta = ev.EventDelta(event_id="sevt_1", delta=ev.ContentDelta(index=0, content=ev.TextBlock(text="Here is")))
    assert json.loads(delta.model_dump_json())["delta"] == {
        "type": "content_delta",
        "index": 0,
        "content": {"type": "text", "text": "Here is"},
    }
    assert ev.stream_item_adapter.validate_json(start.model_dump_json()) == start
    with pytest.raises(ValueError, match="does not match any of the expected tags"):
        ev.event_adapter.validate_json(start.model_dump_json())


def test_events_reject_unknown_fields_and_types() -> None:
    body = json.loads(ev.UserInterrupt(**_envelope()).model_dump_json())
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        ev.event_adapter.validate_python({**body, "surprise": 1})
    with pytest.raises(ValueError, match="does not match any of the expected tags"):
        ev.event_adapter.validate_python({**body, "type": "user.mesage"})


def test_ids_sort_in_creation_order() -> None:
    ids = [new_id("sevt") for _ in range(20_000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("sevt_") and len(i) == 31 for i in ids[:10])


def test_thread_id_is_omitted_not_null_on_the_primary_thread() -> None:
    """Seed 002: 'Set by the server to the subagent thread ... Omitted when it was routed to the primary thread.'"""
    now = datetime.now(UTC)
    primary = ev.AgentMessage(id="sevt_1", created_at=now, session_id="s", content=[ev.TextBlock(text="hi")])
    spawned = primary.model_copy(update={"thread_id": "sthr_1"})
    assert "thread_id" not in json.loads(primary.model_dump_json())
    assert json.loads(spawned.model_dump_json())["thread_id"] == "sthr_1"
    assert "thread_id" not in primary.model_dump(mode="json")
    preview = ev.EventStart(event=ev.PreviewRef(type="agent.message", id="sevt_1"))
    assert "thread_id" not in json.loads(preview.model_dump_json())
    assert ev.event_adapter.validate_json(primary.model_dump_json()) == primary  # and it reads back
