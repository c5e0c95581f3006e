"""Record and replay under the real turn loop: a replayed conversation has the recorded transcript, usage
and cost without any provider; identical requests answer in order; an edit is reported, never answered with
another stream; auto goes live only where it can; no key reaches a recording."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentcell import Engine, ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedThinking, ScriptedToolCall
from agentcell.errors import ConfigurationError, InvalidInputError
from agentcell.providers.base import ModelConfig, ModelRequest, Provider, ToolResultPart
from agentcell.providers.registry import ProviderRegistry
from agentcell.providers.replay import NOT_RECORDED, CellRef, Replayer, ReplayMode, recording_path
from agentcell.providers.scripted import ScriptedError
from agentcell.sessions import Session, TurnResult
from agentcell.tools import ToolRegistry
from agentcell.tools.functions import function_tool
from agentcell.usage import Pricing, Usage, flat_pricing

from ..providers.conftest import API_KEY, SSEServer, sse_reply
from ._transcript import transcript

_FLAT = flat_pricing(3, 15)


def stepped(usage: Usage) -> Decimal:
    """A price no per-token rate can reproduce: a surcharge on requests above 60 input tokens."""
    return _FLAT(usage) + (Decimal("0.25") if usage.input_tokens > 60 else 0)


def lookup(city: str) -> str:
    """Look up a city's population."""
    return f"{city}: 2,100,000"


SCRIPT = [
    ScriptedResponse(
        steps=[ScriptedThinking(thinking="A tool knows."), ScriptedToolCall(name="lookup", input={"city": "Paris"})]
    ),
    ScriptedResponse(steps=[ScriptedText(text="Paris has about 2.1 million people.")]),
    ScriptedResponse(steps=[ScriptedText(text="Lyon is smaller.")]),
]


class Cells:
    """Stands in for the kernel: which cell is running."""

    def __init__(self) -> None:
        self.current = CellRef()

    def __call__(self) -> CellRef:
        return self.current

    def run(self, number: int) -> None:
        self.current = CellRef(number=number, id=f"cell-{number}")


class Builds:
    """A provider factory that counts how often a live provider was built."""

    def __init__(self, make: Callable[[], Provider]) -> None:
        self.make = make
        self.count = 0

    def __call__(self, config: ModelConfig) -> Provider:
        del config
        self.count += 1
        return self.make()


def unavailable() -> Provider:
    raise ConfigurationError("no model is configured here")


def open_engine(db: Path, replayer: Replayer, live: Builds, model: str = "scripted") -> tuple[Engine, Session]:
    tools = ToolRegistry()
    tools.register(function_tool(lookup))
    engine = Engine(db, tools=tools, replay=replayer)
    engine.providers.register("scripted", live)
    agent = engine.agents.create(name="nb", model=model)
    return engine, engine.sessions.create(agent=agent.id)


def run_cells(session: Session, cells: Cells, *questions: str, first: int = 1) -> list[TurnResult]:
    results = []
    for number, question in enumerate(questions, first):
        cells.run(number)
        results.append(session.send_sync(question))
    return results


def record(
    tmp_path: Path, *questions: str, script: list[ScriptedResponse] = SCRIPT, pricing: Pricing = stepped
) -> list[TurnResult]:
    cells = Cells()
    replayer = Replayer.for_notebook(tmp_path / "study.ipynb", "record", cell=cells)
    engine, session = open_engine(
        tmp_path / "record.db", replayer, Builds(lambda: ScriptedProvider(script, pricing=pricing))
    )
    with engine:
        return run_cells(session, cells, *questions)


def replay(
    tmp_path: Path, *questions: str, mode: ReplayMode = "replay", live: Builds | None = None, db: str = "replay.db"
) -> tuple[list[TurnResult], Replayer, Builds, Session]:
    cells = Cells()
    replayer = Replayer.for_notebook(tmp_path / "study.ipynb", mode, cell=cells)
    live = live or Builds(unavailable)
    engine, session = open_engine(tmp_path / db, replayer, live)
    with engine:
        return run_cells(session, cells, *questions), replayer, live, session


