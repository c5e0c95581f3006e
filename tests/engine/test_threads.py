"""Multi-agent threads: spawned concurrently, their tool results routed to them, their answers returned to
the coordinator, their time counted once, their usage reported apiece, and their settings validated."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from agentcell import (
    Engine,
    InvalidInputError,
    ScriptedDelay,
    ScriptedResponse,
    ScriptedText,
    ScriptedToolCall,
    Session,
)
from agentcell import events as ev
from agentcell.providers.base import ModelRequest, ToolResultPart
from agentcell.tools import ToolRegistry, tool

from ..conftest import event_seen
from .conftest import engine_over, prompt_text, text_of


def _results(request: ModelRequest) -> list[str]:
    """The texts of the tool results in the request's last message."""
    last = request.messages[-1]
    return [b.text for p in last.content if isinstance(p, ToolResultPart) for b in p.content if b.type == "text"]


def coordinator_script(request: ModelRequest, agents: list[str]) -> ScriptedResponse:
    """Spawn a thread per agent, wait for them all, then sum up what they said."""
    results = _results(request)
    if not results:
        calls = [ScriptedToolCall(name="spawn_thread", input={"task": f"task {i}", "agent": a})
                 for i, a in enumerate(agents)]  # fmt: skip
        return ScriptedResponse(steps=calls)
    if "thread_id" in results[0]:
        ids = [json.loads(r.splitlines()[0])["thread_id"] for r in results]
        return ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={"thread_id": i}) for i in ids])
    return ScriptedResponse(steps=[ScriptedText(text="summary: " + " | ".join(results))])


def _rendezvous(registry: ToolRegistry, parties: int) -> None:
    """A tool that returns only once ``parties`` calls are inside it at the same time."""
    inside = 0
    everyone = asyncio.Event()

    @tool(registry=registry, parallel_safe=True)
    async def rendezvous(name: str) -> str:
        """Meet the other threads."""
        nonlocal inside
        inside += 1
        if inside == parties:
            everyone.set()
        try:
            await asyncio.wait_for(everyone.wait(), 10)
        except TimeoutError:
            return f"{name} waited alone"
        return f"{name} met the others"


def worker_script(request: ModelRequest) -> ScriptedResponse:
    name = (request.system or "").removeprefix("worker ")
    results = _results(request)
    if not results:
        return ScriptedResponse(steps=[ScriptedToolCall(name="rendezvous", input={"name": name})])
    return ScriptedResponse(steps=[ScriptedText(text=f"{name} done after: {results[0]}")])


