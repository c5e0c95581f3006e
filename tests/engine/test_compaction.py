"""The context window: a conversation that would pass the threshold is compacted before the request, in an
event the notebook shows; the model then sees exactly the summary; a re-run above it follows the path
rules; a cell larger than the window is refused before anything is sent."""

from __future__ import annotations

from pathlib import Path

from agentcell import ScriptedProvider, ScriptedResponse, ScriptedText, ScriptedToolCall
from agentcell import events as ev
from agentcell.engine.compaction import GAUGE_EVENT_TYPES, SUMMARY_SYSTEM, Gauge, window_gauge
from agentcell.engine.history import CLEARED_TOOL_RESULT
from agentcell.providers.base import ModelRequest, TextPart, ToolResultPart
from agentcell.providers.replay import Replayer
from agentcell.tools import tool

from .conftest import engine_over, engine_replaying

WINDOW = 4000
MODEL = {"id": "scripted", "context_window": WINDOW, "max_tokens": 256}
LONG = "The quick brown fox jumps over the lazy dog. " * 250  # ~11,000 characters: about 70 % of the window


def _texts(request: ModelRequest) -> list[str]:
    return [f"{m.role}: " + " | ".join(p.text for p in m.content if isinstance(p, TextPart)) for m in request.messages]


def _said(text: str) -> ScriptedResponse:
    return ScriptedResponse(steps=[ScriptedText(text=text)])


def _compactions(session: object) -> list[ev.SessionContextCompacted]:
    events = session.events(types=["session.context_compacted"])  # type: ignore[attr-defined]
    return [e for e in events if isinstance(e, ev.SessionContextCompacted)]


async def test_a_turn_past_the_threshold_is_summarised_first_and_the_model_sees_the_summary(
    db_path: Path, workspace: Path
) -> None:
    script = [_said("Noted."), _said("SUMMARY: the user pasted a long text about a fox."), _said("Done.")]
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model=MODEL).id)

    first = await session.ask(f"Keep this text: {LONG}", cell_id="c1")
    assert first.stop_reason == ev.EndTurn() and not _compactions(session)  # nothing before it to compact
    cost_before = session.usage.list_cost
    second = await session.ask("What was it about?", cell_id="c2")

    assert second.stop_reason == ev.EndTurn() and second.text == "Done."
    [compaction] = _compactions(session)
    assert (
        compaction.trigger == "threshold" and compaction.summary == "SUMMARY: the user pasted a long text about a fox."
    )
    assert compaction.tokens_before > 0.8 * WINDOW > compaction.tokens_after
    assert compaction.kept_from == session.events(types=["user.message"])[-1].id
    summary_request, answered = provider.requests[-2], provider.requests[-1]
    assert LONG in _texts(summary_request)[0] and "Summarise the conversation above" in _texts(summary_request)[-1]
    # The model sees exactly the summary, then the latest turn verbatim; the long text is gone.
    assert _texts(answered) == [
        "user: [A summary of the conversation so far, made when it outgrew the context window]\n"
        "SUMMARY: the user pasted a long text about a fox. | What was it about?"
    ]
    # The summary request was billed like any other: its cost is in the event and in the session's usage.
    assert compaction.usage.input_tokens > 2000 and compaction.usage.list_cost
    assert session.usage.list_cost is not None and cost_before is not None
    assert session.usage.list_cost - cost_before >= compaction.usage.list_cost
    # A later turn starts from the compaction too, also after the session is reopened.
    engine.close()
    engine, provider, _ = engine_over(db_path, workspace, [_said("Again.")])
    reopened = engine.sessions.get(session.id)
    await reopened.ask("And now?", cell_id="c3")
    assert _texts(provider.requests[-1])[0].startswith("user: [A summary of the conversation so far")
    assert all(LONG not in text for text in _texts(provider.requests[-1]))
    engine.close()


