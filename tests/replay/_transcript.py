"""What "the same transcript" means in these tests.

Two runs of a turn differ in what is minted at run time: event ids, timestamps and the session id. A
transcript is the turn's durable events without those, in order, with every reference to another event
(``tool_use_id``, ``model_request_start_id``, ``custom_tool_use_id``, a stop reason's ``event_ids``)
replaced by that event's position in the turn. Everything else must be equal: types, text, thinking, tool
names, inputs and call ids, tool results, stop reasons, and usage with its list cost.

:func:`model_responses` reads the model's side of a turn (one item per request: its content, usage, list
cost and stop reason) from its events, and :func:`recorded_responses` reads the same from a recording, so a
replayed notebook can be held against its recording alone. Thread ids in them are blinded: every run mints
its own, and the replay puts its own where the recording has the recorded run's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentcell.engine.skills import USER_CALL_PREFIX
from agentcell.providers._recording import Entry, Recording
from agentcell.providers.base import ResponseAccumulator

TURN_MIMETYPE = "application/vnd.agentcell.turn+json"
_VOLATILE = ("id", "created_at", "session_id", "processed_at", "source")
"""Minted at run time, or (``source``) saying whether this run's answer was replayed or live."""
_REFERENCES = ("tool_use_id", "model_request_start_id", "custom_tool_use_id")
_THREAD_ID = re.compile(r"sthr_[0-9A-HJKMNP-TV-Z]{26}")


def _blind(blocks: list[Any]) -> list[Any]:
    return json.loads(_THREAD_ID.sub("sthr_<this run>", json.dumps(blocks)))  # type: ignore[no-any-return]


def _as_dict(event: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(event, BaseModel):
        return json.loads(event.model_dump_json())  # type: ignore[no-any-return]
    return dict(event)


def transcript(events: Iterable[BaseModel | Mapping[str, Any]]) -> list[dict[str, Any]]:
    items = [_as_dict(e) for e in events]
    position = {item["id"]: index for index, item in enumerate(items)}
    result = []
    for item in items:
        kept = {k: v for k, v in item.items() if k not in _VOLATILE}
        for key in _REFERENCES:
            if key in kept:
                kept[key] = position.get(kept[key], "elsewhere")
        stop = kept.get("stop_reason")
        if isinstance(stop, dict) and "event_ids" in stop:
            kept["stop_reason"] = {**stop, "event_ids": [position.get(i, "elsewhere") for i in stop["event_ids"]]}
        result.append(kept)
    return result


def model_responses(events: Iterable[BaseModel | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per model request of a turn: the blocks it produced, its usage and list cost, its stop reason."""
    responses: list[dict[str, Any]] = []
    blocks: list[Any] = []
    grading = False
    for item in map(_as_dict, events):
        kind = item["type"]
        if kind == "span.outcome_evaluation_start":
            grading = True
        elif kind == "span.outcome_evaluation_end":
            # The grader's forced submit_verdict call is not an agent.tool_use: its verdict is this span's.
            # On the last cycle a needs_revision verdict reads max_iterations_reached.
            verdict = "needs_revision" if item["result"] == "max_iterations_reached" else item["result"]
            if grading and responses:
                responses[-1]["blocks"] = [["verdict", verdict]]
            grading = False
        elif kind == "agent.message":
            blocks.append(["text", "".join(b.get("text", "") for b in item["content"])])
        elif kind == "agent.thinking":
            blocks.append(["thinking", item["thinking"]])
        elif kind in ("agent.tool_use", "agent.custom_tool_use") and not item["call_id"].startswith(USER_CALL_PREFIX):
            # (a skill the user activated with the message is a call the turn made itself, not a response's)
            blocks.append(["tool_call", item["call_id"], item["name"], item["input"]])
        elif kind == "span.model_request_end":
            usage = dict(item["model_usage"])
            cost = usage.pop("list_cost", None)  # absent where the model has no list price (the local one)
            # Derived from the same usage at the same prices; a recording keeps the list cost alone.
            usage.pop("uncached_cost", None)
            responses.append({"blocks": _blind(blocks), "usage": usage, "list_cost": cost, "stop": item["stop_reason"]})
            blocks = []
    return responses


def recorded_response(entry: Entry) -> dict[str, Any]:
    accumulator = ResponseAccumulator()
    for event in entry.events:
        accumulator.add(event)
    response = accumulator.finish()
    blocks: list[Any] = []
    calls = [p for p in response.content if p.type == "tool_call"]
    if len(calls) == 1 and calls[0].name == "submit_verdict":  # a grader's request (see model_responses)
        blocks.append(["verdict", calls[0].input.get("result")])
    for part in response.content if not blocks else ():
        if part.type == "text":
            blocks.append(["text", part.text])
        elif part.type == "thinking":
            blocks.append(["thinking", part.thinking])
        elif part.type == "tool_call":
            blocks.append(["tool_call", part.id, part.name, part.input])
    usage = json.loads(response.usage.model_dump_json())
    usage.pop("list_cost", None)  # absent from a stream that does not price its usage (recorded since f391e36)
    return {"blocks": _blind(blocks), "usage": usage, "list_cost": str(entry.list_cost), "stop": response.stop_reason}


def recorded_responses(recording: Path) -> dict[int | None, list[dict[str, Any]]]:
    """The recording's responses, by the execution count of the cell that asked."""
    by_cell: dict[int | None, list[dict[str, Any]]] = {}
    for entry in Recording.load(recording).entries:
        by_cell.setdefault(entry.cell.number if entry.cell else None, []).append(recorded_response(entry))
    return by_cell


def turn_events(cell: Mapping[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """The durable events of each turn shown in an executed notebook cell."""
    for output in cell.get("outputs", []):
        bundle = output.get("data", {}).get(TURN_MIMETYPE)
        if bundle is not None:
            yield bundle["events"]
