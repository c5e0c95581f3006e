"""The notebook is the conversation: turns belong to cells, re-running a cell replaces its turn, and nothing
the user saw refused, failed or undelivered reaches the model later."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

from agentcell import Engine, ScriptedDelay, ScriptedError, ScriptedProvider, ScriptedResponse, ScriptedText
from agentcell import events as ev
from agentcell.providers.base import ModelRequest, TextPart

from ..conftest import SONNET_LIKE, event_seen


def _said(request: ModelRequest) -> list[str]:
    """The texts of a request's messages, role-tagged, as the model reads them."""
    return [
        f"{message.role}: " + "".join(p.text for p in message.content if isinstance(p, TextPart))
        for message in request.messages
    ]


def _engine(db: Path, script: list[ScriptedResponse] | None = None) -> tuple[Engine, ScriptedProvider]:
    provider = ScriptedProvider(script, pricing=SONNET_LIKE)
    return Engine(db, providers={"scripted": provider}), provider


def test_rerunning_the_last_cell_regenerates_it(db_path: Path) -> None:
    engine, provider = _engine(db_path)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("one", cell_id="c1")
    session.send_sync("two", cell_id="c2")
    session.send_sync("two, again", cell_id="c2")
    assert _said(provider.requests[-1]) == ["user: one", "assistant: You said: one", "user: two, again"]
    superseded = session.events(types=["session.turns_superseded"])
    assert [(e.reason, e.cell_id) for e in superseded] == [("rerun", "c2")]  # type: ignore[union-attr]
    engine.close()


def test_rerunning_an_earlier_cell_branches_and_later_turns_leave_the_path(db_path: Path) -> None:
    engine, provider = _engine(db_path)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    for cell in ("c1", "c2", "c3"):
        session.send_sync(f"say {cell}", cell_id=cell)
    session.send_sync("say c2 differently", cell_id="c2")
    assert _said(provider.requests[-1]) == ["user: say c1", "assistant: You said: say c1", "user: say c2 differently"]
    on_path = [e.content[0].text for e in session.events(types=["user.message"], active_path=True)]  # type: ignore[union-attr]
    assert on_path == ["say c1", "say c2 differently"]
    assert len(session.events(types=["user.message"])) == 4  # the log keeps every turn
    session.send_sync("say c3", cell_id="c3")  # its earlier turn left the path: this run appends
    assert _said(provider.requests[-1])[-1] == "user: say c3"
    assert len(_said(provider.requests[-1])) == 5
    engine.close()


def test_run_all_twice_sends_the_same_requests_and_a_restart_keeps_the_path(db_path: Path) -> None:
    engine, provider = _engine(db_path)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    cells = [("c1", "first"), ("c2", "second"), ("c3", "third")]
    for cell, text in cells:
        session.send_sync(text, cell_id=cell)
    first_run = [r.model_dump() for r in provider.requests]
    for cell, text in cells:
        session.send_sync(text, cell_id=cell)
    assert [r.model_dump() for r in provider.requests[3:]] == first_run
    engine.close()

    reopened, provider = _engine(db_path)
    again = reopened.sessions.get(session.id)
    again.send_sync("fourth", cell_id="c4")
    assert _said(provider.requests[-1]) == [
        "user: first",
        "assistant: You said: first",
        "user: second",
        "assistant: You said: second",
        "user: third",
        "assistant: You said: third",
        "user: fourth",
    ]
    reopened.close()


def test_turns_without_a_cell_append(db_path: Path) -> None:
    engine, provider = _engine(db_path)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.send_sync("a")
    session.send_sync("a")
    assert _said(provider.requests[-1]) == ["user: a", "assistant: You said: a", "user: a"]
    assert session.events(types=["session.turns_superseded"]) == []
    engine.close()


def test_a_refused_prompt_and_a_failed_prompt_leave_nothing_behind(db_path: Path) -> None:
    script = [ScriptedResponse(steps=[ScriptedError(message="boom", error_class="status", retryable=False)])]
    engine, provider = _engine(db_path, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    session.update(budget="0.000001")
    refused = session.send_sync("a long essay please")
    assert refused.stop_reason.type == "budget_reached" and not provider.requests
    session.update(budget=None)
    failed = session.send_sync("this one fails")
    assert failed.stop_reason.type == "error"
    session.send_sync("short answer please")
    assert _said(provider.requests[-1]) == ["user: short answer please"]
    reasons = [e.reason for e in session.events(types=["session.turns_superseded"])]  # type: ignore[union-attr]
    assert reasons == ["refused", "failed"]
    engine.close()


async def test_an_interrupted_turn_keeps_what_was_shown(db_path: Path) -> None:
    steps = [ScriptedText(text="half an answer"), ScriptedDelay(seconds=5), ScriptedText(text=" never")]
    engine, provider = _engine(db_path, [ScriptedResponse(steps=steps)])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    streaming = event_seen(session, "event_delta")
    turn = asyncio.create_task(session.ask("explain"))
    await streaming.wait()
    session.interrupt()
    assert (await turn).stop_reason.type == "interrupted"
    shown = [e for e in session.events(types=["agent.message"]) if isinstance(e, ev.AgentMessage)]
    assert shown[0].interrupted and shown[0].content[0].text.startswith("half")  # type: ignore[union-attr]
    await session.ask("go on")
    said = shown[0].content[0].text  # type: ignore[union-attr]
    assert _said(provider.requests[-1]) == ["user: explain", f"assistant: {said}", "user: go on"]
    await engine.aclose()


async def test_a_steer_that_came_too_late_is_reported_and_dropped(db_path: Path) -> None:
    steps = [ScriptedText(text="answer"), ScriptedDelay(seconds=0.3)]
    engine, provider = _engine(db_path, [ScriptedResponse(steps=steps)])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    streaming = event_seen(session, "event_delta")
    turn = asyncio.create_task(session.ask("first"))
    await streaming.wait()
    session.steer("also mention cats")
    session.interrupt()
    await turn
    dropped = session.events(types=["session.steer_undelivered"])
    assert [e.content[0].text for e in dropped] == ["also mention cats"]  # type: ignore[union-attr]
    await session.ask("second")
    assert "also mention cats" not in " ".join(_said(provider.requests[-1]))
    await engine.aclose()


async def test_a_delivered_steer_is_marked_where_it_was_delivered(db_path: Path) -> None:
    steps = [ScriptedText(text="working"), ScriptedDelay(seconds=0.3)]
    engine, provider = _engine(db_path, [ScriptedResponse(steps=steps)])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    streaming = event_seen(session, "event_delta")
    turn = asyncio.create_task(session.ask("start"))
    await streaming.wait()
    session.steer("use metric units")
    await turn
    messages = [e for e in session.events(types=["user.message"]) if isinstance(e, ev.UserMessage)]
    assert [(m.content[0].text, m.steered) for m in messages] == [("start", False), ("use metric units", True)]  # type: ignore[union-attr]
    assert _said(provider.requests[-1])[-1] == "user: use metric units"
    assert session.usage.list_cost > Decimal(0)
    await engine.aclose()