async def test_old_tool_results_are_cleared_first_when_that_suffices(db_path: Path, workspace: Path) -> None:
    (workspace / "big.txt").write_text("The quick brown fox jumps over the lazy dog.\n" * 180)  # ~2,600 tokens read
    script = [
        ScriptedResponse(steps=[ScriptedToolCall(name="read_file", input={"path": "big.txt"})]),
        _said("It is about a fox."),
        _said("Fine."),
    ]
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model=MODEL).id)
    await session.ask("Read big.txt", cell_id="c1")
    result = await session.ask("Thanks", cell_id="c2")

    assert result.text == "Fine."
    [compaction] = _compactions(session)
    [tool_result] = session.events(types=["agent.tool_result"])
    assert compaction.summary is None and compaction.cleared_tool_results == [tool_result.id]
    assert compaction.tokens_after < 0.8 * WINDOW
    assert len(provider.requests) == 3  # no summary request: the cheap step was enough
    results = [p for m in provider.requests[-1].messages for p in m.content if isinstance(p, ToolResultPart)]
    assert [b.text for r in results for b in r.content if isinstance(b, ev.TextBlock)] == [CLEARED_TOOL_RESULT]
    engine.close()


async def test_compact_by_hand_and_a_rerun_above_it_leaves_it_with_its_turns(db_path: Path, workspace: Path) -> None:
    script = [_said("One."), _said("Two."), _said("SUMMARY: counted to two; keep the numbers."), _said("Three.")]
    engine, provider, _ = engine_over(db_path, workspace, script)
    session = engine.sessions.create(agent=engine.agents.create(name="a", model=MODEL).id)
    await session.ask("Say one", cell_id="c1")
    await session.ask("Say two", cell_id="c2")

    compaction = await session.compact("keep the numbers")
    assert compaction is not None and compaction.trigger == "manual" and compaction.kept_from is None
    # The gauge (%usage, the next turn's footer) reads the conversation as the compaction left it.
    gauge = window_gauge(session.events(types=GAUGE_EVENT_TYPES))
    assert gauge == Gauge(compaction.tokens_after, WINDOW)
    assert "Keep in particular: keep the numbers" in _texts(provider.requests[-1])[-1]
    await session.ask("Say three", cell_id="c3")
    assert _texts(provider.requests[-1]) == [
        "user: [A summary of the conversation so far, made when it outgrew the context window]\n"
        "SUMMARY: counted to two; keep the numbers. | Say three"
    ]
    # Re-running c2 takes its turn (and the compaction made after it) off the path: c1 is seen verbatim.
    await session.ask("Say two again", cell_id="c2")
    assert _texts(provider.requests[-1]) == ["user: Say one", "assistant: One.", "user: Say two again"]
    engine.close()


async def test_a_cell_larger_than_the_window_is_refused_before_anything_is_sent(db_path: Path, workspace: Path) -> None:
    engine, provider, _ = engine_over(db_path, workspace, [_said("unused")])
    session = engine.sessions.create(agent=engine.agents.create(name="a", model=MODEL).id)
    result = await session.ask(LONG * 2, cell_id="c1")

    assert isinstance(result.stop_reason, ev.ErrorStop)
    assert "cannot be sent" in result.stop_reason.message and "Split the cell" in result.stop_reason.message
    assert provider.requests == []
    [error] = session.events(types=["session.error"])
    assert error.error.type == "context_window_exceeded"  # type: ignore[union-attr]
    engine.close()