def test_a_replayed_conversation_has_the_recorded_transcript_and_needs_no_provider(tmp_path: Path) -> None:
    recorded = record(tmp_path, "How many people live in Paris?", "And Lyon?")
    assert recorded_path_exists(tmp_path)
    replayed, replayer, live, _ = replay(tmp_path, "How many people live in Paris?", "And Lyon?")
    assert live.count == 0  # the live provider was never even built
    for before, after in zip(recorded, replayed, strict=True):
        assert transcript(after.events) == transcript(before.events)
    assert [e.type for e in replayed[0].events].count("agent.tool_result") == 1  # the tool ran again, for real
    assert replayed[1].text == "Lyon is smaller."
    assert replayer.recording.answered == 3 and replayer.misses == 0 and replayer.live == 0


def recorded_path_exists(tmp_path: Path) -> bool:
    path = recording_path(tmp_path / "study.ipynb")
    return path == tmp_path / "study.agentcell.jsonl" and path.is_file()


def test_usage_and_cost_are_the_recorded_ones_without_the_live_pricing(tmp_path: Path) -> None:
    recorded = record(tmp_path, "How many people live in Paris?", "And Lyon?")
    replayed, _, live, session = replay(tmp_path, "How many people live in Paris?", "And Lyon?")
    assert live.count == 0
    costs = [[e.model_usage for e in r.events if e.type == "span.model_request_end"] for r in recorded]
    again = [[e.model_usage for e in r.events if e.type == "span.model_request_end"] for r in replayed]
    assert again == costs
    surcharged = [u for turn in costs for u in turn if u.input_tokens > 60]
    assert surcharged and all(u.list_cost == stepped(u) for u in surcharged)  # not a per-token rate
    assert session.usage == sum((u for turn in costs for u in turn), Usage())


def test_identical_requests_are_answered_in_the_order_they_were_recorded_then_again(tmp_path: Path) -> None:
    script = [
        ScriptedResponse(steps=[ScriptedText(text="first answer")]),
        ScriptedResponse(steps=[ScriptedText(text="second answer")]),
    ]
    cells = Cells()
    replayer = Replayer.for_notebook(tmp_path / "study.ipynb", "record", cell=cells)
    engine, one = open_engine(tmp_path / "record.db", replayer, Builds(lambda: ScriptedProvider(script)))
    with engine:
        two = engine.sessions.create(agent=one.agent.id)
        assert [s.send_sync("Same question").text for s in (one, two)] == ["first answer", "second answer"]

    replayer = Replayer.for_notebook(tmp_path / "study.ipynb", "replay", cell=cells)
    engine, one = open_engine(tmp_path / "replay.db", replayer, Builds(unavailable))
    with engine:
        sessions = [one, engine.sessions.create(agent=one.agent.id), engine.sessions.create(agent=one.agent.id)]
        results = [s.send_sync("Same question") for s in sessions]
    assert [r.text for r in results[:2]] == ["first answer", "second answer"]
    # A third run of the same cell starts over, as a second Run All of the notebook replays the first one's.
    assert results[2].text == "first answer" and not results[2].errors


def test_an_edited_cell_is_reported_by_name_and_never_answered_with_another_stream(tmp_path: Path) -> None:
    record(tmp_path, "How many people live in Paris?", "And Lyon?")
    results, replayer, live, _ = replay(tmp_path, "How many people live in Paris?", "And Marseille?")
    assert results[0].text == "Paris has about 2.1 million people."
    edited = results[1]
    assert not [e for e in edited.events if e.type == "agent.message"]
    [error] = edited.errors
    assert error.message.startswith(f"{NOT_RECORDED} cell [2] (id cell-2) “And Marseille?”: study.agentcell.jsonl")
    assert "the nearest recorded request, cell [2] (id cell-2) “And Lyon?”" in error.message
    assert "`%replay auto`" in error.message and "`%record`" in error.message
    assert edited.stop_reason.type == "error" and live.count == 0 and replayer.misses == 1


def test_a_changed_setting_is_reported_as_such(tmp_path: Path) -> None:
    record(tmp_path, "How many people live in Paris?")
    cells = Cells()
    replayer = Replayer.for_notebook(tmp_path / "study.ipynb", "replay", cell=cells)
    engine, session = open_engine(tmp_path / "replay.db", replayer, Builds(unavailable), model="scripted")
    with engine:
        engine.agents.update(session.agent.id, model={"id": "scripted", "max_tokens": 99})
        session.update(agent_version=2)
        [result] = run_cells(session, cells, "How many people live in Paris?")
    assert "(the model settings differ from the recording)" in result.errors[0].message