async def test_threads_run_concurrently_with_results_routed_and_time_counted_once(
    db_path: Path, workspace: Path
) -> None:
    agents: list[str] = []

    def script(request: ModelRequest) -> ScriptedResponse:
        if request.system == "coordinator":
            return coordinator_script(request, agents)
        return worker_script(request)

    engine, provider, registry = engine_over(db_path, workspace, script)
    _rendezvous(registry, parties=2)
    agents += [engine.agents.create(name=n, model="scripted", system=f"worker {n}").id for n in ("A", "B")]
    coordinator = engine.agents.create(
        name="lead", model="scripted", system="coordinator", multiagent={"agents": [{"id": a} for a in agents]}
    )
    session = engine.sessions.create(agent=coordinator.id)

    result = await session.ask("split the work")

    assert result.stop_reason == ev.EndTurn()
    assert result.text == "summary: A done after: A met the others | B done after: B met the others"
    created = [e for e in result.events if isinstance(e, ev.SessionThreadCreated)]
    spawns = [e for e in result.events if isinstance(e, ev.AgentToolUse) and e.name == "spawn_thread"]
    assert [c.tool_use_id for c in created] == [s.id for s in spawns]
    assert [c.agent_id for c in created] == agents and all(c.thread_id is None for c in created)
    threads = {c.session_thread_id: c.agent_name for c in created}
    for thread_id, name in threads.items():
        mine = [e for e in result.events if e.thread_id == thread_id]
        kinds = [e.type for e in mine]
        assert kinds[0] == "agent.thread_message_received" and kinds[1] == "session.thread_status_running"
        assert kinds[-2:] == ["session.thread_status_idle", "agent.thread_message_sent"]
        # The thread's tool call was answered in the thread, with its own result.
        use = next(e for e in mine if isinstance(e, ev.AgentToolUse))
        answer = next(e for e in mine if isinstance(e, ev.AgentToolResult))
        assert answer.tool_use_id == use.id and text_of(answer) == f"{name} met the others"
    # The coordinator got each thread's final message as the result of its wait.
    waits = [e for e in result.events if isinstance(e, ev.AgentToolResult) and e.thread_id is None][2:]
    assert [text_of(w) for w in waits] == ["A done after: A met the others", "B done after: B met the others"]
    # Each worker's requests carried only its own thread's history.
    for request in provider.requests:
        if request.system == "worker A":
            assert "B met" not in prompt_text(request) and "task 1" not in prompt_text(request)

    # The threads overlapped (both were inside the rendezvous at once): the runtime counts that time once
    # (the primary thread's), the active time sums all three threads' own (seed 002).
    stored = session.events()
    spans: dict[str | None, list[float]] = {}
    for e in stored:
        if isinstance(e, ev.SessionStatusRunning | ev.SessionStatusIdle | ev.SessionThreadStatusRunning
                      | ev.SessionThreadStatusIdle):  # fmt: skip
            spans.setdefault(e.thread_id, []).append(e.created_at.timestamp())
    (a_start, a_end), (b_start, b_end) = (spans[t] for t in threads)
    assert max(a_start, b_start) < min(a_end, b_end)
    primary = spans[None][1] - spans[None][0]
    assert session.stats.runtime_seconds == pytest.approx(primary, abs=1e-6)
    assert session.stats.active_seconds == pytest.approx(primary + (a_end - a_start) + (b_end - b_start), abs=1e-6)

    # Usage is the session's, and each thread's own is reported on its idle status and in session.threads.
    infos = session.threads
    assert [(i.agent_name, i.status, i.stop_reason) for i in infos] == [("A", "idle", ev.EndTurn()),
                                                                      ("B", "idle", ev.EndTurn())]  # fmt: skip
    for info in infos:
        own = [e for e in stored if isinstance(e, ev.SpanModelRequestEnd) and e.thread_id == info.id]
        idle = next(e for e in stored if isinstance(e, ev.SessionThreadStatusIdle) and e.thread_id == info.id)
        assert len(own) == 2 and info.usage.list_cost > 0
        assert info.usage.list_cost == sum(e.model_usage.list_cost for e in own) == idle.usage.list_cost
    every = [e for e in stored if isinstance(e, ev.SpanModelRequestEnd)]
    assert session.usage.list_cost == sum(e.model_usage.list_cost for e in every)
    await engine.aclose()


async def test_inline_agents_only_when_allowed(db_path: Path, workspace: Path) -> None:
    def script(request: ModelRequest) -> ScriptedResponse:
        if request.system == "coordinator":
            results = _results(request)
            if not results:
                inline = {"name": "poet", "system": "you write haiku"}
                spawn = ScriptedToolCall(name="spawn_thread", input={"task": "a haiku", "inline_agent": inline})
                return ScriptedResponse(steps=[spawn])
            if "thread_id" in results[0]:
                thread_id = json.loads(results[0].splitlines()[0])["thread_id"]
                return ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={"thread_id": thread_id})])
            return ScriptedResponse(steps=[ScriptedText(text=f"got: {results[0]}")])
        assert request.system == "you write haiku"
        return ScriptedResponse(steps=[ScriptedText(text="old pond")])

    engine, _, _ = engine_over(db_path, workspace, script)
    allowed = engine.agents.create(name="lead", model="scripted", system="coordinator",
                                   multiagent={"inline_agents": True})  # fmt: skip
    session = engine.sessions.create(agent=allowed.id)
    result = await session.ask("delegate")
    assert result.text == "got: old pond"
    created = next(e for e in result.events if isinstance(e, ev.SessionThreadCreated))
    assert (created.agent_name, created.agent_version, created.model) == ("poet", None, "scripted")

    refused = engine.agents.update(allowed.id, multiagent={"inline_agents": False})
    assert refused.version == 2
    session.update(agent_version=2)
    result = await session.ask("delegate again")
    spawn_result = next(e for e in result.events if isinstance(e, ev.AgentToolResult))
    assert spawn_result.is_error and "may not define agents inline" in text_of(spawn_result)
    await engine.aclose()