async def test_a_threads_conversation_is_compacted_in_the_thread_and_the_thread_goes_on_from_the_summary(
    db_path: Path, workspace: Path
) -> None:
    # A thread of a multi-agent session reads a page that fills its model's window: before its next request
    # the thread's own conversation (task and work) is summarised, in the thread; the coordinator's is not.
    page = "A line of the page the worker fetched, long enough to matter. " * 220  # ~14,000 characters
    summary = "SUMMARY: the worker fetched a long page about lines."

    def script(request: ModelRequest) -> ScriptedResponse:
        texts = _texts(request)
        if request.system == SUMMARY_SYSTEM:
            return _said(summary)
        if request.system == "worker":
            if len(texts) == 1 and texts[0].startswith("user: read the page"):
                return ScriptedResponse(steps=[ScriptedToolCall(name="fetch_page", input={})])
            return _said("The page is about lines.")
        results = [p for m in request.messages for p in m.content if isinstance(p, ToolResultPart)]
        if not results:
            return ScriptedResponse(steps=[ScriptedToolCall(name="spawn_thread", input={"task": "read the page"})])
        if len(results) == 1:
            return ScriptedResponse(steps=[ScriptedToolCall(name="wait_thread", input={})])
        return _said("Done.")

    engine, provider, registry = engine_over(db_path, workspace, script)

    @tool(registry=registry)
    def fetch_page() -> str:
        """Fetch the page."""
        return page

    worker = engine.agents.create(name="worker", model=MODEL, system="worker")
    lead = engine.agents.create(
        name="lead", model="scripted", system="coordinator", multiagent={"agents": [{"id": worker.id}]}
    )
    session = engine.sessions.create(agent=lead.id)
    result = await session.ask("Have the worker read the page.", cell_id="c1")

    assert result.stop_reason == ev.EndTurn() and result.text == "Done."
    [created] = [e for e in result.events if isinstance(e, ev.SessionThreadCreated)]
    [compaction] = _compactions(session)
    assert compaction.thread_id == created.session_thread_id and compaction.summary == summary
    assert compaction.trigger == "threshold" and compaction.kept_from is None and compaction.turn_id is None
    assert compaction.tokens_before > 0.8 * WINDOW > compaction.tokens_after
    worker_requests = [r for r in provider.requests if r.system == "worker"]
    summary_request = next(r for r in provider.requests if r.system == SUMMARY_SYSTEM)
    # The summary request read the page (the result the worker had not answered yet); the worker's next
    # request carries exactly the summary in place of its task and the page.
    assert page in summary_request.model_dump_json()
    assert _texts(worker_requests[-1]) == [
        "user: [A summary of the conversation so far, made when it outgrew the context window]\n" + summary
    ]
    # The summary request was the thread's, billed in it; the coordinator's conversation was not compacted.
    spans = [
        e for e in result.events if isinstance(e, ev.SpanModelRequestEnd) and e.thread_id == created.session_thread_id
    ]
    assert len(spans) == 3  # the tool call, the summary, the answer
    assert all(page not in r.model_dump_json() for r in provider.requests if r.system == "coordinator")
    engine.close()


class _Tokenizing(ScriptedProvider):
    """Counts a request's tokens its own way (a quarter more than the byte estimate), as the local model's
    tokenizer does, and reports its window, as the local model does its n_ctx."""

    def estimate_input_tokens(self, request: ModelRequest) -> int:
        return super().estimate_input_tokens(request) * 5 // 4


async def test_a_replay_compacts_where_the_recorded_run_did_with_the_providers_window_and_count(
    tmp_path: Path, workspace: Path
) -> None:
    # The model config names no window; the provider's count passes the threshold where the byte estimate a
    # replay could make alone would not: the recording must carry both for the replay to compact.
    notebook = tmp_path / "long.ipynb"
    script = [_said("Noted."), _said("SUMMARY: a long text about a fox."), _said("A fox.")]
    model = {"id": "scripted", "max_tokens": 256}

    async def run(db: str, mode: str, provider: ScriptedProvider | None) -> tuple[list[ev.Event], Replayer]:
        replayer = Replayer.for_notebook(notebook, mode)  # type: ignore[arg-type]
        engine = engine_replaying(tmp_path / db, workspace, replayer, provider)
        session = engine.sessions.create(agent=engine.agents.create(name="a", model=model).id)
        await session.ask(f"Keep this text: {LONG[:7800]}", cell_id="c1")  # ~86 % of the window, counted so
        await session.ask("What was it about?", cell_id="c2")
        events = list(session.events())
        engine.close()
        return events, replayer

    recorded, _ = await run("record.db", "record", _Tokenizing(script, context_window=WINDOW))
    replayed, replayer = await run("replay.db", "replay", None)

    def compactions(events: list[ev.Event]) -> list[tuple[str | None, int, int, int]]:
        return [
            (e.summary, e.window, e.tokens_before, e.tokens_after)
            for e in events
            if isinstance(e, ev.SessionContextCompacted)
        ]

    [(summary, window, before, after)] = compactions(recorded)
    assert summary == "SUMMARY: a long text about a fox." and window == WINDOW and before > 0.8 * WINDOW > after
    assert replayer.misses == 0 and replayer.recording.answered == 3
    assert compactions(replayed) == compactions(recorded)
    assert [e.content for e in replayed if isinstance(e, ev.AgentMessage)][-1][0].text == "A fox."  # type: ignore[union-attr]
