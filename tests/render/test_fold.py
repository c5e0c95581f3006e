"""The turn fold: previews, reconciliation, abandoned attempts, tool cards, usage."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from agentcell import events as ev
from agentcell.render.fold import TurnFold
from agentcell.usage import Budget, Usage


def env(event_id: str = "e") -> dict[str, object]:
    return {"id": event_id, "created_at": datetime.now(UTC), "session_id": "s"}


def delta(event_id: str, text: str) -> ev.EventDelta:
    return ev.EventDelta(event_id=event_id, delta=ev.ContentDelta(index=0, content=ev.TextBlock(text=text)))


def test_previews_stream_and_the_buffered_event_wins() -> None:
    view = TurnFold()
    view.apply(ev.EventStart(event=ev.PreviewRef(type="agent.message", id="m1")))
    view.apply(delta("m1", "Hel"))
    view.apply(delta("m1", "lo"))
    assert view.text == "Hello"
    view.apply(ev.AgentMessage(**env("m1"), content=[ev.TextBlock(text="Hello!")]))
    assert view.text == "Hello!"


def test_a_failed_attempt_drops_its_unreconciled_preview() -> None:
    view = TurnFold()
    view.apply(ev.EventStart(event=ev.PreviewRef(type="agent.message", id="m1")))
    view.apply(delta("m1", "Hello wor"))
    view.apply(ev.SpanModelRequestEnd(**env("x"), model_request_start_id="s1", is_error=True, model_usage=Usage()))
    view.apply(ev.EventStart(event=ev.PreviewRef(type="agent.message", id="m2")))
    view.apply(ev.AgentMessage(**env("m2"), content=[ev.TextBlock(text="Hello world")]))
    assert view.text == "Hello world"


def test_tool_cards_follow_their_calls() -> None:
    view = TurnFold()
    view.apply(ev.AgentToolUse(**env("t1"), call_id="c", name="python", input={"code": "1 + 1"}))
    assert view.tools["t1"].status == "running"
    assert "```python\n1 + 1\n```" in view.to_markdown()
    view.apply(ev.AgentToolResult(**env("r"), tool_use_id="t1", content=[ev.TextBlock(text="2")]))
    assert view.tools["t1"].status == "completed"
    view.apply(ev.AgentToolUse(**env("t2"), call_id="d", name="bash", input={"command": "rm -rf /"}))
    refusal = ev.TextBlock(text="The user declined this call.")
    view.apply(
        ev.AgentToolResult(
            **env("r2"), tool_use_id="t2", content=[refusal], is_error=True, error_code="DECLINED", denied_by="user"
        )
    )
    assert view.tools["t2"].status == "denied"


def test_usage_line_sums_the_turn_and_shows_the_budget() -> None:
    view = TurnFold()
    one = Usage(input_tokens=1000, output_tokens=10, list_cost=Decimal("0.0032"))
    view.apply(ev.SpanModelRequestEnd(**env("a"), model_request_start_id="s", model_usage=one))
    view.apply(ev.SpanModelRequestEnd(**env("b"), model_request_start_id="s", model_usage=one))
    total = Usage(input_tokens=5000, list_cost=Decimal("0.25"))
    view.apply(ev.SessionUsageEvent(**env("u"), usage=total, budget=Budget(max_list_cost=Decimal(1))))
    line = view.usage_line()
    assert "in 2,000" in line and "turn $0.0064" in line and "session $0.25" in line
    assert "budget $1 ($0.75 left)" in line


def test_usage_line_says_what_the_cache_saved_per_turn_and_per_session() -> None:
    view = TurnFold()
    # A first request writes the prefix (dearer than plain input), the second reads it back.
    write = Usage(input_tokens=10, list_cost=Decimal("0.0125"), uncached_cost=Decimal("0.01"))
    read = Usage(input_tokens=10, list_cost=Decimal("0.001"), uncached_cost=Decimal("0.01"))
    view.apply(ev.SpanModelRequestEnd(**env("a"), model_request_start_id="s", model_usage=write))
    assert "turn $0.0125 (uncached $0.01, $0.0025 more for cache writes)" in view.usage_line()
    view.apply(ev.SpanModelRequestEnd(**env("b"), model_request_start_id="s", model_usage=read))
    session = Usage(input_tokens=40, list_cost=Decimal("0.59"), uncached_cost=Decimal("1"))
    view.apply(ev.SessionUsageEvent(**env("u"), usage=session))
    line = view.usage_line()
    assert "turn $0.0135 (uncached $0.02, saved $0.0065 by cache)" in line
    assert "session $0.59 (uncached $1, saved $0.41 by cache)" in line
    # The static fallback (the saved notebook's Markdown) carries the same line.
    assert "saved \\$0.41 by cache" in view.to_markdown(final=True)  # Markdown escapes $ (no MathJax)


def test_usage_line_says_nothing_of_a_cache_that_changed_nothing() -> None:
    view = TurnFold()
    plain = Usage(input_tokens=1000, list_cost=Decimal("0.003"), uncached_cost=Decimal("0.003"))
    view.apply(ev.SpanModelRequestEnd(**env("a"), model_request_start_id="s", model_usage=plain))
    older = Usage(input_tokens=1000, list_cost=Decimal("0.003"))  # logged before uncached_cost existed
    view.apply(ev.SessionUsageEvent(**env("u"), usage=older))
    assert "uncached" not in view.usage_line() and "saved" not in view.usage_line()


def test_a_sub_agent_thread_is_nested_under_the_call_that_spawned_it() -> None:
    view = TurnFold()
    view.apply(ev.AgentToolUse(**env("spawn"), call_id="c", name="spawn_thread", input={"task": "count"}))
    view.apply(
        ev.SessionThreadCreated(
            **env("tc"),
            session_thread_id="thr_1",
            agent_id="a",
            agent_name="counter",
            model="scripted",
            tool_use_id="spawn",
        )
    )
    inner = {**env("m"), "thread_id": "thr_1"}
    view.apply(ev.AgentMessage(**inner, content=[ev.TextBlock(text="I counted 3.")]))
    cost = Usage(output_tokens=5, list_cost=Decimal("0.001"))
    view.apply(
        ev.SpanModelRequestEnd(**{**env("s"), "thread_id": "thr_1"}, model_request_start_id="x", model_usage=cost)
    )
    view.apply(ev.SessionThreadStatusIdle(**{**env("i"), "thread_id": "thr_1"}, stop_reason=ev.EndTurn()))
    assert view.text == ""  # the thread's words are not the coordinator's
    markdown = view.to_markdown()
    assert markdown.index("spawn_thread") < markdown.index("<details><summary>🧵 thread counter (scripted) — finished")
    assert "I counted 3." in markdown
    assert view.turn_usage.list_cost == Decimal("0.001")  # the turn pays for its threads


def _end(event_id: str, source: str | None) -> ev.SpanModelRequestEnd:
    return ev.SpanModelRequestEnd(**env(event_id), model_request_start_id="s", model_usage=Usage(), source=source)


def test_a_turn_says_where_its_answers_came_from_only_when_a_recording_was_consulted() -> None:
    quiet = TurnFold()
    quiet.apply(_end("a", None))
    assert quiet.origin is None and "recording" not in quiet.footer() and "origin" not in quiet.statuses()

    replayed = TurnFold()
    replayed.apply(_end("a", "replay"))
    assert replayed.origin == "replayed" and replayed.statuses()["origin"] == "replayed"
    assert replayed.footer().endswith("replayed from the notebook's recording")

    mixed = TurnFold()
    mixed.apply(_end("a", "replay"))
    mixed.apply(_end("b", "live"))
    assert mixed.origin == "partly replayed" and "sent live" in mixed.footer()

    live = TurnFold()
    live.apply(_end("a", "live"))
    assert live.origin == "live" and "sent live: not in the notebook's recording" in live.footer()


def test_the_normal_end_of_a_turn_is_quiet_and_an_unusual_one_says_why() -> None:
    def ended(reason: ev.StopReason) -> TurnFold:
        view = TurnFold()
        view.apply(ev.SessionStatusIdle(**env("i"), stop_reason=reason))
        return view

    assert "stop:" not in ended(ev.EndTurn()).footer()
    assert ended(ev.MaxTurns()).footer().endswith("stop: max_turns")
    assert ended(ev.Interrupted()).footer().endswith("stop: interrupted")


def test_a_turn_says_what_it_took_from_the_notebook_and_its_fallbacks_open_to_it() -> None:
    from agentcell.records.content import ImageSource
    from agentcell.records.notebook_context import CellOutput, CodeCell, NotebookContext, Variable
    from agentcell.render.fallback_html import fallback_html
    from agentcell.render.markdown import turn_markdown

    image = CellOutput(kind="display", text="<Figure>", image=ImageSource(media_type="image/png", data="AA=="))
    cells = [
        CodeCell(source="print('<b>hi</b>')", outputs=[CellOutput(kind="stdout", text="<b>hi</b>")]),
        CodeCell(source="plot()", outputs=[image]),
    ]
    context = NotebookContext(cells=cells, variables=[Variable(name="sales", type="dict", summary="length 2")])
    fold = TurnFold()
    fold.apply(ev.UserMessage(**env("u"), content=[ev.TextBlock(text="what happened?")], context=context))
    fold.apply(ev.SpanModelRequestStart(**env("r"), model="m", context_turns=0))
    assert fold.context_line == "context: no turns above · notebook: 2 cells, 1 image, 1 variable"
    markdown = turn_markdown(fold, final=True)
    assert "<details><summary>notebook: 2 cells, 1 image, 1 variable</summary>" in markdown
    assert "print('<b>hi</b>')" in markdown and "[image: image/png]" in markdown and "- sales: dict" in markdown
    html = fallback_html(fold, footer=fold.footer())
    assert "&lt;b&gt;hi&lt;/b&gt;" in html and "<b>hi</b>" not in html  # the cell's text, escaped
