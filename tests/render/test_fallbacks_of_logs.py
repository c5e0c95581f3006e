"""The static fallbacks of real turns (``tests/fixtures/event_logs``): what a saved notebook shows where the
widget cannot run — nbconvert, nbviewer, GitHub, ``agentcell run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcell import events as ev
from agentcell.render.fallback_html import fallback_html
from agentcell.render.fold import TurnFold

from ..fixtures.make_event_logs import OUT

LOGS = sorted(OUT.glob("*.json"))


def turns(name: str) -> list[list[dict[str, Any]]]:
    log: dict[str, Any] = json.loads((OUT / f"{name}.json").read_text(encoding="utf-8"))
    return list(log["turns"])


def fold(items: list[dict[str, Any]], *, previews: bool = True) -> TurnFold:
    view = TurnFold()
    for data in items:
        item = ev.stream_item_adapter.validate_python(data)
        if previews or not ev.is_preview(item):
            view.apply(item)
    return view


def markdown(name: str, turn: int = 0) -> str:
    return fold(turns(name)[turn]).to_markdown(final=True)


def html(name: str, turn: int = 0) -> str:
    view = fold(turns(name)[turn])
    return fallback_html(view, footer=view.footer())


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_the_live_fold_ends_where_the_fold_of_the_saved_events_does(path: Path) -> None:
    """The Markdown renderer folds previews as they stream; the widget's fallback folds the stored events."""
    for items in turns(path.stem):
        assert fold(items).to_markdown(final=True) == fold(items, previews=False).to_markdown(final=True)


def test_every_refusal_reads_denied_in_markdown_and_html() -> None:
    # guard, preset (changed mid-turn), the user (after allowing another call), nobody, no view, the approver
    expected = [["denied"], ["denied"], ["completed", "denied"], ["denied"], ["denied"], ["denied"]]
    for turn, statuses in enumerate(expected):
        view = fold(turns("refusals")[turn])
        assert [tool.status for tool in view.tools.values()] == statuses, turn
        for status in statuses:
            assert f"— {status}" in markdown("refusals", turn)
            assert f"</strong> — {status}</p>" in html("refusals", turn)
    assert "The user declined this tool call. They said: not there" in markdown("refusals", 2)


def test_tool_failures_and_an_interrupted_call() -> None:
    shown = markdown("tools")
    assert "🔧 **add** — completed" in shown
    for name in ("explode", "teleport"):
        assert f"🔧 **{name}** — failed" in shown
    assert "the fuse was short" in shown
    assert "🔧 **wait_forever** — interrupted" in markdown("interrupt", 1)


def test_an_interrupted_message_keeps_what_streamed_and_says_so() -> None:
    shown = markdown("interrupt", 0)
    assert "one two three" in shown and "_(interrupted)_" in shown
    assert "stop: interrupted" in shown
    assert "<em>(interrupted)</em>" in html("interrupt", 0)


def test_a_retried_request_shows_only_the_retry() -> None:
    view = fold(turns("retry")[0])
    assert view.text == "The answer is 42."
    assert any("overloaded" in error for error in view.errors)


def test_a_thread_is_nested_under_its_spawn_call_with_its_status() -> None:
    shown = markdown("threads")
    assert shown.index("spawn_thread") < shown.index("<details><summary>🧵 thread counter (scripted) — finished")
    assert "There are 3." in shown and "🔧 **add** — completed" in shown
    assert "🧵 thread counter (scripted) — finished</summary>" in html("threads")


def test_an_outcome_appears_with_its_status_and_verdicts() -> None:
    shown = markdown("outcome")
    assert "🎯 **Outcome — satisfied · cycle 2 of up to 3**" in shown
    assert "> A haiku about autumn." in shown
    assert "- cycle 1: needs revision — Grader: The lines are not 5-7-5." in shown
    assert "- cycle 2: satisfied — Grader: Three lines, 5-7-5, about autumn." in shown
    page = html("outcome")
    assert '<section class="agentcell-fallback-outcome">' in page
    assert "cycle 1: needs revision — Grader: The lines are not 5-7-5." in page
    assert "[outcome: satisfied]" in fold(turns("outcome")[0]).to_text()


def test_a_custom_tool_waits_for_the_client_and_a_budget_stops_the_turn() -> None:
    assert "🔧 **lookup** — waiting for the client" in markdown("custom_tool", 0)
    assert "stop: requires_action" in markdown("custom_tool", 0)
    assert "It is Paris." in markdown("custom_tool", 1)
    shown = markdown("budget")
    assert "stop: budget_reached" in shown and "budget \\$0.001 (" in shown  # money escaped for MathJax
    assert "budget_reached: the budget cannot cover the next request" in shown


def test_steered_guidance_is_a_note_not_the_prompt_and_undelivered_guidance_says_so() -> None:
    first, second = (fold(items) for items in turns("steer"))
    assert first.prompt == "Measure it"
    assert "> ↪ _Steer delivered: use the median, not the mean_" in first.to_markdown()
    assert "The median is 3." in first.text
    assert "↪ Steer not delivered (the turn ended before the next step): hurry up" in html("steer", 1)
    assert second.prompt == "Now dawdle"


def test_a_rerun_shows_only_its_own_turn() -> None:
    again = fold(turns("rerun")[1])
    assert (again.prompt, again.text) == ("What is it, really?", "A second answer.")


def test_a_search_the_provider_ran_is_a_card_before_the_answer_that_followed_it() -> None:
    shown = markdown("server_tools")
    assert shown.index("🔧 **web_search** — completed") < shown.index("About 520,000.")
    assert '"query": "population of Lyon"' in shown and "web_search_tool_result:" in shown


def test_an_activated_skill_is_a_skill_card_in_markdown_and_html() -> None:
    by_model, by_user = markdown("skills", 0), markdown("skills", 1)
    assert "📘 **skill csv-house-style** v1 — completed" in by_model and "🔧 **activate_skill**" not in by_model
    assert "chosen by the model · mounted read-only at .agentcell/skills/csv-house-style/v1/" in by_model
    assert "- `references/STYLE.md`\n- `scripts/summarise.py`" in by_model
    assert "<details><summary>Instructions</summary>" in by_model and "Use exactly three bullets." in by_model
    assert "📘 **skill release-notes** v1 — completed" in by_user and "activated by you" in by_user
    assert "No files besides SKILL.md." in by_user
    page = html("skills", 0)
    assert '<div class="agentcell-fallback-tool agentcell-fallback-skill">' in page
    assert "<strong>skill csv-house-style</strong> v1 — completed</p>" in page
    assert "<li><code>scripts/summarise.py</code></li>" in page and "Use exactly three bullets." in page