def test_auto_replays_a_hit_and_runs_a_miss_live(tmp_path: Path) -> None:
    record(tmp_path, "How many people live in Paris?", "And Lyon?")
    live = Builds(ScriptedProvider)  # echoes: "You said: …"
    results, replayer, _, _ = replay(
        tmp_path, "How many people live in Paris?", "And Marseille?", mode="auto", live=live
    )
    assert results[0].text == "Paris has about 2.1 million people."
    assert results[1].text == "You said: And Marseille?"
    assert (replayer.misses, replayer.live, live.count) == (1, 1, 1)


def test_auto_says_not_recorded_when_the_miss_cannot_run_live(tmp_path: Path) -> None:
    record(tmp_path, "How many people live in Paris?")
    results, *_ = replay(tmp_path, "And Marseille?", mode="auto")
    [error] = results[0].errors
    assert error.message.startswith(f"{NOT_RECORDED} cell [1] (id cell-1) “And Marseille?”")
    assert "it cannot run live: no model is configured here" in error.message


def test_auto_without_an_api_key_says_not_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    record(tmp_path, "How many people live in Paris?")
    cells = Cells()
    replayer = Replayer.for_notebook(tmp_path / "study.ipynb", "auto", cell=cells)
    with Engine(tmp_path / "replay.db", replay=replayer) as engine:
        agent = engine.agents.create(
            name="nb", model={"id": "anthropic:claude-sonnet-4-5", "base_url": "http://127.0.0.1:9"}
        )
        [result] = run_cells(engine.sessions.create(agent=agent.id), cells, "How many people live in Paris?")
    message = result.errors[0].message
    assert "nothing was recorded for the model anthropic:claude-sonnet-4-5; the recording has scripted" in message
    assert "it cannot run live: no Anthropic API key" in message


def test_recording_replaces_the_old_recording_and_keeps_only_complete_responses(tmp_path: Path) -> None:
    record(tmp_path, "How many people live in Paris?", "And Lyon?")
    failing = [
        ScriptedResponse(steps=[ScriptedText(text="Hello.")]),
        ScriptedResponse(steps=[ScriptedError(message="overloaded", retryable=False)]),
    ]
    results = record(tmp_path, "Hi", "Again", script=failing, pricing=_FLAT)
    assert results[1].errors[0].message == "overloaded"
    lines = recording_path(tmp_path / "study.ipynb").read_text().splitlines()
    assert json.loads(lines[0]) == {"format": "agentcell-recording", "version": 1}
    assert [json.loads(line)["prompt"] for line in lines[1:]] == ["Hi"]  # this run only, complete answers only


def test_a_damaged_recording_is_reported_with_its_line(tmp_path: Path) -> None:
    record(tmp_path, "How many people live in Paris?")
    path = recording_path(tmp_path / "study.ipynb")
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(InvalidInputError, match=r"damaged at line 4: .*re-record it"):
        Replayer(path, "replay").recording  # noqa: B018 - loading is the point


def test_no_key_or_secret_reaches_a_recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("WAREHOUSE_TOKEN", "wh-token-0123456789")
    server = SSEServer()
    try:
        server.queue(sse_reply("anthropic_text.sse"))
        replayer = Replayer.for_notebook(tmp_path / "study.ipynb", "record")
        with Engine(tmp_path / "a.db", replay=replayer) as engine:
            model = {"id": "anthropic:claude-sonnet-4-5", "base_url": server.url, "extra": {"api_key": API_KEY}}
            agent = engine.agents.create(name="nb", model=model)
            assert engine.sessions.create(agent=agent.id).send_sync("hello").text.startswith("Héllo")
            # A model that repeats a secret it was shown: the line is redacted before it is written.
            leaky = ScriptedProvider([ScriptedResponse(steps=[ScriptedText(text="the token is wh-token-0123456789")])])
            engine.providers.register("scripted", leaky)
            agent = engine.agents.create(name="leaky", model="scripted")
            engine.sessions.create(agent=agent.id).send_sync("what is the token?")
    finally:
        server.close()
    assert server.requests[0].headers["x-api-key"] == API_KEY  # the key was in play
    text = recording_path(tmp_path / "study.ipynb").read_text()
    assert API_KEY not in text and "wh-token-0123456789" not in text
    assert "the token is [redacted]" in text