def _coordinator_with_a_slow_thread(db_path: Path, workspace: Path) -> tuple[Engine, Session]:
    """A coordinator whose turn spawns one thread that takes 30 s: something to interrupt."""
    agents: list[str] = []

    def script(request: ModelRequest) -> ScriptedResponse:
        if request.system == "coordinator":
            return coordinator_script(request, agents)
        return ScriptedResponse(steps=[ScriptedDelay(seconds=30)])

    engine, _, _ = engine_over(db_path, workspace, script)
    agents.append(engine.agents.create(name="slow", model="scripted", system="worker slow").id)
    lead = engine.agents.create(name="lead", model="scripted", system="coordinator",
                                multiagent={"agents": [{"id": agents[0]}]})  # fmt: skip
    return engine, engine.sessions.create(agent=lead.id)


async def test_interrupting_the_coordinator_stops_its_threads(db_path: Path, workspace: Path) -> None:
    engine, session = _coordinator_with_a_slow_thread(db_path, workspace)
    thread_running = event_seen(session, "session.thread_status_running")
    task = asyncio.create_task(session.ask("go"))
    await thread_running.wait()
    started = time.perf_counter()
    session.interrupt()
    result = await task
    assert time.perf_counter() - started < 1.0
    assert result.stop_reason == ev.Interrupted()
    idle = next(e for e in result.events if isinstance(e, ev.SessionThreadStatusIdle))
    assert idle.stop_reason == ev.Interrupted()
    assert [i.status for i in session.threads] == ["idle"]
    types = [e.type for e in result.events]
    assert types.index("session.thread_status_idle") < types.index("session.status_idle")
    await engine.aclose()


async def test_one_thread_can_be_interrupted_and_its_coordinator_goes_on(db_path: Path, workspace: Path) -> None:
    engine, session = _coordinator_with_a_slow_thread(db_path, workspace)
    thread_running = event_seen(session, "session.thread_status_running")
    task = asyncio.create_task(session.ask("go"))
    await thread_running.wait()
    session.interrupt(thread_id=session.threads[0].id)
    result = await task
    assert result.stop_reason == ev.EndTurn()
    wait = [e for e in result.events if isinstance(e, ev.AgentToolResult) and e.thread_id is None][-1]
    assert wait.is_error and "stopped (interrupted)" in text_of(wait)
    assert result.text.startswith("summary: ")
    interrupt = next(e for e in result.events if isinstance(e, ev.UserInterrupt))
    assert interrupt.thread_id == session.threads[0].id
    await engine.aclose()


def test_multiagent_settings_are_validated_and_versioned(db_path: Path, workspace: Path) -> None:
    engine, _, _ = engine_over(db_path, workspace)
    worker = engine.agents.create(name="w", model="scripted")
    with pytest.raises(InvalidInputError, match=r"multiagent.agents\[0\]: no agent with id 'agent_missing'"):
        engine.agents.create(name="lead", model="scripted", multiagent={"agents": [{"id": "agent_missing"}]})
    with pytest.raises(InvalidInputError, match="version 7"):
        engine.agents.create(name="lead", model="scripted", multiagent={"agents": [{"id": worker.id, "version": 7}]})
    lead = engine.agents.create(name="lead", model="scripted", multiagent={"agents": [{"id": worker.id}]})
    assert lead.multiagent is not None and lead.multiagent.spawn_threads
    cleared = engine.agents.update(lead.id, multiagent=None)
    assert cleared.version == 2 and cleared.multiagent is None
    assert engine.agents.get(lead.id, 1).multiagent == lead.multiagent
    engine.close()