def test_the_registry_hands_an_interceptor_one_spelling_and_a_lazy_builder() -> None:
    registry = ProviderRegistry()
    built: list[str] = []
    seen: list[str] = []

    def factory(config: ModelConfig) -> Provider:
        built.append(config.id)
        return ScriptedProvider()

    def interceptor(config: ModelConfig, build: Callable[[], Provider]) -> Provider:
        seen.append(config.id)
        return ScriptedProvider() if config.id.endswith("lazy") else build()

    registry.register("anthropic", factory, claims=lambda name: name.startswith("claude-"))
    registry.intercept(interceptor)
    registry.resolve(ModelConfig(id="claude-x"))
    registry.resolve(ModelConfig(id="anthropic:claude-x"))  # the same provider, already built
    registry.resolve(ModelConfig(id="anthropic:lazy"))
    assert seen == ["anthropic:claude-x", "anthropic:lazy"]
    assert built == ["claude-x"]  # the bare name the factory always got; never built for "lazy"


def coordinating(request: ModelRequest) -> ScriptedResponse:
    """A coordinator that waits on its thread by id, as a capable model does, and a thread that answers."""
    if not any(t.name == "spawn_thread" for t in request.tools):
        return ScriptedResponse(steps=[ScriptedText(text="The thread counted to three.")])
    results = [b.text for p in request.messages[-1].content if isinstance(p, ToolResultPart) for b in p.content]
    if not results:
        spawn = next(t for t in request.tools if t.name == "spawn_thread").input_schema["properties"]
        saved = {"agent": spawn["agent"]["enum"][0]} if "agent" in spawn else {}  # a saved agent, by its id
        return ScriptedResponse(
            steps=[ScriptedToolCall(name="spawn_thread", input={"task": "Count to three.", **saved})]
        )
    if results[0].startswith("{"):
        thread_id = json.loads(results[0].splitlines()[0])["thread_id"]
        wait = ScriptedToolCall(name="wait_thread", input={"thread_id": thread_id})
        return ScriptedResponse(steps=[ScriptedText(text=f"Waiting for {thread_id}."), wait])
    return ScriptedResponse(steps=[ScriptedText(text=f"It said: {results[0]}")])


@pytest.mark.parametrize("spawns", ["a helper", "a saved agent"])
def test_a_replay_puts_this_runs_thread_ids_where_the_recording_has_its_own(tmp_path: Path, spawns: str) -> None:
    # Thread ids are new on every run, so a recorded wait_thread call names a thread that no longer exists:
    # the replay must name this run's thread instead, in tool inputs and in text alike. So with the ids of
    # saved agents a notebook creates as it runs: the recorded spawn names an agent of the recorded run.
    def run(mode: ReplayMode, live: Builds, db: str) -> tuple[TurnResult, Replayer]:
        cells = Cells()
        replayer = Replayer.for_notebook(tmp_path / "study.ipynb", mode, cell=cells)
        engine = Engine(tmp_path / db, replay=replayer)
        engine.providers.register("scripted", live)
        with engine:
            multiagent: dict[str, Any] = {"inline_agents": True}
            if spawns == "a saved agent":
                counter = engine.agents.create(name="counter", model="scripted", description="counts")
                multiagent = {"agents": [{"id": counter.id}]}
            lead = engine.agents.create(name="lead", model="scripted", multiagent=multiagent)
            cells.run(1)
            return engine.sessions.create(agent=lead.id).send_sync("Delegate the counting."), replayer

    recorded, _ = run("record", Builds(lambda: ScriptedProvider(coordinating)), "record.db")
    replayed, replayer = run("replay", Builds(unavailable), "replay.db")
    for result in (recorded, replayed):
        created = next(e for e in result.events if e.type == "session.thread_created")
        thread_id = created.session_thread_id
        assert created.agent_name == ("helper" if spawns == "a helper" else "counter")
        waits = [e for e in result.events if e.type == "agent.tool_use" and e.name == "wait_thread"]
        assert waits[0].input == {"thread_id": thread_id}
        said = [e for e in result.events if e.type == "agent.message" and e.thread_id is None]
        assert said[0].content[0].text == f"Waiting for {thread_id}."
        assert said[-1].content[0].text == "It said: The thread counted to three."
    assert replayer.misses == 0 and replayer.live == 0
    first_run = next(e for e in recorded.events if e.type == "agent.tool_use" and e.name == "wait_thread")
    assert waits[0].input != first_run.input  # two runs, two thread ids