async def test_only_a_coordinator_gets_the_thread_tools(db_path: Path, workspace: Path) -> None:
    engine, provider, _ = engine_over(db_path, workspace)
    plain = engine.agents.create(name="solo", model="scripted")
    await engine.sessions.create(agent=plain.id).ask("hi")
    assert {"spawn_thread", "wait_thread"}.isdisjoint(t.name for t in provider.requests[0].tools)
    lead = engine.agents.create(name="lead", model="scripted", multiagent={"inline_agents": True})
    await engine.sessions.create(agent=lead.id).ask("hi")
    assert {"spawn_thread", "wait_thread"} <= {t.name for t in provider.requests[1].tools}
    no_spawn = engine.agents.update(lead.id, multiagent={"spawn_threads": False})
    await engine.sessions.create(agent=no_spawn.id).ask("hi")
    assert "spawn_thread" not in {t.name for t in provider.requests[2].tools}
    await engine.aclose()


def test_session_stats_count_runtime_with_overlaps_once_and_active_time_per_thread(
    db_path: Path, workspace: Path
) -> None:
    # A log where a thread ran past the primary thread's idle: its status events count, overlaps once.
    from datetime import UTC, datetime, timedelta

    from agentcell.ids import new_id

    engine, _, _ = engine_over(db_path, workspace)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model="scripted").id)
    t0 = datetime.now(UTC) - timedelta(seconds=100)
    log = [(0, None, ev.SessionStatusRunning), (1, "sthr_a", ev.SessionThreadStatusRunning),
           (2, "sthr_b", ev.SessionThreadStatusRunning), (4, None, ev.SessionStatusIdle),
           (5, "sthr_a", ev.SessionThreadStatusIdle), (7, "sthr_b", ev.SessionThreadStatusIdle)]  # fmt: skip
    for second, thread, kind in log:
        extra = {"stop_reason": ev.EndTurn()} if kind in (ev.SessionStatusIdle, ev.SessionThreadStatusIdle) else {}
        when = t0 + timedelta(seconds=second)
        session.emit(kind(id=new_id("sevt"), created_at=when, session_id=session.id, thread_id=thread, **extra))
    assert session.stats.runtime_seconds == pytest.approx(7.0)
    assert session.stats.active_seconds == pytest.approx(4 + 4 + 5)
    engine.close()


async def test_wait_thread_without_an_id_waits_for_the_latest_thread(db_path: Path, workspace: Path) -> None:
    # A recorded script (or a small model) cannot know a new run's thread id: it waits for the last one.
    # It also names no agent: with inline agents allowed and no saved ones, a plain helper is spawned.
    def script(request: ModelRequest) -> ScriptedResponse:
        if request.system != "lead":
            return ScriptedResponse(steps=[ScriptedText(text="three")])
        results = _results(request)
        if not results:
            return ScriptedResponse(steps=[ScriptedToolCall(name="spawn_thread", input={"task": "count"})])
        if "thread_id" in results[0]:  # spawn_thread answered: wait, naming no thread
            return ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={})])
        return ScriptedResponse(steps=[ScriptedText(text=f"the thread said {results[-1]}")])

    engine, _, _ = engine_over(db_path, workspace, script)
    lead = engine.agents.create(name="lead", model="scripted", system="lead", multiagent={"inline_agents": True})
    result = await engine.sessions.create(agent=lead.id).ask("delegate")
    assert result.text == "the thread said three"
    created = next(e for e in result.events if isinstance(e, ev.SessionThreadCreated))
    assert created.agent_name == "helper"
    await engine.aclose()


async def test_a_sequence_of_tool_choices_forces_the_first_requests_in_order(db_path: Path, workspace: Path) -> None:
    # How a small model is walked through coordinating (`%tools force spawn_thread wait_thread`): the first
    # request must spawn, the second must wait, and from the third on the model chooses. wait_thread's
    # schema lists the threads spawned so far, so a model held to the schema can only name a real one.
    def script(request: ModelRequest) -> ScriptedResponse:
        if request.system != "lead":
            return ScriptedResponse(steps=[ScriptedText(text="seven")])
        choice = request.settings.tool_choice
        if choice in ("spawn_thread", "wait_thread"):
            schema = next(t for t in request.tools if t.name == "wait_thread").input_schema
            known = schema["properties"]["thread_id"].get("enum", [])
            args = {"task": "count"} if choice == "spawn_thread" else {"thread_id": known[-1]}
            return ScriptedResponse(steps=[ScriptedToolCall(name=choice, input=args)])
        return ScriptedResponse(steps=[ScriptedText(text=f"the thread said {_results(request)[-1]}")])

    engine, provider, _ = engine_over(db_path, workspace, script)
    lead = engine.agents.create(name="lead", model="scripted", system="lead", multiagent={"inline_agents": True})
    session = engine.sessions.create(agent=lead.id)
    result = await session.ask("delegate", tool_choice=["spawn_thread", "wait_thread"])
    assert result.text == "the thread said seven"
    mine = [r for r in provider.requests if r.system == "lead"]
    assert [r.settings.tool_choice for r in mine] == ["spawn_thread", "wait_thread", None]
    wait_schemas = [next(t for t in r.tools if t.name == "wait_thread").input_schema for r in mine]
    created = next(e for e in result.events if isinstance(e, ev.SessionThreadCreated))
    assert "enum" not in wait_schemas[0]["properties"]["thread_id"]  # nothing spawned yet
    assert wait_schemas[1]["properties"]["thread_id"]["enum"] == [created.session_thread_id]

    with pytest.raises(InvalidInputError, match="'wait' is not a tool this agent has"):
        await session.ask("again", tool_choice=["spawn_thread", "wait"])
    assert session.status == "idle"  # refused before the turn began: nothing was recorded for it
    await engine.aclose()


async def test_a_thread_the_coordinator_did_not_wait_for_finishes_on_its_own(db_path: Path, workspace: Path) -> None:
    # The spawn tool tells the model the thread "works on its own": ending the turn must not cut it off.
    agents: list[str] = []

    def script(request: ModelRequest) -> ScriptedResponse:
        if request.system == "coordinator":
            if not _results(request):
                return ScriptedResponse(
                    steps=[ScriptedToolCall(name="spawn_thread", input={"task": "count", "agent": agents[0]})]
                )
            return ScriptedResponse(steps=[ScriptedText(text="started it")])
        return ScriptedResponse(steps=[ScriptedDelay(seconds=0.2), ScriptedText(text="counted to three")])

    engine, _, _ = engine_over(db_path, workspace, script)
    agents.append(engine.agents.create(name="counter", model="scripted", system="worker counter").id)
    lead = engine.agents.create(name="lead", model="scripted", system="coordinator",
                                multiagent={"agents": [{"id": agents[0]}]})  # fmt: skip
    session = engine.sessions.create(agent=lead.id)
    result = await session.ask("go")
    assert result.stop_reason == ev.EndTurn() and result.text == "started it"
    idle = next(e for e in result.events if isinstance(e, ev.SessionThreadStatusIdle))
    assert idle.stop_reason == ev.EndTurn()
    assert idle.usage.output_tokens > 0
    answer = [e for e in result.events if isinstance(e, ev.AgentMessage) and e.thread_id == idle.thread_id]
    assert "counted to three" in text_of(answer[-1])
    types = [e.type for e in result.events]
    assert types.index("session.thread_status_idle") < types.index("session.status_idle")
    await engine.aclose()


async def test_interrupting_a_turn_whose_threads_finish_on_their_own_stops_them(db_path: Path, workspace: Path) -> None:
    agents: list[str] = []

    def script(request: ModelRequest) -> ScriptedResponse:
        if request.system == "coordinator":
            if not _results(request):
                return ScriptedResponse(
                    steps=[ScriptedToolCall(name="spawn_thread", input={"task": "wait", "agent": agents[0]})]
                )
            return ScriptedResponse(steps=[ScriptedText(text="started it")])
        return ScriptedResponse(steps=[ScriptedDelay(seconds=30)])

    engine, _, _ = engine_over(db_path, workspace, script)
    agents.append(engine.agents.create(name="slow", model="scripted", system="worker slow").id)
    lead = engine.agents.create(name="lead", model="scripted", system="coordinator",
                                multiagent={"agents": [{"id": agents[0]}]})  # fmt: skip
    session = engine.sessions.create(agent=lead.id)
    said = event_seen(session, "agent.message")
    task = asyncio.create_task(session.ask("go"))
    await said.wait()  # the coordinator is done; its turn waits for the thread
    session.interrupt()
    result = await task
    assert result.stop_reason == ev.Interrupted()
    idle = next(e for e in result.events if isinstance(e, ev.SessionThreadStatusIdle))
    assert idle.stop_reason == ev.Interrupted()
    await engine.aclose()
